"""Sentence-window expansion cost beyond the search, over a 100k-sentence index.

    .venv/bin/python bench/window_expansion.py [--sentences 100000] [--queries 50] [--k 10]

Workspace: the first documents of the documentation corpus (../shared/data/get_doc_corpus.sh)
until the sentence index holds at least ``--sentences`` sentences, ingested with the sentence
index on and ragloom's hashing embedder (384 dimensions), which makes a 100k-sentence index in
a minute or two; the expansion does the same work whichever model made the vectors. Queries:
sentences drawn from the corpus at random (seed 7), cut to their first twelve words.

Each query runs through ``Engine.query(mode=..., k=10)``, which reports its stages. "Beyond
the search" is the whole query minus embedding the query and the sentence-index search: it is
taking the hits' sentences from the in-memory sentence index (read from the table by the first
sentence query after a write, reported separately), growing and merging the spans, and reading
the documents' text for the spans (kept in memory once read). Configurations: the fixed window (3), the dynamic
window at its default threshold (0.75), the dynamic window with a threshold no neighbour
fails (-1: every hit grows the full ``max_expand`` = 5 each side, the worst case), with the
query floor (0.3), and the adaptive threshold, which reads every sentence of each hit's
document to take its quantile.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from common import doc_corpus, markdown_table, save
from ragloom.config import Settings
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine

CONFIGS = {
    "window (3 per side)": ("window", {}),
    "dynamic 0.75": ("dynamic", {}),
    "dynamic, always grows (worst case)": ("dynamic", {"threshold": -1.0}),
    "dynamic 0.75 + query floor 0.3": ("dynamic", {"query_floor": 0.3}),
    "dynamic, adaptive threshold": ("dynamic", {"adaptive": True}),
}
SEARCH_STAGES = ("embed query", "sentence search")


def sentence_count(engine: Engine) -> int:
    return len(engine.store.chunks("default", table="sentences", columns=["chunk_id"]))


def build(workspace: Path, target: int) -> tuple[Engine, int, int, float]:
    settings = Settings.load(environ={}, overrides={"embedding.model": "hashing", "embedding.cache": False,
                                                    "sentences.enabled": True, "entities.enabled": False,
                                                    "graph.enabled": False})
    engine = Engine(workspace, settings=settings, embedder=HashingEmbedder())
    files = doc_corpus()
    started = time.perf_counter()
    used, step = 0, 40
    while used < len(files):
        batch = Path(tempfile.mkdtemp(dir=workspace.parent))
        for path in files[used: used + step]:
            (batch / f"{used}-{path.name}").write_bytes(path.read_bytes())
            used += 1
        engine.ingest(batch, lens="docs")
        if sentence_count(engine) >= target:
            break
    return engine, sentence_count(engine), used, time.perf_counter() - started


def queries(engine: Engine, n: int) -> list[str]:
    rng = random.Random(7)
    rows = engine.store.chunks("default", table="sentences", columns=["text"])
    picked = rng.sample([r["text"] for r in rows if len(r["text"].split()) >= 6], n)
    return [" ".join(t.split()[:12]) for t in picked]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine, sentences, documents, seconds = build(Path(tmp) / "ws", args.sentences)
        print(f"index: {sentences} sentences from {documents} documents, built in {seconds:.0f} s")
        texts = queries(engine, args.queries)
        # The first sentence query after a write reads the sentence index into memory.
        first = engine.query(texts[0], mode="dynamic", top_k=args.k, k=args.k)
        cold_ms = 1000 * (first.seconds - sum(first.timings.get(s, 0.0) for s in SEARCH_STAGES))
        print(f"first query after the write: {cold_ms:.0f} ms beyond the search (loads the index)")
        results, rows = {}, []
        for name, (mode, options) in CONFIGS.items():
            engine.store.forget()  # every configuration reads the documents' text afresh
            engine.query(texts[0], mode=mode, top_k=args.k, k=args.k, **options)  # reloads the index
            beyond, search, stages, widths = [], [], {}, []
            for text in texts:
                r = engine.query(text, mode=mode, top_k=args.k, k=args.k, **options)
                spent = sum(r.timings.get(s, 0.0) for s in SEARCH_STAGES)
                search.append(1000 * r.timings.get("sentence search", 0.0))
                beyond.append(1000 * (r.seconds - spent))
                for stage, t in r.timings.items():
                    stages.setdefault(stage, []).append(1000 * t)
                widths.append(statistics.mean(len(x.sentences) for x in r) if r.results else 0)
            p95 = sorted(beyond)[int(0.95 * (len(beyond) - 1))]
            results[name] = {"beyond_median_ms": statistics.median(beyond), "beyond_p95_ms": p95,
                             "search_median_ms": statistics.median(search),
                             "stages_median_ms": {s: statistics.median(v) for s, v in stages.items()},
                             "sentences_per_result": statistics.mean(widths)}
            m = results[name]["stages_median_ms"]
            rows.append([name, f"{statistics.mean(widths):.1f}", f"{statistics.median(search):.1f}",
                         f"{m.get('load sentences', 0):.1f}", f"{m.get('expand', 0):.2f}",
                         f"{m.get('load texts', 0):.1f}", f"**{statistics.median(beyond):.1f}**", f"{p95:.1f}"])
    table = markdown_table(["configuration", "sentences per result", "search (ms)", "load sentences", "expand",
                            "load texts", "beyond the search, median", "p95"], rows)
    print(table)
    save("window_expansion", {"sentences": sentences, "documents": documents, "build_seconds": seconds,
                              "first_query_beyond_search_ms": cold_ms,
                              "queries": len(texts), "k": args.k, "results": results, "table": table})


if __name__ == "__main__":
    main()
