"""``graph``: hybrid seeds, the subjects the query names, and what the context graph reaches
from them, fused by reciprocal rank.

Multi-hop questions bridge through an entity: the chunk that answers the first hop names what
the second is about ("the film *Kiss and Tell*" stars Shirley Temple; the answer is in the
chunk about Shirley Temple). Graph mode follows that:

1. **Seeds**: hybrid search, ``initial_limit`` results (default 20).
2. **Named in the query**: the chunks about the titles and headings the query names (whole
   words, the same case; :meth:`~ragloom.graph.view.ContextGraph.named_in`), closest to the
   query first (``query_entities``, on by default): how HippoRAG links a question to its graph.
3. **Expansion**: from the best ``expand_from`` (default 5) of those two rankings fused, the
   neighbours within ``hops`` (default 1) over the edge kinds in ``follow`` (default
   ``MENTIONS``, from a chunk to the chunks about the names it mentions, and
   ``TOPIC_OVERLAP``). Each source's neighbours take the places right behind it, best first
   by ``0.75 * cos(query, chunk) + 0.25 * strength * source relevance`` (strength: the edge's
   weight on one scale, :func:`edge_strength`); a neighbour remembers its source and edge.
4. **Fusion**: seeds, named chunks and neighbours (at their places) fused by reciprocal rank
   with ``retrieval.rrf_k``, as hybrid fuses its two lists: a bridged chunk ranks beside the
   seed that named it, and one found by several routes rises. ``final_limit`` results
   (default 50).
5. **Diversity** (``mmr_lambda`` below 1; 1 by default): maximal marginal relevance over the
   fused list, each pick maximising ``λ·relevance − (1−λ)·redundancy``, relevance being half
   the query similarity and half the fused score's share of the best, redundancy the larger
   of its similarity to what is already picked and its lens's share of it.

Which edges are followed is measured (docs/benchmarks.md, "Multi-hop retrieval on HotpotQA"):
``SAME_SOURCE`` and ``SEQUENTIAL`` neighbours displaced direct hits on the contextual code set,
and diversity pushed bridged paragraphs (alike by nature) down on HotpotQA.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from ragloom.embed.base import normalize_rows
from ragloom.errors import InvalidParameterError, UnknownNameError
from ragloom.graph.model import EDGE_TYPES, SAME_LENS, SIMILAR_TO, TOPIC_OVERLAP
from ragloom.retrieve.base import SearchRequest, define, to_scored, unit
from ragloom.retrieve.basic import HybridOptions, hybrid
from ragloom.store.derived import save_arrays
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
    scan and kept until the store's next commit: scoring a few hundred graph neighbours is then
    one matrix product instead of a filtered table read. In a local workspace the vectors are a
    file beside the tables, memory-mapped (:mod:`ragloom.store.derived`): 150 MB at 100,000
    chunks that a process no longer holds, and does not read again after a commit."""
    def load() -> tuple[dict[str, int], np.ndarray, list[str]]:
        files = store.derived_files(tenant, "chunk-vectors", table="chunks")
        kept = files.load() if files is not None else None
        if kept is None:
            table = store.current_columns(tenant, ["chunk_id", "lens", "vector"])
            if table is None or table.num_rows == 0:
                return {}, np.zeros((0, 1), dtype=np.float32), []
            arrays = {"ids": np.array(table["chunk_id"].to_pylist(), dtype=str),
                      "lenses": np.array(table["lens"].to_pylist(), dtype=str),
                      "vectors": normalize_rows(vector_matrix(table))}
            del table
            kept = (files.keep(lambda folder: save_arrays(folder, arrays)) if files is not None else None) or arrays
        ids: list[str] = kept["ids"].tolist()
        return {cid: i for i, cid in enumerate(ids)}, kept["vectors"], kept["lenses"].tolist()

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
    """A chunk reached over the graph or named by the query, before its row is read (if it is
    ranked at all)."""

    chunk_id: str
    lens: str
    score: float
    cosine: float
    via: dict[str, Any]
    row: Mapping[str, Any] | None = None


def followed_kinds(value: str | Sequence[str]) -> tuple[str, ...]:
    """The edge kinds a ``follow`` value names (comma-separated, or a list): ``"all"`` every
    kind, ``""`` or ``"none"`` none; an unknown kind is an error listing the valid ones."""
    names = [n.strip() for n in (value.split(",") if isinstance(value, str) else value) if n.strip()]
    if any(n.lower() == "all" for n in names):
        return EDGE_TYPES
    kinds = []
    for name in names:
        if name.lower() == "none":
            continue
        if name.upper() not in EDGE_TYPES:
            raise UnknownNameError("edge kind to follow", name, [*EDGE_TYPES, "all", "none"])
        kinds.append(name.upper())
    return tuple(dict.fromkeys(kinds))


