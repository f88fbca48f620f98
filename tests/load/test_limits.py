"""The ``[ingest]`` bounds, text decoding with notes, finding files once, the converter process."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from ragloom.config import IngestSettings
from ragloom.errors import (
    ArchiveBombError,
    BinaryFileError,
    ConversionTimeoutError,
    CorruptFileError,
    FileNameError,
    FileTooLargeError,
    NestingTooDeepError,
    NotRegularFileError,
    SymlinkLoopError,
    TextTooLargeError,
    UnreadableFileError,
)
from ragloom.load import ConverterProcess, Limits, display_path, load_document, load_file, scan
from ragloom.load.readers import decode_text, html_depth
from tests.conftest import docx_bomb

EXTENSIONS = IngestSettings().extensions


def test_size_message_names_the_setting_and_its_configured_value(tmp_path: Path) -> None:
    f = tmp_path / "big.md"
    f.write_bytes(b"x" * (3 * 1024 * 1024 + 200_000))
    with pytest.raises(FileTooLargeError) as info:
        load_file(f, lens="x", limits=Limits(max_file_mb=3))
    assert "(3.2 MiB, above ingest.max_file_mb = 3)" in str(info.value)
    # the old form: bytes in, the same number out (MiB both ways; it said "above 52" for 50)
    with pytest.raises(FileTooLargeError, match=r"above ingest.max_file_mb = 2\)"):
        load_document(f, lens="x", max_bytes=2 * 1024 * 1024)


def test_converted_text_limit(tmp_path: Path) -> None:
    f = tmp_path / "long.md"
    f.write_text("word " * 300_000, encoding="utf-8")  # 1.4 MiB
    with pytest.raises(TextTooLargeError) as info:
        load_file(f, lens="x", limits=Limits(max_text_mb=1))
    assert str(info.value).startswith(f"{f}: converted text too large (1.4 MiB of text, above ingest.max_text_mb = 1)")
    assert load_file(f, lens="x", limits=Limits(max_text_mb=2)).document.text.startswith("word")


@pytest.mark.parametrize(("data", "text", "note"), [
    ("Café naïve".encode("cp1252"), "Café naïve", "read as Windows-1252 (not valid UTF-8)"),
    ("déjà vu ".encode() + b"\xff" + " façade".encode(), "déjà vu \ufffd façade",
     "1 invalid UTF-8 byte sequence replaced with U+FFFD"),
    (b"\xff\xfe" + "Zoë".encode("utf-16-le"), "Zoë", None),
    (b"\xfe\xff" + "Zoë".encode("utf-16-be"), "Zoë", None),
    ("plain text here".encode("utf-16-le"), "plain text here", "read as UTF-16-LE (no byte-order mark)"),
    (b"\xef\xbb\xbfbom", "bom", None),
    (b"stray\x00 NUL. " * 2 + b"The dispatch schedule moves to Tuesdays. " * 30,
     "stray NUL. " * 2 + "The dispatch schedule moves to Tuesdays. " * 30, "removed 2 NUL bytes"),
])
def test_decoding_says_what_it_did(data: bytes, text: str, note: str | None) -> None:
    decoded, notes = decode_text(Path("f.txt"), data)
    assert decoded == text
    assert list(notes) == ([note] if note else [])


@pytest.mark.parametrize("data", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8,
    bytes([1, 2, 3, 65, 14, 15]) * 1000,
    random.Random(3).randbytes(65536),
])
def test_binary_is_refused(data: bytes) -> None:
    with pytest.raises(BinaryFileError):
        decode_text(Path("f.md"), data)


def test_html_depth_counts_like_a_browser() -> None:
    assert html_depth("<div>" * 300 + "x" + "</div>" * 300, 1000) == 300
    # void elements, unclosed paragraphs and list items, scripts and comments do not deepen
    page = "<ul>" + "<li>item<br><img src=x>" * 500 + "</ul>" + "<p>para" * 500
    page += "<script>" + "<div>" * 900 + "</script><!--" + "<div>" * 900 + "-->"
    assert html_depth(page, 1000) <= 3
    assert html_depth("<b>" * 10_000, 256) == 257  # counting stops past the bound


def test_html_nested_too_deep_is_refused_in_milliseconds(tmp_path: Path) -> None:
    f = tmp_path / "deep.html"
    f.write_text("<html><body>" + "<div>" * 10_000 + "deep" + "</div>" * 10_000 + "</body></html>", encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(NestingTooDeepError, match=r"above ingest.max_nesting = 256\); raise ingest.max_nesting"):
        load_file(f, lens="x")
    assert time.perf_counter() - started < 2
    assert "deep" in load_file(f, lens="x", limits=Limits(max_nesting=20_000)).document.text


def test_docx_bomb_is_refused_from_its_declared_sizes(tmp_path: Path) -> None:
    f = tmp_path / "bomb.docx"
    f.write_bytes(docx_bomb(300_000_000))
    assert f.stat().st_size < 1_000_000
    started = time.perf_counter()
    with pytest.raises(ArchiveBombError) as info:
        load_file(f, lens="x")
    assert time.perf_counter() - started < 2
    message = str(info.value)
    assert "word/document.xml: 286.1 MiB from" in message and "above ingest.max_unpacked_mb = 256" in message
    with pytest.raises(ArchiveBombError, match="ingest.max_unpacked_mb = 1"):
        load_file(f, lens="x", limits=Limits(max_unpacked_mb=1))


def test_scan_reads_each_file_once_and_reports_what_is_not_a_document(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nalpha", encoding="utf-8")
    (docs / "sub" / "b.md").write_text("# B\n\nbeta", encoding="utf-8")
    os.symlink("a.md", docs / "alias.md")
    os.symlink("..", docs / "sub" / "up")  # a loop
    os.symlink("loop2.md", docs / "loop1.md")
    os.symlink("loop1.md", docs / "loop2.md")
    os.mkfifo(docs / "pipe.md")
    os.symlink(docs / "sub", tmp_path / "linked-sub")  # the same folder by another way
    found = scan([docs, docs / "a.md", tmp_path / "linked-sub", docs / "sub" / "b.md"], extensions=EXTENSIONS)
    files = [f for f in found if f.problem is None]
    assert sorted(Path(f.real).name for f in files) == ["a.md", "b.md"]
    problems = {Path(f.path).name: f.problem for f in found if f.problem is not None}
    assert set(problems) == {"up", "loop1.md", "loop2.md", "pipe.md"}
    assert isinstance(problems["up"], SymlinkLoopError) and "leads back to" in str(problems["up"])
    assert isinstance(problems["loop1.md"], SymlinkLoopError)
    assert isinstance(problems["pipe.md"], NotRegularFileError) and "FIFO; never opened" in str(problems["pipe.md"])
    # an explicit FIFO is never opened either (a read would block this test forever)
    with pytest.raises(NotRegularFileError):
        load_file(docs / "pipe.md", lens="x")
    # a folder given where one file is read says so, whatever its name ends with
    (docs / "notes.md").mkdir()
    for folder in (docs / "sub", docs / "notes.md"):
        with pytest.raises(NotRegularFileError, match="it is a folder; .*ingest the folder"):
            load_file(folder, lens="x")


def test_names_that_are_not_utf8_or_have_newlines(tmp_path: Path) -> None:
    raw = os.path.join(os.fsencode(tmp_path), b"caf\xe9.md")
    with open(raw, "wb") as f:
        f.write(b"# Cafe\n\ntext")
    (tmp_path / "new\nline.md").write_text("# NL\n\ntext", encoding="utf-8")
    found = {f.display: f for f in scan([tmp_path], extensions=EXTENSIONS)}
    bad = found[f"{tmp_path}/caf\\xe9.md"]
    assert isinstance(bad.problem, FileNameError)
    assert str(bad.problem) == f"{tmp_path}/caf\\xe9.md: file name is not valid UTF-8 (its bytes are shown as \\x..); " \
                               "rename the file"
    newline = found[f"{tmp_path}/new\\nline.md"]
    assert newline.problem is None and "\n" not in newline.display
    assert display_path("tab\there") == "tab\\there"


def test_unreadable_file_gets_a_line(tmp_path: Path) -> None:
    link = tmp_path / "mem.md"
    os.symlink("/proc/self/mem", link)  # reads fail with EIO, even for root
    with pytest.raises(UnreadableFileError, match=r"mem.md: cannot be read \(Input/output error\)"):
        load_file(link, lens="x")
    if os.geteuid() != 0:
        locked = tmp_path / "locked.md"
        locked.write_text("secret", encoding="utf-8")
        locked.chmod(0)
        with pytest.raises(UnreadableFileError, match="permission denied"):
            load_file(locked, lens="x")


def test_converter_process_stops_a_slow_file_and_goes_on(tmp_path: Path) -> None:
    html = "<html><body>" + "".join(f"<p>Paragraph {i} with <b>bold</b> and <a href='x{i}'>a link</a>.</p>"
                                    for i in range(6000)) + "</body></html>"
    slow = tmp_path / "slow.html"
    slow.write_text(html, encoding="utf-8")
    ok = tmp_path / "ok.html"
    ok.write_text("<html><body><h1>Fine</h1><p>Quick to convert.</p></body></html>", encoding="utf-8")
    converter = ConverterProcess()
    try:
        started = time.perf_counter()
        with pytest.raises(ConversionTimeoutError) as info:
            load_file(slow, lens="x", limits=Limits(max_seconds=0.2), converter=converter)
        assert time.perf_counter() - started < 30  # the child's start is not counted, the file is
        assert "stopped after 0.2 s, ingest.max_seconds_per_file = 0.2" in str(info.value)
        doc = load_file(ok, lens="x", limits=Limits(max_seconds=30), converter=converter).document
        assert "# Fine" in doc.text and converter.started == 2
        fake = tmp_path / "x.pdf"
        fake.write_text("text", encoding="utf-8")
        with pytest.raises(CorruptFileError, match="no %PDF- header"):  # errors cross the process boundary
            load_file(fake, lens="x", limits=Limits(max_seconds=30), converter=converter)
    finally:
        converter.close()


def test_a_document_of_headings_only_becomes_chunks_of_its_headings(tmp_path: Path) -> None:
    from ragloom.engine import Engine
    from ragloom.ingest.stages import Load
    from tests.conftest import fast_settings

    text = "".join(f"{'#' * (1 + i % 3)} Heading number {i}\n\n" for i in range(2000))
    spans = Load.heading_spans(text, 1000)
    assert len(spans) > 40 and all(0 <= a < b <= len(text) for a, b, _ in spans)
    assert all(b - a <= 1000 for a, b, _ in spans)
    assert all(text[a:b].startswith("#") and not text[a:b].endswith("\n") for a, b, _ in spans)
    assert spans[1][2][-1].startswith("Heading number")  # each span carries its first heading's path
    f = tmp_path / "outline.md"
    f.write_text(text, encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings())
    report = engine.ingest(f, lens="x")
    assert report.ok and report.chunks_written == len(spans)
    assert f"indexed as {len(spans)} chunks of headings" in report.documents[0]["message"]
    assert engine.query("Heading number 1999", k=1, mode="bm25")[0].source_path == f.as_posix()
    assert engine.ingest(f, lens="x").unchanged == 1  # a second run finds it whole
