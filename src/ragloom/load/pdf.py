"""PDF to Markdown with pdfminer.six: text boxes become paragraphs, larger or bold lines
become headings (their level from the rank of their font size), bulleted and numbered lines
become Markdown list items (a bullet glyph that pdfminer put in a box of its own rejoins the
text on its row), rows of short cells aligned in columns become Markdown tables, and running
headers, footers and page numbers are dropped.

pdfminer's text boxes keep the reading order of multi-column pages, so this module keeps
their order and looks across boxes only for lines that share a row: a detached bullet, the
cells of a table, a tag set at the right margin."""

from __future__ import annotations

import io
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date

from pdfminer.high_level import extract_pages
from pdfminer.layout import LAParams, LTChar, LTTextContainer
from pdfminer.pdfdocument import PDFDocument
from pdfminer.pdfparser import PDFParser

_WHITESPACE = " \t\u00a0"
_SPACES = re.compile(r"[ \t\u00a0]{2,}")
#: How a list item can start: a glyph, a digit, "a)", "B.", an unmapped glyph. Lines that start
#: otherwise skip the slower reading of where each character is.
_MAYBE_ITEM = re.compile(r"[^\w\s]|\d|[a-z]\)|[A-Z]{1,4}[.)]|\(cid:")
#: The page number that ends a table-of-contents line (see :func:`is_toc_line`).
_PAGE_NUMBER = re.compile(r"(?:\d{1,4}|[ivxlc]{1,6})$", re.IGNORECASE)
#: Fonts that set code, whatever their size: such a line is never a heading or a title
#: (TeX's typewriter fonts are CMTT, CMSLTT and the like; Ghostscript's Courier is NimbusMon).
_MONOSPACE = re.compile(r"mono|courier|consol|menlo|inconsolata|\bcode|fixed|cm\w{0,2}tt\d|nimbusmon",
                        re.IGNORECASE)
