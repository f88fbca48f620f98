"""``graph``: hybrid seeds, expanded over the context graph, ranked for relevance and diversity.

1. **Seeds**: hybrid search, ``initial_limit`` results (default 20).
2. **Expansion**: the neighbours of the seeds within ``hops`` (default 1), over stored edges
   and implied group members. An expanded chunk scores ``0.75 * cos(query, chunk) + 0.25 *
   strength * seed relevance``, where strength is the edge's weight normalised for its type;
   it remembers the seed and the edge that brought it in.
3. **Final ranking**: maximal marginal relevance over seeds and expansions, ``final_limit``
   results (default 50): each pick maximises ``λ·relevance − (1−λ)·redundancy``, redundancy
   being the larger of its similarity to what is already picked and its lens's share of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ragloom.graph.build import SAME_LENS, SIMILAR_TO, TOPIC_OVERLAP
from ragloom.retrieve.base import SearchRequest, mode, to_scored
from ragloom.retrieve.basic import hybrid
from ragloom.types import ScoredChunk

QUERY_WEIGHT, EDGE_WEIGHT = 0.75, 0.25


def edge_strength(kind: str, weight: float) -> float:
    """Edge weights on one scale: similarity as is, shared-term counts saturating at 4."""
    if kind == TOPIC_OVERLAP:
        return min(1.0, weight / 4.0)
    if kind == SIMILAR_TO:
        return weight
    if kind == SAME_LENS:
        return 0.5 * weight
    return min(1.0, weight)


def _unit(vector: Any) -> np.ndarray:  # noqa: ANN401
    v = np.asarray(vector, dtype=np.float32)
    return v / (np.linalg.norm(v) or 1.0)


def mmr(candidates: Sequence[ScoredChunk], vectors: Mapping[str, np.ndarray], limit: int, lam: float) -> list[ScoredChunk]:
    """Maximal marginal relevance with a lens-share term (see the module docstring)."""
    chosen: list[ScoredChunk] = []
    lens_count: dict[str, int] = {}
    pool = list(candidates)
    picked = np.zeros((0, 1), dtype=np.float32)
    while pool and len(chosen) < limit:
        if len(chosen):
            matrix = np.stack([vectors[c.chunk_id] for c in pool])
            similarity = (matrix @ picked.T).max(axis=1)
        else:
            similarity = np.zeros(len(pool))
        best, best_value = 0, -np.inf
        for i, c in enumerate(pool):
            share = lens_count.get(c.lens, 0) / (len(chosen) + 1)
            value = lam * c.score - (1 - lam) * max(float(similarity[i]), share)
            if value > best_value:
                best, best_value = i, value
        choice = pool.pop(best)
        chosen.append(choice)
        lens_count[choice.lens] = lens_count.get(choice.lens, 0) + 1
        picked = np.stack([vectors[c.chunk_id] for c in chosen])
    return chosen


@mode("graph")
def graph_expanded(req: SearchRequest) -> list[ScoredChunk]:
    settings = req.options["settings"].graph
    query = _unit(req.vector)
    seeds = hybrid(req.narrowed(k=settings.initial_limit, options={**req.options, "with_vectors": True}))
    if not seeds:
        return []
    top_rrf = max(s.score for s in seeds)
    relevance: dict[str, float] = {}
    vectors: dict[str, np.ndarray] = {}
    results: dict[str, ScoredChunk] = {}
    for s in seeds:
        vectors[s.chunk_id] = _unit(s.vector)
        relevance[s.chunk_id] = 0.5 * float(query @ vectors[s.chunk_id]) + 0.5 * s.score / top_rrf
        results[s.chunk_id] = replace(s, score=relevance[s.chunk_id], retriever="graph",
                                      scores={**s.scores, "relevance": relevance[s.chunk_id]})
    graph = req.options["graph"]()
    frontier = [s.chunk_id for s in seeds]
    via: dict[str, dict[str, Any]] = {}
    for hop in range(1, settings.hops + 1):
        reached: dict[str, dict[str, Any]] = {}
        for node in frontier:
            for neighbour, kind, weight in graph.neighbours(node):
                if neighbour in results or neighbour in via:
                    continue
                strength = edge_strength(kind, weight) * relevance.get(node, 0.0)
                if neighbour not in reached or strength > reached[neighbour]["strength"]:
                    reached[neighbour] = {"seed": node, "edge": kind, "weight": weight, "hops": hop,
                                          "strength": strength}
        if not reached:
            break
        rows = req.store.chunks(req.tenant, chunk_ids=list(reached), lenses=req.lenses, as_of=req.as_of,
                                with_vectors=True)
        for row in rows:
            info = reached[row["chunk_id"]]
            vectors[row["chunk_id"]] = _unit(row["vector"])
            cosine = float(query @ vectors[row["chunk_id"]])
            score = QUERY_WEIGHT * cosine + EDGE_WEIGHT * info["strength"]
            relevance[row["chunk_id"]] = score
            via[row["chunk_id"]] = {k: v for k, v in info.items() if k != "strength"}
            results[row["chunk_id"]] = to_scored(row, score, "graph", scores={"cosine": cosine, "relevance": score},
                                                 via=via[row["chunk_id"]])
        frontier = [r["chunk_id"] for r in rows]
    limit = min(settings.final_limit, req.k) if req.k is not None else settings.final_limit
    ranked = mmr(sorted(results.values(), key=lambda r: -r.score), vectors, limit, settings.mmr_lambda)
    return [replace(r, vector=None) if not req.options.get("with_vectors") else r for r in ranked]