@dataclass(frozen=True, slots=True)
class GraphOptions(HybridOptions):
    """Seeds, what is followed from them, final size and the relevance-diversity balance
    (``[graph]`` settings)."""

    initial_limit: int = 20
    hops: int = 1
    final_limit: int = 50
    mmr_lambda: float = 1.0
    #: Edge kinds followed from the seeds, comma-separated (``"all"``: every kind).
    follow: str = "MENTIONS,TOPIC_OVERLAP"
    #: How many of the best seeds are expanded.
    expand_from: int = 5
    #: Whether the chunks about the titles and headings the query names join the ranking.
    query_entities: bool = True

    SETTINGS: ClassVar[Mapping[str, str]] = {
        name: f"graph.{name}" for name in ("initial_limit", "hops", "final_limit", "mmr_lambda", "follow",
                                           "expand_from", "query_entities")}


@define("graph", options=GraphOptions)
def graph_expanded(req: SearchRequest) -> list[ScoredChunk]:
    """Hybrid seeds, the chunks about what the query names, and what the context graph reaches
    from the best of them, fused by reciprocal rank."""
    settings = req.options_as(GraphOptions)
    followed_kinds(settings.follow)  # an unknown kind fails before any search
    # Current queries take vectors from memory; as-of ones read them with the rows.
    fetch_vectors = req.as_of is not None or settings.with_vectors
    seeds = hybrid(req.narrowed(k=settings.initial_limit,
                                options=HybridOptions(with_vectors=fetch_vectors, fusion_weights=settings.fusion_weights,
                                                      exact_weight=settings.exact_weight)))
    return expand_seeds(req, seeds, settings)


class _Candidates:
    """Unit vectors and lenses of chunks by id: from the in-memory matrix for current queries,
    read from the store (with the request's filters) for as-of and dated ones."""

    def __init__(self, req: SearchRequest, index: tuple[dict[str, int], np.ndarray, list[str]] | None) -> None:
        self.req, self.index = req, index
        self.lenses = set(req.lenses) if req.lenses else None

    def find(self, ids: Sequence[str]) -> list[tuple[str, str, np.ndarray, Mapping[str, Any] | None]]:
        """(chunk id, lens, unit vector, row or None) of those of ``ids`` the query may see."""
        if not ids:
            return []
        req = self.req
        if self.index is not None:
            positions, matrix, lens_of = self.index
            return [(cid, lens_of[positions[cid]], matrix[positions[cid]], None) for cid in ids
                    if cid in positions and (self.lenses is None or lens_of[positions[cid]] in self.lenses)]
        rows = req.store.chunks(req.tenant, chunk_ids=list(ids), lenses=req.lenses, as_of=req.as_of, dated=req.dated,
                                columns=[*RESULT_COLUMNS, "vector"])
        return [(r["chunk_id"], r["lens"], unit(r["vector"]), r) for r in rows]


