"""Context-graph build scaling: time and peak memory at 1k, 10k and 100k chunks, beside the
seed's all-pairs construction at 1k and 10k.

    .venv/bin/python bench/graph_scaling.py [--sizes 1000 10000 100000] [--seed-sizes 1000 10000]

Chunks: the documentation corpus cut by the ``boundary`` strategy at about 200 characters
(min 120, max 320), the first N in corpus order. Embeddings: ragloom's hashing embedder (384
dimensions, words and word bigrams), which is fast enough to embed 100k chunks in seconds;
the build does not depend on which embedder made the vectors. Key terms and time references
are extracted first (timed separately, as ingest does it); the build is then what ragloom does
for ``ragloom graph build``. Every measurement runs in a fresh process so that peak memory
(ru_maxrss, the build's increase over the process after loading its input) is its own.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import resource
import time
from collections import Counter
from itertools import combinations

import numpy as np

from common import doc_corpus, markdown_table, save
from ragloom.config import GraphSettings
from ragloom.embed import HashingEmbedder
from ragloom.enrich.keyterms import extract_key_terms
from ragloom.graph import GraphNode, build_edges
from ragloom.parse.timeref import extract_time_refs, time_labels


def corpus_chunks(limit: int) -> list[tuple[str, str, int, str]]:
    """(chunk id, document id, chunk index, text) of the first ``limit`` chunks."""
    from ragloom.chunk import get_chunker

    chunker = get_chunker("boundary", target_size=200, min_size=120, max_size=320, overlap=20, tokenizer="chars")
    out = []
    for path in doc_corpus():
        text = path.read_text(encoding="utf-8")
        for c in chunker.chunk(text):
            out.append((f"{path.stem}:{c.chunk_index}", path.as_posix(), c.chunk_index, c.text))
            if len(out) == limit:
                return out
    return out


def lens_of(document: str) -> str:
    return "python" if "/python/" in document else "linux"


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ragloom_run(n: int, queue: mp.Queue) -> None:
    chunks = corpus_chunks(n)
    settings = GraphSettings()
    t0 = time.perf_counter()
    terms = [extract_key_terms(text, domain_terms=settings.domain_terms) for *_, text in chunks]
    periods = [tuple(t for t in time_labels(extract_time_refs(text)) if "(" not in t) for *_, text in chunks]
    extraction = time.perf_counter() - t0
    vectors = HashingEmbedder(384).embed([text for *_, text in chunks])
    nodes = [GraphNode(cid, doc, lens_of(doc), idx, tuple(terms[i]), periods[i], vectors[i])
             for i, (cid, doc, idx, _) in enumerate(chunks)]
    before = peak_mb()
    t1 = time.perf_counter()
    edges = build_edges(nodes, settings)
    build = time.perf_counter() - t1
    queue.put({"n": len(nodes), "extract_seconds": extraction, "build_seconds": build, "edges": len(edges),
               "edge_types": dict(Counter(e.type for e in edges)), "peak_mb": peak_mb(),
               "build_peak_increase_mb": peak_mb() - before})


# -- the seed's construction (seed 000, Part 2), as it is written there ------------------------------


def seed_key_terms(text: str, top_n: int = 10) -> list[str]:
    caps = re.findall(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b", text)
    business = re.findall(r"\b(roadmap|priority|Q[1-4]|integration|platform|API|customer|revenue|churn|acquisition|"
                          r"catalog|experience|engineering|architecture|dependency|milestone)\b", text.lower())
    counts = Counter([t.lower() for t in caps] + business)
    return [t for t, _ in counts.most_common(top_n)]


def seed_time_refs(text: str) -> list[str]:
    patterns = [r"\bQ[1-4]\s*(?:20\d{2})?\b", r"\b20\d{2}\b",
                r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\s*(?:20\d{2})?\b",
                r"\b(?:this|next|last)\s+(?:quarter|month|year)\b"]
    refs: list[str] = []
    for p in patterns:
        refs.extend(re.findall(p, text, re.IGNORECASE))
    return list(set(refs))


def seed_build(chunks: list[dict], embeddings: np.ndarray) -> int:
    import networkx as nx

    graph = nx.Graph()
    for c in chunks:
        graph.add_node(c["id"], lens=c["lens"], key_terms=seed_key_terms(c["text"]),
                       time_references=seed_time_refs(c["text"]))
    by_source: dict[str, list[str]] = {}
    for c in chunks:
        by_source.setdefault(c["source_path"], []).append(c["id"])
    for ids in by_source.values():
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                graph.add_edge(a, b, type="SAME_SOURCE", weight=1.0)
    by_lens: dict[str, list[str]] = {}
    for c in chunks:
        by_lens.setdefault(c["lens"], []).append(c["id"])
    for ids in by_lens.values():
        if len(ids) <= 50:
            for a, b in combinations(ids, 2):
                if not graph.has_edge(a, b):
                    graph.add_edge(a, b, type="SAME_LENS", weight=0.5)
    for ids in by_source.values():
        for a, b in zip(ids, ids[1:], strict=False):
            graph.add_edge(a, b, type="SEQUENTIAL", weight=1.0)
    terms = {c["id"]: set(seed_key_terms(c["text"])) for c in chunks}
    ids = list(terms)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            overlap = terms[a] & terms[b]
            if len(overlap) >= 2 and not graph.has_edge(a, b):
                graph.add_edge(a, b, type="TOPIC_OVERLAP", weight=len(overlap), shared_terms=list(overlap))
    normalized = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    n = len(chunks)
    for i in range(0, n, 100):
        sims = normalized[i : i + 100] @ normalized.T
        for bi, row in enumerate(sims):
            ci = i + bi
            for cj in range(ci + 1, n):
                if row[cj] > 0.80:
                    a, b = chunks[ci]["id"], chunks[cj]["id"]
                    if not graph.has_edge(a, b):
                        graph.add_edge(a, b, type="SIMILAR_TO", weight=float(row[cj]))
    times = {c["id"]: set(seed_time_refs(c["text"])) for c in chunks}
    tids = [k for k, v in times.items() if v]
    for i, a in enumerate(tids):
        for b in tids[i + 1 :]:
            overlap = times[a] & times[b]
            if overlap and not graph.has_edge(a, b):
                graph.add_edge(a, b, type="TEMPORAL_OVERLAP", weight=1.0, shared_periods=list(overlap))
    return graph.number_of_edges()


def seed_run(n: int, queue: mp.Queue) -> None:
    chunks = [{"id": cid, "source_path": doc, "lens": lens_of(doc), "chunk_index": idx, "text": text}
              for cid, doc, idx, text in corpus_chunks(n)]
    vectors = HashingEmbedder(384).embed([c["text"] for c in chunks])
    before = peak_mb()
    t0 = time.perf_counter()
    edges = seed_build(chunks, vectors)
    queue.put({"n": len(chunks), "build_seconds": time.perf_counter() - t0, "edges": edges, "peak_mb": peak_mb(),
               "build_peak_increase_mb": peak_mb() - before})


def in_fresh_process(target, n: int) -> dict:  # noqa: ANN001
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=target, args=(n, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--seed-sizes", type=int, nargs="*", default=[1000, 10000])
    args = parser.parse_args()
    ours = {}
    for n in args.sizes:
        ours[n] = in_fresh_process(ragloom_run, n)
        r = ours[n]
        print(f"ragloom {r['n']:>7} chunks: build {r['build_seconds']:.2f}s (+{r['extract_seconds']:.1f}s extraction), "
              f"{r['edges']} edges, peak +{r['build_peak_increase_mb']:.0f} MB ({r['peak_mb']:.0f} MB process)")
    seed = {}
    for n in args.seed_sizes:
        seed[n] = in_fresh_process(seed_run, n)
        r = seed[n]
        print(f"seed    {r['n']:>7} chunks: build {r['build_seconds']:.2f}s, {r['edges']} edges, "
              f"peak +{r['build_peak_increase_mb']:.0f} MB")
    rows = []
    for n in sorted(set(args.sizes) | set(args.seed_sizes)):
        o, s = ours.get(n), seed.get(n)
        rows.append([n, f"{o['build_seconds']:.2f}" if o else "", f"{o['extract_seconds']:.1f}" if o else "",
                     f"{o['build_peak_increase_mb']:.0f}" if o else "", o["edges"] if o else "",
                     f"{s['build_seconds']:.2f}" if s else "", s["edges"] if s else "",
                     f"{s['build_seconds'] / o['build_seconds']:.0f}x" if o and s else ""])
    table = markdown_table(["chunks", "ragloom build s", "key terms + periods s", "ragloom peak MB", "ragloom edges",
                            "seed build s", "seed edges", "seed / ragloom"], rows)
    sizes = sorted(ours)
    growth = [f"{b}/{a}: {ours[b]['build_seconds'] / ours[a]['build_seconds']:.1f}x time for {b / a:.0f}x chunks"
              for a, b in zip(sizes, sizes[1:], strict=False)]
    print(table)
    print("; ".join(growth))
    save("graph_scaling", {"ragloom": ours, "seed": seed, "table": table, "growth": growth})


if __name__ == "__main__":
    main()
