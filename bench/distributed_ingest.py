"""Ingest with the Ray runner against the local one, and the costs a 10-million-chunk plan rests on.

    .venv/bin/python bench/distributed_ingest.py [--documents 200] [--workers 1 2] [--fts-rows 100000 400000]

In one run, on the ingest benchmark's documents (every ninth file of the documentation corpus,
up to ``--documents``), each into a fresh workspace with the embedding cache off and the default
settings (ONNX int8 all-MiniLM-L6-v2, token chunks 1024/150, contextual prefixes, the sentence
index, entities, the graph):

- the local runner, the model loaded first (as bench/ingest_throughput.py does);
- ``runner="ray"`` at each ``--workers``, each run starting its own local Ray and stopping it:
  its wall time includes Ray's start and every actor's model load (the overhead), reported
  apart as far as it can be;
- each Ray workspace against the local one: the same chunk ids, texts and offsets; the largest
  difference between the vectors (the int8 model's numbers depend a little on which texts share
  a model call).

Then the parts of ingest that run once on the driver, measured on this machine, for
docs/scale.md: the full graph build from the store, the BM25 (full-text) index over ``--fts-rows``
rows of the corpus's chunk text, and the store's write rate.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from common import RESULTS, markdown_table, sample_corpus, save, stage
from ragloom.config import Settings
from ragloom.engine import Engine


def ingest(label: str, folder: Path, workspace: Path, settings: Settings, **runner: Any) -> tuple[Engine, dict]:  # noqa: ANN401
    engine = Engine(workspace, settings=settings)
    if not runner:
        engine.embedder.embed(["warm up the model"])  # loading the model is not ingest time
        _ = engine.store  # nor is opening the workspace
    t0 = time.perf_counter()
    report = engine.ingest(folder, lens="engineering", **runner)
    seconds = time.perf_counter() - t0
    assert report.ok, report.failed
    result = {"label": label, "documents": report.added, "chunks": report.chunks_written,
              "sentences": report.sentences_written, "seconds": seconds,
              "chunks_per_s": report.chunks_written / seconds, "timings": report.timings}
    print(f"{label}: {report.added} docs, {report.chunks_written} chunks in {seconds:.1f}s "
          f"= {result['chunks_per_s']:.2f} chunks/s", flush=True)
    return engine, result


def compare(local: Engine, other: Engine) -> dict:
    """Same chunks (ids, texts, offsets) and how far apart their vectors are."""
    def chunks(engine: Engine) -> dict[str, dict]:
        return {r["chunk_id"]: r for r in engine.store.chunks("default", with_vectors=True)}

    a, b = chunks(local), chunks(other)
    same = a.keys() == b.keys() and all(
        (a[k]["text"], a[k]["start_char"], a[k]["end_char"]) == (b[k]["text"], b[k]["start_char"], b[k]["end_char"])
        for k in a)
    diffs = [float(np.max(np.abs(np.asarray(a[k]["vector"]) - np.asarray(b[k]["vector"])))) for k in a if k in b]
    cosines = [float(np.dot(a[k]["vector"], b[k]["vector"])) for k in a if k in b]
    return {"same_chunks": same, "max_abs_vector_difference": max(diffs, default=0.0),
            "min_cosine": min(cosines, default=1.0)}


def ray_start_seconds(cores: int) -> float:
    """A bare local Ray started and stopped, as the runner does it."""
    import logging

    import ray

    warnings.filterwarnings("ignore", message="lancedb fork support")  # Ray's processes are forked, then exec'd
    t0 = time.perf_counter()
    ray.init(num_cpus=cores + 1, object_store_memory=2 * 1024**3, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR, _node_ip_address="127.0.0.1")
    ray.shutdown()
    return time.perf_counter() - t0


def fts_cost(texts: list[str], rows: int) -> dict:
    """Building the store's full-text index over ``rows`` rows of chunk text, and folding a tenth
    more rows into it (what ``optimize`` does after an ingest)."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    repeated = [f"{texts[i % len(texts)]} r{i}" for i in range(rows)]
    with tempfile.TemporaryDirectory() as tmp:
        table = lancedb.connect(tmp).create_table("t", pa.table({"id": list(range(rows)), "search_text": repeated}))
        t0 = time.perf_counter()
        table.create_index("search_text", config=FTS(with_position=False, stem=True, remove_stop_words=True,
                                                      lower_case=True, ascii_folding=True), replace=True)
        build = time.perf_counter() - t0
        extra = rows // 10
        table.add(pa.table({"id": list(range(rows, rows + extra)), "search_text": repeated[:extra]}))
        t1 = time.perf_counter()
        table.optimize()
        fold = time.perf_counter() - t1
        size = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
    print(f"FTS over {rows:,} rows: built in {build:.1f}s, {extra:,} more folded in {fold:.1f}s", flush=True)
    return {"rows": rows, "build_seconds": build, "fold_rows": extra, "fold_seconds": fold, "bytes": size}