def _fuse(rankings: Sequence[Sequence[str]], k: int) -> dict[str, float]:
    """Reciprocal-rank fusion of ranked id lists (equal weights), best first."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (k + rank)
    return dict(sorted(fused.items(), key=lambda item: -item[1]))


def expand_seeds(req: SearchRequest, seeds: Sequence[ScoredChunk], settings: GraphOptions) -> list[ScoredChunk]:
    """``seeds`` (retrieved by any mode, best first), the chunks about what the query names,
    and the graph neighbours of the best ``settings.expand_from`` of those over the followed
    edge kinds, fused by reciprocal rank (see the module docstring); results that the seeds did
    not hold name what brought them in, in ``via``."""
    if req.graph is None:
        raise InvalidParameterError("graph expansion needs the request's graph loader (SearchRequest.graph)")
    if not seeds:
        return []
    kinds = followed_kinds(settings.follow)
    query = unit(req.vector)
    with req.timed("load graph"):
        graph = req.graph()
        # The in-memory vectors are the current chunks of every date: a query into the past or
        # over a date range reads its neighbours from the store, filtered.
        index = chunk_vectors(req.store, req.tenant) if req.as_of is None and req.dated is None else None
    lookup = _Candidates(req, index)
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
        cosine = float(query @ vectors[s.chunk_id])
        relevance = 0.5 * cosine + 0.5 * s.score / top_rrf
        results[s.chunk_id] = replace(s, retriever="graph", scores={**s.scores, "cosine": cosine, "relevance": relevance})
    others: dict[str, _Expanded] = {}

    def note(found: Sequence[tuple[str, str, np.ndarray, Mapping[str, Any] | None]]) -> dict[str, float]:
        """The cosine of each found chunk, its vector and row kept for the ranking."""
        out = {}
        for cid, lens, vector, row in found:
            vectors.setdefault(cid, vector)
            out[cid] = float(query @ vector)
            if cid not in results and cid not in others:
                others[cid] = _Expanded(cid, lens, 0.0, out[cid], {}, row)
        return out

    rankings: list[list[str]] = [list(results)]
    # The seeds that hold the query's exact terms vote again (ragloom.retrieve.exact): the graph's
    # neighbours, reached through shared words, would otherwise crowd out the one chunk that
    # names the identifier or version asked about.
    exact = sorted((cid for cid, s in results.items() if s.scores.get("exact")),
                   key=lambda cid: -results[cid].scores["exact"])
    if exact:
        rankings.append(exact)
    # The chunks about the titles and headings the query names, closest to the query first.
    if settings.query_entities:
        with req.timed("link query"):
            named = dict.fromkeys(cid for members in graph.named_in(req.text).values() for cid in members)
            cosines = note(lookup.find(list(named)))
        rankings.append(sorted(cosines, key=lambda cid: (-cosines[cid], cid)))
    # What the followed edges reach from the best seeds (named chunks included). Each source's
    # neighbours take the places right behind it, best first (scored by their similarity to the
    # query and the strength of the edge), and vote from there as one more ranking.
    rrf_k = req.settings.retrieval.rrf_k
    reached: dict[str, dict[str, Any]] = {}
    places: dict[str, int] = {}
    if kinds and settings.expand_from > 0:
        start = _fuse(rankings, rrf_k)
        position = {cid: i for i, cid in enumerate(start, start=1)}
        best = max(start.values())
        frontier = {cid: score / best for cid, score in list(start.items())[: settings.expand_from]}
        for hop in range(1, settings.hops + 1):
            step: dict[str, dict[str, Any]] = {}
            with req.timed("expand"):
                for node, source in frontier.items():
                    for neighbour, kind, weight in graph.follow(node, kinds):
                        # Another source may be reached too: a seed that a better one names
                        # rises by it (both paragraphs of a two-hop question among the seeds).
                        if neighbour == node or neighbour in reached:
                            continue
                        strength = edge_strength(kind, weight) * source
                        route = (position[node], -strength)
                        if neighbour not in step or route < step[neighbour]["route"]:
                            step[neighbour] = {"seed": node, "edge": kind, "weight": weight, "hops": hop,
                                               "strength": strength, "route": route}
            if not step:
                break
            with req.timed("score neighbours"):
                cosines = note(lookup.find(list(step)))
            behind: dict[str, list[str]] = {}
            for cid, cosine in cosines.items():
                info = step[cid]
                info["score"] = QUERY_WEIGHT * cosine + EDGE_WEIGHT * info["strength"]
                reached[cid] = info
                behind.setdefault(info["seed"], []).append(cid)
                if cid in others and not others[cid].via:
                    others[cid].via = {k: v for k, v in info.items() if k not in ("strength", "score", "route")}
            for source_id, members in behind.items():
                members.sort(key=lambda cid: (-reached[cid]["score"], cid))
                for offset, cid in enumerate(members, start=1):
                    places[cid] = position[source_id] + offset
                    position.setdefault(cid, places[cid])
            frontier = {cid: reached[cid]["score"] for cid in cosines}
    fused = _fuse(rankings, rrf_k)
    # In place order, so that ties fall the same way whichever way the vectors were read.
    for cid, place in sorted(places.items(), key=lambda item: (item[1], item[0])):
        fused[cid] = fused.get(cid, 0.0) + 1.0 / (rrf_k + place)
    fused = dict(sorted(fused.items(), key=lambda item: -item[1]))
    limit = min(settings.final_limit, req.k) if req.k is not None else settings.final_limit
    with req.timed("rank"):
        pool: list[ScoredChunk | _Expanded] = []
        for cid, score in fused.items():
            if cid in results:
                pool.append(replace(results[cid], score=score, scores={**results[cid].scores, "rrf": score}))
            elif cid in others:
                others[cid].score = score
                pool.append(others[cid])
        if settings.mmr_lambda < 1.0:
            # Diversity weighs against a relevance that mixes the query similarity (spread out)
            # with the fused rank (close together): on the fused scores alone it would rule.
            top = pool[0].score if pool else 1.0
            mixed = [_Relevance(c, 0.5 * _cosine(c) + 0.5 * c.score / top) for c in pool]
            ranked = [m.candidate for m in mmr(mixed, vectors, limit, settings.mmr_lambda)]
        else:
            ranked = pool[:limit]
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
            chunk = to_scored(row, candidate.score, "graph", via=candidate.via or None,
                              scores={"cosine": candidate.cosine, "rrf": candidate.score})
        else:
            chunk = candidate
        out.append(chunk if settings.with_vectors else replace(chunk, vector=None))
    return out


def _cosine(candidate: ScoredChunk | _Expanded) -> float:
    if isinstance(candidate, _Expanded):
        return candidate.cosine
    return float(candidate.scores.get("cosine", 0.0))


@dataclass(frozen=True, slots=True)
class _Relevance:
    """A candidate with the relevance the diversity ranking weighs."""

    candidate: ScoredChunk | _Expanded
    score: float

    @property
    def chunk_id(self) -> str:
        return self.candidate.chunk_id

    @property
    def lens(self) -> str:
        return self.candidate.lens


GRAPH = graph_expanded
