"""Code in text: the definitions enclosing a position of source code, and where Markdown (or
reST) text holds code.

A chunk of code says more about itself with its place in the file: ``impl DiffExecutor > fn
new`` is to a function what a heading path is to a paragraph. Definitions are found by regex
for the common languages; nesting comes from indentation (Python, YAML-like) or from brace
depth (C-like languages).

Code in prose makes no claims, names no entities and cites nothing: :func:`fenced_blocks`,
:func:`literal_blocks` (reST ``::`` blocks) and :func:`inline_code_spans` find it,
:func:`code_regions` merges what a caller needs, and :func:`blank_spans` / :func:`mask_code`
blank it out with every offset kept.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

from ragloom.errors import InvalidParameterError

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".rs": "rust", ".go": "go", ".js": "js", ".jsx": "js", ".ts": "js",
    ".tsx": "js", ".java": "java", ".kt": "java", ".scala": "java", ".c": "c", ".h": "c", ".cc": "c", ".cpp": "c",
    ".hpp": "c", ".cs": "java", ".rb": "ruby", ".php": "js", ".swift": "java",
}

_DEFINITION = {
    "python": re.compile(r"^(?P<indent>[ \t]*)(?:async\s+)?(?P<kind>def|class)\s+(?P<name>\w+)", re.M),
    # The name ends with a non-blank (blanks after it are the separator's): "[\w:<>, ]+?\s*"
    # tried every split of a run of blanks, quadratic in a long line.
    "rust": re.compile(r"^(?P<indent>[ \t]*)(?:pub(?:\([^)\n]*\))?\s+)?(?:async\s+|unsafe\s+|const\s+)*"
                       r"(?P<kind>fn|struct|enum|trait|impl|mod)\b(?:<[^>{\n]*>)?\s*"
                       r"(?P<name>[\w:<>,](?:[\w:<>, ]*?[\w:<>,])?)[ \t]*+(?:\(|\{|where|$|;|<)", re.M),
    "go": re.compile(r"^(?P<indent>[ \t]*)(?P<kind>func|type)\s+(?:\([^)]*\)\s*)?(?P<name>\w+)", re.M),
    "js": re.compile(r"^(?P<indent>[ \t]*)(?:export\s+)?(?:default\s+)?(?:async\s+)?"
                     r"(?P<kind>function|class|interface)\s+(?P<name>\w+)", re.M),
    "java": re.compile(r"^(?P<indent>[ \t]*)(?:(?:public|private|protected|static|final|abstract|override|open|"
                       r"internal|sealed|data)\s+)*(?P<kind>class|interface|enum|record|fun|object)\s+(?P<name>\w+)", re.M),
    "c": re.compile(r"^(?P<indent>[ \t]*)(?P<kind>struct|class|namespace|enum)\s+(?P<name>\w+)", re.M),
    "ruby": re.compile(r"^(?P<indent>[ \t]*)(?P<kind>def|class|module)\s+(?P<name>[\w.]+)", re.M),
}


def language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None


def enclosing_symbols(text: str, offset: int, language: str) -> tuple[str, ...]:
    """The definitions that enclose ``offset`` (outermost first), plus the one starting at it."""
    pattern = _DEFINITION.get(language)
    if pattern is None:
        return ()
    stack: list[tuple[int, str, int]] = []  # (nesting level, label, position)
    uses_braces = language not in ("python", "ruby")
    for m in pattern.finditer(text, 0, min(len(text), offset + 200)):
        if m.start() > offset and text[offset : m.start()].strip():
            break  # only a definition at the very start of the chunk counts, not later ones
        label = f"{m.group('kind')} {' '.join(m.group('name').split())}"
        if uses_braces:
            level = text.count("{", 0, m.start()) - text.count("}", 0, m.start())
        else:
            level = len(m.group("indent").expandtabs(4))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, label, m.start()))
    if uses_braces:
        depth = text.count("{", 0, offset) - text.count("}", 0, offset)
        # A definition whose braces have closed before the offset no longer encloses it.
        stack = [s for s in stack if s[2] >= offset or s[0] < depth]
    else:
        line = text[text.rfind("\n", 0, offset) + 1 : offset + 80]
        indent = len(line) - len(line.lstrip(" \t")) if line.strip() else 0
        stack = [s for s in stack if s[2] >= offset or s[0] < indent or (s[0] == indent and s[2] >= offset)]
    return tuple(label for _, label, _ in stack)


# -- code in Markdown (and reST) text ---------------------------------------------------------
#
# Spans are (start, end) character offsets into the text, end exclusive. The finders below are
# the one place that decides where a document, a chunk or a written answer holds code rather
# than prose: contradiction detection skips the sentences inside, entity extraction and the
# citation checker blank it out.

#: A line that starts with a fence marker (three or more backticks or tildes after blanks): an
#: opening or closing fence, or a line that only looks like one (```` ```x``` ````).
FENCE_MARKER = re.compile(r"^[ \t]*(?:`{3,}|~{3,})", re.MULTILINE)
_FENCE_OPENING = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)", re.MULTILINE)
_BACKTICKS = re.compile(r"`+")
#: An info string that starts with punctuation right after the marker: no language name.
_GLUED = re.compile(r"[^\w\s{.]")
_TITLE = re.compile(r"[^\W_]")
#: The reST directives whose indented body is code (a ``.. note::`` body is prose).
_CODE_DIRECTIVE = re.compile(r"\.\. (?:code-block|code|sourcecode|literalinclude|doctest|testcode|testoutput|highlight)::")


def _closing_fence(fence: str) -> re.Pattern[str]:
    return re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)


def _underlines(text: str, line_start: int, length: int) -> bool:
    """Whether a bare fence of ``length`` characters at ``line_start`` underlines the line
    above it, a reST section title (``Usage`` over ``~~~~~``): that line has a letter or a
    digit, is no longer than the fence, and is not a fence itself (``---`` above a fence is a
    rule, not a title)."""
    if line_start == 0:
        return False
    above = text[text.rfind("\n", 0, line_start - 1) + 1 : line_start - 1].strip()
    return len(above) <= length and _TITLE.search(above) is not None and FENCE_MARKER.match(above) is None


def fenced_blocks(text: str, *, literal: Sequence[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """Fenced code blocks, sorted and disjoint: each from the start of its opening fence line
    to the end of its closing fence line (the newline after it excluded), or to the end of the
    text when it is never closed.

    CommonMark's rules, except that a fence may be indented any amount (list items indent
    theirs, and no list structure is parsed here): a fence is three or more backticks or
    tildes; it is closed by a line of the same character, at least as long, with nothing else
    on it but blanks (so a ``~~~`` or a shorter fence inside a block is code, not its end); a
    backtick fence whose info string holds a backtick (```` ```x``` ````) is inline code, not a
    fence. Since an unclosed fence runs to the end, three kinds of line that only look like an
    opening fence are not one: a line inside a reST literal block (``literal``: the text's
    :func:`literal_blocks`, found when not given), whose ASCII art and traceback markers are
    verbatim; a marker glued to punctuation (``~~~~^^^^``, a Python traceback's); and a bare
    marker at least as long as the text line right above it, that line's reST section
    underline (``Usage`` over ``~~~~~``).
    """
    literal = literal_blocks(text) if literal is None else literal
    literal_starts = [lo for lo, _ in literal]
    blocks: list[tuple[int, int]] = []
    pos = 0
    while (m := _FENCE_OPENING.search(text, pos)) is not None:
        fence, info = m.group("fence"), m.group("info")
        if (fence[0] == "`" and "`" in info or _GLUED.match(info)
                or not info.strip() and _underlines(text, m.start(), len(fence))
                or _inside(literal, literal_starts, m.start())):
            pos = m.end()
            continue
        close = _closing_fence(fence).search(text, m.end())
        end = len(text) if close is None else close.end()
        blocks.append((m.start(), end))
        pos = end
    return blocks


def _inside(spans: Sequence[tuple[int, int]], starts: Sequence[int], offset: int) -> bool:
    i = bisect.bisect_right(starts, offset) - 1
    return i >= 0 and spans[i][0] <= offset < spans[i][1]


def literal_blocks(text: str) -> list[tuple[int, int]]:
    """reST literal blocks, sorted and disjoint: the lines indented deeper than a line ending in
    ``::`` or than a code directive (``.. code-block:: python``), from the start of the first
    such line that is not blank to the end of the last (its newline excluded). A directive such
    as ``.. note::`` has prose for its body, not code.
    """
    blocks: list[tuple[int, int]] = []
    if "::" not in text:
        return blocks
    pos, opener = 0, None  # opener: the indentation of the line whose block we are in
    start = end = -1  # the block's first and last non-blank line, so far
    for line in text.splitlines(keepends=True):
        body = line.strip()
        indent = len(line) - len(line.lstrip(" \t"))
        if opener is not None and body and indent <= opener:
            opener = None
            if start >= 0:
                blocks.append((start, end))
            start = end = -1
        if opener is not None:
            if body:
                start = pos if start < 0 else start
                end = pos + len(line.rstrip("\r\n"))
        elif _CODE_DIRECTIVE.match(body) or body.endswith("::") and not body.startswith(".. "):
            opener = indent
        pos += len(line)
    if start >= 0:
        blocks.append((start, end))
    return blocks


def inline_code_spans(text: str) -> list[tuple[int, int]]:
    """Inline code spans, sorted and disjoint, backticks included: a run of backticks up to
    the next run of the same length (CommonMark's code spans, ``` ``a`b`` ``` included), kept
    within one line; a run after a backslash opens none, and a run left unmatched is text.

    The spans are looked for everywhere, inside fenced blocks too: :func:`code_regions`
    merges them with the blocks.
    """
    runs: list[tuple[int, int, int]] = []  # (start, end, line number)
    line, counted = 0, 0
    for m in _BACKTICKS.finditer(text):
        line += text.count("\n", counted, m.start())
        counted = m.start()
        runs.append((m.start(), m.end(), line))
    # For each run, the next run of the same length on the same line (-1: none), from one pass
    # backwards: a line full of unmatched backticks stays linear.
    following = [-1] * len(runs)
    seen: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        start, end, line = runs[i]
        if i + 1 < len(runs) and runs[i + 1][2] != line:
            seen = {}
        following[i] = seen.get(end - start, -1)
        seen[end - start] = i
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        start = runs[i][0]
        j = following[i]
        if j < 0 or (start and text[start - 1] == "\\"):
            i += 1
            continue
        spans.append((start, runs[j][1]))
        i = j + 1
    return spans


def merge_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` sorted, with overlapping and touching spans joined into one."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def code_regions(text: str, *, literal: bool = True, inline: bool = False) -> list[tuple[int, int]]:
    """Where ``text`` holds code, sorted and disjoint (overlapping kinds merged): its fenced
    blocks, its reST literal blocks (``literal``), its inline code spans (``inline``)."""
    literal_spans = literal_blocks(text)
    spans = fenced_blocks(text, literal=literal_spans)
    if literal:
        spans += literal_spans
    if inline:
        spans += inline_code_spans(text)
    return merge_spans(spans)


_NOT_NEWLINE = re.compile(r"[^\n]")


def blank_spans(text: str, spans: Iterable[tuple[int, int]], fill: str = " ") -> str:
    """``text`` with every character of ``spans`` (which may overlap) but its newlines
    replaced by ``fill``, one character: the length and every offset stay, lines too."""
    if len(fill) != 1:
        raise InvalidParameterError(f"fill ({fill!r}) must be one character")
    parts: list[str] = []
    done = 0
    for lo, hi in merge_spans(spans):
        parts += [text[done:lo], _NOT_NEWLINE.sub(fill, text[lo:hi])]
        done = hi
    parts.append(text[done:])
    return "".join(parts)


def mask_code(text: str, *, literal: bool = False, inline: bool = True, fill: str = " ") -> str:
    """``text`` with its code (:func:`code_regions`; by default fenced blocks and inline code,
    as Markdown renders them) blanked out by :func:`blank_spans`."""
    return blank_spans(text, code_regions(text, literal=literal, inline=inline), fill)
