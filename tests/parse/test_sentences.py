from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragloom.parse import sentence_spans
from ragloom.parse.sentences import paragraph_ends, sentence_ends


def sentences(text: str, **kw: int) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text, **kw)]


def test_basic_splitting_and_abbreviations() -> None:
    text = "Dr. Smith met Mrs. Jones at 3 p.m. today. They talked, e.g. about Q2! Was it fun? J. R. R. Tolkien wrote it."
    assert sentences(text) == [
        "Dr. Smith met Mrs. Jones at 3 p.m. today.",
        "They talked, e.g. about Q2!",
        "Was it fun?",
        "J. R. R. Tolkien wrote it.",
    ]


def test_decimals_and_versions_do_not_split() -> None:
    assert sentences("Growth was 11.2% in v2.1 of the report. Next sentence.") == [
        "Growth was 11.2% in v2.1 of the report.",
        "Next sentence.",
    ]


def test_markdown_blocks_are_boundaries() -> None:
    text = "# Heading\nIntro line without stop\n\n- first item\n- second item\n| a | b |\n\n> quote here"
    assert sentences(text) == ["# Heading", "Intro line without stop", "- first item", "- second item", "| a | b |", "> quote here"]


def test_code_fences_stay_whole() -> None:
    text = "Before it. \n```python\nx = 1. \ny = 2\n\nz = 3\n```\nAfter it."
    assert sentences(text) == ["Before it.", "```python\nx = 1. \ny = 2\n\nz = 3\n```", "After it."]


def test_long_sentences_are_split_at_lines() -> None:
    text = "\n".join(["word " * 30] * 10)
    parts = sentence_spans(text, max_chars=200)
    assert all(b - a <= 200 for a, b in parts)


@given(st.text(max_size=500), st.integers(20, 300))
def test_sentences_partition_the_non_blank_text(text: str, max_chars: int) -> None:
    spans = sentence_spans(text, max_chars=max_chars)
    covered = [False] * len(text)
    last = 0
    for a, b in spans:
        assert last <= a < b <= len(text)
        assert not text[a].isspace() and not text[b - 1].isspace()
        for i in range(a, b):
            covered[i] = True
        last = b
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(text))


@given(st.text(max_size=300))
def test_cut_points_are_inside_the_window(text: str) -> None:
    for finder in (paragraph_ends, sentence_ends):
        cuts = list(finder(text, 0, len(text)))
        assert all(0 < c <= len(text) for c in cuts)
        assert all(not text[c - 1].isspace() for c in cuts)
