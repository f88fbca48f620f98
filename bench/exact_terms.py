"""Exact terms in a question: retrieval of the answering passage on the documentation corpus (issue 26).

    .venv/bin/python bench/exact_terms.py [--run NAME] [--workspace DIR] [--split tune|report|all]

The questions are ``bench/labels/doc_corpus_questions.jsonl`` (47, written by hand on the
CPython 3.11 and Linux 6.1 documentation that ``../shared/data/get_doc_corpus.sh`` builds; each
with the exact span of its file that answers it, split at random into a tuning half (20) and a
report half (27)). A question *holds exact terms* when :func:`ragloom.retrieve.exact.exact_terms`
finds any in it (identifiers such as ``asyncio.gather`` or ``vm.swappiness``, versions, numbers,
``snake_case`` and ``CamelCase`` names, paths, calls, error codes); the table reports those
questions and all questions apart, so that a change that helps the first cannot hide a loss on
the rest.

The workspace (built once, under ``bench/data/exact-terms-ws`` unless ``--workspace``) holds
every answering file and 300 other files of the corpus drawn with seed 26, each under the lens
of its top folder (``python``, ``linux``): 300 distractors that share the answering files'
vocabulary. A question is a hit at k when a chunk among the first k overlaps its answering span.
``--ask`` measures ``ragloom ask`` on the same questions instead (issue 25, "answers from the
docs"): a question is answered when a quote of the answer covers at least half of its answering
span, as ``bench/roadmap_eval.py`` counts on the council corpus.

Results go to ``bench/results/exact_terms.json`` under ``--run``; ``--set
retrieval.exact_weight=0`` measures fusion without the exact-term list (the code before).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from common import DEFAULT_CORPUS, RESULTS, ROOT, markdown_table
from ragloom.engine import Engine
from ragloom.retrieve.exact import exact_terms
from roadmap_eval import evaluate_ask

LABELS = ROOT / "bench" / "labels" / "doc_corpus_questions.jsonl"
CORPUS = DEFAULT_CORPUS / "corpus"
MODES = ("bm25", "vector", "hybrid", "graph", "window")
KS = (1, 5, 10)


def questions(split: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if split == "all" or r["split"] == split]


def workspace(path: Path, settings: dict[str, Any] | None = None) -> Engine:
    engine = Engine(path, settings=settings)
    if engine.stats()["documents"]:
        return engine
    answers = sorted({r["file"] for r in questions("all")})
    others = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.md"))
    others = [p for p in others if p not in answers]
    files = answers + random.Random(26).sample(others, 300)
    started = time.perf_counter()
    for lens in ("python", "linux"):
        engine.ingest([CORPUS / f for f in files if f.startswith(lens + "/")], lens=lens)
    print(f"workspace: {len(files)} files in {time.perf_counter() - started:.0f} s", flush=True)
    return engine


def hit_rank(engine: Engine, q: dict[str, Any], mode: str) -> int | None:
    path = (CORPUS / q["file"]).resolve().as_posix()
    result = engine.query(q["question"], k=max(KS), mode=mode)
    for rank, c in enumerate(result.results, 1):
        if c.source_path == path and c.start < q["end"] and q["start"] < c.end:
            return rank
    return None


def ask(engine: Engine, qs: list[dict[str, Any]], run: str, split: str) -> None:
    ids = {d["source_path"]: d["document_id"] for d in engine.store.documents("default")}
    engine.ask(qs[0]["question"])  # the model loaded and the indexes read: not a question's time

    def label_of(q: dict[str, Any]) -> tuple[str, int, int]:
        return ids[(CORPUS / q["file"]).resolve().as_posix()], q["start"], q["end"]

    result = evaluate_ask(engine, qs, label_of)
    print(markdown_table(["split", "questions", "answering span quoted", "in the sources", "quoted when in the sources",
                          "by kind"],
                         [[split, result["questions"], f"{result['answered']} ({result['accuracy']:.0%})",
                           result["in_sources"], f"{result['answered_when_in_sources']:.0%}",
                           ", ".join(f"{k} {v}" for k, v in result["by_kind"].items())]]))
    save_run(f"ask/{run}/{split}", {k: v for k, v in result.items() if k != "rows"} | {
        "rows": [{k: r[k] for k in ("id", "answered", "in_sources", "quotes")} for r in result["rows"]]})


def save_run(key: str, value: dict[str, Any]) -> None:
    out = RESULTS / "exact_terms.json"
    saved = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    saved[key] = value
    out.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", default="current")
    parser.add_argument("--workspace", type=Path, default=ROOT / "bench" / "data" / "exact-terms-ws")
    parser.add_argument("--split", default="tune", choices=("tune", "report", "all"))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--set", action="append", default=[], help="section.key=value over the defaults")
    parser.add_argument("--ask", action="store_true", help="measure ragloom ask instead of retrieval")
    args = parser.parse_args()
    settings = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    engine = workspace(args.workspace, settings)
    qs = questions(args.split)
    if args.ask:
        ask(engine, qs, args.run, args.split)
        return
    exact_ids = {q["id"] for q in qs if exact_terms(q["question"])}
    ranks: dict[str, dict[str, int | None]] = {}
    for mode in args.modes.split(","):
        ranks[mode] = {q["id"]: hit_rank(engine, q, mode) for q in qs}

    def share(mode: str, ids: set[str], k: int) -> float:
        hits = [r for i, r in ranks[mode].items() if i in ids and r is not None and r <= k]
        return round(len(hits) / max(len(ids), 1), 3)

    rows = []
    for mode in ranks:
        for name, ids in (("exact terms", exact_ids), ("all", {q["id"] for q in qs})):
            rows.append([mode, f"{name} ({len(ids)})", *(share(mode, ids, k) for k in KS)])
    print(markdown_table(["mode", "questions", *(f"hit@{k}" for k in KS)], rows))
    save_run(f"{args.run}/{args.split}", {"ranks": ranks, "exact": sorted(exact_ids), "table": rows,
                                          "settings": settings})


if __name__ == "__main__":
    main()
