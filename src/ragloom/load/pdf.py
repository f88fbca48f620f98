"""PDF to Markdown with pdfminer.six: text boxes become paragraphs, larger or bold lines
become headings (their level from the rank of their font size)."""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date

from pdfminer.high_level import extract_pages
from pdfminer.layout import LAParams, LTChar, LTTextContainer
from pdfminer.pdfdocument import PDFDocument
from pdfminer.pdfparser import PDFParser

_SPACES = re.compile(r"[ \t\u00a0]{2,}")
#: The page number that ends a table-of-contents line (see :func:`is_toc_line`).
_PAGE_NUMBER = re.compile(r"(?:\d{1,4}|[ivxlc]{1,6})$", re.IGNORECASE)
#: Fonts that set code, whatever their size: such a line is never a heading or a title.
_MONOSPACE = re.compile(r"mono|courier|consol|menlo|inconsolata|\bcode|fixed", re.IGNORECASE)
#: Lines that read as code even in a proportional font: prompts, statements, calls, braces.
_CODE_LIKE = re.compile(
    r"^(?:\$ |>>> |#!|//|/\*|(?:import|from|def|class|return|const|let|var|function|public|private)\s)"
    r"|[{};]\s*+$|^[\w.]+\([^)]*\)\s*$|(?<!\w)\w++\s*+=\s*\S"
)
#: A line counts as a heading when its font is this much larger than the body text.
HEADING_RATIO = 1.08
MAX_HEADING_CHARS = 120


@dataclass
class _Line:
    text: str
    size: float
    bold: bool
    mono: bool
    page: int
    top: float
    bottom: float


class TextLimitExceeded(Exception):
    """The PDF's text passed ``max_chars`` (pages after that point are not read)."""

    def __init__(self, chars: int) -> None:
        super().__init__(f"more than {chars} characters")
        self.chars = chars


def _lines(data: bytes, max_chars: int | None = None) -> list[_Line]:
    lines: list[_Line] = []
    total = 0
    for number, page in enumerate(extract_pages(io.BytesIO(data), laparams=LAParams())):
        if max_chars is not None and total > max_chars:
            raise TextLimitExceeded(total)
        for element in page:
            if not isinstance(element, LTTextContainer):
                continue
            for line in element:
                chars = [c for c in line if isinstance(c, LTChar)] if hasattr(line, "__iter__") else []
                text = _SPACES.sub(" ", line.get_text()).strip()
                if not text or not chars:
                    continue
                size = Counter(round(c.size, 1) for c in chars).most_common(1)[0][0]
                bold = sum("Bold" in c.fontname or "Black" in c.fontname for c in chars) > len(chars) / 2
                mono = sum(bool(_MONOSPACE.search(c.fontname)) for c in chars) > len(chars) / 2
                lines.append(_Line(text, size, bold, mono, number, line.y1, line.y0))
                total += len(text) + 1
    if max_chars is not None and total > max_chars:
        raise TextLimitExceeded(total)
    return lines


def _continues(prev: _Line | None, line: _Line) -> bool:
    """Whether ``line`` continues the paragraph that ``prev`` ends: same size, and close
    below it on the same page (or at the top of the next page mid-sentence)."""
    if prev is None or abs(prev.size - line.size) > 0.5:
        return False
    if line.page != prev.page:
        return not prev.text.endswith((".", "!", "?", ":"))
    gap = prev.bottom - line.top
    return -line.size < gap < line.size * 0.8


_PDF_DATE = re.compile(r"(?:D:)?(\d{4})(\d{2})(\d{2})")


def metadata_date(data: bytes) -> str | None:
    """The PDF's creation date (``CreationDate``, else ``ModDate``) as ``YYYY-MM-DD``, or None."""
    try:
        doc = PDFDocument(PDFParser(io.BytesIO(data)))
        infos = list(doc.info)
    except Exception:  # noqa: BLE001 - pdfminer raises many types for bad input; no date then
        return None
    for key in ("CreationDate", "ModDate"):
        for info in infos:
            raw = info.get(key)
            text = raw.decode("latin-1", "replace") if isinstance(raw, bytes) else raw if isinstance(raw, str) else ""
            m = _PDF_DATE.match(text.strip())
            if m:
                try:
                    return date(int(m[1]), int(m[2]), int(m[3])).isoformat()
                except ValueError:
                    continue
    return None


def _metadata_title(data: bytes) -> str | None:
    doc = PDFDocument(PDFParser(io.BytesIO(data)))
    for info in doc.info:
        raw = info.get("Title")
        if isinstance(raw, bytes):
            if raw.startswith(b"\xfe\xff"):
                return raw[2:].decode("utf-16-be", "replace").strip() or None
            return raw.decode("latin-1").strip() or None
        if isinstance(raw, str):
            return raw.strip() or None
    return None


def is_toc_line(text: str) -> bool:
    """A table-of-contents line: a title, dot leaders (". . . ." or "....", at least four dots)
    and a page number. Read from the end, so that a line of dots costs one pass (a regex for it
    backtracked quadratically)."""
    body = text.rstrip()
    number = _PAGE_NUMBER.search(body)
    if number is None:
        return False
    leader = body[: number.start()]
    dots = leader[len(leader.rstrip(". \t\n\r\f\v\u00a0")):]
    return dots.count(".") >= 4


def pdf_to_markdown(data: bytes, *, max_chars: int | None = None) -> tuple[str, str | None]:
    """(Markdown, title) of a PDF's bytes; :class:`TextLimitExceeded` once the text passes
    ``max_chars`` (checked page by page, so a huge PDF stops early)."""
    # Table-of-contents lines repeat the headings with page numbers: they are not text.
    lines = [line for line in _lines(data, max_chars) if not is_toc_line(line.text)]
    if not lines:
        return "", _metadata_title(data)
    weights: Counter[float] = Counter()
    for line in lines:
        weights[line.size] += len(line.text)
    body = weights.most_common(1)[0][0]

    def is_heading(line: _Line) -> bool:
        if len(line.text) > MAX_HEADING_CHARS or line.text.endswith((".", ",", ";")):
            return False
        if line.mono or _CODE_LIKE.search(line.text):
            return False  # code set large is still code: never a heading, so never the title
        return line.size >= body * HEADING_RATIO or (line.bold and line.size >= body)

    heading_sizes = sorted({line.size for line in lines if is_heading(line)}, reverse=True)
    level = {size: min(i + 1, 6) for i, size in enumerate(heading_sizes)}
    blocks: list[str] = []
    paragraph: list[str] = []
    prev: _Line | None = None

    def flush() -> None:
        if paragraph:
            text = paragraph[0]
            for piece in paragraph[1:]:
                # A line ending in a hyphen continues the word; keep the hyphen (mid-July).
                text = text + piece if text.endswith("-") else f"{text} {piece}"
            blocks.append(text)
            paragraph.clear()

    for line in lines:
        if is_heading(line):
            flush()
            blocks.append("#" * level[line.size] + " " + line.text)
            prev = None  # a heading ends any paragraph
            continue
        if not _continues(prev, line):
            flush()
        paragraph.append(line.text)
        prev = line
    flush()
    title = _metadata_title(data)
    return "\n\n".join(blocks) + "\n", title
