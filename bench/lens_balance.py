"""Lens balance of the top results for seed 000's six synthesis queries, with ``hybrid`` and with
``balanced`` retrieval, on the sample materials (all-MiniLM-L6-v2, contextual embeddings).

    .venv/bin/python bench/lens_balance.py [--top 24 48]

Balance is the normalised entropy of the lens distribution of the top N results over the six
lenses: 1.0 when every lens has the same share, 0 when one lens has everything.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from pathlib import Path

from common import MATERIALS, markdown_table, save
from ragloom.config import Settings
from ragloom.demo import sample_settings_file
from ragloom.engine import Engine
from ragloom.evaluate.context import EvalContext
from ragloom.evaluate.metrics import normalized_entropy

QUERIES = (
    "product strategy and vision",
    "roadmap priorities and timeline",
    "technical architecture and dependencies",
    "customer needs and outcomes",
    "resource constraints and trade-offs",
    "risks and concerns",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, nargs="+", default=[24, 48])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        embedder = EvalContext(Path(tmp), Path(tmp) / "out").embedder  # the shared, cached local model
        engine = Engine(Path(tmp) / "ws", settings=Settings.load(environ={}, config_file=sample_settings_file(MATERIALS),
                                                                 overrides={"embedding.cache": False}),
                        embedder=embedder)
        folders = sorted(p for p in MATERIALS.iterdir() if p.is_dir())
        lenses_of_workspace = [p.name for p in folders]
        for folder in folders:
            engine.ingest(folder, lens=folder.name)
        rows, raw = [], {}
        for query in QUERIES:
            row = {"query": query}
            for n in args.top:
                for mode in ("hybrid", "balanced"):
                    options = {"chunks_per_lens": n // len(lenses_of_workspace)} if mode == "balanced" else {}
                    results = engine.query(query, mode=mode, k=n, **options).results
                    lenses = [r.lens for r in results]
                    row[f"{mode} top {n}"] = round(normalized_entropy(lenses, lenses_of_workspace), 3)
                    raw[f"{query} | {mode} | {n}"] = dict(Counter(lenses))
            rows.append(row)
    columns = ["query"] + [f"{m} top {n}" for n in args.top for m in ("hybrid", "balanced")]
    means = {"query": "mean"} | {c: round(sum(r[c] for r in rows) / len(rows), 3) for c in columns[1:]}
    table = markdown_table(columns, [[r[c] for c in columns] for r in [*rows, means]])
    print(table)
    save("lens_balance", {"rows": rows, "mean": means, "lens_counts": raw, "table": table})


if __name__ == "__main__":
    main()
