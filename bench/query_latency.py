"""Query latency at size: 100,000 chunks and 1,000,000 sentences, with and without ANN indexes.

    .venv/bin/python bench/query_latency.py [--chunks 100000] [--sentences-per-chunk 10] [--queries 60]
                                            [--workspace DIR]

``--workspace`` keeps the built workspace in DIR and uses it as it is when DIR already holds
one (its query samples are saved beside it).

The workspace is synthetic, written straight through the store (the ingest pipeline would
spend hours making it): 5,000 documents of 20 chunks of 10 sentences each, words drawn from a
topic vocabulary per document (so BM25 has something to find), vectors drawn around the
document's topic (chunk = topic + noise of norm 0.7, sentence = chunk + noise of norm 0.5,
then unit length: a chunk's cosine to its topic is about 0.82, sentences of one chunk about
0.86 to each other, chunks of one topic about 0.57, unrelated ones about 0), and the
context graph built as ingest builds it. Queries are a sentence's words and a vector near
that sentence's (noise of norm 0.35), served by an embedder that looks the vector up (query embedding is not
timed anyway: "embed query" is left out of every figure).

Reported per mode: p50 and p95 latency with exact (flat) vector search, then with the ANN
indexes that ingest builds once a table passes ``retrieval.ann_min_rows``; recall@10 of the
ANN search against an exact search of the same table on the same queries; index build time;
and the process's peak memory, the in-memory sentence index included.
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from common import markdown_table, save
from ragloom.config import Settings
from ragloom.embed import HashingEmbedder, normalize_rows
from ragloom.engine import Engine
from ragloom.store.indexes import vector_index
from ragloom.store.schema import chunk_row, document_row
from ragloom.types import Chunk, Document

MODES = ["vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic"]
DIM = 384
LENSES = ["your-voice", "team-structured", "team-conversational", "business-framework", "engineering",
          "external-analyst"]


class LookupEmbedder:
    """Query vectors prepared by the benchmark; anything else through the hashing embedder."""

    name, dim = "synthetic-384", DIM

    def __init__(self) -> None:
        self.known: dict[str, np.ndarray] = {}
        self.hashing = HashingEmbedder(DIM)

    def embed(self, texts: Any) -> np.ndarray:  # noqa: ANN401
        return np.stack([self.known[t] if t in self.known else self.hashing.embed([t])[0] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def noise(rng: np.random.Generator, norm: float) -> np.ndarray:
    """A random direction of about ``norm`` in length."""
    return norm * rng.normal(size=DIM).astype(np.float32) / np.sqrt(DIM)


def build(engine: Engine, chunks: int, per_chunk: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """Write the synthetic workspace; returns (sentence text, sentence vector) samples for queries."""
    words = [f"w{i}" for i in range(20_000)]
    per_doc = 20
    topics = normalize_rows(rng.normal(size=(500, DIM)).astype(np.float32))
    at = datetime.now(UTC)
    store = engine.store
    samples: list[tuple[str, np.ndarray]] = []
    docs_total = chunks // per_doc
    batch_docs = 100
    with store.writer():
        for lo in range(0, docs_total, batch_docs):
            rows: dict[str, list[dict[str, Any]]] = {"documents": [], "chunks": [], "sentences": [], "mentions": []}
            for d in range(lo, min(lo + batch_docs, docs_total)):
                topic = topics[d % len(topics)]
                vocab = rng.choice(len(words), size=300, replace=False)
                sentences = [" ".join(words[w] for w in rng.choice(vocab, size=12)) + "." for _ in range(per_doc * per_chunk)]
                text = "# Document %d\n\n" % d + " ".join(sentences)
                doc_id = hashlib.blake2b(f"doc{d}".encode(), digest_size=10).hexdigest()
                doc = Document(text=text, source_path=f"/synthetic/doc{d:05d}.md", title=f"Document {d}",
                               lens=LENSES[d % len(LENSES)], tenant="default", media_type="text/markdown",
                               modified_at=at, document_id=doc_id, file_hash=doc_id)
                version = f"v{d}"
                rows["documents"].append(document_row(doc, version, None, at, per_doc, "synthetic"))
                at_char = len("# Document %d\n\n" % d)
                for c in range(per_doc):
                    chunk_vec = normalize_rows((topic + noise(rng, 0.7))[None, :])[0]
                    first = at_char
                    for s in range(per_chunk):
                        sentence = sentences[c * per_chunk + s]
                        vec = normalize_rows((chunk_vec + noise(rng, 0.5))[None, :])[0]
                        sid = hashlib.blake2b(f"{d}:{c}:{s}".encode(), digest_size=10).hexdigest()
                        node = Chunk(sentence, at_char, at_char + len(sentence), 14, c * per_chunk + s,
                                     per_doc * per_chunk, ("Document %d" % d,), 0, 0, "sentence", chunk_id=sid,
                                     document_id=doc_id, content_hash=sid)
                        rows["sentences"].append(chunk_row(doc, node, vec, version=version, previous=None,
                                                           summary="", at=at, embed_kind="naked"))
                        if rng.random() < 0.0003:
                            samples.append((" ".join(sentence.split()[:6]), vec))
                        at_char += len(sentence) + 1
                    body = text[first : at_char - 1]
                    cid = hashlib.blake2b(f"{d}:{c}".encode(), digest_size=10).hexdigest()
                    chunk = Chunk(body, first, at_char - 1, 170, c, per_doc, ("Document %d" % d,), 0, c, "token",
                                  chunk_id=cid, document_id=doc_id, content_hash=cid,
                                  prefix=f"[Document: Document {d} - Type: Document - Section: Document {d}]\n\n")
                    rows["chunks"].append(chunk_row(doc, chunk, chunk_vec, version=version, previous=None, summary="",
                                                    at=at, embed_kind="contextual", key_terms=[], time_refs=[],
                                                    indexed=chunk.contextualized_text))
            store.write(rows=rows, at=at, dim=DIM)
    return samples


def measure(engine: Engine, queries: list[str], label: str) -> dict[str, dict[str, float]]:
    out = {}
    for mode in MODES:
        engine.query(queries[0], mode=mode, k=10)  # loads what a mode keeps in memory, once per commit
        spent = []
        for q in queries:
            result = engine.query(q, mode=mode, k=10)
            spent.append(1000 * (result.seconds - result.timings.get("embed query", 0.0)))
        spent.sort()
        out[mode] = {"p50": statistics.median(spent), "p95": spent[int(0.95 * (len(spent) - 1))]}
        print(f"{label:>6} {mode:<9} p50 {out[mode]['p50']:7.1f} ms  p95 {out[mode]['p95']:7.1f} ms", flush=True)
    return out


def recall(engine: Engine, vectors: list[np.ndarray], table: str) -> float:
    """recall@10 of the search the queries make (``LanceStore.vector_search``: through the ANN
    index with the settings' probes and refinement, filtering the nearest 2k) against a flat
    search of the same table, filtered first."""
    handle = engine.store._table(table)
    found = []
    for v in vectors:
        ann = {r["chunk_id"] for r in engine.store.vector_search("default", v, 10, table=table, columns=["chunk_id"])}
        exact = {r["chunk_id"] for r in handle.search(v, vector_column_name="vector").distance_type("cosine").where(
            "tenant_id = 'default' AND superseded_at IS NULL", prefilter=True).bypass_vector_index()
            .select(["chunk_id", "_distance"]).limit(10).to_list()}
        found.append(len(ann & exact) / max(len(exact), 1))
    return float(np.mean(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--sentences-per-chunk", type=int, default=10)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--workspace", type=Path, default=None)
    parser.add_argument("--exact-queries", type=int, default=20, help="queries timed without the ANN indexes")
    parser.add_argument("--query-seed", type=int, default=None,
                        help="draw the queries' noise from this seed (a kept workspace: queries nobody tuned on)")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.workspace or Path(tmp)
        settings = Settings.load(environ={}, overrides={"embedding.cache": False, "entities.enabled": False,
                                                        "retrieval.ann_min_rows": 10**9})
        embedder = LookupEmbedder()
        engine = Engine(root / "ws", settings=settings, embedder=embedder)
        saved = root / "samples.npz"
        saved_before = saved.is_file()
        t0 = time.perf_counter()
        if saved.is_file():
            found = np.load(saved)
            samples = list(zip(found["texts"].tolist(), found["vectors"], strict=True))
        else:
            samples = build(engine, args.chunks, args.sentences_per_chunk, rng)
            engine.build_graph()
            with engine.store.writer():  # as ingest ends: new rows folded into the full-text index
                engine.store.optimize(force=True)
            np.savez(saved, texts=np.array([t for t, _ in samples]), vectors=np.stack([v for _, v in samples]))
        samples = samples[: args.queries]
        built = time.perf_counter() - t0
        stats = engine.stats()
        print(f"workspace: {stats['chunks']} chunks, {len(engine.store.chunks('default', table='sentences', columns=['chunk_id']))}"
              f" sentences in {built:.0f} s", flush=True)
        queries = []
        if args.query_seed is not None:
            rng = np.random.default_rng(args.query_seed)
        for text, vector in samples:
            embedder.known[text] = normalize_rows((vector + noise(rng, 0.35))[None, :])[0]
            queries.append(text)
        chunks_table = engine.store._table("chunks")
        if vector_index(chunks_table) is None:
            exact = measure(engine, queries[: args.exact_queries], "exact")
        else:  # a kept workspace indexed by an earlier run: only the ANN figures are new
            print("the kept workspace is indexed already: exact search not measured", flush=True)
            exact = {mode: {"p50": float("nan"), "p95": float("nan")} for mode in MODES}
        t0 = time.perf_counter()
        indexed = Engine(root / "ws", embedder=embedder,
                         settings=settings.with_overrides(retrieval__ann_min_rows=50_000))
        with indexed.store.writer():
            indexed.store.optimize(force=True)
        index_seconds = time.perf_counter() - t0
        print(f"ANN indexes ({indexed.settings.retrieval.ann_index}) built in {index_seconds:.0f} s", flush=True)
        ann = measure(indexed, queries, "ann")
        vectors = [embedder.known[q] for q in queries]
        recalls = {table: recall(indexed, vectors, table) for table in ("chunks", "sentences")}
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        status = Path("/proc/self/status").read_text().split("\n")
        rss_mb = next((int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:")), float("nan"))
        built_here = not saved_before
        rows = [[mode, f"{exact[mode]['p50']:.0f}", f"{exact[mode]['p95']:.0f}", f"{ann[mode]['p50']:.0f}",
                 f"{ann[mode]['p95']:.0f}"] for mode in MODES]
        table = markdown_table(["mode", "exact p50 ms", "exact p95 ms", "ANN p50 ms", "ANN p95 ms"], rows)
        print(table)
        print(f"recall@10 of the ANN search against exact: chunks {recalls['chunks']:.3f}, sentences "
              f"{recalls['sentences']:.3f}; peak memory {peak_mb:.0f} MB "
              f"({'the build included' if built_here else 'queries only'}), resident after the queries {rss_mb:.0f} MB")
        save("query_latency", {"chunks": stats["chunks"], "build_seconds": built, "index_seconds": index_seconds,
                                "exact": exact, "ann": ann, "recall_at_10": recalls, "peak_mb": peak_mb,
                                "rss_after_queries_mb": rss_mb, "built_in_this_process": built_here,
                                "ann_index": indexed.settings.retrieval.ann_index, "table": table})


if __name__ == "__main__":
    main()
