"""Markdown section tree: ATX (``#`` .. ``######``) and setext (``===`` / ``---``) headings.

Only the lines that could matter (headings, underlines, code fences) are looked at in Python;
a single multi-line regex finds them, so parsing runs at regex speed on large documents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragloom.types import Section

# Lines that can open or close a fence, be an ATX heading, or underline a setext heading.
_LINE = (
    r" {0,3}(?:(?P<fence>`{3,}|~{3,})[^\n]*"
    r"|(?P<atx>#{1,6})(?:[ \t][^\n]*)?"
    r"|(?P<setext>=++|-++)[ \t]*+)(?=\n|\Z)"
)
_CANDIDATE = re.compile(_LINE)
# A cheap scan for lines that start with one of the marker characters; only those are
# matched against the full pattern. Starting from the newline gives the regex engine a
# literal to look for, several times faster than a MULTILINE ``^`` tried at every position.
_MARKER_LINE = re.compile(r"\n {0,3}[`~#=-]")
_ATX_CLOSING = re.compile(r"(?:^|(?<![ \t])[ \t]+)#++[ \t]*+$")
_NON_SPACE = re.compile(r"\S")
_NOT_SETEXT_TITLE = re.compile(r"^(?: {4,}|\t| {0,3}(?:[-+*>]|\d{1,9}[.)])(?:[ \t]|$)| {0,3}\|)")
# Inline markup of a heading: code spans (kept verbatim), images and links (their text),
# Sphinx roles before a code span (":mod:`venv`"), and runs of emphasis characters.
_INLINE = re.compile(
    r"(?P<role>(?<![^\s(\[/])(?::[\w.+-]+)+:(?=`))"
    r"|(?<!`)(?P<ticks>`++)(?P<code>.+?)(?<!`)(?P=ticks)(?!`)"
    r"|!?\[(?P<label>[^\][]*)\]\((?:[^()\"']|\([^()]*\)|\"[^\"]*\"|'[^']*')*\)"
    r"|(?P<dunder>(?<!\w)__[^\W_]\w*__(?!\w))"
    r"|(?P<delim>\*+|_+)"
)


def _flanks(text: str, start: int, end: int) -> tuple[bool, bool]:
    """Whether the delimiter run ``text[start:end]`` can open and can close emphasis:
    CommonMark's flanking rules, with punctuation as a boundary, and (unlike CommonMark for
    ``*``) never inside a word: in technical headings ``nf_conntrack_*`` and ``a*b*c`` are text."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    opens = not after.isspace() and not before.isalnum()
    closes = not before.isspace() and not after.isalnum()
    return opens, closes


def _emphasis_delimiters(text: str, runs: list[tuple[int, int]]) -> set[int]:
    """Starts of the runs that pair up as emphasis; an unpaired run is text.

    Runs pair with the nearest earlier opener of the same character and length.
    """
    paired: set[int] = set()
    openers: list[tuple[int, int]] = []
    for start, end in runs:
        opens, closes = _flanks(text, start, end)
        match = next((i for i in range(len(openers) - 1, -1, -1) if closes
                      and text[openers[i][0]:openers[i][1]] == text[start:end]), None)
        if match is not None:
            paired.update((openers[match][0], start))
            del openers[match:]
        elif opens:
            openers.append((start, end))
    return paired


def clean_heading(raw: str) -> str:
    """A heading's text as a reader sees it: no closing hashes, emphasis markers, link targets
    or code-span backticks. Code spans keep their text verbatim, and so do underscores and
    asterisks inside words (``my_setting_name``, ``__init__``, ``nf_conntrack_*``)."""
    text = raw.strip()
    if "#" in text:
        text = _ATX_CLOSING.sub("", text)
    if any(c in text for c in "[*_`:"):
        matches = list(_INLINE.finditer(text))
        runs = [(m.start(), m.end()) for m in matches if m.group("delim")]
        emphasis = _emphasis_delimiters(text, runs) if runs else set()
        out: list[str] = []
        at = 0
        for m in matches:
            out.append(text[at : m.start()])
            at = m.end()
            if m.group("role") is not None:
                continue
            if m.group("dunder") is not None:  # Python's __init__, not strong emphasis
                out.append(m.group(0))
                continue
            if m.group("code") is not None:
                code = m.group("code")
                # CommonMark: one space on both sides of a code span is padding.
                out.append(code[1:-1] if len(code) > 2 and code[0] == code[-1] == " " and code.strip() else code)
            elif m.group("delim") is not None:
                if m.start() not in emphasis:
                    out.append(m.group(0))
            else:  # a link or an image: its text, itself cleaned
                out.append(clean_heading(m.group("label") or ""))
        out.append(text[at:])
        text = "".join(out)
    return " ".join(text.split())


def _headings(text: str) -> list[tuple[int, int, int, str]]:
    """(line start, body start, level, title) of every heading outside code fences."""
    found: list[tuple[int, int, int, str]] = []
    fence: str | None = None  # the opening fence characters while inside a fenced block
    starts = [0] + [m.start() + 1 for m in _MARKER_LINE.finditer(text)]
    for line_start in starts:
        m = _CANDIDATE.match(text, line_start)
        if m is None:
            continue
        line_end = m.end()
        body_start = line_end + 1 if line_end < len(text) else line_end
        marker = m.group("fence")
        if fence is not None:
            # Inside a fence only a closing fence matters: same character, at least as long,
            # and nothing after it but spaces.
            if marker and marker[0] == fence[0] and len(marker) >= len(fence):
                if not text[m.start("fence") + len(marker) : line_end].strip():
                    fence = None
            continue
        if marker:
            if marker[0] == "`" and "`" in text[m.end("fence") : line_end]:
                continue  # a backtick fence's info string may not contain backticks
            fence = marker
            continue
        if m.group("atx"):
            level = len(m.group("atx"))
            title = clean_heading(text[m.end("atx") : line_end])
            found.append((line_start, body_start, level, title))
            continue
        # A setext underline: the previous line must be a non-blank paragraph line.
        if line_start == 0:
            continue
        prev_start = text.rfind("\n", 0, line_start - 1) + 1
        prev_line = text[prev_start : line_start - 1]
        if not prev_line.strip() or _NOT_SETEXT_TITLE.match(prev_line) or _CANDIDATE.fullmatch(prev_line):
            continue
        if found and found[-1][1] > prev_start:
            continue  # the title line is itself part of the previous heading
        level = 1 if m.group("setext")[0] == "=" else 2
        found.append((prev_start, body_start, level, clean_heading(prev_line)))
    return found


