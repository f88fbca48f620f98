"""The search for fusion and prefix settings on the contextual set's tuning half (issue 17).

    .venv/bin/python bench/contextual_tuning.py [--half tune]

``ragloom eval contextual`` splits ../shared/data/contextual by file (seed 17, half of each
repository's files on each side; :func:`ragloom.evaluate.contextual.split_files`). This script
looks at one half only (the tuning half unless told otherwise) and measures, with the default
embedder (cached in ~/.cache/ragloom/eval) and ragloom's own store and fusion:

- the fusion grid: ``rrf_k`` x BM25 weight x candidates per retriever (reciprocal-rank fusion,
  :func:`ragloom.retrieve.base.reciprocal_rank_fusion`, as the ``hybrid`` mode runs it);
- score fusion instead of ranks: ``alpha * bm25 / max + (1 - alpha) * cosine / max``;
- document-level evidence: a chunk's fused score plus ``beta`` times the best fused score
  of its file;
- neighbour evidence: plus ``gamma`` times the better of its two neighbours' scores;
- query-side identifier splitting (``DiffExecutor`` also as "diff executor" in the BM25 query);
- the prefix template without its ``Type:`` field (a second index).

The vector and BM25 rankings of each query are read once (top 200, as the hybrid mode's two
searches read them) and fused in Python, so the whole grid takes about a minute. Writes
``bench/results/contextual_tuning.json``.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common import SHARED, save
from ragloom.config import EmbeddingSettings
from ragloom.embed import embedder_from_settings
from ragloom.engine import Engine
from ragloom.enrich.search_text import search_text
from ragloom.evaluate import contextual as suite
from ragloom.evaluate.context import default_cache
from ragloom.evaluate.datasets import load_contextual
from ragloom.evaluate.metrics import pass_at_k
from ragloom.retrieve.base import reciprocal_rank_fusion

KS = (5, 10, 20)
DEPTH = 200
Ranking = list[dict[str, Any]]


def rankings(template: str | None, queries: Sequence[str], *, split_queries: bool = False) -> tuple[
        list[tuple[Ranking, Ranking]], dict[str, tuple[str, int]]]:
    """(vector rows, BM25 rows) per query, and chunk id -> (file uuid, chunk index)."""
    data = load_contextual(SHARED)
    docs, spans, uuid_of = suite.documents(data)
    embedder = embedder_from_settings(EmbeddingSettings().model_copy(update={"cache": True}), default_cache())
    settings = suite._settings("contextual", {})
    if template is not None:
        settings = settings.with_overrides(prefix__template=template)
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Path(tmp) / "ws", settings=settings, embedder=embedder)
        engine.add_documents(docs, spans=spans)
        store = engine.store
        rows = store.chunks("default", columns=["chunk_id", "document_id", "chunk_index"])
        where = {r["chunk_id"]: (uuid_of[r["document_id"]], int(r["chunk_index"])) for r in rows}
        out = []
        for q in queries:
            # The vector ranking as the vector mode makes it (each chunk with its best sentence).
            vector = [{"chunk_id": r.chunk_id, "_score": r.score} for r in engine.query(q, mode="vector", k=DEPTH)]
            text = store.text_search("default", search_text(q) if split_queries else q, DEPTH)
            out.append((vector, text))
    return out, where


Ranker = Callable[[Ranking, Ranking], list[str]]


def rrf(rrf_k: int = 60, candidates: int = 50, bm25: float = 1.0, beta: float = 0.0, gamma: float = 0.0,
        where: Mapping[str, tuple[str, int]] | None = None) -> Ranker:
    def rank(vector: Ranking, text: Ranking) -> list[str]:
        fused = reciprocal_rank_fusion({"vector": vector[:candidates], "bm25": text[:candidates]}, k=rrf_k,
                                       weights={"vector": 1.0, "bm25": bm25})
        score = {row["chunk_id"]: s for row, s, _ in fused}
        if (beta or gamma) and where is not None:
            best: dict[str, float] = {}
            at = {where[c]: s for c, s in score.items()}
            for c, s in score.items():
                best[where[c][0]] = max(best.get(where[c][0], 0.0), s)
            score = {c: s + beta * best[where[c][0]]
                     + gamma * max(at.get((where[c][0], where[c][1] - 1), 0.0), at.get((where[c][0], where[c][1] + 1), 0.0))
                     for c, s in score.items()}
        return sorted(score, key=lambda c: -score[c])
    return rank


def convex(alpha: float, candidates: int = 50) -> Ranker:
    def rank(vector: Ranking, text: Ranking) -> list[str]:
        def share(rows: Ranking) -> dict[str, float]:
            top = max((float(r["_score"]) for r in rows), default=1.0) or 1.0
            return {r["chunk_id"]: float(r["_score"]) / top for r in rows}
        v, t = share(vector[:candidates]), share(text[:candidates])
        score = {c: (1 - alpha) * v.get(c, 0.0) + alpha * t.get(c, 0.0) for c in v.keys() | t.keys()}
        return sorted(score, key=lambda c: -score[c])
    return rank


def measure(ranker: Ranker, runs: Sequence[tuple[Ranking, Ranking]], golden: Sequence[Sequence[tuple[str, int]]],
            where: Mapping[str, tuple[str, int]]) -> dict[int, float]:
    scores: dict[int, list[float]] = {k: [] for k in KS}
    for (vector, text), gold in zip(runs, golden, strict=True):
        ranked = [where[c] for c in ranker(vector, text)]
        for k in KS:
            scores[k].append(pass_at_k(list(gold), ranked, k))
    return {k: round(100 * float(np.mean(v)), 1) for k, v in scores.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=("tune", "report"), default="tune")
    args = parser.parse_args()
    data = load_contextual(SHARED)
    halves = suite.split_files(data.documents)
    chosen = [q for q in data.queries if suite.query_half(q, halves) == args.half]
    texts, golden = [q.query for q in chosen], [q.golden for q in chosen]
    print(f"{args.half} half: {len(chosen)} queries")
    results: dict[str, Any] = {"half": args.half, "queries": len(chosen), "seed": suite.SPLIT_SEED}

    runs, where = rankings(None, texts)

    def row(name: str, ranker: Ranker, store: dict[str, Any], r: Sequence[tuple[Ranking, Ranking]] = runs) -> None:
        store[name] = measure(ranker, r, golden, where)
        print(f"{name:60s} " + "  ".join(f"{store[name][k]:5.1f}" for k in KS))

    single: dict[str, Any] = {}
    row("vector", lambda v, t: [r["chunk_id"] for r in v], single)
    row("bm25", lambda v, t: [r["chunk_id"] for r in t], single)
    row("hybrid, the defaults (rrf_k 60, equal weights, 50 candidates)", rrf(), single)
    results["single"] = single

    grid: list[dict[str, Any]] = []
    for rrf_k, bm25, candidates in itertools.product((5, 10, 15, 20, 30, 60), (1.0, 1.25, 1.5, 2.0), (20, 50, 100)):
        grid.append({"rrf_k": rrf_k, "bm25": bm25, "candidates": candidates,
                     **{f"Pass@{k}": v for k, v in measure(rrf(rrf_k, candidates, bm25), runs, golden, where).items()}})
    results["grid"] = grid
    # The choice: the best Pass@10, ties broken by Pass@5, then Pass@20, keeping 50 candidates.
    best = max((g for g in grid if g["candidates"] == 50), key=lambda g: (g["Pass@10"], g["Pass@5"], g["Pass@20"]))
    results["chosen"] = best
    print(f"chosen (50 candidates): rrf_k {best['rrf_k']}, BM25 weight {best['bm25']}: "
          f"{best['Pass@5']} / {best['Pass@10']} / {best['Pass@20']}")
    for name, values in (("rrf_k", (5, 10, 15, 20, 30, 60)), ("bm25", (1.0, 1.25, 1.5, 2.0)),
                         ("candidates", (20, 50, 100))):
        print(f"  mean Pass@10 over the grid by {name}: "
              + ", ".join(f"{v}: {np.mean([g['Pass@10'] for g in grid if g[name] == v]):.1f}" for v in values))

    other: dict[str, Any] = {}
    for alpha in (0.4, 0.5, 0.6, 0.7):
        row(f"score fusion, alpha {alpha}", convex(alpha), other)
    for beta in (0.25, 0.5, 1.0):
        row(f"rrf_k 60 + document evidence, beta {beta}", rrf(beta=beta, where=where), other)
        row(f"rrf_k 15 + document evidence, beta {beta}", rrf(15, beta=beta, where=where), other)
    for gamma in (0.1, 0.2, 0.5):
        row(f"rrf_k 60 + neighbour evidence, gamma {gamma}", rrf(gamma=gamma, where=where), other)
        row(f"rrf_k 15 + neighbour evidence, gamma {gamma}", rrf(15, gamma=gamma, where=where), other)
    split_runs, _ = rankings(None, texts, split_queries=True)
    row("query identifiers split, rrf_k 60", rrf(), other, split_runs)
    row("query identifiers split, rrf_k 15", rrf(15), other, split_runs)
    no_type, no_type_where = rankings("[Document: {title} - Section: {section}]", texts)
    other["prefix without Type, rrf_k 60"] = measure(rrf(), no_type, golden, no_type_where)
    other["prefix without Type, rrf_k 15"] = measure(rrf(15), no_type, golden, no_type_where)
    for name in ("prefix without Type, rrf_k 60", "prefix without Type, rrf_k 15"):
        print(f"{name:60s} " + "  ".join(f"{other[name][k]:5.1f}" for k in KS))
    results["other"] = other
    print(f"wrote {save(f'contextual_tuning_{args.half}' if args.half != 'tune' else 'contextual_tuning', results)}")


if __name__ == "__main__":
    main()
