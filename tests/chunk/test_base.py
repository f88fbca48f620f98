"""What every strategy shares: a heading, or a span without a word, never stands alone as a chunk."""

from __future__ import annotations

import re

import pytest
from hypothesis import given

from ragloom.chunk import chunk_text, get_chunker
from ragloom.tokens import get_tokenizer

from .strategies import documents

STRATEGIES = ("token", "boundary", "sentence")
#: Headings alone, or no word character at all.
BARE = re.compile(r"\s*(?:#{1,6}(?:[ \t][^\n]*)?(?:\n\s*|$))+|\W*")


def _lonely_bare(text: str, strategy: str, **params: object) -> list[str]:
    """The chunks that are bare although their section has other chunks they could join."""
    chunks = chunk_text(text, strategy, **params)
    per_section: dict[int, int] = {}
    for c in chunks:
        per_section[c.section_index] = per_section.get(c.section_index, 0) + 1
    return [c.text for c in chunks if BARE.fullmatch(c.text) and per_section[c.section_index] > 1]


@pytest.mark.parametrize("strategy", STRATEGIES)
@given(text=documents)
def test_no_chunk_is_a_heading_alone_or_wordless(strategy: str, text: str) -> None:
    assert _lonely_bare(text, strategy) == []
    chunks = chunk_text(text, strategy)
    counter = get_tokenizer("cl100k_base")
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.token_count == counter.count(c.text)


def test_the_sentence_strategy_keeps_a_heading_with_its_first_sentence() -> None:
    text = "# Zulip\n\nThe council meets on Zulip. Notes follow.\n\n> \n> A quoted line.\n"
    texts = [c.text for c in chunk_text(text, "sentence")]
    assert texts[0].startswith("# Zulip") and "The council meets on Zulip." in texts[0]
    assert not any(BARE.fullmatch(t) for t in texts)
    assert "".join(texts).replace(" ", "").replace("\n", "") in text.replace(" ", "").replace("\n", "")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_real_text_has_no_heading_only_chunk(strategy: str, real_corpus) -> None:
    for _, text in real_corpus:
        assert _lonely_bare(text, strategy) == []
        assert _lonely_bare(text, strategy, **({} if strategy == "sentence" else {"min_chunk_chars": 0})) == []


def test_a_section_that_is_a_heading_alone_joins_the_next() -> None:
    text = "# Admin\n\n## nodejs/admin\n\n### Members\n\nThe admin team has five members who review access.\n"
    for strategy in STRATEGIES:
        chunker = get_chunker(strategy) if strategy == "sentence" else get_chunker(strategy, min_chunk_chars=0)
        first = chunker.chunk(text)[0]
        assert re.search(r"\w{3,}[^#]*\.", first.text), (strategy, first.text)