def first_title(text: str, *, level: int = 1) -> str | None:
    """The text of the first heading of ``level`` (outside code fences), also when no text
    follows it before the next heading (a title directly above its first subsection)."""
    return next((title for _, _, lv, title in _headings(text) if lv == level and title), None)


def parse_sections(text: str) -> list[Section]:
    """Split ``text`` into sections with heading paths; sections with no text are skipped.

    Text before the first heading is its own section (level 0, empty path); a document with no
    heading is one section. A section's span runs from its heading line to the next heading, so
    the heading line is part of the section's text.
    """
    headings = _headings(text)
    sections: list[Section] = []
    first = headings[0][0] if headings else len(text)
    if _NON_SPACE.search(text, 0, first):
        sections.append(Section(0, 0, "", (), 0, first, 0))
    path: tuple[str, ...] = ()  # titles of the open headings
    levels: tuple[int, ...] = ()
    bounds = [h[0] for h in headings[1:]] + [len(text)] if headings else []
    for (start, body, level, title), end in zip(headings, bounds, strict=True):
        keep = sum(1 for lv in levels if lv < level)  # ancestors: headings of a higher level
        path, levels = path[:keep] + (title,), levels[:keep] + (level,)
        body = min(body, end)
        if _NON_SPACE.search(text, body, end):
            sections.append(Section(len(sections), level, title, tuple(t for t in path if t), start, end, body))
    return sections


#: Defaults of the token and boundary strategies (and of ``[chunking]``): join small sibling
#: sections, and a section under this many characters joins its neighbour.
MERGE_SECTIONS = False
MIN_CHUNK_CHARS = 150


def _joined_path(a: tuple[str, ...], b: tuple[str, ...], *, siblings: bool) -> tuple[str, ...]:
    """The path of a span covering sections ``a`` and ``b``: what they share, except that a
    heading directly over its first subsection (``a`` holds ``b``, and ``a`` is one section, not
    several siblings) takes the subsection's path."""
    if not siblings and b[: len(a)] == a:
        return b
    shared = 0
    while shared < min(len(a), len(b)) and a[shared] == b[shared]:
        shared += 1
    return a[:shared]


def _join(first: Section, last: Section, *, siblings: bool = False) -> Section:
    """One section spanning ``first`` to ``last``, at the level of the path it takes."""
    path = _joined_path(first.path, last.path, siblings=siblings)
    if path == last.path:
        level = last.level
    elif path == first.path:
        level = first.level
    else:  # their shared parent: a level above the shallower of the two
        level = max(0, min(first.level, last.level) - 1)
    return Section(first.index, level, path[-1] if path else "", path, first.start, last.end, first.body_start)


def merge_sections(text: str, sections: Sequence[Section], *, limit_chars: int = 0,
                   min_chars: int = 0) -> list[Section]:
    """Small sections put together, the way Docling's hybrid chunker merges undersized peers.

    - Consecutive sections under the same parent (siblings: the same heading path but their
      own title) are joined while the joined span stays within ``limit_chars`` (0: never).
    - A section whose text is still shorter than ``min_chars`` (a heading over one include
      line, a lone anchor) joins the next section, or the previous one at the end of the
      document: on its own it would be a chunk that matches a query's words and says nothing.
      A section that is its heading alone (nothing under it before the next heading) joins
      whatever ``min_chars`` is, 0 included: a heading belongs to the content it heads.

    Spans stay exact and contiguous: a joined section runs from the first one's start to the
    last one's end, headings between them included. Its path is the parent the siblings share
    (see :func:`_joined_path`).
    """
    if len(sections) < 2:
        return list(sections)
    groups: list[Section] = []
    joined: list[bool] = []  # whether each group is several siblings (its path is their parent's)
    family: tuple[int, tuple[str, ...]] | None = None  # (level, parent path) of the last group's sections
    for section in sections:
        kin = (section.level, section.path[:-1])
        if limit_chars > 0 and groups and kin == family and section.end - groups[-1].start <= limit_chars:
            groups[-1], joined[-1] = _join(groups[-1], section, siblings=True), True
            continue
        groups.append(section)
        joined.append(False)
        family = kin
    merged: list[Section] = []
    pending: Section | None = None  # a short section waiting to join the next one
    pending_joined = False
    for section, was_joined in zip(groups, joined, strict=True):
        if pending is not None:
            section = _join(pending, section, siblings=pending_joined or was_joined)
            pending, was_joined = None, True  # several sections now: the ancestor rule is for one heading
        bare = _NON_SPACE.search(text, section.body_start, section.end) is None
        if bare or (min_chars > 0 and len(text[section.start : section.end].strip()) < min_chars):
            pending, pending_joined = section, was_joined
            continue
        merged.append(section)
    if pending is not None:
        if merged:
            merged[-1] = _join(merged[-1], pending, siblings=True)
        else:
            merged.append(pending)
    return merged
