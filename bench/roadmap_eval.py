"""The synthesis on a corpus nobody here wrote: the Rust Leadership Council's repository.

    .venv/bin/python bench/roadmap_eval.py [--workspace DIR] [--split tune|report|all] [--only ask,decisions,report]

The corpus is ``../shared/data/rust-council`` (MIT OR Apache-2.0): policies, procedures,
committees, roles, guides, reports and 74 dated sync-meeting minutes, each folder ingested under
a lens of its name (the minutes under ``meetings``). The labels are in ``bench/labels``
(built by hand on this corpus; each answer and decision is an exact sentence of its file):

- ``rust_council_questions.jsonl``: 69 questions, each with the sentence that answers it, split
  at random into a tuning half (30) and a report half (39). **ask**: a question counts as
  answered when one of the answer's quotes covers at least half of that sentence (or the
  sentence covers at least half of a quote that lies inside it). Also reported: whether the
  sentence was in the answer's sources at all (retrieval), so that a miss can be told apart.
- ``rust_council_decisions.jsonl``: 49 decisions with their dates and 41 statements that look
  like decisions and are not. **decisions**: the decisions log's recall of the 49 (a log entry
  covering half of the sentence), its precision on the labelled statements (entries that are
  decisions among the entries that are labelled either way), and the share of entries with
  the labelled date.

**report**: ``generate`` with no queries and no model: how many timeline entries come from the
dated minutes, how many decisions and open questions it lists (and that none names a lens the
workspace does not have), its themes, and whether its citations check.

The workspace is built once (``--workspace`` keeps it; the default model, embedding cache on).
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from common import ROOT, SHARED, markdown_table, save
from ragloom.engine import Engine

CORPUS = SHARED / "rust-council"
LABELS = ROOT / "bench" / "labels"
#: Folder -> lens. The minutes speak as meetings; the rest by the kind of document they are.
LENSES = {"policies": "policies", "procedures": "procedures", "committees": "committees", "roles": "roles",
          "guides": "guides", "reports": "reports", "minutes": "meetings"}


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def workspace(path: Path | None) -> Engine:
    """The corpus ingested, each folder under its lens (built once when ``path`` already holds it)."""
    ws = path or ROOT / "bench" / "data" / "rust-council-ws"
    engine = Engine(ws)
    if engine.stats()["documents"] == 0:
        started = time.perf_counter()
        for folder, lens in LENSES.items():
            report = engine.ingest(CORPUS / folder, lens=lens)
            print(f"ingested {folder}: {report.summary()}", flush=True)
        engine.ingest(CORPUS / "README.md", lens="overview")
        print(f"workspace built in {time.perf_counter() - started:.0f} s", flush=True)
    return engine


class Texts:
    """The stored text of each corpus file, and where a labelled sentence lies in it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.docs = {d["source_path"]: d for d in engine.store.documents("default")}
        self._texts: dict[str, str] = {}

    def document(self, file: str) -> dict[str, Any]:
        path = (CORPUS / file).resolve().as_posix()
        return self.docs[path]

    def span(self, file: str, sentence: str) -> tuple[str, int, int]:
        doc = self.document(file)
        doc_id = doc["document_id"]
        if doc_id not in self._texts:
            self._texts[doc_id] = self.engine.store.document_texts("default", [doc_id])[doc_id]
        start = self._texts[doc_id].find(sentence)
        if start < 0:
            raise SystemExit(f"{file}: the labelled sentence is not in the stored text: {sentence[:80]!r}")
        return doc_id, start, start + len(sentence)


def covers(quote: tuple[str, int, int], label: tuple[str, int, int]) -> bool:
    """A quote covers a labelled sentence: half of the sentence, or a quote lying inside the
    sentence that is at least half of it."""
    doc, a, b = quote
    ldoc, la, lb = label
    if doc != ldoc:
        return False
    overlap = max(0, min(b, lb) - max(a, la))
    return overlap >= 0.5 * (lb - la)


def evaluate_ask(engine: Engine, questions: Sequence[dict[str, Any]],
                 label_of: Callable[[dict[str, Any]], tuple[str, int, int]]) -> dict[str, Any]:
    """``ask`` on each question: whether a quote covers its answer (``label_of``: the answer's
    document id and span), and whether the answer was among the sources at all."""
    rows = []
    for q in questions:
        label = label_of(q)
        started = time.perf_counter()
        result = engine.ask(q["question"])
        seconds = time.perf_counter() - started
        quotes = [(x.document_id, x.start, x.end) for x in result.answer.quotes]
        sources = [(s.document_id, s.start, s.end) for s in result.answer.sources]
        rows.append({"id": q["id"], "kind": q["kind"], "split": q["split"], "question": q["question"],
                     "answered": any(covers(x, label) for x in quotes),
                     "in_sources": any(covers(s, label) for s in sources),
                     "quotes": len(quotes), "seconds": round(seconds, 3),
                     "answer": result.answer.text})
    answered = sum(r["answered"] for r in rows)
    found = sum(r["in_sources"] for r in rows)
    by_kind: dict[str, list[bool]] = {}
    for r in rows:
        by_kind.setdefault(r["kind"], []).append(r["answered"])
    return {"questions": len(rows), "answered": answered, "accuracy": answered / max(len(rows), 1),
            "in_sources": found, "answered_when_in_sources": answered / max(found, 1),
            "by_kind": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_kind.items())}, "rows": rows}


