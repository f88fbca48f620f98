"""``chunk_text`` called once per document against one reused chunker, on the documentation corpus.

    .venv/bin/python bench/chunker_reuse.py [--repeats 3]

Building a chunker used to cost about a third of chunking a typical document; ``get_chunker``
now returns the chunker already built with the same parameters, so a loop over documents
calling ``chunk_text`` runs as fast as one that reuses a chunker. The two loops alternate
(the machine is shared and its speed drifts); best of ``--repeats`` each.
"""

from __future__ import annotations

import argparse
import time

from common import doc_corpus, markdown_table, save
from ragloom import chunk_text, get_chunker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    texts = [p.read_text(encoding="utf-8") for p in doc_corpus()]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    rows, result = [], {}
    for strategy in ("token", "boundary"):
        reused = get_chunker(strategy)
        runs = {"chunk_text per document": lambda s=strategy: [chunk_text(t, s) for t in texts],
                "one chunker, reused": lambda c=reused: [c.chunk(t) for t in texts]}
        times: dict[str, list[float]] = {label: [] for label in runs}
        for _ in range(args.repeats):
            for label, run in runs.items():
                times[label].append(_timed(run))
        for label, spent in times.items():
            result[f"{strategy}: {label}"] = mb / min(spent)
            rows.append([strategy, label, f"{mb / min(spent):.1f}"])
    table = markdown_table(["strategy", "calls", "MB/s"], rows)
    print(table)
    save("chunker_reuse", {"mb_per_s": result, "table": table})


def _timed(run: object) -> float:
    started = time.perf_counter()
    run()  # type: ignore[operator]
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
