"""End-to-end ingest: chunks per second and the share of time that is not embedding.

    .venv/bin/python bench/ingest_throughput.py [--documents 200] [--corpus bench/data/doc-corpus]

Two runs with the default settings (token chunks 1024/150, contextual embeddings with the
local all-MiniLM-L6-v2 on the CPU), each into a fresh workspace with the embedding cache off:
the sample materials, and every ninth document of the documentation corpus up to
``--documents``. A second ingest of the same corpus measures the unchanged-file fast path.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from common import MATERIALS, markdown_table, sample_corpus, save, stage
from ragloom.config import Settings
from ragloom.engine import Engine


def run(label: str, folders: list[tuple[Path, str]], settings: Settings) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Path(tmp) / "ws", settings=settings)
        engine.embedder.embed(["warm up the model"])  # loading the model is not ingest time
        _ = engine.store  # nor is opening the workspace
        totals: dict[str, float] = defaultdict(float)  # seconds per ingest stage
        chunks = embedded = 0
        t0 = time.perf_counter()
        for folder, lens in folders:
            report = engine.ingest(folder, lens=lens)
            assert report.ok, report.failed
            chunks += report.chunks_written
            embedded += report.chunks_embedded
            for key, value in report.timings.items():
                totals[key] += value
        seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        for folder, lens in folders:
            engine.ingest(folder, lens=lens)
        again = time.perf_counter() - t1
        documents = engine.stats()["documents"]
        tokens = engine.stats()["tokens"]
    other = seconds - totals["embed"]
    result = {
        "label": label, "documents": documents, "chunks": chunks, "tokens": tokens, "seconds": seconds,
        "chunks_per_s": chunks / seconds, "embed_seconds": totals["embed"], "non_embedding_share": other / seconds,
        "timings": dict(totals), "reingest_unchanged_seconds": again, "reingest_speedup": seconds / again,
    }
    print(f"{label}: {documents} docs, {chunks} chunks in {seconds:.1f}s = {chunks / seconds:.2f} chunks/s; "
          f"not embedding {other / seconds:.1%}; unchanged re-ingest {again:.2f}s ({seconds / again:.0f}x faster)")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--documents", type=int, default=200)
    args = parser.parse_args()
    settings = Settings.load(environ={}, overrides={"embedding.cache": False})
    lenses = [(p, p.name) for p in sorted(MATERIALS.iterdir()) if p.is_dir()]
    # The first run in a process also pays one-time imports (LanceDB, the PDF and DOCX
    # converters, about 2 s); the second shows the steady state. Both are reported.
    cold = run("sample materials, cold process", lenses, settings)
    sample = run("sample materials", lenses, settings)
    files = sample_corpus(args.corpus, args.documents)
    with tempfile.TemporaryDirectory() as tmp:
        stage(files, Path(tmp))
        corpus = run(f"{len(files)} corpus documents", [(Path(tmp), "engineering")], settings)
    rows = [[r["label"], r["documents"], r["chunks"], f"{r['chunks_per_s']:.2f}", f"{r['seconds']:.1f}",
             f"{r['non_embedding_share']:.1%}", f"{r['reingest_speedup']:.0f}x"] for r in (cold, sample, corpus)]
    table = markdown_table(["corpus", "documents", "chunks", "chunks/s", "seconds", "not embedding",
                            "unchanged re-ingest"], rows)
    print(table)
    save("ingest_throughput", {"runs": [cold, sample, corpus], "table": table})


if __name__ == "__main__":
    main()
