"""How much less reductive ``generate`` is than plain retrieval, and how long writing takes.

    .venv/bin/python bench/report_coverage.py [--repeats 5]

The sample materials (six lenses), ingested with the default settings (the bundled MiniLM).
Two reports on seed 000's six queries, both by the offline extractive writer, both with the
contradictions found among their own chunks:

- **generate**: balanced retrieval per query, graph expansion, de-duplication across
  queries, the optimised context grouped by lens (``Engine.generate``);
- **plain top-k**: the top k hybrid results per query, optimised with the default settings,
  for k = 20 (the optimiser's candidate count) and for k equal to generate's mean number of
  chunks per query.

For each: the share of the workspace's lenses, of its documents and of the contradictions
the engine detects in the whole workspace that the report cites (a contradiction counts when
the report cites both of its statements' sources). Then the time of a full offline
``generate`` and of ``ask``, median of ``--repeats`` runs, with the model already loaded.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import MATERIALS, markdown_table, save
from ragloom.config import Settings
from ragloom.demo import install_samples
from ragloom.engine import Engine
from ragloom.synthesise import Report, build_report, number_report_sources
from ragloom.writing import DEFAULT_TITLE, SEED_QUERIES


def plain_report(engine: Engine, k: int) -> Report:
    """The same six queries, the same writer, from plain top-k hybrid results."""
    contexts = [(q, engine.optimize(engine.query(q, k=k, mode="hybrid").results, q)) for q in SEED_QUERIES]
    per_query, sources = number_report_sources([(q, ctx.chunks) for q, ctx in contexts])
    chosen = [s.chunk_id for s in sources]
    contradictions = engine.insights.contradictions(chunk_ids=chosen, limit=20)
    writer = engine.writing._for(None, None, None)
    return build_report(DEFAULT_TITLE, per_query, contradictions, sources, engine.lenses(),
                        writer, source_numbers={s.chunk_id: s.number for s in sources})


def coverage(engine: Engine, report: Report) -> dict[str, float | int]:
    cited = {s.number: s for s in report.sources if s.number in set(report.citations.valid)}
    lenses = engine.store.lenses("default")
    documents = {d["document_id"] for d in engine.store.documents("default")}
    cited_docs = {s.document_id for s in cited.values()}
    detected = engine.contradictions(limit=None)

    def holds(statement: object) -> bool:
        return any(s.document_id == statement.document_id and s.start <= statement.start  # type: ignore[attr-defined]
                   and statement.end <= s.end for s in cited.values())  # type: ignore[attr-defined]

    covered = sum(1 for c in detected if all(holds(st) for st in c.statements))
    return {"lenses": len({s.lens for s in cited.values()}) / len(lenses), "documents": len(cited_docs) / len(documents),
            "contradictions": covered / len(detected) if detected else 0.0, "detected": len(detected),
            "sources_cited": len(cited), "statements": sum(s.statements for s in report.sections)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        install_samples(MATERIALS, ws)
        engine = Engine(ws, settings=Settings.load(ws, environ={}, overrides={"embedding.cache": False}))
        for folder in sorted(p for p in MATERIALS.iterdir() if p.is_dir()):
            assert engine.ingest(folder, lens=folder.name).ok
        report = engine.generate(queries=SEED_QUERIES)
        per_query = statistics.mean(q["after_deduplication"] for q in report.stats["queries"])
        rows, results = [], {}
        for label, made in [("generate", report), ("plain top-20 hybrid", plain_report(engine, 20)),
                            (f"plain top-{round(per_query)} hybrid", plain_report(engine, round(per_query)))]:
            c = coverage(engine, made)
            results[label] = c
            rows.append([label, f"{c['lenses']:.0%}", f"{c['documents']:.0%}",
                         f"{c['contradictions']:.0%} of {c['detected']}", c["sources_cited"], c["statements"]])
        table = markdown_table(["report", "lenses cited", "documents cited", "contradictions cited",
                                "sources cited", "statements"], rows)
        print(table)
        timings = {"generate": [], "ask": []}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            engine.generate(queries=SEED_QUERIES)
            timings["generate"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            engine.ask("When will the QuickBooks catalog integration ship?")
            timings["ask"].append(time.perf_counter() - t0)
        medians = {k: statistics.median(v) for k, v in timings.items()}
        print(f"offline generate: median {medians['generate']:.2f} s; ask: median {medians['ask'] * 1000:.0f} ms "
              f"({args.repeats} runs, model loaded)")
    save("report_coverage", {"coverage": results, "table": table, "timings": timings, "medians": medians})


if __name__ == "__main__":
    main()
