"""Code in Markdown and reST text: fenced blocks, literal blocks, inline code spans, and the
text with its code blanked out (ragloom.parse.code, the one home of these rules)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import InvalidParameterError
from ragloom.parse.code import (
    FENCE_MARKER,
    blank_spans,
    code_regions,
    fenced_blocks,
    inline_code_spans,
    literal_blocks,
    mask_code,
    merge_spans,
)


def pieces(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[a:b] for a, b in spans]


# -- fenced blocks ----------------------------------------------------------------------------------


def test_a_fenced_block_runs_from_its_opening_line_to_its_closing_line() -> None:
    text = "Intro\n```python\nx = [1]\n```\nAfter [2]\n~~~\ny\n~~~\n"
    assert pieces(text, fenced_blocks(text)) == ["```python\nx = [1]\n```", "~~~\ny\n~~~"]


def test_only_a_bare_line_of_the_same_character_at_least_as_long_closes_a_fence() -> None:
    text = "````markdown\n```python\ncode\n```\n~~~~\n```` \nprose"
    assert pieces(text, fenced_blocks(text)) == ["````markdown\n```python\ncode\n```\n~~~~\n```` "]
    # A fence line with an info string opens, it never closes.
    text = "```js\na\n```js\nb\n```\nprose"
    assert pieces(text, fenced_blocks(text)) == ["```js\na\n```js\nb\n```"]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    text = "Answer [1].\n```\ncut off [2]"
    assert fenced_blocks(text) == [(12, len(text))]


def test_fences_may_be_indented_as_list_items_indent_them() -> None:
    text = "1. Run:\n\n       ```sh\n       make\n       ```\n\n2. Done"
    assert pieces(text, fenced_blocks(text)) == ["       ```sh\n       make\n       ```"]


def test_lines_that_only_look_like_fences_open_none() -> None:
    assert fenced_blocks("```x``` is inline code\nprose") == []  # a backtick in a backtick info string
    traceback = "    x = a[1] + b\n        ~~~~~^^^^\nTypeError: oops\n\nprose"
    assert fenced_blocks(traceback) == []  # Python's traceback markers
    rest = "Usage\n~~~~~\nText.\n\nInstall\n```````\nMore text."
    assert fenced_blocks(rest) == []  # reST section underlines
    literal = "The tree::\n\n  ~~~~~~~ - C0\n  ~ cgroup ~\n\nprose"
    assert fenced_blocks(literal) == []  # ASCII art in a literal block
    # A rule or a fence above is no title: the bare fence below it opens a block.
    assert pieces("---\n```\ncode\n```", fenced_blocks("---\n```\ncode\n```")) == ["```\ncode\n```"]
    assert len(fenced_blocks("```\na\n```\n```\nb\n```")) == 2
    assert len(fenced_blocks("Run:\n```\ncode\n```")) == 1  # a label longer than the fence is no title


def test_the_fence_marker_finds_any_line_that_starts_like_a_fence() -> None:
    assert FENCE_MARKER.search("text\n  ~~~~^^^") and FENCE_MARKER.search("```x```")
    assert not FENCE_MARKER.search("a ``` b")


# -- literal blocks -----------------------------------------------------------------------------------


def test_a_literal_block_is_the_indented_lines_after_a_double_colon() -> None:
    text = "A debugger session::\n\n    p cost\n\n    plan costs 80 dollars\n\nThe plan costs $49 per month."
    assert pieces(text, literal_blocks(text)) == ["    p cost\n\n    plan costs 80 dollars"]


def test_code_directives_hold_code_and_other_directives_prose() -> None:
    text = ".. code-block:: python\n\n   import os\n\n.. note::\n\n   Prose [1].\n\n.. warning:: Also prose::\n\n   Yes."
    assert pieces(text, literal_blocks(text)) == ["   import os"]
    assert literal_blocks("Nothing to see here.") == [] and literal_blocks("Ends with::") == []


# -- inline code -----------------------------------------------------------------------------------


def test_inline_code_runs_to_the_next_backtick_run_of_the_same_length() -> None:
    text = "Use `a[1]`, ``b`[2]`` and ```c``` but not `d [3]\nor e [4]."
    assert pieces(text, inline_code_spans(text)) == ["`a[1]`", "``b`[2]``", "```c```"]  # one line only
    assert inline_code_spans("An escaped \\`f [5]` stays text.") == []
    assert inline_code_spans("`` x ` y ``") == [(0, 11)]
    assert inline_code_spans("` `` `") == [(0, 6)]


# -- regions and masking ---------------------------------------------------------------------------


def test_code_regions_merge_what_the_caller_asks_for() -> None:
    text = "Prose `x` here::\n\n    literal\n\n```\nfenced `y`\n```\n"
    assert pieces(text, code_regions(text)) == ["    literal", "```\nfenced `y`\n```"]
    assert pieces(text, code_regions(text, literal=False, inline=True)) == ["`x`", "```\nfenced `y`\n```"]


def test_mask_code_keeps_every_offset_and_line() -> None:
    text = "Code `a[1]` and\n```\nb[2]\n```\nthen [3]."
    assert mask_code(text) == "Code" + " " * 8 + "and\n   \n    \n   \nthen [3]."
    assert blank_spans("abcdef", [(3, 5), (1, 4)], "\x00") == "a\x00\x00\x00\x00f"
    with pytest.raises(InvalidParameterError, match="one character"):
        blank_spans("abc", [(0, 1)], "")


def test_merge_spans_joins_overlapping_and_touching_spans() -> None:
    assert merge_spans([(5, 7), (0, 2), (2, 3), (6, 9)]) == [(0, 3), (5, 9)]


# -- properties -----------------------------------------------------------------------------------


def well_formed(spans: list[tuple[int, int]], text: str, *, touching: bool = True) -> None:
    """Sorted, disjoint (``touching=False``: not even touching), non-empty, inside the text."""
    for lo, hi in spans:
        assert 0 <= lo < hi <= len(text)
    for (_, hi), (lo, _) in zip(spans, spans[1:], strict=False):
        assert hi <= lo if touching else hi < lo


#: Text made of the characters that matter: fences, backticks, colons, indentation, lines.
tricky = st.text(alphabet="`~:.\\ \t\nab^-#", max_size=200)


@given(tricky)
def test_every_finder_returns_sorted_disjoint_spans_inside_the_text(text: str) -> None:
    for finder in (fenced_blocks, literal_blocks, inline_code_spans):
        well_formed(finder(text), text)
    for literal in (False, True):
        for inline in (False, True):
            well_formed(code_regions(text, literal=literal, inline=inline), text, touching=False)
    for lo, _ in fenced_blocks(text):
        assert lo == 0 or text[lo - 1] == "\n"  # a fence opens a line
        assert FENCE_MARKER.match(text, lo)
    for lo, hi in inline_code_spans(text):
        run = len(text[lo:hi]) - len(text[lo:hi].lstrip("`"))
        assert text[lo:hi].endswith("`" * run) and hi - lo > 2 * run and "\n" not in text[lo:hi]
        assert text[hi - run - 1] != "`" and (hi == len(text) or text[hi] != "`")  # runs of exactly that length


@given(tricky)
def test_masking_blanks_exactly_the_code(text: str) -> None:
    regions = code_regions(text, literal=False, inline=True)
    masked = mask_code(text)
    assert len(masked) == len(text)
    inside = {i for lo, hi in regions for i in range(lo, hi)}
    for i, (before, after) in enumerate(zip(text, masked, strict=True)):
        assert after == (before if i not in inside or before == "\n" else " ")


PROSE = st.sampled_from(["Plain prose [1].", "A `span` here.", "Ends with a colon:", "  indented prose", "",
                         "Title", "ab ``` cd", "~ not a fence", "Shipping lands in Q3 2025."])


@st.composite
def fenced_documents(draw: st.DrawFn) -> tuple[str, list[tuple[int, int]]]:
    """Markdown of prose lines and fenced blocks, with where each block is; bodies hold lines
    that look like fences but cannot close theirs (the other character, shorter, with an info
    string)."""
    parts: list[str] = []
    expected: list[tuple[int, int]] = []
    pos = 0
    for _ in range(draw(st.integers(1, 5))):
        for line in draw(st.lists(PROSE, max_size=3)) + ["Some prose before the block."]:
            parts.append(line + "\n")
            pos += len(line) + 1
        char = draw(st.sampled_from("`~"))
        width = draw(st.integers(3, 6))
        indent = " " * draw(st.integers(0, 4))
        info = draw(st.sampled_from(["", "python", " js", "{r}"]))
        body = draw(st.lists(st.sampled_from(["x = [1]", "", "  nested", "~" * 3 if char == "`" else "`" * 3,
                                               char * (width - 1), char * width + "info", "# not a heading"]),
                             max_size=4))
        closing = draw(st.one_of(st.none(), st.integers(width, width + 2)))
        block = "\n".join([indent + char * width + info, *body])
        if closing is not None:
            block += "\n" + indent + char * closing + " "
        expected.append((pos, pos + len(block)))
        parts.append(block + "\n")
        pos += len(block) + 1
        if closing is None:  # an unclosed fence runs to the end: nothing follows it
            expected[-1] = (expected[-1][0], pos - 1)
            break
    return "".join(parts).removesuffix("\n"), expected


@given(fenced_documents())
def test_every_fenced_block_is_found_where_it_is(document: tuple[str, list[tuple[int, int]]]) -> None:
    text, expected = document
    assert fenced_blocks(text) == expected
    # Merged with the other kinds, each block lies inside one region.
    regions = code_regions(text, inline=True)
    for lo, hi in expected:
        assert any(a <= lo and hi <= b for a, b in regions)
