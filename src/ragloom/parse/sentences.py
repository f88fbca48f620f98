"""Sentence and paragraph boundaries with exact offsets.

Sentences are found by rule, not by a model: terminal punctuation followed by whitespace and
something that can start a sentence, unless the word before is a known abbreviation or an
initial; a blank line, a list item, a heading or a table row always starts a new sentence;
fenced code is kept whole (split by lines only when longer than ``max_chars``). Every
non-whitespace character of the input belongs to exactly one sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st vs etc e.g i.e cf al approx dept est fig figs inc ltd co corp
    no nos vol vols pp ed eds jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri
    sat sun u.s u.k a.m p.m gen col lt sgt capt rev hon ph.d m.sc b.sc resp a.k.a incl excl viz ibid
    ca approx esp""".split()
)
#: Abbreviations that often end a sentence too ("… and so on, etc. The next"): followed by what
#: can start a sentence, they end one.
ENDING_ABBREVIATIONS = frozenset({"etc", "al"})
#: Abbreviations that are one only before a number ("No. 5"): before a word, "no." ends a sentence.
NUMBER_ABBREVIATIONS = frozenset({"no", "nos", "vol", "vols", "fig", "figs", "pp"})

# A reST citation right after the stop is the sentence's ("… not thought." [3]_ Similarly).
_TERMINAL = re.compile(r"(?<![.!?…])[.!?…]++[\"'”’)\]]*+(?:[ \t]*+\[\w{1,6}\]_)?(?=\s)")
# What can start a sentence after terminal punctuation: a capital or a digit, after opening
# quotes, brackets or emphasis; a code span or a reST role (``lru_gen`` decides …, :mod:`x`
# adds …), whatever its case; a quoted word ('docs@' is …).
_STARTER = re.compile(r"\s+(?:[\"'“‘(\[*_]*[A-Z0-9À-ÖØ-Þ]|`|:[\w.+-]+:`|['\"“‘][\w@])")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
# A list item at any depth ("    - Note taker: James" in nested minutes), a heading, a table
# row, a quote or a fence starts a new sentence.
_BLOCK_LINE = re.compile(r"\n(?=[ \t]*(?:[-+*•][ \t]|\d{1,3}[.)][ \t])| {0,3}(?:#{1,6}[ \t]|\||>|```|~~~))")
# The end of a heading line or of a setext underline: a sentence always ends there.
_HEADING_LINE_END = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t][^\n]*)?|=++[ \t]*+|-++[ \t]*+)$(?=\n)", re.MULTILINE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*$", re.MULTILINE)
_WORD_BEFORE = re.compile(r"(?<![\w.])([\w.]+)\.$")
#: The number that opens a line ("1. Memory controller", "## 2.3. Scope"): a list marker or a
#: section number, not the end of a sentence.
_LINE_NUMBER = re.compile(r"[ \t]*(?:#{1,6}[ \t]+)?(?:[-*+][ \t]+)?\d{1,3}(?:\.\d{1,3})*$")
_WORD_AFTER = re.compile(r"\s*([\"'“‘(\[*_]*)([A-Za-z][\w'-]*)")
_CAPITALISED = re.compile(r"[A-Z][a-z]")
#: Words that open a sentence far more often than they follow an initial ("… in Python or C. When").
_OPENERS = frozenset("""The This That These Those It Its If When While Where What Which Who Why How In On At For From
    With Without To As After Before Since Then There They We You He She I A An But And Or So Also However Thus Hence
    Note See Each Every Some All Most Many No Not Only Once Here""".split())


def _is_abbreviation(text: str, dot: int, *, after: int) -> bool:
    """Whether the period at ``text[dot]`` ends an abbreviation or an initial rather than a
    sentence; ``after`` is where the next word may start."""
    m = _WORD_BEFORE.search(text, max(0, dot - 12), dot + 1)
    if m is None:
        return False
    word = m.group(1)
    nxt = _WORD_AFTER.match(text, after)
    following = nxt.group(2) if nxt else ""
    if len(word) == 1 and word.isalpha() and word.isupper():
        # "J. Smith", "Gregory P. Smith" are initials; "in Python or C. When" ends a sentence.
        before = text[max(0, m.start() - 40) : m.start()].split()
        named = not before or bool(_CAPITALISED.match(before[-1].lstrip("(\"'“‘"))) or \
            bool(re.fullmatch(r"[A-Z]\.", before[-1])) or before[-1][-1:] in ".!?:"  # or it opens a sentence
        return named and following not in _OPENERS
    if re.fullmatch(r"(?:[A-Z]\.)+[A-Z]", word):
        return True  # "P.Y. Developer", "U.S."
    lower = word.lower()
    if lower in NUMBER_ABBREVIATIONS:
        return bool(nxt is None and re.match(r"\s*\d", text[after:after + 4]))
    if lower in ENDING_ABBREVIATIONS:
        return not (following[:1].isupper() and following in _OPENERS)
    return lower in ABBREVIATIONS


