"""Lists, tables and page furniture from PDFs (and DOCX) as Markdown a reader recognises
(issue 26). The PDFs are built here with fpdf2: bullets of several kinds, glyphs that pdfminer
boxes apart from their text, numbered and lettered items, running headers and footers, page
numbers on every page, a table, two columns of prose."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fpdf import FPDF

from ragloom.load import load_document
from ragloom.load.pdf import is_page_label, pdf_to_markdown
from ragloom.parse import parse_sections

BODY = ("The pump station runs two duty pumps and one standby. Operators check the seals every shift "
        "and log the pressure readings in the site book before handover.")
WRAPPED = ("Check the seal for drips before start-up; a wet seal means the pump stays off until the "
           "maintenance crew has seen it")


def _unicode_font() -> str | None:
    """A TrueType font with the bullet glyphs (fpdf2's core fonts are Latin-1 only)."""
    candidates = [Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
                  Path("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf")]
    try:
        import matplotlib

        candidates.insert(0, Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf")
    except ImportError:
        pass
    return next((str(p) for p in candidates if p.is_file()), None)


def _pdf(pages: int, body: Callable[[FPDF, int], None], *, header: Callable[[FPDF], None] | None = None,
         footer: Callable[[FPDF], None] | None = None) -> bytes:
    class Doc(FPDF):
        def header(self) -> None:
            if header is not None:
                header(self)

        def footer(self) -> None:
            if footer is not None:
                footer(self)

    pdf = Doc()
    for n in range(pages):
        pdf.add_page()
        body(pdf, n)
    return bytes(pdf.output())


def _line(pdf: FPDF, text: str, *, size: int = 11, style: str = "", family: str = "Helvetica") -> None:
    pdf.set_font(family, style, size)
    pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")


def _manual_page(pdf: FPDF, n: int) -> None:
    _line(pdf, f"Section {n + 1}: Daily checks", size=16, style="B")
    _line(pdf, BODY)
    _line(pdf, "Before start-up:")
    _line(pdf, "- Check the seal on every duty pump")
    _line(pdf, "- Read the inlet pressure")
    _line(pdf, "1. Open the inlet valve")
    _line(pdf, "2. Start the duty pump")
    _line(pdf, "a) Lettered option for the standby pump")
    pdf.set_font("Symbol", size=11)
    pdf.cell(12, 6, chr(0xB7))  # a bullet in its own box, well left of its text
    _line(pdf, "Detached symbol bullet item")
    pdf.set_font("ZapfDingbats", size=11)
    pdf.cell(6, 6, "l")  # ZapfDingbats codes its round bullet as the letter l
    _line(pdf, "Dingbat bullet item")
    pdf.set_font("Helvetica", size=11)
    pdf.cell(6, 6, "-")
    _line(pdf, WRAPPED)
    pdf.ln(3)
    with pdf.table(col_widths=(40, 40, 60), text_align="LEFT") as table:
        for row in (("Pump", "Flow", "Owner"), ("P-101", "120 m3/h", "Ana Ruiz"), ("P-102", "95 m3/h", "Bo Chen")):
            cells = table.row()
            for cell in row:
                cells.cell(cell)
    pdf.ln(3)
    _line(pdf, "The standby pump is tested on the first Monday of each month.")


def _running_header(pdf: FPDF) -> None:
    pdf.set_font("Helvetica", size=9)
    pdf.cell(0, 8, "Pump Operator Manual, rev 4", align="L")
    pdf.ln(12)


def _page_footer(pdf: FPDF) -> None:
    pdf.set_y(-15)
    pdf.set_font("Helvetica", size=9)
    pdf.cell(0, 8, f"Page {pdf.page_no()} of {{nb}}", align="C")


def test_bullets_numbers_headers_footers_and_a_table_become_markdown() -> None:
    data = _pdf(4, _manual_page, header=_running_header, footer=_page_footer)
    text, _ = pdf_to_markdown(data)
    lines = text.splitlines()
    # running header and "Page N of 4" footers: gone from every page
    assert "Pump Operator Manual" not in text and "Page 1 of 4" not in text and "of 4" not in text
    for item in ("- Check the seal on every duty pump", "- Read the inlet pressure", "1. Open the inlet valve",
                 "2. Start the duty pump", "- a) Lettered option for the standby pump",
                 "- Detached symbol bullet item", "- Dingbat bullet item"):
        assert lines.count(item) == 4, item
    assert lines.count(f"- {WRAPPED}") == 4  # the wrapped item's second line stays in the item
    assert "•" not in text and not any(line.strip() in {"-", "l"} for line in lines)
    # a tight list: items follow one another line by line
    assert "- Read the inlet pressure\n1. Open the inlet valve\n2. Start the duty pump" in text
    assert text.count("| Pump | Flow | Owner |\n| --- | --- | --- |\n| P-101 | 120 m3/h | Ana Ruiz |\n"
                      "| P-102 | 95 m3/h | Bo Chen |") == 4
    assert [s.title for s in parse_sections(text)] == [f"Section {n}: Daily checks" for n in range(1, 5)]
    assert text.count("The standby pump is tested on the first Monday") == 4


def test_nested_and_lettered_items_keep_their_levels() -> None:
    def body(pdf: FPDF, n: int) -> None:
        _line(pdf, "Steps:")
        for x, text in ((10, "- Inspect the pump"), (20, "- Check the seal"), (20, "- Check the bearings"),
                        (10, "- Log the readings"), (10, "A. Use the station form"), (10, "B. File it weekly")):
            pdf.set_x(x)
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")

    text, _ = pdf_to_markdown(_pdf(1, body))
    assert ("- Inspect the pump\n  - Check the seal\n  - Check the bearings\n- Log the readings\n"
            "- A. Use the station form\n- B. File it weekly") in text


@pytest.mark.skipif(_unicode_font() is None, reason="no TrueType font with bullet glyphs here")
def test_round_and_square_bullets_join_their_text_even_when_boxed_apart() -> None:
    font = _unicode_font()

    def page(pdf: FPDF, n: int) -> None:
        pdf.add_font("Body", fname=font)
        pdf.set_font("Body", size=11)
        pdf.multi_cell(0, 6, "Survey findings:", new_x="LMARGIN", new_y="NEXT")
        for glyph in "●•▪":
            pdf.cell(6, 6, glyph)  # glyph and text in one line
            pdf.multi_cell(0, 6, f"Attached {glyph} item", new_x="LMARGIN", new_y="NEXT")
        for k in range(3):  # glyphs far from their text: pdfminer makes a column box of "●"s
            pdf.cell(15, 6, "●")
            pdf.multi_cell(0, 6, f"Detached item {k + 1} of the survey", new_x="LMARGIN", new_y="NEXT")
        pdf.multi_cell(0, 6, "The survey closes on Friday.", new_x="LMARGIN", new_y="NEXT")

    text, _ = pdf_to_markdown(_pdf(1, page))
    assert "● ●" not in text and "●" not in text.replace("Attached ● item", "")
    for glyph in "●•▪":
        assert f"- Attached {glyph} item" in text.splitlines()
    for k in range(3):
        assert f"- Detached item {k + 1} of the survey" in text.splitlines()
    assert "Survey findings:\n\n- Attached ● item" in text
    assert text.rstrip().endswith("\n\nThe survey closes on Friday.")


def test_headers_that_change_with_the_chapter_and_page_numbers_are_dropped() -> None:
    def header(pdf: FPDF) -> None:
        pdf.set_font("Helvetica", size=10)
        chapter = "Chapter 1: Installation" if pdf.page_no() <= 3 else "Chapter 2: Operation"
        pdf.cell(150, 8, chapter)
        pdf.cell(0, 8, str(pdf.page_no()), align="R")
        pdf.ln(14)

    def body(pdf: FPDF, n: int) -> None:
        _line(pdf, f"Part {n + 1} of the work", size=15, style="B")
        for k in range(3):
            _line(pdf, f"Paragraph {k} on page {n + 1}. {BODY}")
        pdf.ln(8)
        _line(pdf, "42")  # a number in the body, not in the top or bottom band: kept

    text, _ = pdf_to_markdown(_pdf(6, body, header=header))
    assert "Chapter 1" not in text and "Chapter 2" not in text
    assert not [line for line in text.splitlines() if re.fullmatch(r"\d", line)]  # page numbers
    assert text.count("\n42\n") == 6
    assert [s.title for s in parse_sections(text)] == [f"Part {n} of the work" for n in range(1, 7)]


def test_a_two_page_pdf_keeps_its_header_but_not_its_page_numbers() -> None:
    def footer(pdf: FPDF) -> None:
        pdf.set_y(-15)
        pdf.set_font("Helvetica", size=9)
        pdf.cell(0, 8, f"- {pdf.page_no()} -", align="C")

    text, _ = pdf_to_markdown(_pdf(2, lambda pdf, n: _line(pdf, BODY), header=_running_header, footer=footer))
    assert text.count("Pump Operator Manual, rev 4") == 2  # a header repeats on three pages at least
    assert "- 1 -" not in text and "- 2 -" not in text


def test_two_columns_of_prose_are_not_a_table_and_keep_their_order() -> None:
    left = "Left column: " + " ".join(f"alpha{k} seal check" for k in range(40))
    right = "Right column: " + " ".join(f"beta{k} pressure log" for k in range(40))

    def body(pdf: FPDF, n: int) -> None:
        pdf.set_font("Helvetica", size=10)
        top = pdf.get_y()
        pdf.multi_cell(90, 5, left)
        pdf.set_xy(110, top)
        pdf.multi_cell(90, 5, right)

    text, _ = pdf_to_markdown(_pdf(1, body))
    assert "|" not in text
    assert text.index("Left column") < text.index("alpha39") < text.index("Right column") < text.index("beta39")


def test_a_comment_line_is_not_a_heading() -> None:
    def body(pdf: FPDF, n: int) -> None:
        _line(pdf, "Config file", size=16, style="B")
        _line(pdf, "The file starts like this:")
        pdf.ln(6)
        _line(pdf, "# generated by the installer, do not edit", family="Courier")

    doc_text, _ = pdf_to_markdown(_pdf(1, body))
    assert "\\# generated by the installer" in doc_text
    assert [s.title for s in parse_sections(doc_text)] == ["Config file"]


@pytest.mark.parametrize(("text", "label"), [
    ("3", True), ("iv", True), ("xii", True), ("Page 3", True), ("Page 3 of 10", True), ("- 3 -", True),
    ("3 / 10", True), ("p. 12", True), ("– 7 –", True),
    ("Chapter 3", False), ("2024 budget", False), ("3 pumps", False), ("Section 1.2", False), ("Index", False),
])
def test_page_labels(text: str, label: bool) -> None:
    assert is_page_label(text) is label


def test_the_sample_pdf_loads_as_before(materials: Path) -> None:
    doc = load_document(materials / "engineering" / "capacity-plan-2025.pdf", lens="engineering")
    assert "## Headcount" in doc.text and "### Catalog integration" in doc.text


def test_docx_lists_tables_and_headings_come_out_as_markdown(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    d = docx.Document()
    d.add_heading("Release plan", level=1)
    d.add_paragraph("Intro paragraph.")
    d.add_heading("Scope", level=2)
    d.add_paragraph("First bullet", style="List Bullet")
    d.add_paragraph("Second bullet", style="List Bullet")
    d.add_paragraph("Step one", style="List Number")
    d.add_paragraph("Step two", style="List Number")
    table = d.add_table(rows=3, cols=2)
    for i, row in enumerate((("Team", "Owner"), ("Catalog", "Ana"), ("Search", "Bo"))):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    buffer = io.BytesIO()
    d.save(buffer)
    (tmp_path / "plan.docx").write_bytes(buffer.getvalue())
    lines = load_document(tmp_path / "plan.docx", lens="x").text.splitlines()
    assert "# Release plan" in lines and "## Scope" in lines
    assert "* First bullet" in lines and "* Second bullet" in lines
    assert "1. Step one" in lines and "2. Step two" in lines
    assert "| Team | Owner |" in lines and "| Catalog | Ana |" in lines
