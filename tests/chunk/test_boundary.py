from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ragloom.chunk import BoundaryChunker, chunk_text
from ragloom.errors import InvalidParameterError

from .strategies import documents


def check_sizes(text: str, chunks, min_size: int, max_size: int) -> None:
    per_section: dict[int, int] = {}
    for c in chunks:
        per_section[c.section_index] = per_section.get(c.section_index, 0) + 1
    for c in chunks:
        assert text[c.start : c.end] == c.text
        n = len(c.text)
        whole_section = per_section[c.section_index] == 1
        # A whole section below min_size could not have been longer: no defect (issue 26).
        if n > max_size or (n < min_size and not whole_section):
            assert any(i.kind == "length_violation" for i in c.issues), (n, c.text[:60])
        if whole_section and n <= max_size:
            assert not any(i.kind == "length_violation" for i in c.issues), (n, c.text[:60])


@given(text=documents, target=st.integers(40, 400), merge=st.booleans(), tiny=st.sampled_from([0, 40, 150]))
def test_offsets_and_sizes(text: str, target: int, merge: bool, tiny: int) -> None:
    min_size, max_size, overlap = target // 2, target * 3 // 2, target // 8
    chunks = chunk_text(text, "boundary", target_size=target, min_size=min_size, max_size=max_size, overlap=overlap,
                        merge_sections=merge, min_chunk_chars=tiny)
    check_sizes(text, chunks, min_size, max_size)


@given(text=documents, data=st.data())
def test_protected_spans_are_never_cut(text: str, data: st.DataObject) -> None:
    # Spans like entity mentions: one to four consecutive words on one line.
    words = [m.span() for m in re.finditer(r"[^\s]+", text)]
    assume(len(words) > 3)
    spans = []
    for _ in range(data.draw(st.integers(1, 12))):
        i = data.draw(st.integers(0, len(words) - 1))
        j = data.draw(st.integers(i, min(len(words) - 1, i + 3)))
        a, b = words[i][0], words[j][1]
        if "\n" not in text[a:b]:
            spans.append((a, b))
    chunks = chunk_text(text, "boundary", target_size=120, min_size=60, max_size=200, overlap=20, protected=spans)
    for c in chunks:
        for a, b in spans:
            assert not (a < c.start < b) and not (a < c.end < b), ((a, b), (c.start, c.end))


def test_real_documents_stay_in_bounds(real_corpus) -> None:
    chunker = BoundaryChunker()
    for _, text in real_corpus:
        chunks = chunker.chunk(text)
        check_sizes(text, chunks, 500, 1200)
        for c in chunks:
            assert 0 < c.token_count


def test_prefers_paragraph_ends() -> None:
    paragraph = ("This sentence has some words in it. " * 5).strip()
    text = "\n\n".join([paragraph] * 12)
    chunks = chunk_text(text, "boundary")
    for c in chunks[:-1]:
        assert text[c.end : c.end + 2] == "\n\n"
        assert 500 <= len(c.text) <= 1200


def test_falls_back_to_sentence_ends_then_words() -> None:
    text = "Short sentence number one here. " * 80
    assert all(c.text.endswith(".") for c in chunk_text(text, "boundary"))
    no_punct = "word " * 600
    chunks = chunk_text(no_punct, "boundary")
    assert all(c.text.endswith("word") and 500 <= len(c.text) <= 1200 for c in chunks)


def test_a_short_whole_section_is_no_defect() -> None:
    # It could not have been longer; flagging it made most length_violation flags wrong (issue 26).
    (chunk,) = chunk_text("# Tiny\nJust a few words.", "boundary")
    assert chunk.issues == ()


def test_overlap_is_about_the_setting() -> None:
    text = "Sentence about the roadmap and its many details. " * 100
    chunks = chunk_text(text, "boundary", overlap=100)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert 100 <= a.end - b.start <= 150


def test_entity_mention_is_kept_whole() -> None:
    text = ("Filler words go here to take space. " * 20) + "Apex HVAC Services Inc renewed. " + "More filler text. " * 40
    mention = re.search(r"Apex HVAC Services Inc", text).span()
    for c in chunk_text(text, "boundary", protected=[mention]):
        assert not (mention[0] < c.end < mention[1]) and not (mention[0] < c.start < mention[1])


@pytest.mark.parametrize(
    "params,message",
    [
        ({"min_size": 900}, r"min_size \(900\) <= target_size \(800\)"),
        ({"overlap": 600}, r"overlap \(600\) must be in \[0, min_size \(500\)\)"),
        ({"min_size": 700, "max_size": 1200, "target_size": 800}, r"max_size \(1200\) must be at least 2 \* min_size - overlap \(1300\)"),
    ],
)
def test_constructor_validates(params: dict, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        BoundaryChunker(**params)
