"""A query-only process's memory on a kept workspace of ``bench/query_latency.py``.

    .venv/bin/python bench/query_memory.py --workspace DIR [--queries 10] [--query-seed 11] [--label NAME]

Opens the workspace ``query_latency.py --workspace DIR`` built (nothing is written: no index
build, no optimisation), then runs ``--queries`` queries in each mode in turn and prints, after
each mode, the process's resident memory: all of it (``VmRSS``), its own memory (``RssAnon``:
Python objects, arrays, LanceDB's caches) and the pages of files it has mapped (``RssFile``:
shared libraries, and the memory-mapped sentence index's pages that its queries touched, which
the kernel may take back at any time), and the peak (``VmHWM``). Run it twice: the first process
after a commit also writes the files derived from the tables (the sentence index), the next
only maps them. Latency is ``query_latency.py``'s business; this prints p50 only as a check.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from common import markdown_table, save
from query_latency import MODES, LookupEmbedder, noise
from ragloom.config import Settings
from ragloom.embed import normalize_rows
from ragloom.engine import Engine


def memory() -> dict[str, float]:
    """This process's VmRSS, RssAnon, RssFile and VmHWM in MB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return fields


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, required=True, help="the folder query_latency.py --workspace kept")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--query-seed", type=int, default=11)
    parser.add_argument("--label", default="", help="a name for this run in the saved results")
    parser.add_argument("--nprobes", type=int, default=None, help="retrieval.ann_nprobes (default: the settings')")
    args = parser.parse_args()
    started = time.perf_counter()
    found = np.load(args.workspace / "samples.npz")
    embedder = LookupEmbedder()
    rng = np.random.default_rng(args.query_seed)
    queries = []
    for text, vector in list(zip(found["texts"].tolist(), found["vectors"], strict=True))[: args.queries]:
        embedder.known[text] = normalize_rows((vector + noise(rng, 0.35))[None, :])[0]
        queries.append(text)
    overrides: dict[str, object] = {"embedding.cache": False, "entities.enabled": False, "retrieval.ann_min_rows": 50_000}
    if args.nprobes is not None:
        overrides["retrieval.ann_nprobes"] = args.nprobes
    settings = Settings.load(environ={}, overrides=overrides)
    engine = Engine(args.workspace / "ws", settings=settings, embedder=embedder)
    rows = [["opening the workspace", *(f"{v:,.0f}" for v in memory().values()), ""]]
    steps = {"open": memory()}
    for mode in MODES:
        spent = []
        for q in queries:
            result = engine.query(q, mode=mode, k=10)
            spent.append(1000 * (result.seconds - result.timings.get("embed query", 0.0)))
        steps[mode] = memory()
        rows.append([mode, *(f"{v:,.0f}" for v in steps[mode].values()), f"{statistics.median(spent):.0f}"])
    names = list(steps["open"])
    table = markdown_table(["after", *(f"{n} MB" for n in names), "p50 ms (first query included)"], rows)
    print(table)
    print(f"{time.perf_counter() - started:.0f} s in all")
    save("query_memory" + (f"_{args.label}" if args.label else ""), {"label": args.label, "steps": steps, "table": table})


if __name__ == "__main__":
    main()
