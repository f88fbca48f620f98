from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.chunk import TokenChunker, chunk_text, get_chunker
from ragloom.errors import InvalidParameterError
from ragloom.parse import parse_sections
from ragloom.tokens import get_tokenizer

from .strategies import documents


def check_contract(text: str, chunks, limit: int, tokenizer: str) -> None:
    tok = get_tokenizer(tokenizer)
    for i, c in enumerate(chunks):
        assert text[c.start : c.end] == c.text
        assert c.text == c.text.strip() and c.text
        assert c.token_count == tok.count(c.text) <= limit
        assert c.chunk_index == i and c.total_chunks == len(chunks)
    # Every non-blank character of every section is in some chunk.
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    for s in parse_sections(text):
        body = range(s.start, s.end)
        assert all(i in covered for i in body if not text[i].isspace())


@given(text=documents, size=st.integers(8, 200), overlap_share=st.floats(0, 0.9),
       tokenizer=st.sampled_from(["cl100k_base", "o200k_base", "minilm"]), merge=st.booleans(),
       tiny=st.sampled_from([0, 40, 150]))
def test_offsets_exact_and_limit_holds(text: str, size: int, overlap_share: float, tokenizer: str, merge: bool,
                                       tiny: int) -> None:
    overlap = min(int(size * overlap_share), size - 1)
    chunks = chunk_text(text, "token", chunk_size=size, chunk_overlap=overlap, tokenizer=tokenizer,
                        merge_sections=merge, min_chunk_chars=tiny)
    check_contract(text, chunks, size, tokenizer)


@given(text=st.text(max_size=2000), size=st.integers(4, 64))
def test_any_unicode_text(text: str, size: int) -> None:
    chunks = chunk_text(text, "token", chunk_size=size, chunk_overlap=size // 4)
    check_contract(text, chunks, size, "cl100k_base")


@pytest.mark.parametrize("size,overlap,merge", [(1024, 150, False), (256, 20, True), (128, 0, False)])
def test_real_documents(real_corpus, size: int, overlap: int, merge: bool) -> None:
    chunker = TokenChunker(size, overlap, merge_sections=merge, min_chunk_chars=100)
    for _, text in real_corpus:
        check_contract(text, chunker.chunk(text), size, "cl100k_base")


def test_cuts_at_a_sentence_end_in_the_window_tail() -> None:
    sentence = "The catalog integration ships in the third quarter of the year. "
    text = sentence * 40
    chunks = chunk_text(text, "token", chunk_size=100, chunk_overlap=10)
    assert len(chunks) > 2
    assert all(c.text.endswith(".") for c in chunks)


def test_prefers_a_paragraph_end_over_a_later_sentence_end() -> None:
    para = "Alpha beta gamma delta epsilon. " * 6
    text = (para.strip() + "\n\n") * 10
    for c in chunk_text(text, "token", chunk_size=120, chunk_overlap=0)[:-1]:
        after = text[c.end : c.end + 2]
        assert after == "\n\n"


def test_overlap_is_shared_text() -> None:
    text = " ".join(f"word{i}" for i in range(600))
    chunks = chunk_text(text, "token", chunk_size=100, chunk_overlap=30)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start < a.end  # they overlap
        assert a.end - b.start > 0


def test_chunks_stay_within_sections() -> None:
    text = "# A\n" + "one two three. " * 50 + "\n# B\n" + "four five six. " * 50
    chunks = chunk_text(text, "token", chunk_size=64, chunk_overlap=8)
    sections = {s.index: s for s in parse_sections(text)}
    for c in chunks:
        s = sections[c.section_index]
        assert s.start <= c.start and c.end <= s.end
        assert c.section_path == s.path
    by_section = {}
    for c in chunks:
        by_section.setdefault(c.section_index, []).append(c.chunk_index_in_section)
    assert all(v == list(range(len(v))) for v in by_section.values())


@pytest.mark.parametrize(
    "params,message",
    [
        ({"chunk_size": 100, "chunk_overlap": 100}, r"chunk_overlap \(100\) must be smaller than chunk_size \(100\)"),
        ({"chunk_size": 0}, r"chunk_size \(0\) must be at least 1"),
        ({"boundary_window": 1.5}, r"boundary_window \(1.5\)"),
    ],
)
def test_constructor_validates(params: dict, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        get_chunker("token", **params)


def test_small_sections_merge_and_a_heading_over_an_include_joins_its_neighbour() -> None:
    text = ("# Guide\n\n## Install\nRun pip install x, then x --version.\n\n"
            "## Upgrade\nRun pip install -U x when a release is out.\n\n"
            "## Create\n.. include:: create.rst\n\n### With venv\n" + "Run python -m venv to make one. " * 20)
    plain = chunk_text(text, "token", chunk_size=256, chunk_overlap=0, min_chunk_chars=0)
    assert [c.section_path[-1] for c in plain] == ["Install", "Upgrade", "Create", "With venv"]
    merged = chunk_text(text, "token", chunk_size=256, chunk_overlap=0, merge_sections=True, min_chunk_chars=60)
    assert [c.section_path for c in merged] == [("Guide",), ("Guide", "Create", "With venv")]
    assert merged[0].text.startswith("## Install") and "## Upgrade" in merged[0].text and "## Create" in merged[0].text
    tiny_only = chunk_text(text, "token", chunk_size=256, chunk_overlap=0, min_chunk_chars=40)
    assert [c.section_path[-1] for c in tiny_only] == ["Install", "Upgrade", "With venv"]
    assert tiny_only[2].text.startswith("## Create\n.. include::")  # never a chunk of its own
    for c in merged:
        assert text[c.start : c.end] == c.text
    assert TokenChunker(256, 0, merge_sections=True, min_chunk_chars=60).params()["min_chunk_chars"] == 60
