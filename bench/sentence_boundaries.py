"""Sentence boundaries on hard cases from real text: ragloom's rule-based splitter
(``ragloom.parse.sentences.sentence_spans``) beside pysbd, blingfire, syntok, spaCy's
rule-based sentencizer and sentencex, on the same labelled set, and their speed on the
documentation corpus, one process, one thread.

    .venv/bin/python bench/sentence_boundaries.py [--data bench/labels/sentence_boundaries.jsonl]
        [--corpus bench/data/doc-corpus/corpus.md] [--megabytes 5] [--repeats 3]

The labelled set, bench/labels/sentence_boundaries.jsonl, holds short passages (1-5 sentences)
copied verbatim from text nobody on this project wrote: the documentation corpus (CPython and
Linux kernel docs, see ../shared/data/get_doc_corpus.sh), the Rust leadership council's meeting
minutes (../shared/data/rust-council/minutes/sync-meeting) and text that pdfminer's
``extract_text`` makes of three PDFs (``source`` is then ``pdf:<path>``). Each line has a
``category`` (the difficulty it was picked for, or ``plain``/``markdown`` for easy controls)
and the gold ``sentences``: exact substrings of ``text``, in order, separated only by
whitespace. They follow the usual conventions (pySBD's Golden Rules): an abbreviation,
``e.g.`` or an initial does not end a sentence, but a sentence may end on one ("... etc.
The"); an inline list "(1) x (2) y" stays in one sentence unless its items end with periods;
a quotation stays whole and takes its citation ("... thought." [3]_); URLs, file names,
versions, e-mail addresses and code spans are never split; a Markdown heading, a list item
or a PDF bullet is a sentence of its own.

Scores, per splitter: *exact*, the share of cases whose set of whitespace-trimmed spans equals
the gold one; boundary precision, recall and F1 over all cases together, a boundary being the
end offset of a sentence other than the last of its case; exact per category, over the hard
categories and over the controls; and, against ragloom, the cases only one of the two gets
right with the exact McNemar p-value of that difference. Libraries
that return strings (sentencex) are mapped back to offsets by searching forward in the text;
those that return offsets are used as they are (pysbd's ``char_span``; a span whose text does
not match is searched for instead). Every library runs with its defaults for English and no
model download (spaCy: ``spacy.blank("en")`` + ``sentencizer``). pysbd ends a sentence at
every line break, so it also runs on the text with its single newlines turned into spaces
(an extra row, "pysbd, single newlines as spaces").

Speed: MB/s of UTF-8 input over the first ``--megabytes`` of the corpus, cut at blank lines
into blocks of about 10,000 characters (pysbd and spaCy slow down on very long strings; a
RAG engine splits sections, not whole corpora), the best of ``--repeats`` runs. The timed
call is each library's own (its output materialised as a list); the offset mapping above is
not timed.

A library that is not installed is skipped and listed as such; install them with
``.venv/bin/pip install pysbd blingfire syntok spacy sentencex``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from common import ROOT, markdown_table, save
from ragloom.parse.sentences import sentence_spans

DEFAULT_DATA = ROOT / "bench" / "labels" / "sentence_boundaries.jsonl"
DEFAULT_SPEED_CORPUS = ROOT / "bench" / "data" / "doc-corpus" / "corpus.md"
BLOCK_CHARS = 10_000
CONTROLS = ["markdown", "plain"]  # the easy categories; the others are the hard cases

Span = tuple[int, int]
_SINGLE_NEWLINE = re.compile(r"(?<!\n)\n(?!\n)")


@dataclass
class Splitter:
    name: str
    package: str
    run: Callable[[str], Any]  # the library's own call, timed; output materialised
    spans: Callable[[str, Any], list[Span]]  # its output as offsets (not timed)


# ---------------------------------------------------------------------------------------------
# Offsets


def trim(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def unwrap(text: str) -> str:
    """``text`` with each single line break (not a blank line) turned into a space."""
    return _SINGLE_NEWLINE.sub(" ", text)


def clean(text: str, spans: Iterable[Span]) -> list[Span]:
    """Whitespace-trimmed, non-empty spans in order of their start."""
    out = [trim(text, max(0, s), min(len(text), e)) for s, e in spans]
    return sorted({(s, e) for s, e in out if s < e})


def align(text: str, pieces: Iterable[str]) -> list[Span]:
    """Offsets of ``pieces`` (strings a library returned, in order) in ``text``: each is searched
    forward from the end of the one before; one not found verbatim (a library that changed its
    whitespace) is matched character by character, whitespace ignored, as far as it agrees."""
    spans, pos = [], 0
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        k = text.find(piece, pos)
        if k >= 0:
            spans.append((k, k + len(piece)))
            pos = k + len(piece)
            continue
        while pos < len(text) and text[pos].isspace():
            pos += 1
        start = pos
        for ch in piece:
            if ch.isspace():
                continue
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text) or text[pos] != ch:
                break
            pos += 1
        if pos > start:
            spans.append((start, pos))
    return spans


# ---------------------------------------------------------------------------------------------
# The splitters


def splitters() -> tuple[list[Splitter], dict[str, str]]:
    """The splitters that import, and for each one that does not, why."""
    found: list[Splitter] = [Splitter("ragloom sentence_spans", "ragloom", sentence_spans, lambda t, out: out)]
    skipped: dict[str, str] = {}

    def attempt(name: str, make: Callable[[], Splitter]) -> None:
        try:
            found.append(make())
        except Exception as exc:  # ImportError, or a library that fails to start
            skipped[name] = f"{type(exc).__name__}: {exc}"

    def pysbd_() -> Splitter:
        import pysbd

        seg = pysbd.Segmenter(language="en", clean=False, char_span=True)

        def spans(text: str, out: list[Any]) -> list[Span]:
            result, pos = [], 0
            for ts in out:
                if text[ts.start:ts.end] == ts.sent:
                    result.append((ts.start, ts.end))
                    pos = ts.end
                else:  # pysbd finds its spans by searching too; it can land on an earlier copy
                    found = [(s + pos, e + pos) for s, e in align(text[pos:], [ts.sent])]
                    result.extend(found)
                    pos = found[-1][1] if found else pos
            return result

        return Splitter("pysbd (en, clean=False, char_span=True)", "pysbd", seg.segment, spans)

    def pysbd_unwrapped() -> Splitter:
        # pysbd ends a sentence at every line break; hard-wrapped prose (all of the corpus) needs
        # its single newlines turned into spaces first. Same length, so the offsets still hold;
        # the substitution is inside the timed call.
        base = pysbd_()
        return Splitter("pysbd, single newlines as spaces", "pysbd",
                        lambda text: base.run(unwrap(text)), lambda text, out: base.spans(unwrap(text), out))

    def blingfire_() -> Splitter:
        import blingfire

        return Splitter("blingfire text_to_sentences_and_offsets", "blingfire",
                        blingfire.text_to_sentences_and_offsets, lambda t, out: list(out[1]))

    def syntok_() -> Splitter:
        import syntok.segmenter as segmenter

        def run(text: str) -> list[list[Any]]:
            return [sentence for paragraph in segmenter.analyze(text) for sentence in paragraph]

        def spans(text: str, out: list[list[Any]]) -> list[Span]:
            return [(s[0].offset, s[-1].offset + len(s[-1].value)) for s in out if s]

        return Splitter("syntok segmenter.analyze", "syntok", run, spans)

    def spacy_() -> Splitter:
        import spacy

        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        nlp.max_length = 10**8

        def run(text: str) -> list[Span]:
            return [(s.start_char, s.end_char) for s in nlp(text).sents]

        return Splitter("spaCy blank('en') + sentencizer", "spacy", run, lambda t, out: out)

    def sentencex_() -> Splitter:
        import sentencex

        return Splitter("sentencex segment('en')", "sentencex",
                        lambda text: list(sentencex.segment("en", text)), lambda t, out: align(t, out))

    attempt("pysbd", pysbd_)
    attempt("pysbd, single newlines as spaces", pysbd_unwrapped)
    attempt("blingfire", blingfire_)
    attempt("syntok", syntok_)
    attempt("spacy", spacy_)
    attempt("sentencex", sentencex_)
    return found, skipped


def package_version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


# ---------------------------------------------------------------------------------------------
# The labelled set


def _referenced(case: dict[str, Any], corpus_root: Path, pdfs: dict[str, str]) -> str | None:
    """The passage a case points to (its text is not copied here: the documentation corpus and
    the PDFs are other people's, built or installed on the machine), or None when the source
    is not there or has changed."""
    if case["source"] == "doc-corpus":
        path = corpus_root / "corpus" / case["file"]
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != case["sha256"]:
            return None
        return path.read_text(encoding="utf-8")[case["start"]:case["end"]]
    path = Path(case["file"])
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != case["sha256"]:
        return None
    if case["file"] not in pdfs:
        from pdfminer.high_level import extract_text

        pdfs[case["file"]] = extract_text(str(path))
    return pdfs[case["file"]][case["start"]:case["end"]]


def load(path: Path, corpus_root: Path = ROOT / "bench" / "data" / "doc-corpus") -> list[dict[str, Any]]:
    """The cases, each with its ``text`` and gold ``spans``. A case either carries its text and
    sentences (text the project may keep: the council's minutes, our own PDF) or points into a
    source by file, offsets and sha256, with its sentences as spans of the passage; one whose
    source is missing is left out (and counted). Exits on a case whose sentences are not exact,
    trimmed, in order and covering the text."""
    cases, missing, pdfs = [], 0, dict[str, str]()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        case = json.loads(line)
        if "text" not in case:
            text = _referenced(case, corpus_root, pdfs)
            if text is None:
                missing += 1
                continue
            case = {**case, "text": text, "sentences": [text[a:b] for a, b in case["spans"]]}
        text, pos, spans = case["text"], 0, []
        for sentence in case["sentences"]:
            k = text.find(sentence, pos)
            if not sentence or sentence != sentence.strip() or k < 0 or text[pos:k].strip():
                sys.exit(f"{path}:{n} ({case.get('id')}): sentence {sentence[:40]!r} is not the next "
                         f"trimmed substring of the text")
            spans.append((k, k + len(sentence)))
            pos = k + len(sentence)
        if text[pos:].strip():
            sys.exit(f"{path}:{n} ({case.get('id')}): text after the last sentence: {text[pos:pos + 40]!r}")
        cases.append({**case, "spans": spans})
    if missing:
        print(f"{missing} cases left out: their source is not on this machine (build the documentation corpus "
              "with ../shared/data/get_doc_corpus.sh; the PDFs are Debian's libtasn1-doc and shared-mime-info)")
    return cases


def boundaries(spans: Sequence[Span]) -> set[int]:
    """End offsets of all sentences but the last."""
    return {e for _, e in list(spans)[:-1]}


def evaluate(splitter: Splitter, cases: list[dict[str, Any]]) -> dict[str, Any]:
    exact, tp, n_pred, n_gold = 0, 0, 0, 0
    by_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    failures, right = [], []
    for case in cases:
        text, gold = case["text"], case["spans"]
        try:
            pred = clean(text, splitter.spans(text, splitter.run(text)))
            error = None
        except Exception as exc:
            pred, error = [], f"{type(exc).__name__}: {exc}"
        ok = pred == sorted(gold)
        gb, pb = boundaries(gold), boundaries(pred)
        tp += len(gb & pb)
        n_pred += len(pb)
        n_gold += len(gb)
        exact += ok
        by_category[case["category"]][0] += ok
        by_category[case["category"]][1] += 1
        if ok:
            right.append(case["id"])
        else:
            failures.append({"id": case["id"], "category": case["category"],
                             "missed": sorted(gb - pb), "spurious": sorted(pb - gb),
                             "predicted": [text[s:e] for s, e in pred], **({"error": error} if error else {})})
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "exact": exact / len(cases), "exact_cases": exact, "cases": len(cases),
        "boundary_precision": precision, "boundary_recall": recall, "boundary_f1": f1,
        "boundaries_gold": n_gold, "boundaries_predicted": n_pred, "boundaries_right": tp,
        "by_category": {c: {"exact": k / n, "right": k, "cases": n} for c, (k, n) in sorted(by_category.items())},
        "right": right, "failures": failures,
    }


def paired(a: set[str], b: set[str]) -> dict[str, Any]:
    """Cases only ``a`` gets right, only ``b`` gets right, and the two-sided exact McNemar
    (sign test) p-value of that difference."""
    wins, losses = len(a - b), len(b - a)
    n, k = wins + losses, min(wins, losses)
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n) if n else 1.0
    return {"only_this": wins, "only_other": losses, "p_value": p}


# ---------------------------------------------------------------------------------------------
# Speed


def speed_blocks(path: Path, megabytes: float) -> list[str]:
    """The first ``megabytes`` of ``path``, cut at blank lines into blocks of about
    ``BLOCK_CHARS`` characters."""
    if not path.exists():
        sys.exit(f"no speed corpus at {path}: build it with\n    bash ../shared/data/get_doc_corpus.sh")
    data = path.read_bytes()[: int(megabytes * 1e6)].decode("utf-8", errors="ignore")
    blocks, current, size = [], [], 0
    for piece in re.split(r"(?<=\n\n)", data):
        current.append(piece)
        size += len(piece)
        if size >= BLOCK_CHARS:
            blocks.append("".join(current))
            current, size = [], 0
    if current:
        blocks.append("".join(current))
    return blocks


def time_splitter(splitter: Splitter, blocks: list[str], repeats: int) -> tuple[float, int]:
    splitter.run(blocks[0])  # warm up: lazy loading, compiled patterns
    seconds = float("inf")  # the fastest run: the least disturbed by other load
    for _ in range(repeats):
        t0 = time.perf_counter()
        for block in blocks:
            splitter.run(block)
        seconds = min(seconds, time.perf_counter() - t0)
    sentences = sum(len(clean(b, splitter.spans(b, splitter.run(b)))) for b in blocks)
    return seconds, sentences


# ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the labelled set (JSON lines)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_SPEED_CORPUS, help="the text for the speed runs")
    parser.add_argument("--megabytes", type=float, default=5.0, help="how much of --corpus to time (MB)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-speed", action="store_true", help="only the labelled set")
    args = parser.parse_args()

    cases = load(args.data)
    categories = sorted({c["category"] for c in cases})
    found, skipped = splitters()
    print(f"{len(cases)} cases in {len(categories)} categories from {args.data}")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")

    results: dict[str, dict[str, Any]] = {}
    for splitter in found:
        r = evaluate(splitter, cases)
        r["package"], r["version"] = splitter.package, package_version(splitter.package)
        results[splitter.name] = r
        print(f"{splitter.name:<45} exact {100 * r['exact']:5.1f}%  boundary P {100 * r['boundary_precision']:5.1f} "
              f"R {100 * r['boundary_recall']:5.1f} F1 {100 * r['boundary_f1']:5.1f}")

    base = next(iter(results))  # ragloom
    for r in results.values():
        r["vs_ragloom"] = paired(set(r["right"]), set(results[base]["right"]))

    megabytes = None
    if not args.no_speed:
        blocks = speed_blocks(args.corpus, args.megabytes)
        megabytes = sum(len(b.encode("utf-8")) for b in blocks) / 1e6
        print(f"\nspeed: {megabytes:.2f} MB of {args.corpus} in {len(blocks)} blocks, best of {args.repeats}")
        for splitter in found:
            seconds, sentences = time_splitter(splitter, blocks, args.repeats)
            results[splitter.name].update(seconds=seconds, mb_per_s=megabytes / seconds, corpus_sentences=sentences)
            print(f"{splitter.name:<45} {megabytes / seconds:8.2f} MB/s  ({sentences} sentences)")

    def pct(x: float) -> str:
        return f"{100 * x:.1f}"

    def versus(name: str, r: dict[str, Any]) -> str:
        v = r["vs_ragloom"]
        return "-" if name == base else f"+{v['only_this']} / -{v['only_other']} (p={v['p_value']:.2f})"

    rows = [[name, f"{r['exact_cases']}/{r['cases']} ({pct(r['exact'])}%)", pct(r["boundary_precision"]),
             pct(r["boundary_recall"]), pct(r["boundary_f1"]), versus(name, r),
             f"{r['mb_per_s']:.2f}" if "mb_per_s" in r else "-"]
            for name, r in sorted(results.items(), key=lambda kv: -kv[1]["exact"])]
    table = markdown_table(["splitter", "exact", "boundary P", "boundary R", "boundary F1",
                            "cases right vs ragloom", "MB/s"], rows)
    short = {name: name.split(" ")[0].rstrip(",") + (" unwrapped" if "newlines as spaces" in name else "")
             for name in results}
    counts = {c: sum(1 for case in cases if case["category"] == c) for c in categories}
    category_rows = [[f"{c} ({counts[c]})", *(pct(results[n]["by_category"][c]["exact"]) for n in results)]
                     for c in categories]
    for label, members in (("hard", [c for c in categories if c not in CONTROLS]), ("controls", CONTROLS)):
        ids = {case["id"] for case in cases if case["category"] in members}
        if ids:
            category_rows.append([f"{label} ({len(ids)})",
                                  *(pct(len(ids & set(results[n]["right"])) / len(ids)) for n in results)])
    for split in ("dev", "test"):
        ids = {case["id"] for case in cases if case.get("split") == split}
        if ids:
            category_rows.append([f"{split} half ({len(ids)})",
                                  *(pct(len(ids & set(results[n]["right"])) / len(ids)) for n in results)])
    category_rows.append([f"all ({len(cases)})", *(pct(results[n]["exact"]) for n in results)])
    category_table = markdown_table(["category (cases)", *(short[n] for n in results)], category_rows)
    print()
    print(table)
    print()
    print("exact per category (%):")
    print(category_table)
    path = save("sentence_boundaries", {
        "data": str(args.data), "cases": len(cases), "categories": counts,
        "speed": None if megabytes is None else {"corpus": str(args.corpus), "megabytes": megabytes,
                                                 "block_chars": BLOCK_CHARS, "repeats": args.repeats},
        "skipped": skipped, "results": results, "table": table, "category_table": category_table,
    })
    print(f"\nwrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
