"""Markdown section tree: ATX (``#`` .. ``######``) and setext (``===`` / ``---``) headings.

Only the lines that could matter (headings, underlines, code fences) are looked at in Python;
a single multi-line regex finds them, so parsing runs at regex speed on large documents.
"""

from __future__ import annotations

import re

from ragloom.types import Section

# Lines that can open or close a fence, be an ATX heading, or underline a setext heading.
_LINE = (
    r" {0,3}(?:(?P<fence>`{3,}|~{3,})[^\n]*"
    r"|(?P<atx>#{1,6})(?:[ \t][^\n]*)?"
    r"|(?P<setext>=+|-+)[ \t]*)(?=\n|\Z)"
)
_CANDIDATE = re.compile(_LINE)
# A cheap scan for lines that start with one of the marker characters; only those are
# matched against the full pattern. Starting from the newline gives the regex engine a
# literal to look for, several times faster than a MULTILINE ``^`` tried at every position.
_MARKER_LINE = re.compile(r"\n {0,3}[`~#=-]")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_NON_SPACE = re.compile(r"\S")
_NOT_SETEXT_TITLE = re.compile(r"^(?: {4,}|\t| {0,3}(?:[-+*>]|\d{1,9}[.)])(?:[ \t]|$)| {0,3}\|)")
_INLINE_MARKUP = re.compile(r"\[([^\]]*)\]\([^)]*\)|[*_`]+")


def clean_heading(raw: str) -> str:
    """Heading text without closing hashes, emphasis markers or link targets."""
    text = raw.strip()
    if "#" in text:
        text = _ATX_CLOSING.sub("", text)
    if "[" in text or "*" in text or "_" in text or "`" in text:
        text = _INLINE_MARKUP.sub(lambda m: m.group(1) or "", text)
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