#: Lines that read as code even in a proportional font: prompts, statements, calls, braces.
_CODE_LIKE = re.compile(
    r"^(?:\$ |>>> |#!|//|/\*|(?:import|from|def|class|return|const|let|var|function|public|private)\s)"
    r"|[{};]\s*+$|^[\w.]+\([^)]*\)\s*$|(?<!\w)\w++\s*+=\s*\S"
)
#: A C declaration's pointer ("char * name", "const char ** out"): code, not a title.
_POINTER = re.compile(r"\w \*+ ?\w")
#: A line counts as a heading when its font is this much larger than the body text.
HEADING_RATIO = 1.08
MAX_HEADING_CHARS = 120
#: Share of the page height, at its top and at its bottom, where running headers, footers and
#: page numbers are looked for.
BAND = 0.1
#: Glyphs that only ever mark a list item (the private-use ones are Symbol's and Wingdings'
#: bullets as Word embeds them).
_BULLETS = frozenset("•●▪■◦○◆◇►▸‣⁃∙⦁⚫⬤❖➢➤✓✔□❑\uf0b7\uf0a7\uf0a8\uf0d8\uf076\uf0fc\uf06e\uf071\uf0e0")
#: Marks that start a list item only where a new line could start one (not mid-paragraph).
_WEAK_BULLETS = frozenset("-–—*+·")
#: Fonts whose glyphs are pictures, whatever letter they are coded as (ZapfDingbats' "l" is ●).
_DINGBATS = re.compile(r"dingbat|wingding|webding", re.IGNORECASE)
_CID = re.compile(r"\(cid:\d+\)")
#: A numbered or lettered item: "1.", "2)", "a)", "(b)", "iv)", "B.", "IV.".
_NUMBERED = re.compile(r"(?:(?P<n>\d{1,3})[.)]|\(?(?:[a-z]|[ivx]{1,4})\)|(?:[A-Z]|[IVX]{1,4})[.)])(?=\s+\S)")
#: A line that is only a page number: "3", "iv", "Page 3", "Page 3 of 10", "- 3 -", "3/10".
_PAGE_LABEL = re.compile(
    r"[-–—‒|]?\s*(?:(?:page|p\.|pg\.?|seite|página|pagina)\s*)?(?:\d{1,4}|[ivxlcdm]{1,7})"
    r"(?:\s*(?:of|/|von|de|sur|di)\s*\d{1,4})?\s*[-–—‒|]?",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
_SECTION_NUMBER = re.compile(r"(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?")


@dataclass(eq=False)
class _Line:
    text: str
    size: float
    bold: bool
    mono: bool
    page: int
    top: float
    bottom: float
    x0: float = 0.0
    x1: float = 0.0
    #: Which of pdfminer's text boxes on the page holds the line, and whether it opens it.
    box: int = 0
    box_start: bool = False
    #: How many lines that box holds (lines dropped later, such as contents lines, included).
    box_lines: int = 1
    #: The x of each character of ``text``.
    xs: list[float] = field(default_factory=list, repr=False)
    #: The list marker found for the line ("-", "3.", "a)"), and where the item's text starts.
    marker: str | None = None
    item_x: float = 0.0
    #: Set when the line stands for a whole table (its rows of cells).
    table: list[list[str]] | None = None

    @property
    def height(self) -> float:
        return max(self.top - self.bottom, 0.1)


class TextLimitExceeded(Exception):
    """The PDF's text passed ``max_chars`` (pages after that point are not read)."""

    def __init__(self, chars: int) -> None:
        super().__init__(f"more than {chars} characters")
        self.chars = chars


def _text_of(line: object) -> tuple[str, list[float], list[LTChar]]:
    """The text of one pdfminer line with runs of spaces collapsed, the x of each of its
    characters, and its glyphs."""
    chars: list[LTChar] = []
    raw: list[tuple[str, float]] = []
    x = 0.0
    for item in line:  # type: ignore[attr-defined]
        if isinstance(item, LTChar):
            chars.append(item)
            x = item.x0
            raw.extend((ch, x) for ch in item.get_text())
            x = item.x1
        else:  # an LTAnno: a space or line end that pdfminer inferred from the gaps
            raw.extend((ch, x) for ch in item.get_text() if ch != "\n")
    text: list[str] = []
    xs: list[float] = []
    i = 0
    while i < len(raw):
        ch, at = raw[i]
        if ch in _WHITESPACE:
            j = i
            while j < len(raw) and raw[j][0] in _WHITESPACE:
                j += 1
            if text:  # leading space is dropped
                text.append(ch if j - i == 1 else " ")
                xs.append(at)
            i = j
            continue
        text.append(ch)
        xs.append(at)
        i += 1
    while text and text[-1] in _WHITESPACE:
        text.pop()
        xs.pop()
    return "".join(text), xs, chars


def _lines(data: bytes, max_chars: int | None = None, laparams: LAParams | None = None,
           ) -> tuple[list[_Line], list[float]]:
    """The text lines of every page in pdfminer's reading order, and each page's height."""
    lines: list[_Line] = []
    heights: list[float] = []
    total = 0
    for number, page in enumerate(extract_pages(io.BytesIO(data), laparams=laparams or LAParams())):
        if max_chars is not None and total > max_chars:
            raise TextLimitExceeded(total)
        heights.append(float(page.height))
        for box, element in enumerate(page):
            if not isinstance(element, LTTextContainer):
                continue
            first = True
            opened = len(lines)
            for line in element:
                if not hasattr(line, "__iter__"):
                    continue
                chars = [c for c in line if isinstance(c, LTChar)]
                text = _SPACES.sub(" ", line.get_text()).strip()
                if not text or not chars:
                    continue
                xs: list[float] = []
                dingbat = _DINGBATS.search(chars[0].fontname) is not None
                if dingbat or _MAYBE_ITEM.match(text):  # only a list item needs the x of its characters
                    text, xs, chars = _text_of(line)
                if dingbat and (len(text) == 1 or text[1] in _WHITESPACE):
                    text = "•" + text[1:]  # a picture glyph: the letter it is coded as means nothing
                size = Counter(round(c.size, 1) for c in chars).most_common(1)[0][0]
                bold = sum("Bold" in c.fontname or "Black" in c.fontname for c in chars) > len(chars) / 2
                mono = sum(bool(_MONOSPACE.search(c.fontname)) for c in chars) > len(chars) / 2
                entry = _Line(text, size, bold, mono, number, line.y1, line.y0, line.x0, line.x1,
                              box=box, box_start=first, xs=xs)
                lines.append(entry)
                first = False
                total += len(text) + 1
            for entry in lines[opened:]:
                entry.box_lines = len(lines) - opened
    if max_chars is not None and total > max_chars:
        raise TextLimitExceeded(total)
    return lines, heights


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


def is_page_label(text: str) -> bool:
    """A line that is only a page number: "3", "xiv", "Page 3 of 10", "- 3 -", "3 / 10"."""
    return len(text) <= 24 and _PAGE_LABEL.fullmatch(text.strip()) is not None


# -- running headers and footers ------------------------------------------------------------


def _same_row(a: _Line, b: _Line) -> bool:
    overlap = min(a.top, b.top) - max(a.bottom, b.bottom)
    return overlap >= 0.5 * min(a.height, b.height)


def _running_lines(lines: list[_Line], heights: list[float], body: float) -> set[int]:
    """The ids of the lines that are page furniture: lines in a band slot (the same distance
    from the page's top or bottom edge) that holds repeated text or page numbers on at least
    half the pages, and at least three: running headers and footers, those that change with
    the chapter included; and page numbers in a band with nothing else on their row (a number
    in the last row of a table stays)."""
    pages = len(heights)
    drop: set[int] = set()
    labels: list[_Line] = []
    band_lines: dict[int, list[_Line]] = defaultdict(list)
    # (band, distance from the edge in 2 pt buckets) -> lines
    slots: dict[tuple[str, int], list[_Line]] = defaultdict(list)
    for line in lines:
        height = heights[line.page]
        if line.top >= height * (1 - BAND):
            band, dist = "top", height - line.top
        elif line.bottom <= height * BAND:
            band, dist = "bottom", line.bottom
        else:
            continue
        band_lines[line.page].append(line)
        if is_page_label(line.text) and line.size <= body * 1.5:
            labels.append(line)
        if line.size <= body * HEADING_RATIO:  # larger lines are headings set near the edge
            slots[(band, round(dist / 2))].append(line)
    if pages >= 3:
        merged: dict[tuple[str, int], list[_Line]] = defaultdict(list)
        for (band, key), members in sorted(slots.items()):
            # neighbouring buckets are one slot: baselines drift by a fraction of a point
            home = next((k for k in ((band, key - 1), (band, key - 2)) if k in merged), (band, key))
            merged[home].extend(members)
        need = max(3, math.ceil(pages / 2))
        for members in merged.values():
            if len({m.page for m in members}) < need:
                continue
            seen: dict[str, set[int]] = defaultdict(set)
            for m in members:
                seen[_DIGITS.sub("#", m.text.casefold())].add(m.page)
            evidence = {m.page for m in members
                        if len(seen[_DIGITS.sub("#", m.text.casefold())]) >= 2 or is_page_label(m.text)}
            if len(evidence) < need:
                continue
            sizes = sorted(m.size for m in members if m.page in evidence)
            typical = sizes[len(sizes) // 2]
            drop.update(id(m) for m in members if abs(m.size - typical) <= 0.6)
    for label in labels:
        mates = [o for o in band_lines[label.page] if o is not label and _same_row(o, label)]
        if all(id(o) in drop or is_page_label(o.text) for o in mates):
            drop.add(id(label))
    return drop


# -- list markers ---------------------------------------------------------------------------


def _strong_bullet(text: str) -> int:
    """The length of a bullet that only ever marks a list item at the start of ``text``
    (0 when there is none)."""
    if text[:1] in _BULLETS:
        return 1
    m = _CID.match(text)
    if m and (m.end() == len(text) or (text[m.end()] in _WHITESPACE and not text[m.end():].lstrip().startswith("(cid:"))):
        return m.end()  # an unmapped glyph alone before the text: a bullet in a private font
    return 0


def _marker(line: _Line, weak_ok: bool) -> tuple[str, int] | None:
    """(Markdown marker, length of the marker in the line's text) of a list item line."""
    text = line.text
    strong = _strong_bullet(text)
    if strong:
        return "-", strong
    if line.mono or not weak_ok:
        return None
    if text[:1] in _WEAK_BULLETS and text[1:2] in _WHITESPACE and text[2:3].strip():
        if text[:1] in "-–—" and is_page_label(text):
            return None
        return "-", 1
    m = _NUMBERED.match(text)
    if m:
        if m["n"] is not None:
            return f"{int(m['n'])}.", m.end()
        return f"- {m.group(0)}", m.end()  # Markdown numbers lists only with digits: the letter stays
    return None


def _item_x(line: _Line, length: int) -> float:
    """Where the text of a list item starts, after its marker of ``length`` characters."""
    rest = len(line.text) - len(line.text[length:].lstrip())
    return line.xs[rest] if rest < len(line.xs) else line.x0


# -- rows: detached bullets, tables, tags at the margin -------------------------------------


def _attach_bullets(page: list[_Line]) -> list[_Line]:
    """Join each bullet glyph that stands alone to the text on its row, to its right (pdfminer
    often boxes the glyph apart from its text); an unmatched one is left as it is."""
    attached: set[int] = set()
    for line in page:
        length = _strong_bullet(line.text)
        if not length or length != len(line.text):
            continue
        mates = [o for o in page if o is not line and o.x0 > line.x0 and _same_row(line, o) and not o.marker
                 and o.x0 - line.x1 < 5 * line.size and not _strong_bullet(o.text)]
        if not mates:
            continue
        text = min(mates, key=lambda o: o.x0)
        text.marker, text.item_x = "-", text.x0
        text.x0 = line.x0  # the item starts at its bullet: nesting is measured from there
        attached.add(id(line))
    return [line for line in page if id(line) not in attached]


#: Cells of a table average at most this many characters (prose set in two columns is longer).
TABLE_CELL_CHARS = 30
MAX_CELL_CHARS = 80


def _rows(page: list[_Line]) -> list[list[_Line]]:
    """The page's lines grouped into rows, top to bottom, each row left to right."""
    rows: list[list[_Line]] = []
    for line in sorted(page, key=lambda o: -(o.top + o.bottom)):
        if rows and _same_row(rows[-1][0], line):
            rows[-1].append(line)
        else:
            rows.append([line])
    for row in rows:
        row.sort(key=lambda o: o.x0)
    return rows


def _cells_apart(row: list[_Line]) -> bool:
    return len(row) >= 2 and all(a.x1 < b.x0 for a, b in zip(row, row[1:], strict=False))


def _tables(page: list[_Line]) -> list[list[list[_Line]]]:
    """Runs of two or more consecutive rows with the same number of cells, each cell in its
    column, the cells short: simple tables without merged or wrapped cells."""
    found: list[list[list[_Line]]] = []
    run: list[list[_Line]] = []

    def close() -> None:
        if len(run) >= 2:
            cells = [c for row in run for c in row]
            code = all(c.mono for c in cells) and any(c.text.endswith((",", ";", "{", "}", "(")) for c in cells)
            if (not code and sum(len(c.text) for c in cells) <= TABLE_CELL_CHARS * len(cells)
                    and max(len(c.text) for c in cells) <= MAX_CELL_CHARS
                    and not any(c.marker or _strong_bullet(c.text) for c in cells)):
                found.append(list(run))
        run.clear()

    for row in _rows(page):
        if not _cells_apart(row):
            close()
            continue
        if run:
            last = run[-1]
            spans = [(min(r[i].x0 for r in run), max(r[i].x1 for r in run)) for i in range(len(last))]
            fits = len(row) == len(last) and all(
                c.x0 < hi + 2 and c.x1 > lo - 2 and (i + 1 == len(row) or c.x1 < spans[i + 1][0])
                for i, (c, (lo, hi)) in enumerate(zip(row, spans, strict=False)))
            near = last[0].bottom - max(c.top for c in row) < 2.5 * max(c.height for c in row)
            if not (fits and near):
                close()
        run.append(row)
    close()
    return found


def _lay_out(page: list[_Line]) -> list[_Line]:
    """One page's lines in reading order, with detached bullets joined to their text, each
    table in one line (at its first cell) and tags set apart on a row joined to the row's text."""
    page = _attach_bullets(page)
    gone: set[int] = set()
    for table in _tables(page):
        cells = [c for row in table for c in row]
        first = min(cells, key=lambda c: page.index(c))
        first.table = [[c.text for c in row] for row in table]
        gone.update(id(c) for c in cells if c is not first)
    page = [line for line in page if id(line) not in gone]
    # A line alone in its box on the row of a line of another box, to its right, and not at the
    # start of a column (as the lines of the next column of a two-column page are): a tag at the
    # margin ("[Function]") or the rest of a justified line that pdfminer boxed apart.
    merged: set[int] = set()
    row_of = {id(line): row for row in _rows(page) for line in row}
    starts: dict[int, list[_Line]] = defaultdict(list)  # lines by where they start, to the point
    for line in page:
        starts[round(line.x0)].append(line)
    for line in page:
        if line.table is not None or line.box_lines != 1 or line.marker:
            continue
        near = (o for x in range(round(line.x0) - 2, round(line.x0) + 3) for o in starts.get(x, ()))
        if any(o is not line and abs(o.top - line.top) < 2.5 * line.height for o in near):
            continue  # a line of a column, with its neighbours above or below
        left = [o for o in row_of[id(line)] if o.box != line.box and o.table is None and id(o) not in merged
                and o.x1 <= line.x0]
        if not left:
            continue
        host = max(left, key=lambda o: o.x1)
        host.text = f"{host.text} {line.text}"
        host.x1 = line.x1
        merged.add(id(line))
    return [line for line in page if id(line) not in merged]


# -- Markdown --------------------------------------------------------------------------------


def _table_markdown(rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    head, *rest = rows
    out = ["| " + " | ".join(cell(c) for c in head) + " |", "|" + " --- |" * len(head)]
    out.extend("| " + " | ".join(cell(c) for c in row) + " |" for row in rest)
    return "\n".join(out)


def pdf_to_markdown(data: bytes, *, max_chars: int | None = None, laparams: LAParams | None = None,
                    ) -> tuple[str, str | None]:
    """(Markdown, title) of a PDF's bytes; :class:`TextLimitExceeded` once the text passes
    ``max_chars`` (checked page by page, so a huge PDF stops early). ``laparams`` are pdfminer's
    layout parameters (its defaults when None)."""
    lines, heights = _lines(data, max_chars, laparams)
    # Table-of-contents lines repeat the headings with page numbers: they are not text; nor are
    # the section numbers that a contents page sets apart from its lines ("3.1", "A").
    toc = Counter(line.page for line in lines if is_toc_line(line.text))
    count = Counter(line.page for line in lines)
    lines = [line for line in lines if not is_toc_line(line.text) and not (
        toc[line.page] >= 3 and toc[line.page] * 3 >= count[line.page] and _SECTION_NUMBER.fullmatch(line.text))]
    if not lines:
        return "", _metadata_title(data)
    weights: Counter[float] = Counter()
    for line in lines:
        weights[line.size] += len(line.text)
    body = weights.most_common(1)[0][0]
    furniture = _running_lines(lines, heights, body)
    by_page: dict[int, list[_Line]] = defaultdict(list)
    for line in lines:
        if id(line) not in furniture:
            by_page[line.page].append(line)
    lines = [line for page in sorted(by_page) for line in _lay_out(by_page[page])]
    if not lines:
        return "", _metadata_title(data)

    def is_heading(line: _Line) -> bool:
        if line.table is not None or line.marker or _strong_bullet(line.text):
            return False  # a list item stays a list item, however it is set
        text = line.text
        if len(text) > MAX_HEADING_CHARS or text.endswith((".", ",", ";", "*", "(")):
            return False
        if text.count("(") != text.count(")") or not any(c.isalpha() for c in text) or _POINTER.search(text):
            return False  # half of a wrapped line, a lone number (a chapter's, in a contents page), C
        if line.mono or _CODE_LIKE.search(line.text):
            return False  # code set large is still code: never a heading, so never the title
        return line.size >= body * HEADING_RATIO or (line.bold and line.size >= body)

    heading_sizes = sorted({line.size for line in lines if is_heading(line)}, reverse=True)
    level = {size: min(i + 1, 6) for i, size in enumerate(heading_sizes)}
    blocks: list[tuple[str, str]] = []  # (kind, Markdown): kind "item" for list items
    paragraph: list[str] = []
    kind = "text"
    prev: _Line | None = None
    #: The open list's items as (bullet x, text x, indent of their text in the Markdown).
    items: list[tuple[float, float, str]] = []
    indent = ""

    def flush() -> None:
        if paragraph:
            text = paragraph[0]
            if kind == "text" and text.startswith("#"):
                text = "\\" + text  # a shell or config comment ("# generated file"), not a heading
            for piece in paragraph[1:]:
                # A line ending in a hyphen continues the word; keep the hyphen (mid-July).
                text = text + piece if text.endswith("-") else f"{text} {piece}"
            blocks.append((kind, text))
            paragraph.clear()

    for line in lines:
        if line.table is not None:
            flush()
            blocks.append(("table", _table_markdown(line.table)))
            prev, items, kind = None, [], "text"
            continue
        if is_heading(line):
            flush()
            blocks.append(("heading", "#" * level[line.size] + " " + line.text))
            prev, items, kind = None, [], "text"  # a heading ends any paragraph and any list
            continue
        weak_ok = (line.box_start or prev is None or prev.marker is not None or kind == "item"
                   or prev.text.endswith((".", ":", ";", "!", "?")))
        found = ("-", 0) if line.marker == "-" else _marker(line, weak_ok)
        if found is not None:
            flush()
            mark, length = found
            text_x = line.item_x if length == 0 else _item_x(line, length)
            while items:
                bullet_x, item_x, _ = items[-1]
                if abs(text_x - item_x) <= 3 or abs(line.x0 - bullet_x) <= 3:
                    items.pop()  # a sibling (labels set flush right share their text's x)
                    break
                if line.x0 >= item_x - 3:
                    break  # nested in the open item: its marker is where that item's text is
                items.pop()  # less indented: that list is over
            depth = items[-1][2] if items else ""
            marker = mark.split(" ", 1)
            items.append((line.x0, text_x, depth + " " * (len(marker[0]) + 1)))
            line.marker = mark
            kind = "item"
            paragraph.append(f"{depth}{mark} {line.text[length:].lstrip()}")
            prev = line
            continue
        if items and kind == "item" and paragraph and prev is not None and _continues(prev, line) and (
                line.x0 >= items[-1][1] - 3
                or (line.box == prev.box and line.page == prev.page and not prev.text.endswith((".", "!", "?")))):
            paragraph.append(line.text)  # the item's text wraps
            prev = line
            continue
        if not _continues(prev, line) or kind == "item":
            flush()
            kind = "text"
            # A paragraph indented as far as the open list item's text belongs to the item.
            while items and line.x0 < items[-1][1] - 3:
                items.pop()
            indent = items[-1][2] if items else ""
            if indent:
                paragraph.append(indent + line.text)
                prev = line
                continue
        paragraph.append(line.text)
        prev = line
    flush()
    out: list[str] = []
    for i, (what, text) in enumerate(blocks):
        if i:
            out.append("\n" if what == "item" and blocks[i - 1][0] == "item" else "\n\n")
        out.append(text)
    title = _metadata_title(data)
    return "".join(out) + "\n", title
