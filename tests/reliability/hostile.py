"""A corpus of hostile and broken files, generated (never committed as binaries), and a runner
that ingests it case by case, measuring time and peak memory.

    python -m tests.reliability.hostile [--small] [--json OUT]

``make_corpus(folder)`` writes the cases; each :class:`Case` says what must happen to it:
``skip`` (one line naming the file and the reason, the batch goes on), ``note`` (ingested,
with a line saying what was done to read it) or ``ingest`` (ingested as it is).
"""

from __future__ import annotations

import io
import json
import os
import random
import resource
import stat
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

MB = 1_000_000
MIB = 1024 * 1024
WORDS = ("offline mode catalog integration ships june customers sync rate limits team plan quarter "
         "roadmap engineers capacity mobile invoices technicians dispatch schedule").split()


@dataclass
class Case:
    """One hostile input: the entry to ingest (relative to the corpus folder), what must
    happen, and a piece of the line that must say why."""

    name: str
    what: str
    expect: str  # skip | note | ingest
    reason: str = ""
    #: Takes seconds (left out of the quick corpus).
    big: bool = False
    #: The entry as bytes when its name is not valid UTF-8.
    raw_name: bytes | None = None
    #: Set by the runner.
    outcome: dict[str, object] = field(default_factory=dict)

    def path(self, folder: Path) -> Path:
        """The entry itself."""
        if self.raw_name is not None:
            return Path(os.fsdecode(os.path.join(os.fsencode(folder), self.raw_name)))
        return folder / self.name

    def target(self, folder: Path) -> Path:
        """What to ingest to try this case alone (a folder link: the folder that holds it)."""
        return self.path(folder).parent if self.name == "sub/back" else self.path(folder)


def _prose(size: int, *, seed: int = 7, headings: bool = True) -> str:
    """About ``size`` characters of Markdown prose: headings, paragraphs of sentences."""
    rnd = random.Random(seed)
    parts: list[str] = []
    total = i = 0
    while total < size:
        sentences = " ".join(" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(6, 18))).capitalize() + "."
                             for _ in range(rnd.randint(3, 7)))
        block = (f"## Part {i}\n\n" if headings and i % 5 == 0 else "") + sentences + "\n\n"
        parts.append(block)
        total += len(block)
        i += 1
    return "".join(parts)


def _write_repeated(path: Path, block: bytes, size: int) -> None:
    with path.open("wb") as f:
        written = 0
        while written < size:
            f.write(block)
            written += len(block)


def _pdf(pages: int, *, password: str | None = None) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    if password is not None:
        pdf.set_encryption(owner_password="owner", user_password=password)
    pdf.set_font("Helvetica", size=11)
    for n in range(pages):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 16)
        pdf.cell(0, 10, f"Chapter {n + 1}: catalog integration")
        pdf.ln(14)
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, _prose(1500, seed=n, headings=False).replace("\n", " "))
    return bytes(pdf.output())


