"""``graph``: hybrid seeds, expanded over the context graph, ranked for relevance and diversity.

1. **Seeds**: hybrid search, ``initial_limit`` results (default 20).
2. **Expansion**: the neighbours of the seeds within ``hops`` (default 1), over stored edges
   and the implied members of their document (not of a lens too large to store its pairs,
   more than ``lens_clique_bound`` chunks: that is most of a large workspace, and sharing a
   lens with a seed says little about a chunk). An expanded chunk scores ``0.75 *
   cos(query, chunk) + 0.25 * strength * seed relevance``, where strength is the edge's
   weight normalised for its type; it remembers the seed and the edge that brought it in.
3. **Final ranking**: maximal marginal relevance over seeds and expansions, ``final_limit``
   results (default 50): each pick maximises ``λ·relevance − (1−λ)·redundancy``, redundancy
   being the larger of its similarity to what is already picked and its lens's share of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

import numpy as np

from ragloom.config import Settings
from ragloom.embed.base import normalize_rows
from ragloom.errors import InvalidParameterError
from ragloom.graph.build import SAME_LENS, SIMILAR_TO, TOPIC_OVERLAP
from ragloom.retrieve.base import SearchRequest, define, to_scored, unit
from ragloom.retrieve.basic import HybridOptions, hybrid
from ragloom.store.lance import LanceStore, vector_matrix
from ragloom.store.schema import RESULT_COLUMNS
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


def chunk_vectors(store: LanceStore, tenant: str) -> tuple[dict[str, int], np.ndarray, list[str]]:
    """Row numbers, unit vectors and lenses of ``tenant``'s current chunks, read in one Arrow
    scan and kept by the store until its next write: scoring a few hundred graph neighbours
    is then one matrix product instead of a filtered table read."""
    def load() -> tuple[dict[str, int], np.ndarray, list[str]]:
        table = store.current_columns(tenant, ["chunk_id", "lens", "vector"])
        if table is None or table.num_rows == 0:
            return {}, np.zeros((0, 1), dtype=np.float32), []
        ids = table["chunk_id"].to_pylist()
        return {cid: i for i, cid in enumerate(ids)}, normalize_rows(vector_matrix(table)), table["lens"].to_pylist()

    found: tuple[dict[str, int], np.ndarray, list[str]] = store.memo(("chunk vectors", tenant), load)
    return found


class Rankable(Protocol):
    """What the final ranking needs of a candidate (retrieved chunks and graph neighbours)."""

    @property
    def chunk_id(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def lens(self) -> str: ...


Ranked = TypeVar("Ranked", bound=Rankable)


def mmr_order(scores: Sequence[float], lenses: Sequence[str], matrix: np.ndarray, limit: int, lam: float) -> list[int]:
    """Positions in the order maximal marginal relevance picks them (see the module docstring).

    Vectorised: each pick updates every candidate's largest similarity to the picked ones
    with one matrix-vector product, so ranking a few hundred candidates takes a millisecond
    or two. Ties go to the earlier candidate.
    """
    n = len(scores)
    if n == 0 or limit <= 0:
        return []
    values = np.asarray(scores, dtype=np.float64)
    names = sorted(set(lenses))
    lens_of = np.array([names.index(lens) for lens in lenses])
    lens_count = np.zeros(len(names))
    similarity = np.zeros(n)  # largest similarity to a picked candidate (none yet)
    open_ = np.ones(n, dtype=bool)
    chosen: list[int] = []
    while len(chosen) < min(limit, n):
        share = lens_count[lens_of] / (len(chosen) + 1)
        redundancy = np.maximum(similarity, share) if chosen else share
        best = int(np.argmax(np.where(open_, lam * values - (1 - lam) * redundancy, -np.inf)))
        chosen.append(best)
        open_[best] = False
        lens_count[lens_of[best]] += 1
        similarity = matrix @ matrix[best] if len(chosen) == 1 else np.maximum(similarity, matrix @ matrix[best])
    return chosen


def mmr(candidates: Sequence[Ranked], vectors: Mapping[str, np.ndarray], limit: int, lam: float) -> list[Ranked]:
    """:func:`mmr_order` over candidates (with ``chunk_id``, ``score`` and ``lens``) whose unit
    vectors are in ``vectors``."""
    if not candidates:
        return []
    order = mmr_order([c.score for c in candidates], [c.lens for c in candidates],
                      np.stack([vectors[c.chunk_id] for c in candidates]), limit, lam)
    return [candidates[i] for i in order]


@dataclass
class _Expanded:
    """A chunk reached over the graph, before its row is read (if it is ranked at all)."""

    chunk_id: str
    lens: str
    score: float
    cosine: float
    via: dict[str, Any]
    row: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class GraphOptions(HybridOptions):
    """Seeds, hops, final size and the relevance-diversity balance (``[graph]`` settings)."""

    initial_limit: int = 20
    hops: int = 1
    final_limit: int = 50
    mmr_lambda: float = 0.7

    @classmethod
    def defaults(cls, settings: Settings) -> dict[str, Any]:
        g = settings.graph
        return {"initial_limit": g.initial_limit, "hops": g.hops, "final_limit": g.final_limit,
                "mmr_lambda": g.mmr_lambda}


@define("graph", options=GraphOptions)
def graph_expanded(req: SearchRequest) -> list[ScoredChunk]:
    """Hybrid seeds expanded over the context graph, ranked for relevance and lens diversity."""
    settings = req.options_as(GraphOptions)
    # Current queries take vectors from memory; as-of ones read them with the rows.
    fetch_vectors = req.as_of is not None or settings.with_vectors
    seeds = hybrid(req.narrowed(k=settings.initial_limit,
                                options=HybridOptions(with_vectors=fetch_vectors, fusion_weights=settings.fusion_weights)))
    return expand_seeds(req, seeds, settings)


def expand_seeds(req: SearchRequest, seeds: Sequence[ScoredChunk], settings: GraphOptions) -> list[ScoredChunk]:
    """``seeds`` (retrieved by any mode, best first) and their graph neighbours within
    ``settings.hops``, ranked by maximal marginal relevance; expanded results name their seed
    and edge in ``via``."""
    if req.graph is None:
        raise InvalidParameterError("graph expansion needs the request's graph loader (SearchRequest.graph)")
    if not seeds:
        return []
    query = unit(req.vector)
    with req.timed("load graph"):
        graph = req.graph()
        # The in-memory vectors are the current chunks of every date: a query into the past or
        # over a date range reads its neighbours from the store, filtered.
        index = chunk_vectors(req.store, req.tenant) if req.as_of is None and req.dated is None else None
    missing = [s.chunk_id for s in seeds if s.vector is None and (index is None or s.chunk_id not in index[0])]
    read = {r["chunk_id"]: unit(r["vector"]) for r in req.store.chunks(
        req.tenant, chunk_ids=missing, as_of=req.as_of, columns=["chunk_id", "vector"])} if missing else {}
    top_rrf = max(s.score for s in seeds) or 1.0
    vectors: dict[str, np.ndarray] = {}
    results: dict[str, ScoredChunk] = {}
    for s in seeds:
        if s.chunk_id in results:
            continue
        if index is not None and s.chunk_id in index[0]:
            vectors[s.chunk_id] = index[1][index[0][s.chunk_id]]
        elif s.vector is not None:
            vectors[s.chunk_id] = unit(s.vector)
        elif s.chunk_id in read:
            vectors[s.chunk_id] = read[s.chunk_id]
        else:
            continue  # written away since it was retrieved
        relevance = 0.5 * float(query @ vectors[s.chunk_id]) + 0.5 * s.score / top_rrf
        results[s.chunk_id] = replace(s, score=relevance, retriever="graph", scores={**s.scores, "relevance": relevance})
    lenses = set(req.lenses) if req.lenses else None
    expanded: dict[str, _Expanded] = {}
    frontier = list(results)
    for hop in range(1, settings.hops + 1):
        reached: dict[str, dict[str, Any]] = {}
        with req.timed("expand"):
            for node in frontier:
                source = results[node].score if node in results else expanded[node].score
                for neighbour, kind, weight in graph.neighbours(node, whole_lens=False):
                    if neighbour in results or neighbour in expanded:
                        continue
                    strength = edge_strength(kind, weight) * source
                    if neighbour not in reached or strength > reached[neighbour]["strength"]:
                        reached[neighbour] = {"seed": node, "edge": kind, "weight": weight, "hops": hop,
                                              "strength": strength}
        if not reached:
            break
        with req.timed("score neighbours"):
            found: list[tuple[str, str, np.ndarray, Mapping[str, Any] | None]]
            if index is not None:
                positions, matrix, lens_of = index
                found = [(cid, lens_of[positions[cid]], matrix[positions[cid]], None) for cid in reached
                         if cid in positions and (lenses is None or lens_of[positions[cid]] in lenses)]
            else:
                rows_read = req.store.chunks(req.tenant, chunk_ids=list(reached), lenses=req.lenses, as_of=req.as_of,
                                             dated=req.dated,
                                             columns=[*RESULT_COLUMNS, "vector"])
                found = [(r["chunk_id"], r["lens"], unit(r["vector"]), r) for r in rows_read]
            for cid, lens, vector, row in found:
                info = reached[cid]
                cosine = float(query @ vector)
                vectors[cid] = vector
                expanded[cid] = _Expanded(cid, lens, QUERY_WEIGHT * cosine + EDGE_WEIGHT * info["strength"], cosine,
                                          {k: v for k, v in info.items() if k != "strength"}, row)
        frontier = [cid for cid, *_ in found]
    limit = min(settings.final_limit, req.k) if req.k is not None else settings.final_limit
    with req.timed("rank"):
        pool: list[ScoredChunk | _Expanded] = sorted([*results.values(), *expanded.values()], key=lambda r: -r.score)
        ranked = mmr(pool, vectors, limit, settings.mmr_lambda)
    missing = [c.chunk_id for c in ranked if isinstance(c, _Expanded) and c.row is None]
    rows: dict[str, Mapping[str, Any]] = {}
    if missing:
        with req.timed("load neighbours"):
            rows = {r["chunk_id"]: r for r in req.store.chunks(req.tenant, chunk_ids=missing, columns=RESULT_COLUMNS)}
    out = []
    for candidate in ranked:
        if isinstance(candidate, _Expanded):
            row = candidate.row if candidate.row is not None else rows.get(candidate.chunk_id)
            if row is None:
                continue  # written away since the vectors were read
            chunk = to_scored(row, candidate.score, "graph", via=candidate.via,
                              scores={"cosine": candidate.cosine, "relevance": candidate.score})
        else:
            chunk = candidate
        out.append(chunk if settings.with_vectors else replace(chunk, vector=None))
    return out


GRAPH = graph_expanded
