"""ANN recall@10 against exact search, and the search's time, for several probe counts and
query seeds, on a kept workspace of ``bench/query_latency.py``.

    .venv/bin/python bench/ann_recall.py --workspace DIR [--nprobes 24 48] [--seeds 101 102 103]
                                         [--queries 60]

Nothing is written: the workspace's indexes are searched as they are. Each seed draws other
noise for the query vectors (the sentence a query was made from stays), so a probe count picked
on one seed is checked on queries it was not picked on.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from common import markdown_table, save
from query_latency import noise, recall
from ragloom.config import Settings
from ragloom.embed import HashingEmbedder, normalize_rows
from ragloom.engine import Engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--nprobes", type=int, nargs="+", default=[24, 48])
    parser.add_argument("--seeds", type=int, nargs="+", default=[101, 102, 103])
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    found = np.load(args.workspace / "samples.npz")
    samples = found["vectors"][: args.queries]
    rows, results = [], []
    for nprobes in args.nprobes:
        settings = Settings.load(environ={}, overrides={"embedding.cache": False, "retrieval.ann_nprobes": nprobes})
        engine = Engine(args.workspace / "ws", settings=settings, embedder=HashingEmbedder(samples.shape[1]))
        for seed in args.seeds:
            rng = np.random.default_rng(seed)
            vectors = [normalize_rows((v + noise(rng, 0.35))[None, :])[0] for v in samples]
            scores = {}
            for table in ("chunks", "sentences"):
                scores[table] = recall(engine, vectors, table)
                spent = []
                for v in vectors[:20]:
                    t0 = time.perf_counter()
                    engine.store.vector_search("default", v, 10, table=table, columns=["chunk_id"])
                    spent.append(1000 * (time.perf_counter() - t0))
                scores[f"{table} ms"] = statistics.median(spent)
            results.append({"nprobes": nprobes, "seed": seed, **scores})
            rows.append([str(nprobes), str(seed), f"{scores['chunks']:.3f}", f"{scores['sentences']:.3f}",
                         f"{scores['chunks ms']:.1f}", f"{scores['sentences ms']:.1f}"])
            print(rows[-1], flush=True)
    table = markdown_table(["nprobes", "query seed", "recall@10 chunks", "recall@10 sentences",
                            "search p50 ms, chunks", "search p50 ms, sentences"], rows)
    print(table)
    save("ann_recall", {"results": results, "table": table})


if __name__ == "__main__":
    main()