def _docx(text: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly plan", level=1)
    for para in text.split("\n\n"):
        if para.strip():
            document.add_paragraph(para.strip())
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _docx_bomb(inflated: int) -> bytes:
    """A DOCX whose word/document.xml inflates to ``inflated`` bytes (about 1,000 to 1)."""
    ok = _docx("A small document.")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(ok)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED,
                                                                 compresslevel=9) as dst:
        for info in src.infolist():
            if info.filename != "word/document.xml":
                dst.writestr(info, src.read(info.filename))
        para = b"<w:p><w:r><w:t>bomb bomb bomb bomb</w:t></w:r></w:p>" * 20_000
        with dst.open("word/document.xml", "w") as f:
            f.write(b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document '
                    b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>')
            written = 0
            while written < inflated:
                f.write(para)
                written += len(para)
            f.write(b"</w:body></w:document>")
    return out.getvalue()


def _lying_zip(data: bytes, name: str, declared: int) -> bytes:
    """``data`` (a ZIP) with the uncompressed size of ``name`` declared as ``declared`` bytes in
    both its local header and the central directory: a bomb that lies about its size."""
    buf = bytearray(data)
    encoded = name.encode()
    local = buf.find(b"PK\x03\x04")  # the first local header
    while local != -1:
        name_len = int.from_bytes(buf[local + 26 : local + 28], "little")
        if bytes(buf[local + 30 : local + 30 + name_len]) == encoded:
            buf[local + 22 : local + 26] = declared.to_bytes(4, "little")
            break
        local = buf.find(b"PK\x03\x04", local + 4)
    central = buf.find(b"PK\x01\x02")
    while central != -1:
        name_len = int.from_bytes(buf[central + 28 : central + 30], "little")
        if bytes(buf[central + 46 : central + 46 + name_len]) == encoded:
            buf[central + 24 : central + 28] = declared.to_bytes(4, "little")
            break
        central = buf.find(b"PK\x01\x02", central + 4)
    return bytes(buf)


def cases(*, big: bool = True) -> list[Case]:
    """Every case, in the order they are written."""
    all_cases = [
        Case("good.md", "an ordinary Markdown file (the control)", "ingest"),
        Case("empty.md", "an empty file", "skip", "empty document"),
        Case("blank.txt", "only whitespace", "skip", "empty document"),
        Case("image-named.md", "a PNG with a text extension", "skip", "binary content"),
        Case("random-bytes.txt", "64 KB of random bytes", "skip", "binary content"),
        Case("windows-1252.md", "Windows-1252 text (not valid UTF-8)", "note", "read as Windows-1252"),
        Case("mostly-utf8.md", "UTF-8 with two invalid bytes", "note", "replaced with U+FFFD"),
        Case("utf16-bom.txt", "UTF-16 LE with a byte-order mark", "ingest"),
        Case("utf16be-bom.md", "UTF-16 BE with a byte-order mark", "ingest"),
        Case("utf16-no-bom.txt", "UTF-16 LE without a byte-order mark", "note", "no byte-order mark"),
        Case("utf8-bom.md", "UTF-8 with a byte-order mark", "ingest"),
        Case("nul-bytes.txt", "text with three stray NUL bytes", "note", "removed 3 NUL bytes"),
        Case("control-chars.txt", "text full of control characters", "skip", "binary content"),
        Case("one-line-3mb.txt", "a single 3 MB line of words", "ingest", big=True),
        Case("one-long-word.txt", "a single 2 MB word (no spaces)", "ingest", big=True),
        Case("heading-storm.md", "10,000 headings, a sentence under each", "ingest", big=True),
        Case("headings-only.md", "headings and no text under them", "note", "only headings"),
        Case("nested-lists.md", "a list nested 2,000 levels deep", "ingest", big=True),
        Case("unclosed-fence.md", "a code fence that never closes", "ingest"),
        Case("corrupt.pdf", "a PDF header and garbage", "skip", "corrupt or unreadable"),
        Case("encrypted.pdf", "a password-protected PDF", "skip", "password-protected"),
        Case("truncated.pdf", "a real PDF cut at 60%", "skip", "corrupt or unreadable"),
        Case("text-named.pdf", "a text file named .pdf", "skip", "no %PDF- header"),
        Case("fine.pdf", "a real 3-page PDF", "ingest"),
        Case("corrupt.docx", "a ZIP header and garbage", "skip", "not a ZIP container"),
        Case("zip-bomb.docx", "a 0.4 MB DOCX whose XML inflates to 400 MB", "skip", "ingest.max_unpacked_mb = 256"),
        Case("lying-zip-bomb.docx", "a DOCX bomb whose headers declare 2 KB", "skip", "corrupt or unreadable"),
        Case("ole-encrypted.docx", "a password-protected (OLE) Word file", "skip", "password-protected"),
        Case("fine.docx", "a real DOCX", "ingest"),
        Case("scripts.html", "HTML with scripts and styles", "ingest"),
        Case("nested-10k.html", "HTML with 10,000 nested elements", "skip", "ingest.max_nesting = 256"),
        Case("script-only.html", "HTML with nothing but a script", "skip", "no text after conversion"),
        Case("loop-a.md", "a symlink loop (loop-a.md -> loop-b.md -> loop-a.md)", "skip", "symlink loop"),
        Case("sub/back", "a folder link back to its parent", "skip", "symlink loop"),
        Case("pipe.md", "a FIFO (reading it would block)", "skip", "not a regular file"),
        Case("unreadable.md", "a file with mode 000", "skip", "permission denied"),
        Case("proc-mem.md", "a link to /proc/self/mem (reads fail with EIO)", "skip", "cannot be read"),
        Case("new\nline.md", "a file name with a newline", "ingest"),
        Case("-leading-dash.md", "a file name starting with a dash", "ingest"),
        Case("caf\\xe9.md", "a file name that is not UTF-8 (Latin-1 bytes)", "skip", "not valid UTF-8",
             raw_name=b"caf\xe9.md"),
        Case("alias.md", "a symlink to good.md (the same file twice)", "once"),
        Case("unsupported.xyz", "an unsupported extension, named explicitly", "skip", "unsupported file type"),
        Case("huge-100mb.txt", "a 100 MB text file", "skip", "above ingest.max_file_mb = 50", big=True),
        Case("markdown-45mb.md", "a 45 MB Markdown file (under max_file_mb)", "skip", "above ingest.max_text_mb = 10",
             big=True),
        Case("one-line-10mb.txt", "a single 10.5 MB line", "skip", "above ingest.max_text_mb = 10", big=True),
        Case("million-lines.txt", "a million one-word lines", "ingest", big=True),
        Case("million-sentences.txt", "a million one-word sentences", "skip", "ingest.max_rows_per_file = 100000",
             big=True),
    ]
    return [c for c in all_cases if big or not c.big]


def make_corpus(folder: str | Path, *, big: bool = True) -> list[Case]:
    """Write every case under ``folder``; returns the cases (their entries are relative to it)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(11)
    writers: dict[str, Callable[[Path], None]] = {
        "good.md": lambda p: p.write_text("# Field notes\n\nTechnicians ask for offline mode in the mobile app.\n"
                                          "The catalog integration ships in June.\n", encoding="utf-8"),
        "empty.md": lambda p: p.write_bytes(b""),
        "blank.txt": lambda p: p.write_text("  \n\n\t \n", encoding="utf-8"),
        "image-named.md": lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8),
        "random-bytes.txt": lambda p: p.write_bytes(bytes(rnd.getrandbits(8) for _ in range(65536))),
        "windows-1252.md": lambda p: p.write_bytes("# Café notes\n\nThe naïve résumé costs 5 € — “quoted”.\n"
                                                   .encode("cp1252")),
        "mostly-utf8.md": lambda p: p.write_bytes("# Café\n\nCrème brûlée, déjà vu, ".encode() + b"\xff\xfe"
                                                  + " naïve façade.\n".encode()),
        "utf16-bom.txt": lambda p: p.write_bytes(b"\xff\xfe" + "Notes in UTF-16: offline mode, Zoë.\n"
                                                 .encode("utf-16-le")),
        "utf16be-bom.md": lambda p: p.write_bytes(b"\xfe\xff" + "# Big endian\n\nCatalog plans for Zoë.\n"
                                                  .encode("utf-16-be")),
        "utf16-no-bom.txt": lambda p: p.write_bytes("Notes without a mark: offline mode ships in June.\n"
                                                    .encode("utf-16-le")),
        "utf8-bom.md": lambda p: p.write_bytes("\ufeff# With a BOM\n\nSync rate limits.\n".encode()),
        "nul-bytes.txt": lambda p: p.write_bytes(b"Sync notes\x00 from the team.\n" * 1 + b"More text\x00 here.\n" * 2
                                                 + b"The dispatch schedule moves to Tuesdays.\n" * 20),
        "control-chars.txt": lambda p: p.write_bytes(bytes(rnd.choice([1, 2, 3, 4, 5, 6, 14, 15, 16, 65, 66])
                                                           for _ in range(8192))),
        "one-line-3mb.txt": lambda p: p.write_text(" ".join(rnd.choice(WORDS) for _ in range(3 * MB // 7)),
                                                   encoding="utf-8"),
        "one-long-word.txt": lambda p: p.write_text("x" * (2 * MB), encoding="utf-8"),
        "heading-storm.md": lambda p: p.write_text("".join(f"## Heading {i}\n\nLine {i} about the roadmap.\n\n"
                                                           for i in range(10_000)), encoding="utf-8"),
        "headings-only.md": lambda p: p.write_text("# Q3 roadmap\n\n## Offline mode for technicians\n\n"
                                                   "## QuickBooks catalog sync\n\n### Rate limits\n", encoding="utf-8"),
        "nested-lists.md": lambda p: p.write_text("# Deep\n\n" + "".join("  " * i + f"- level {i}\n"
                                                                         for i in range(2000)), encoding="utf-8"),
        "unclosed-fence.md": lambda p: p.write_text("# Code\n\nIntro text.\n\n```python\n"
                                                    + "x = 1\n" * 500 + "# not a heading\n", encoding="utf-8"),
        "corrupt.pdf": lambda p: p.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage\x00\xff" * 20),
        "encrypted.pdf": lambda p: p.write_bytes(_pdf(1, password="secret")),
        "truncated.pdf": lambda p: p.write_bytes((lambda d: d[: int(len(d) * 0.6)])(_pdf(3))),
        "text-named.pdf": lambda p: p.write_text("I am plain text with a .pdf name.\n", encoding="utf-8"),
        "fine.pdf": lambda p: p.write_bytes(_pdf(3)),
        "corrupt.docx": lambda p: p.write_bytes(b"PK\x03\x04" + bytes(rnd.getrandbits(8) for _ in range(2048))),
        "zip-bomb.docx": lambda p: p.write_bytes(_docx_bomb(400 * MB)),
        "lying-zip-bomb.docx": lambda p: p.write_bytes(_lying_zip(_docx_bomb(40 * MB), "word/document.xml", 2048)),
        "ole-encrypted.docx": lambda p: p.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 4096),
        "fine.docx": lambda p: p.write_bytes(_docx("The catalog integration ships in June.\n\nOffline mode next.")),
        "scripts.html": lambda p: p.write_text(
            "<html><head><title>Briefing</title><style>body{color:red}</style>"
            "<script>var secret = 'SCRIPT-TEXT'; document.write('<div><div>');</script></head>"
            "<body><h1>Analyst briefing</h1><p>Offline mode matters.<script>alert('SCRIPT-TEXT')</script></p>"
            "</body></html>", encoding="utf-8"),
        "nested-10k.html": lambda p: p.write_text("<html><body>" + "<div>" * 10_000 + "deep" + "</div>" * 10_000
                                                  + "</body></html>", encoding="utf-8"),
        "script-only.html": lambda p: p.write_text("<html><head><script>var a = 1;</script></head><body></body></html>",
                                                   encoding="utf-8"),
        "new\nline.md": lambda p: p.write_text("# Newline name\n\nA file whose name has a newline.\n", encoding="utf-8"),
        "-leading-dash.md": lambda p: p.write_text("# Dash\n\nA file whose name starts with a dash.\n",
                                                   encoding="utf-8"),
        "unsupported.xyz": lambda p: p.write_text("not a supported type", encoding="utf-8"),
        "huge-100mb.txt": lambda p: _write_repeated(p, _prose(MIB, seed=3).encode(), 100 * MB),
        "markdown-45mb.md": lambda p: _write_repeated(p, _prose(MIB, seed=4).encode(), 45 * MB),
        "one-line-10mb.txt": lambda p: p.write_text(" ".join(rnd.choice(WORDS) for _ in range(1_600_000))[:10_500_000],
                                                    encoding="utf-8"),
        "million-lines.txt": lambda p: p.write_text("\n".join(rnd.choice(WORDS) for _ in range(1_000_000)),
                                                    encoding="utf-8"),
        "million-sentences.txt": lambda p: p.write_text("Go.\n" * 1_000_000, encoding="utf-8"),
    }
    selected = cases(big=big)
    for case in selected:
        path = case.path(folder)
        if case.name in writers:
            writers[case.name](path)
        elif case.name == "loop-a.md":
            os.symlink("loop-b.md", folder / "loop-b.md")
            os.symlink("loop-a.md", path)
        elif case.name == "sub/back":
            (folder / "sub").mkdir(exist_ok=True)
            (folder / "sub" / "inner.md").write_text("# Inner\n\nInside a folder with a loop.\n", encoding="utf-8")
            os.symlink("..", path)
        elif case.name == "pipe.md":
            os.mkfifo(path)
        elif case.name == "unreadable.md":
            path.write_text("# Secret\n\nNobody may read this.\n", encoding="utf-8")
            path.chmod(0)
        elif case.name == "proc-mem.md":
            os.symlink("/proc/self/mem", path)
        elif case.name == "alias.md":
            os.symlink("good.md", path)
        elif case.raw_name is not None:
            with open(os.path.join(os.fsencode(folder), case.raw_name), "wb") as f:
                f.write("# Café\n\nA file whose name is Latin-1.\n".encode())
        else:  # pragma: no cover - a case without a writer
            raise AssertionError(case.name)
    if os.geteuid() == 0:  # root reads a file whatever its mode: the case shows that instead
        for case in selected:
            if case.name == "unreadable.md":
                case.expect, case.reason = "ingest", ""
                case.what += " (running as root, which may read it)"
    return selected


def peak_mb() -> tuple[float, float]:
    """Peak resident memory (MiB) of this process and of its largest child (the converter).

    This process's own peak is its memory's high-water mark (``VmHWM``): ``ru_maxrss`` keeps
    the peak of the process that started it (Linux carries it across ``exec``), so under a
    pytest process of 2 GB it read 2 GB before the first case ran."""
    from ragloom.load.worker import peak_rss_mb

    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
        own = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration, ValueError, IndexError):
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return own, peak_rss_mb()


def open_handles() -> tuple[int, int]:
    """(open file descriptors, live child processes) of this process (Linux; (0, 0) elsewhere)."""
    try:
        fds = len(os.listdir("/proc/self/fd"))
        children = sum(len(Path(f"/proc/self/task/{t}/children").read_text().split())
                       for t in os.listdir("/proc/self/task"))
    except OSError:
        return 0, 0
    return fds, children


def run(*, big: bool = True, folder: Path | None = None, only: set[str] | None = None) -> dict[str, object]:
    """Ingest each case alone (its own tenant: time and outcome), then the whole corpus in one
    batch (everything lands but what must be skipped); peak memory over the run, and what was
    left open at the end (file descriptors, converter processes)."""
    from ragloom import Engine, HashingEmbedder
    from ragloom.config import Settings

    tmp = Path(tempfile.mkdtemp(prefix="ragloom-hostile-")) if folder is None else folder
    corpus = tmp / "corpus"
    started = time.perf_counter()
    selected = make_corpus(corpus, big=big)
    made = time.perf_counter() - started
    tried = [c for c in selected if only is None or c.name in only]
    settings = Settings.load(environ={}, overrides={"embedding.model": "hashing", "embedding.cache": False})
    engine = Engine(tmp / "ws", settings=settings, embedder=HashingEmbedder())
    engine.stats()  # the store opened: what stays open from here on is the store's own
    handles_before = open_handles()
    for i, case in enumerate(tried):
        path = case.target(corpus)
        t0 = time.perf_counter()
        report = engine.ingest([path], lens="hostile", tenant=f"case{i}")
        seconds = time.perf_counter() - t0
        case.outcome = {"corpus": str(corpus), "seconds": round(seconds, 2), "added": report.added,
                        "failed": [m for _, m in report.failed],
                        "documents": report.documents, "chunks": report.chunks_written,
                        "peak_mb": round(peak_mb()[0])}
        print(f"{case.name}: {seconds:.1f} s", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    # The folder, a file inside it named again, a link to that file, and an unsupported file.
    batch = engine.ingest([corpus, corpus / "good.md", corpus / "alias.md", corpus / "unsupported.xyz"],
                          lens="hostile", tenant="batch")
    batch_seconds = time.perf_counter() - t0
    own, children = peak_mb()
    handles_after = open_handles()
    return {
        "cases": [asdict(c) | {"raw_name": c.raw_name.decode("latin-1") if c.raw_name else None} for c in tried],
        "batch": {"seconds": round(batch_seconds, 2), "files": batch.files, "added": batch.added,
                  "failed": [m for _, m in batch.failed], "documents": batch.documents,
                  "stored": engine.stats(tenant="batch")["documents"]},
        "corpus_seconds": round(made, 1),
        "total_seconds": round(time.perf_counter() - started, 1),
        "peak_mb": round(own), "converter_peak_mb": round(children),
        "open_files": [handles_before[0], handles_after[0]], "child_processes": [handles_before[1], handles_after[1]],
        "root": os.geteuid() == 0,
    }


def _cleanup(folder: Path) -> None:
    for root, dirs, _ in os.walk(folder):
        for d in dirs:
            p = Path(root) / d
            if not p.is_symlink():
                p.chmod(stat.S_IRWXU)
    for p in folder.rglob("*"):
        if not p.is_symlink() and p.is_file():
            p.chmod(stat.S_IRUSR | stat.S_IWUSR)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import shutil

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="leave out the cases that take seconds (100 MB, ...)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--only", nargs="*", help="try only these cases alone (the batch still has them all)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="ragloom-hostile-"))
    try:
        result = run(big=not args.small, folder=folder, only=set(args.only) if args.only else None)
    finally:
        _cleanup(folder)
        shutil.rmtree(folder, ignore_errors=True)
    text = json.dumps(result, indent=2, default=str)
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
