from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import (
    BinaryFileError,
    CorruptFileError,
    EmptyDocumentError,
    EncryptedFileError,
    FileTooLargeError,
    InvalidParameterError,
    UnsupportedFormatError,
)
from ragloom.load import iter_files, load_document, normalize_text, validate_name
from ragloom.parse import parse_sections


def test_markdown_front_matter_title_date_and_type(tmp_path: Path) -> None:
    f = tmp_path / "2025-03-04-retro.md"
    f.write_text("---\ntitle: Sprint Retro\ndate: 2025-03-05\n---\n# Retro\nWent well.\n", encoding="utf-8")
    doc = load_document(f, lens="team-conversational", tenant="acme")
    assert doc.title == "Sprint Retro"
    assert doc.document_date.isoformat() == "2025-03-05"
    assert doc.text.startswith("# Retro")
    assert doc.doc_type == "Meeting Notes"
    assert (doc.lens, doc.tenant, doc.media_type) == ("team-conversational", "acme", "text/markdown")
    assert doc.source_path == f.resolve().as_posix()
    assert doc.modified_at.tzinfo is not None


def test_title_falls_back_to_first_h1_then_filename(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("intro\n# The Heading\nx", encoding="utf-8")
    (tmp_path / "team_offsite-notes.txt").write_text("plain text", encoding="utf-8")
    assert load_document(tmp_path / "a.md", lens="x").title == "The Heading"
    assert load_document(tmp_path / "team_offsite-notes.txt", lens="x").title == "Team Offsite Notes"


def test_normalisation_before_offsets(tmp_path: Path) -> None:
    f = tmp_path / "n.md"
    decomposed = unicodedata.normalize("NFD", "Café résumé")
    f.write_bytes(("\ufeff# Title\r\n" + decomposed + "\r\nline\rend\x00\x07").encode("utf-8"))
    with pytest.raises(BinaryFileError):
        load_document(f, lens="x")  # NUL bytes: binary
    f.write_bytes(("\ufeff# Title\r\n" + decomposed + "\r\nline\rend\x07").encode("utf-8"))
    doc = load_document(f, lens="x")
    assert doc.text == "# Title\nCafé résumé\nline\nend"
    assert unicodedata.is_normalized("NFC", doc.text)


@given(st.text())
def test_normalize_is_idempotent_and_clean(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once
    assert "\r" not in once and "\x00" not in once
    assert unicodedata.is_normalized("NFC", once)


def test_sample_pdf_docx_html_become_markdown_with_headings(materials: Path) -> None:
    pdf = load_document(materials / "engineering" / "capacity-plan-2025.pdf", lens="engineering")
    assert pdf.title == "Engineering Capacity Plan 2025"
    assert "## Headcount" in pdf.text and "### Catalog integration" in pdf.text
    assert "18 engineers today" in pdf.text
    docx = load_document(materials / "team-structured" / "prd-service-catalog-v2.docx", lens="team-structured")
    assert docx.title == "PRD: Service Catalog v2"
    assert "# Milestones" in docx.text and "June 30, 2025" in docx.text
    html = load_document(materials / "external-analyst" / "analyst-briefing-notes.html", lens="external-analyst")
    assert html.title.startswith("Analyst Briefing")
    assert "## Analyst feedback" in html.text and "<p>" not in html.text


def test_bad_inputs_get_one_clear_error_each(tmp_path: Path) -> None:
    from fpdf import FPDF

    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "blank.txt").write_text("  \n\n ", encoding="utf-8")
    (tmp_path / "binary.md").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "corrupt.pdf").write_bytes(b"%PDF-1.4\nnot really a pdf")
    (tmp_path / "fake.pdf").write_bytes(b"hello, I am text")
    (tmp_path / "corrupt.docx").write_bytes(b"PK\x03\x04 truncated zip")
    (tmp_path / "locked.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512)
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    pdf = FPDF()
    pdf.set_encryption(owner_password="owner", user_password="secret")
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.cell(0, 10, "secret")
    pdf.output(str(tmp_path / "locked.pdf"))
    expected = {
        "empty.md": EmptyDocumentError,
        "blank.txt": EmptyDocumentError,
        "binary.md": BinaryFileError,
        "corrupt.pdf": CorruptFileError,
        "fake.pdf": CorruptFileError,
        "corrupt.docx": CorruptFileError,
        "locked.docx": EncryptedFileError,
        "locked.pdf": EncryptedFileError,
        "image.png": UnsupportedFormatError,
    }
    for name, error in expected.items():
        with pytest.raises(error) as info:
            load_document(tmp_path / name, lens="x")
        assert name in str(info.value)  # the message names the file
    with pytest.raises(FileTooLargeError, match="ingest.max_file_mb"):
        (tmp_path / "big.md").write_text("x" * 2000, encoding="utf-8")
        load_document(tmp_path / "big.md", lens="x", max_bytes=1000)


def test_iter_files_filters_folders_but_not_explicit_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.md").write_text("a", encoding="utf-8")
    (tmp_path / "b.png").write_bytes(b"x")
    (tmp_path / ".hidden.md").write_text("h", encoding="utf-8")
    found = list(iter_files([tmp_path]))
    assert [p.name for p in found] == ["a.md"]
    assert [p.name for p in iter_files([tmp_path / "b.png"])] == ["b.png"]


@pytest.mark.parametrize("bad", ["", "a b", "../x", "x" * 65, "lens'; DROP", "-x"])
def test_lens_and_tenant_names_are_validated(bad: str) -> None:
    with pytest.raises(InvalidParameterError, match="not a valid name"):
        validate_name("lens", bad)


def test_a_pdf_title_is_never_code_and_its_table_of_contents_is_not_text(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Courier", size=24)
    pdf.cell(0, 14, "pip install pumpkit", new_x="LMARGIN", new_y="NEXT")  # code, set larger than anything
    pdf.set_font("Helvetica", "B", size=20)
    pdf.cell(0, 12, "Pump Operator Manual", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "B", size=15)
    pdf.cell(0, 10, "Contents", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    for line in ("Installation . . . . . . . . . . . . 2", "Daily checks ...................... 3"):
        pdf.cell(0, 7, line, new_x="LMARGIN", new_y="NEXT")
    for heading, body in (("Installation", "Bolt the pump to a level base and connect the inlet first."),
                          ("Daily checks", "Check the seal for drips every morning before starting.")):
        pdf.set_font("Helvetica", "B", size=15)
        pdf.cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 7, body, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "manual.pdf"))
    doc = load_document(tmp_path / "manual.pdf", lens="x")
    assert doc.title == "Pump Operator Manual"
    assert "# pip install" not in doc.text and "pip install pumpkit" in doc.text  # kept as text, not a heading
    assert ". . . ." not in doc.text and "......" not in doc.text
    assert [s.title for s in parse_sections(doc.text)][-2:] == ["Installation", "Daily checks"]


PAGE = """<!DOCTYPE html><html><head><title>Pumps — Example Docs</title></head><body>
<header class="site-header"><nav><a href="/">Home</a> <a href="/guide">Guide</a></nav></header>
<div role="dialog" class="keyboard-shortcuts"><h2>Keyboard shortcuts</h2><p>Press ? for help.</p></div>
<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3><ul><li>Install</li></ul></div>
{content}
<footer><p>© 2025 Example Docs. Built with a generator.</p></footer>
</body></html>"""


def test_html_page_chrome_never_becomes_sections(tmp_path: Path) -> None:
    article = ('<h1>Pumps<a class="headerlink" href="#pumps" title="Permalink">¶</a></h1>'
               "<p>A pump moves water.</p><h2>Seals<a href=\"#seals\">#</a></h2><p>Seals keep it in.</p>")
    for name, content in (("main.html", f"<main>{article}</main>"), ("bare.html", f"<div>{article}</div>")):
        (tmp_path / name).write_text(PAGE.replace("{content}", content), encoding="utf-8")
        doc = load_document(tmp_path / name, lens="x")
        assert doc.title == "Pumps", name
        assert [s.path for s in parse_sections(doc.text)] == [("Pumps",), ("Pumps", "Seals")], name
        for chrome in ("Keyboard shortcuts", "Home", "Table of Contents", "©", "¶", "Permalink"):
            assert chrome not in doc.text, (name, chrome)


def test_front_matter_with_long_blank_runs_is_read_in_linear_time() -> None:
    """``title: a`` and 100,000 spaces took 70 s (a quadratic regex); each size here is read in
    well under a second, and eight times the input takes far less than sixty-four times as long."""
    import time

    from ragloom.load.normalize import split_front_matter

    def took(n: int) -> float:
        text = "---\ntitle: a" + " " * n + "b\ndate: 2026-01-02" + "\t" * n + "\n---\nbody"
        started = time.perf_counter()
        meta, rest = split_front_matter(text)
        assert meta["title"] == "a" + " " * n + "b" and meta["date"] == "2026-01-02" and rest == "body"
        return time.perf_counter() - started

    small, large = min(took(20_000) for _ in range(3)), min(took(160_000) for _ in range(3))
    assert large < 0.5 and large < 24 * max(small, 1e-4), (small, large)