def similar_pairs_rate(n: int = 100_000, changed: int = 2_000) -> dict:
    """The graph's incremental update compares every changed chunk with every chunk (exact
    search): pairs compared per second on this machine, for ``changed`` against ``n``."""
    from ragloom.graph.build import _exact_pairs

    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((n, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    t0 = time.perf_counter()
    _exact_pairs(matrix, np.arange(changed), 0.8)
    seconds = time.perf_counter() - t0
    print(f"similar pairs: {changed:,} changed against {n:,} in {seconds:.2f}s", flush=True)
    return {"chunks": n, "changed": changed, "seconds": seconds, "pairs_per_s": n * changed / seconds}


def compacted_size(engine: Engine, folder: Path) -> dict:
    """Bytes per table once old versions are cleaned up (what the workspace holds at rest), per chunk."""
    import warnings as _w

    with _w.catch_warnings():
        _w.simplefilter("ignore")  # cleanup_older_than=0 warns about concurrent readers: there are none
        engine.store.optimize(force=True)
    chunks = engine.stats()["chunks"]
    tables = {p.name.removesuffix(".lance"): sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
              for p in folder.iterdir() if p.is_dir() and p.name.endswith(".lance")}
    total = sum(tables.values())
    print(f"compacted: {total / 1e6:.1f} MB for {chunks} chunks = {total / chunks / 1e3:.1f} kB per chunk; "
          + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(tables.items())), flush=True)
    return {"chunks": chunks, "bytes": total, "bytes_per_chunk": total / chunks, "tables": tables}


def fixed_overhead(files: list[Path], settings: Settings) -> dict:
    """What a Ray run costs whatever its size: one short document through the local runner (the
    model already loaded) and through Ray at one worker (Ray started, the actor started and its
    model loaded, Ray stopped)."""
    with tempfile.TemporaryDirectory() as tmp:
        stage(files[:1], Path(tmp) / "one")
        _, local = ingest("one document, local", Path(tmp) / "one", Path(tmp) / "a", settings)
        _, ray = ingest("one document, ray 1 worker", Path(tmp) / "one", Path(tmp) / "b", settings, runner="ray",
                        workers=1)
    return {"local_seconds": local["seconds"], "ray_seconds": ray["seconds"],
            "ray_fixed_seconds": ray["seconds"] - local["seconds"]}


def embed_in_and_out_of_ray(texts: list[str]) -> dict:
    """The same texts embedded by the ONNX embedder in this process and in a Ray task holding the
    same two CPUs (both with the model loaded first): the embedder alone, apart from ingest."""
    import logging

    import ray

    from ragloom.embed import embedder_from_settings

    def timed(sample: list[str]) -> float:
        embedder = embedder_from_settings(Settings.load(environ={}, overrides={"embedding.cache": False}).embedding)
        embedder.embed(["load the model"])
        t0 = time.perf_counter()
        for lo in range(0, len(sample), 256):
            embedder.embed(sample[lo : lo + 256])
        return time.perf_counter() - t0

    here = timed(texts)
    warnings.filterwarnings("ignore", message="lancedb fork support")
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
             _node_ip_address="127.0.0.1")
    try:
        there = ray.get(ray.remote(num_cpus=2)(timed).remote(texts))
    finally:
        ray.shutdown()
    print(f"{len(texts)} texts embedded: {here:.1f}s in this process, {there:.1f}s in a Ray task", flush=True)
    return {"texts": len(texts), "process_seconds": here, "ray_task_seconds": there}


