"""PDF layout and text encodings (issue 26): how PDF converters keep headings, list items and
tables and drop page furniture, on pages labelled by hand; and how ragloom decodes text that
is not UTF-8, and at what cost to the UTF-8 files it mostly reads.

    .venv/bin/python bench/pdf_layout.py [--labels bench/labels/pdf_layout.jsonl] [--repeats 3]
        [--corpus bench/data/doc-corpus/corpus] [--before 98c3455] [--no-save]

The labelled set, bench/labels/pdf_layout.jsonl, names ten pages of two real PDFs that Debian
installs (not in this repository: ``apt-get install libtasn1-doc shared-mime-info``):
the GNU Libtasn1 manual (Texinfo through pdfTeX: running headers "Chapter N: ...", page numbers
at the top, bullet lists, option tables, C prototypes set large) and the freedesktop.org Shared
MIME-info specification (DocBook through Ghostscript: a running header, page numbers at the
bottom, bullets that pdfminer boxes apart from their text, code, a monospaced table). Each line
stores the file, the page and its labels only: the headings and their level (title 1, chapter
2, section 3, entry 4), lines set large that are not headings, the list items (the start of
their text, and the start of a wrapped line that belongs to the item), the table rows, the
running header and page number lines, and a short anchor next to them on the page.

Each converter reads the whole PDF; the scores are read off its whole output:

* headings: recall (a labelled heading is a Markdown heading line, same text), precision (a
  heading line is right when it is a labelled heading, wrong when it is a line of a labelled
  page that is not: it starts with a "not heading" label, or it is a whole line of the page's
  text), and the share of
  the recalled headings at the labelled level;
* list items: *Markdown*, the item's text starts a Markdown list item line ("- x", "1. x");
  *attached*, a bullet glyph or marker stands right before the text on its line; *whole*, a
  wrapped item keeps its next line on the same line;
* table rows: a labelled row is a row of a Markdown table (cells equal);
* furniture leaked: a running header, or page number standing alone, within 300 characters of
  the anchor next to it (before it for the top of a page, after it for the bottom; the page's
  own headings are taken out of that window first); anchors and headers are matched ignoring
  whitespace, since pdfplumber drops the word spaces of the Shared MIME-info PDF;
* speed: pages per second over both PDFs (53 pages), the best of ``--repeats`` rounds, the
  converters taking turns.

Converters: ragloom before this change (pdf.py at ``--before``, read from git), ragloom now with
pdfminer's default layout and two other layout settings, pdfminer's plain ``extract_text``
(markitdown's PDF path), pypdf (plain and layout mode) and pdfplumber (plain and layout mode);
the last two are skipped when not installed (``.venv/bin/pip install pypdf pdfplumber``).

Encodings: ``decode_text`` before (``--before``) and now on bytes that are not UTF-8 (UTF-16
without a byte-order mark, a byte-order mark that lies, single-byte and CJK code pages), and its
speed, MB/s, on the documentation corpus as it is (UTF-8) and re-encoded as Windows-1252 (the
files that are not plain ASCII), the best of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
import types
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import ROOT, save
from common import markdown_table as _table

DEFAULT_LABELS = ROOT / "bench" / "labels" / "pdf_layout.jsonl"
DEFAULT_CORPUS = ROOT / "bench" / "data" / "doc-corpus" / "corpus"
#: The commit before issue 26's PDF and encoding work: the "before" rows.
BEFORE = "98c3455"
WINDOW = 300

_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "\u00ad": None})
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\(?[a-z]\)\s+)?(.*)$")
_MARK = r"(?:^|\s)(?:[-*+•●▪◦‣∙·–]|\d{1,3}[.)]|\(cid:\d+\))\s*"


def markdown_table(rows: list[dict[str, Any]]) -> str:
    return _table(list(rows[0]), [list(r.values()) for r in rows])


def norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).translate(_QUOTES).split())


def loose(text: str) -> re.Pattern[str]:
    """``text`` as a pattern that ignores whitespace (pdfplumber drops the spaces of some PDFs)."""
    return re.compile(r"\s*".join(re.escape(c) for c in text if not c.isspace()))


# ---------------------------------------------------------------------------------------------
# Converters


def _module_at(commit: str, path: str, name: str) -> types.ModuleType | None:
    """The module at ``path`` as it was at ``commit`` (None when git cannot show it)."""
    done = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        return None
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up there
    exec(compile(done.stdout, f"{commit}:{path}", "exec"), module.__dict__)  # noqa: S102 - our own file, at a commit
    return module


def converters(before: str) -> tuple[dict[str, Callable[[bytes], str]], dict[str, str]]:
    """The converters that can run, by name (each turns a PDF's bytes into text), and why the
    others cannot."""
    import io

    from pdfminer.high_level import extract_text
    from pdfminer.layout import LAParams

    from ragloom.load.pdf import pdf_to_markdown

    found: dict[str, Callable[[bytes], str]] = {}
    missing: dict[str, str] = {}
    old = _module_at(before, "src/ragloom/load/pdf.py", "ragloom_pdf_before")
    if old is None:
        missing["ragloom before"] = f"git show {before} failed"
    else:
        found[f"ragloom before ({before})"] = lambda data: old.pdf_to_markdown(data)[0]
    found["ragloom now"] = lambda data: pdf_to_markdown(data)[0]
    found["ragloom now, boxes_flow=None"] = lambda data: pdf_to_markdown(data, laparams=LAParams(boxes_flow=None))[0]
    found["ragloom now, line_margin=0.3"] = lambda data: pdf_to_markdown(data, laparams=LAParams(line_margin=0.3))[0]
    found["pdfminer extract_text (markitdown)"] = lambda data: extract_text(io.BytesIO(data))
    try:
        import pypdf
    except ImportError:
        missing["pypdf"] = "not installed"
    else:
        def pypdf_text(data: bytes, mode: str = "plain") -> str:
            reader = pypdf.PdfReader(io.BytesIO(data))
            return "\n\n".join(page.extract_text(extraction_mode=mode) for page in reader.pages)

        found[f"pypdf {pypdf.__version__}"] = pypdf_text
        found[f"pypdf {pypdf.__version__}, layout mode"] = lambda data: pypdf_text(data, "layout")
    try:
        import pdfplumber
    except ImportError:
        missing["pdfplumber"] = "not installed"
    else:
        def plumber_text(data: bytes, layout: bool = False) -> str:
            with pdfplumber.open(io.BytesIO(data)) as pdf:
                return "\n\n".join(page.extract_text(layout=layout) or "" for page in pdf.pages)

        found[f"pdfplumber {pdfplumber.__version__}"] = plumber_text
        found[f"pdfplumber {pdfplumber.__version__}, layout=True"] = lambda data: plumber_text(data, True)
    return found, missing


# ---------------------------------------------------------------------------------------------
# Scores


def page_lines(file: str, page: int) -> set[str]:
    """The whole lines of one page as pdfminer reads them, normalised."""
    from pdfminer.high_level import extract_text

    return {norm(line) for line in extract_text(file, page_numbers=[page - 1]).splitlines() if norm(line)}


def score(outputs: dict[str, str], labels: list[dict[str, Any]], lines_of: dict[tuple[str, int], set[str]],
          ) -> dict[str, Any]:
    labelled = {norm(text): level for row in labels for text, level in row["headings"]}
    wrong = {norm(t) for row in labels for t in row["not_headings"]}
    page_text = set().union(*lines_of.values()) - set(labelled)
    out_lines = [norm(line) for text in outputs.values() for line in text.splitlines()]
    headings: dict[str, int] = {}
    tp = fp = 0
    for line in (line for text in outputs.values() for line in text.splitlines()):
        m = _HEADING.match(line.strip())
        if not m:
            continue
        text = norm(m[2])
        if text in labelled:
            tp += 1
            headings.setdefault(text, len(m[1]))
        elif any(text.startswith(w) for w in wrong) or text in page_text:
            fp += 1  # a "not heading" line (or a paragraph that starts with one), or a line of the page
    at_level = sum(headings[t] == labelled[t] for t in headings)
    items = [item for row in labels for item in row["list_items"]]
    starts = [norm(m[1]) for line in out_lines if (m := _ITEM.match(line))]
    markdown = sum(any(s.startswith(norm(i["text"])) for s in starts) for i in items)
    attached = whole = 0
    wrapped = [i for i in items if "continues" in i]
    for item in items:
        pattern = re.compile(_MARK + re.escape(norm(item["text"])))
        holders = [line for line in out_lines if pattern.search(line)]
        attached += bool(holders)
        if "continues" in item:
            whole += any(norm(item["continues"]) in line for line in holders)
    rows = [tuple(norm(c) for c in r) for row in labels for t in row["tables"] for r in t["rows"]]
    table_rows = {tuple(norm(c) for c in re.split(r"(?<!\\)\|", line.strip())[1:-1])
                  for line in out_lines if line.startswith("|")}
    leaks, missing = [], []
    flat = {file: norm(text) for file, text in outputs.items()}
    for row in labels:
        out = flat[row["file"]]
        for item in row["furniture"]:
            anchor = norm(row["anchors"][item["position"]])
            at = loose(anchor).search(out)
            if at is None:
                missing.append(f"{row['id']}: {anchor}")
                continue
            window = out[max(0, at.start() - WINDOW):at.start()] if item["position"] == "top" else \
                out[at.end():at.end() + WINDOW]
            for text, _ in row["headings"]:
                window = loose(norm(text)).sub(" ", window)
            text = norm(item["text"])
            found = (re.search(rf"(?<![\w.,:/=*-]){re.escape(text)}(?![\w.,:/=*-])", window)
                     if item["kind"] == "page_number" else loose(text).search(window))
            if found:
                leaks.append(f"{row['id']}: {item['text']}")
    furniture = sum(len(row["furniture"]) for row in labels)
    return {
        "heading recall": len(headings) / len(labelled), "heading precision": tp / (tp + fp) if tp + fp else 0.0,
        "heading level": at_level / len(headings) if headings else 0.0,
        "items as Markdown": markdown / len(items), "items attached": attached / len(items),
        "wrapped items whole": whole / len(wrapped) if wrapped else 0.0,
        "table rows": sum(r in table_rows for r in rows) / len(rows) if rows else 0.0,
        "furniture leaked": f"{len(leaks)} of {furniture - len(missing)}", "leaks": leaks, "anchors not found": missing,
        "counts": {"headings": len(labelled), "heading lines right": tp, "heading lines wrong": fp,
                   "items": len(items), "wrapped items": len(wrapped), "table rows": len(rows), "furniture": furniture},
    }


def speed(convert: dict[str, Callable[[bytes], str]], files: dict[str, bytes], pages: int, repeats: int,
          ) -> dict[str, float]:
    best = dict.fromkeys(convert, float("inf"))
    for _ in range(repeats):
        for name, fn in convert.items():  # taking turns: a busy spell slows all of them alike
            start = time.perf_counter()
            for data in files.values():
                fn(data)
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: pages / seconds for name, seconds in best.items()}


# ---------------------------------------------------------------------------------------------
# Encodings

ZH = "这是一个关于水泵的中文文档。我们每天检查密封件。\n第二行：压力为 3.5 bar。\n"
RU = "Это документ о насосах. Мы проверяем уплотнения каждый день.\nВторая строка.\n"
JA = "これはポンプについての日本語の文書です。毎日シールを点検します。\n"
FR = "Le café est prêt. Nous vérifions les joints chaque matin à l'usine.\n"
ASCII = "Hello world, plain ASCII notes about pumps and seals.\n"


def encoding_cases() -> list[tuple[str, bytes, str | None]]:
    """(case, bytes, the text a reader should get, or None where refusing is right)."""
    return [
        ("Chinese, UTF-16-LE, no byte-order mark", ZH.encode("utf-16-le"), ZH),
        ("Chinese, UTF-16-BE, no byte-order mark", ZH.encode("utf-16-be"), ZH),
        ("Russian, UTF-16-LE, no byte-order mark", RU.encode("utf-16-le"), RU),
        ("Russian, UTF-16-BE, no byte-order mark", RU.encode("utf-16-be"), RU),
        ("UTF-16-LE mark, then ASCII", b"\xff\xfe" + ASCII.encode(), ASCII),
        ("UTF-16-BE mark, then ASCII", b"\xfe\xff" + ASCII.encode(), ASCII),
        ("UTF-16-LE mark, then Latin-1 French", b"\xff\xfe" + FR.encode("latin-1"), FR),
        ("UTF-16-LE mark, then random bytes", b"\xff\xfe" + random.Random(5).randbytes(2048), None),
        ("Russian, Windows-1251", RU.encode("cp1251"), RU),
        ("Japanese, Shift_JIS", JA.encode("shift_jis"), JA),
        ("Chinese, GB18030", ZH.encode("gb18030"), ZH),
        ("French, Latin-1", FR.encode("latin-1"), FR),
        ("Chinese, UTF-16-LE with its mark", b"\xff\xfe" + ZH.encode("utf-16-le"), ZH),
        ("random bytes", random.Random(3).randbytes(4096), None),
    ]


def run_case(decode: Callable[[Path, bytes], tuple[str, tuple[str, ...]]], data: bytes, want: str | None) -> str:
    try:
        text, notes = decode(Path("case.txt"), data)
    except Exception as exc:  # noqa: BLE001 - the refusal is the result
        return f"{'right' if want is None else 'WRONG'}: refused ({type(exc).__name__})"
    ok = want is not None and text == want
    shown = text[:18].replace("\n", " ")
    return f"{'right' if ok else 'WRONG'}: {shown!r}" + (f" ({notes[-1]})" if notes else "")


def decode_speed(decode: dict[str, Callable[[Path, bytes], Any]], blobs: list[bytes], repeats: int,
                 ) -> dict[str, float]:
    size = sum(len(b) for b in blobs) / 1e6
    best = dict.fromkeys(decode, float("inf"))
    for _ in range(repeats):
        for name, fn in decode.items():
            start = time.perf_counter()
            for blob in blobs:
                try:
                    fn(Path("f.md"), blob)
                except Exception:  # noqa: BLE001, S112 - a refusal costs time too; that is what is measured
                    continue
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: size / seconds for name, seconds in best.items()}


# ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", default=BEFORE, help="the commit whose pdf.py and readers.py are 'before'")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()

    labels = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    files = {row["file"]: Path(row["file"]).read_bytes() for row in labels if Path(row["file"]).is_file()}
    absent = sorted({row["file"] for row in labels} - set(files))
    if absent:
        sys.exit("missing PDFs (apt-get install libtasn1-doc shared-mime-info): " + ", ".join(absent))
    from pdfminer.pdfpage import PDFPage

    pages = sum(sum(1 for _ in PDFPage.get_pages(__import__("io").BytesIO(d))) for d in files.values())
    lines_of = {(row["file"], row["page"]): page_lines(row["file"], row["page"]) for row in labels}
    convert, missing = converters(args.before)
    rows, details = [], {}
    rates = speed(convert, files, pages, args.repeats)
    for name, fn in convert.items():
        result = score({file: fn(data) for file, data in files.items()}, labels, lines_of)
        details[name] = result
        rows.append({"converter": name, **{k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in result.items()
                                            if k not in ("leaks", "anchors not found", "counts")},
                     "pages/s": f"{rates[name]:.1f}"})
    print(f"{len(labels)} labelled pages of {len(files)} PDFs ({pages} pages in all); "
          f"{next(iter(details.values()))['counts']}")
    print(markdown_table(rows))
    for name in missing:
        print(f"skipped {name}: {missing[name]}")
    for name, result in details.items():
        if result["leaks"] or result["anchors not found"]:
            print(f"{name}: leaked {result['leaks']}; anchors not found {result['anchors not found']}")

    old = _module_at(args.before, "src/ragloom/load/readers.py", "ragloom_readers_before")
    from ragloom.load.readers import decode_text

    decoders: dict[str, Callable[[Path, bytes], Any]] = {}
    if old is not None:
        decoders[f"before ({args.before})"] = old.decode_text
    decoders["now"] = decode_text
    cases = [{"case": case, **{name: run_case(fn, data, want) for name, fn in decoders.items()}}
             for case, data, want in encoding_cases()]
    print(markdown_table(cases))
    corpus = sorted(args.corpus.rglob("*.md"))
    blobs = [f.read_bytes() for f in corpus]
    legacy = []
    for blob in blobs:
        text = blob.decode("utf-8")
        if not text.isascii():
            legacy.append(text.encode("cp1252", errors="replace"))
    speeds = {"UTF-8 corpus": decode_speed(decoders, blobs, args.repeats),
              "non-ASCII files as Windows-1252": decode_speed(decoders, legacy, args.repeats)}
    speed_rows = [{"input": what, "files": len(blobs) if what == "UTF-8 corpus" else len(legacy),
                   "MB": f"{sum(map(len, blobs if what == 'UTF-8 corpus' else legacy)) / 1e6:.1f}",
                   **{f"{name} MB/s": f"{v:.0f}" for name, v in rates_.items()}}
                  for what, rates_ in speeds.items()]
    print(markdown_table(speed_rows))
    if not args.no_save:
        path = save("pdf_layout", {"labels": str(args.labels.relative_to(ROOT)), "pages": pages, "pdf": details,
                                   "pages_per_s": rates, "skipped": missing, "encodings": cases,
                                   "decode_speed": speeds})
        print(f"saved {path}")


if __name__ == "__main__":
    main()