class _Quotes:
    """Whether a stop lies inside a quotation that closes later in ``[start, end)``: "Great, we
    merged the RFC. Now what?" is one sentence of the text that quotes it. The quotation marks
    before a stop are counted as the stops advance, so a paragraph of a million sentences is
    read once, not once per stop."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text, self.pos = text, start
        self.straight = self.opening = self.closing = 0
        self.last_close = max(text.rfind('"', start, end), text.rfind("”", start, end))

    def inside(self, at: int) -> bool:
        """For stops at increasing offsets ``at``."""
        part = self.text[self.pos : at]
        self.straight += part.count('"')
        self.opening += part.count("“")
        self.closing += part.count("”")
        self.pos = max(self.pos, at)
        opened = self.straight % 2 == 1 or self.opening > self.closing
        return opened and self.last_close > at


def _line_number(text: str, dot: int) -> bool:
    """Whether the period at ``text[dot]`` ends a number that opens its line."""
    line_start = text.rfind("\n", 0, dot) + 1
    return dot - line_start <= 16 and bool(_LINE_NUMBER.fullmatch(text, line_start, dot))


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without leading and trailing whitespace (empty when all blank)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _sentence_stops(text: str, start: int, end: int, endpos: int) -> Iterator[int]:
    """Offsets just after terminal punctuation in ``[start, end)`` that ends a sentence: something
    that can start a sentence follows (before ``endpos``) and it is not an abbreviation's
    period, a list or section number's, a period inside a quotation, or an ellipsis before a
    bracket ("suspend... (IDE does)")."""
    quotes = _Quotes(text, start, end)
    for m in _TERMINAL.finditer(text, start, end):
        stop = m.end()
        if not _STARTER.match(text, stop, endpos):
            continue
        marks = text[m.start() : stop]
        if marks.startswith(".") and not marks.startswith(".."):  # one period: whose is it?
            if _is_abbreviation(text, m.start(), after=stop) or _line_number(text, m.start()):
                continue
        if marks[:1] in ".!?" and quotes.inside(m.start()):
            continue
        if (marks.startswith("...") or marks.startswith("…")) and text[stop:stop + 2].lstrip()[:1] == "(":
            continue
        yield stop


def _ends_before(pattern: re.Pattern[str], text: str, start: int, end: int) -> Iterator[int]:
    """For each match of ``pattern`` in ``[start, end)``, the offset just after the last
    non-whitespace character before it, when that lies after ``start``."""
    for m in pattern.finditer(text, start, end):
        cut = m.start()
        while cut > start and text[cut - 1].isspace():
            cut -= 1
        if cut > start:
            yield cut


def fenced_blocks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of fenced code blocks (fence lines included) within ``[start, end)``."""
    blocks: list[tuple[int, int]] = []
    opening: re.Match[str] | None = None
    for m in _FENCE.finditer(text, start, end):
        if opening is None:
            opening = m
        elif m.group(1)[0] == opening.group(1)[0] and len(m.group(1)) >= len(opening.group(1)):
            blocks.append((opening.start(), m.end()))
            opening = None
    if opening is not None:
        blocks.append((opening.start(), end))
    return blocks


def _split_long(text: str, start: int, end: int, max_chars: int) -> Iterator[tuple[int, int]]:
    """Split a span longer than ``max_chars`` at line ends, else at spaces, else hard."""
    while end - start > max_chars:
        limit = start + max_chars
        cut = text.rfind("\n", start + 1, limit)
        if cut <= start:
            cut = text.rfind(" ", start + 1, limit)
        if cut <= start:
            cut = limit
        s, e = trim(text, start, cut)
        if s < e:
            yield s, e
        start = cut
    s, e = trim(text, start, end)
    if s < e:
        yield s, e


def _line_pieces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Split a paragraph before list items, quotes and table rows and after heading lines."""
    cuts = sorted(
        [m.start() for m in _BLOCK_LINE.finditer(text, start, end)]
        + [m.end() for m in _HEADING_LINE_END.finditer(text, start, end)]
    )
    pos = start
    for cut in cuts:
        if cut > pos:
            yield pos, cut
            pos = cut
    yield pos, end


def _prose_sentences(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    for para_start, para_end in _between(_BLANK_LINE, text, start, end):
        for line_start, line_end in _line_pieces(text, para_start, para_end):
            begin = line_start
            for stop in _sentence_stops(text, line_start, line_end, line_end):
                s, e = trim(text, begin, stop)
                if s < e:
                    yield s, e
                begin = stop
            s, e = trim(text, begin, line_end)
            if s < e:
                yield s, e


def _between(pattern: re.Pattern[str], text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The pieces of ``[start, end)`` between matches of ``pattern``."""
    pos = start
    for m in pattern.finditer(text, start, end):
        yield pos, m.start()
        pos = m.end()
    yield pos, end


def sentence_spans(text: str, start: int = 0, end: int | None = None, *, max_chars: int = 2000) -> list[tuple[int, int]]:
    """Sentence spans within ``text[start:end]``, whitespace-trimmed, in order.

    Sentences longer than ``max_chars`` (code, tables, run-on text) are split at line ends.
    """
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    pos = start
    for block_start, block_end in [*fenced_blocks(text, start, end), (end, end)]:
        for s, e in _prose_sentences(text, pos, block_start):
            spans.extend(_split_long(text, s, e, max_chars) if e - s > max_chars else [(s, e)])
        if block_end > block_start:
            spans.extend(_split_long(text, block_start, block_end, max_chars))
        pos = block_end
    return spans


def paragraph_ends(text: str, start: int, end: int) -> list[int]:
    """Sorted offsets in ``(start, end]`` where a paragraph ends (just after its last character)."""
    return list(_ends_before(_BLANK_LINE, text, start, end))


def sentence_ends(text: str, start: int, end: int) -> list[int]:
    """Sorted offsets in ``(start, end]`` just after a sentence's last character.

    A cheap scan for cut points (the chunkers call it on a window): it applies the same
    punctuation, starter and abbreviation rules as :func:`sentence_spans`, plus line ends
    before list items, headings and table rows.
    """
    ends = list(_sentence_stops(text, start, end, len(text)))
    ends.extend(_ends_before(_BLOCK_LINE, text, start, end))
    ends.extend(m.end() for m in _HEADING_LINE_END.finditer(text, start, end))
    return sorted(set(ends))