def parts(texts: list[str], fts_rows: list[int]) -> dict:
    return {"fts": [fts_cost(texts, n) for n in fts_rows], "similar_update": similar_pairs_rate()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--fts-rows", type=int, nargs="+", default=[100_000, 400_000])
    parser.add_argument("--parts-only", action="store_true",
                        help="measure only the driver's parts again, into the saved result")
    args = parser.parse_args()
    if args.parts_only:
        saved = json.loads((RESULTS / "distributed_ingest.json").read_text(encoding="utf-8"))
        saved.pop("environment", None)
        with tempfile.TemporaryDirectory() as tmp:
            files = sample_corpus(args.corpus, args.documents)
            stage(files, Path(tmp) / "docs")
            # The rows as the default settings make them; the hashing embedder's vectors have the
            # model's 384 dimensions, so the bytes are the same.
            engine = Engine(Path(tmp) / "ws", settings=Settings.load(environ={}, overrides={
                "embedding.model": "hashing", "embedding.cache": False, "workspace.version_retention": 0}))
            engine.ingest(Path(tmp) / "docs", lens="engineering")
            texts = [r["search_text"] for r in engine.store.chunks("default", columns=["search_text"])]
            saved["compacted"] = compacted_size(engine, Path(tmp) / "ws" / "lancedb")
            paragraphs = [p for f in files[:40] for p in f.read_text(encoding="utf-8").split("\n\n") if len(p) > 40]
            saved["embedder_in_and_out_of_ray"] = embed_in_and_out_of_ray(paragraphs[:3000])
            saved["fixed_overhead"] = fixed_overhead(files, Settings.load(environ={}, overrides={
                "embedding.cache": False}))
        saved.update(parts(texts, args.fts_rows))
        save("distributed_ingest", saved)
        return
    settings = Settings.load(environ={}, overrides={"embedding.cache": False})
    files = sample_corpus(args.corpus, args.documents)
    cores = os.cpu_count() or 1
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        stage(files, folder)
        local, result = ingest("local", folder, Path(tmp) / "local", settings)
        runs.append(result)
        for workers in args.workers:
            engine, result = ingest(f"ray, {workers} worker{'s' if workers > 1 else ''}", folder,
                                    Path(tmp) / f"ray{workers}", settings, runner="ray", workers=workers)
            result.update(compare(local, engine), workers=workers)
            runs.append(result)
        ray_start = ray_start_seconds(cores)
        # The parts that run once, on the driver.
        t0 = time.perf_counter()
        edges = local.build_graph()
        graph_seconds = time.perf_counter() - t0
        chunk_rows = local.store.chunks("default", columns=["search_text"])
        texts = [r["search_text"] for r in chunk_rows]
        store_bytes = sum(f.stat().st_size for f in (Path(tmp) / "local" / "lancedb").rglob("*") if f.is_file())
    base = runs[0]
    for r in runs[1:]:
        r["overhead_seconds"] = r["seconds"] - base["seconds"] * (1 if r["workers"] == 1 else 0)
        r["speed_vs_local"] = r["chunks_per_s"] / base["chunks_per_s"]
    one = next((r for r in runs[1:] if r["workers"] == 1), None)
    measured = parts(texts, args.fts_rows)
    scaling = json.loads((RESULTS / "graph_scaling.json").read_text(encoding="utf-8"))
    rows = [[r["label"], r["documents"], r["chunks"], f"{r['seconds']:.1f}", f"{r['chunks_per_s']:.2f}",
             f"{r.get('speed_vs_local', 1.0):.2f}x", "" if "same_chunks" not in r else
             f"{'yes' if r['same_chunks'] else 'NO'}, max |Δv| {r['max_abs_vector_difference']:.4f}"] for r in runs]
    table = markdown_table(["runner", "documents", "chunks", "seconds", "chunks/s", "vs local", "same chunks"], rows)
    print(table)
    extra = {
        "ray_start_stop_seconds": ray_start,
        "ray_one_worker_overhead_seconds": one["seconds"] - base["seconds"] if one else None,
        "ray_one_worker_overhead_share": (one["seconds"] - base["seconds"]) / one["seconds"] if one else None,
        "graph_build_seconds": graph_seconds, "graph_edges": edges, "graph_chunks": len(texts),
        "graph_scaling_table": scaling.get("table"),
        **measured,
        "store_write_rows_per_s": (base["chunks"] + base["sentences"]) / base["timings"]["store"],
        "store_bytes": store_bytes, "store_bytes_per_chunk": store_bytes / max(base["chunks"], 1),
        "chunk_sentence_ratio": base["sentences"] / max(base["chunks"], 1),
    }
    print(json.dumps({k: v for k, v in extra.items() if k != "graph_scaling_table"}, indent=1, default=str))
    save("distributed_ingest", {"runs": runs, "table": table, **extra})


if __name__ == "__main__":
    main()