def half(label: dict[str, Any]) -> str:
    """The decisions set's halves (it has no split of its own): by a hash of the id. The rules
    of :mod:`ragloom.analyse.decisions` were written looking at the tuning half only."""
    return "tune" if zlib.crc32(label["id"].encode()) % 2 == 0 else "report"


def evaluate_decisions(engine: Engine, texts: Texts, labels: Sequence[dict[str, Any]]) -> dict[str, Any]:
    log = engine.decisions()
    entries = [(d.document_id, d.start, d.end, d.date.isoformat() if d.date else None) for d in log]
    out: dict[str, Any] = {"entries": len(entries)}
    for part in ("tune", "report"):
        positives = [x for x in labels if not x.get("negative") and half(x) == part]
        negatives = [x for x in labels if x.get("negative") and half(x) == part]
        found = dated = 0
        for p in positives:
            label = texts.span(p["file"], p["text"])
            hit = next((e for e in entries if covers(e[:3], label)), None)
            if hit is not None:
                found += 1
                dated += hit[3] == p.get("date") or p.get("date") is None
        flagged = sum(1 for n in negatives if any(covers(e[:3], texts.span(n["file"], n["text"])) for e in entries))
        out[part] = {"decisions": len(positives), "recall": found / max(len(positives), 1), "negatives": len(negatives),
                     "negatives_flagged": flagged, "precision_on_labelled": found / max(found + flagged, 1),
                     "right_date": dated / max(found, 1)}
    return out


def evaluate_report(engine: Engine) -> dict[str, Any]:
    """``generate`` with no queries, offline: where its timeline, decisions and open questions
    come from, and its themes."""
    started = time.perf_counter()
    report = engine.generate()
    seconds = time.perf_counter() - started
    lenses = set(engine.lenses())
    timeline = list(report.timeline)
    return {
        "seconds": round(seconds, 1),
        "themes": [t.query for t in report.themes],
        "theme_quotes": sum(len(t.quotes) for t in report.themes),
        "timeline": len(timeline),
        "timeline_from_meetings": sum(1 for t in timeline if t.quote.lens == "meetings"),
        "timeline_said_dated": sum(1 for t in timeline if t.said is not None),
        "decisions": len(report.decisions),
        "open_questions": {kind: sum(1 for q in report.open_questions if q.kind == kind)
                           for kind in sorted({q.kind for q in report.open_questions})},
        "open_questions_naming_absent_lenses": sum(1 for q in report.open_questions if q.lens and q.lens not in lenses),
        "contradictions": len(report.contradictions),
        "citations_ok": report.citations.ok,
        "sources": len(report.sources),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=None)
    parser.add_argument("--split", choices=["tune", "report", "all"], default="all")
    parser.add_argument("--only", default="ask,decisions,report")
    parser.add_argument("--name", default="roadmap_eval")
    args = parser.parse_args()
    engine = workspace(args.workspace)
    texts = Texts(engine)
    wanted = set(args.only.split(","))
    out: dict[str, Any] = {"split": args.split}
    if "ask" in wanted:
        questions = [q for q in load_jsonl(LABELS / "rust_council_questions.jsonl")
                     if args.split == "all" or q["split"] == args.split]
        engine.ask(questions[0]["question"])  # the model loaded, the indexes read: not the questions' time
        out["ask"] = {split: evaluate_ask(engine, [q for q in questions if q["split"] == split],
                                          lambda q: texts.span(q["file"], q["answer"]))
                      for split in sorted({q["split"] for q in questions})}
        table = [[split, r["questions"], f"{r['answered']} ({r['accuracy']:.0%})", r["in_sources"],
                  f"{r['answered_when_in_sources']:.0%}", ", ".join(f"{k} {v}" for k, v in r["by_kind"].items())]
                 for split, r in out["ask"].items()]
        print(markdown_table(["split", "questions", "answering sentence quoted", "in the sources",
                              "quoted when in the sources", "by kind"], table))
    if "decisions" in wanted and hasattr(engine, "decisions"):
        out["decisions"] = evaluate_decisions(engine, texts, load_jsonl(LABELS / "rust_council_decisions.jsonl"))
        d = out["decisions"]
        print(f"{d['entries']} entries in the log")
        print(markdown_table(["half", "decisions", "recall", "look-alikes flagged", "precision (labelled)", "right date"],
                             [[part, d[part]["decisions"], f"{d[part]['recall']:.2f}",
                               f"{d[part]['negatives_flagged']}/{d[part]['negatives']}",
                               f"{d[part]['precision_on_labelled']:.2f}", f"{d[part]['right_date']:.2f}"]
                              for part in ("tune", "report")]))
    if "report" in wanted:
        out["report"] = r = evaluate_report(engine)
        print(f"report in {r['seconds']} s: themes {r['themes']}; timeline {r['timeline_from_meetings']}/{r['timeline']} "
              f"from the minutes; {r['decisions']} decisions; open questions {r['open_questions']}; "
              f"{r['contradictions']} contradictions; citations ok: {r['citations_ok']}")
    path = save(args.name, out)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
