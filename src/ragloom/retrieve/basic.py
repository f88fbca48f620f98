"""``vector``, ``bm25`` and ``hybrid`` (reciprocal-rank fusion of the two) retrieval."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ragloom.retrieve.base import ModeOptions, SearchRequest, define, reciprocal_rank_fusion, to_scored
from ragloom.retrieve.exact import exact_ranking, exact_terms
from ragloom.retrieve.lift import POOL, lift_rows, sentence_hit_rows
from ragloom.store.plan import SENTENCES
from ragloom.types import ScoredChunk


@dataclass(frozen=True, slots=True)
class SearchOptions(ModeOptions):
    #: Return each result's vector too (``ScoredChunk.vector``).
    with_vectors: bool = False
    #: A chunk's vector score mixed with its best sentence's (``retrieval.sentence_weight``;
    #: 0: the chunk's own cosine; see :mod:`ragloom.retrieve.lift`).
    sentence_weight: float = 0.5

    SETTINGS: ClassVar[Mapping[str, str]] = {"sentence_weight": "retrieval.sentence_weight"}


@dataclass(frozen=True, slots=True)
class HybridOptions(SearchOptions):
    #: Weights of the fused lists (``{"vector": 1.0, "bm25": 0.5}``); equal when None.
    fusion_weights: Mapping[str, float] | None = None
    #: Weight of the third list fused when the query holds exact terms: the candidates that
    #: hold them verbatim (``retrieval.exact_weight``; 0: off; see :mod:`ragloom.retrieve.exact`).
    exact_weight: float = 0.5

    SETTINGS: ClassVar[Mapping[str, str]] = {"exact_weight": "retrieval.exact_weight"}


def _vector_rows(req: SearchRequest, k: int, with_vectors: bool) -> list[dict[str, Any]]:
    vector = req.vector
    weight = req.options_as(SearchOptions).sentence_weight
    lift = weight > 0 and req.store.has_table(SENTENCES)
    # The sentence search (and the read of its chunks) runs beside the chunk search: each is a
    # LanceDB search of 15-25 ms at 100,000 chunks, outside the GIL.
    hits = beside(req, sentence_hit_rows, req, with_vectors=with_vectors) if lift and req.sentence_hits else list
    with req.timed("vector search"):
        rows = req.store.vector_search(req.tenant, vector, max(k, POOL) if lift else k, lenses=req.lenses,
                                       as_of=req.as_of, dated=req.dated, with_vectors=with_vectors)
    if not lift:
        return rows
    with req.timed("sentence lift"):
        return lift_rows(req, rows, hits(), k, weight=weight)


def _text_rows(req: SearchRequest, k: int, with_vectors: bool) -> list[dict[str, Any]]:
    with req.timed("text search"):
        return req.store.text_search(req.tenant, req.text, k, lenses=req.lenses, as_of=req.as_of, dated=req.dated,
                                     with_vectors=with_vectors)


_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
T = TypeVar("T")


def beside(req: SearchRequest, work: Callable[..., T], *args: Any, pool: str = "search",  # noqa: ANN401
           **kwargs: Any) -> Callable[[], T]:  # noqa: ANN401
    """Start ``work`` in a worker thread of ``pool``, reading the same commit as this one; call
    the result for its value. A task never waits for a task of its own pool (``"search"`` runs
    single searches, ``"lens"`` the balanced mode's per-lens searches, which start searches),
    so a full pool cannot wait on itself. Inside a write transaction, whose uncommitted rows
    only the writing thread may read, ``work`` runs here, at once."""
    call = functools.partial(work, *args, **kwargs)
    if req.store.in_transaction():
        value = call()
        return lambda: value
    with _pools_lock:
        if pool not in _pools:
            _pools[pool] = ThreadPoolExecutor(8 if pool == "lens" else 4, thread_name_prefix=f"ragloom-{pool}")
        executor = _pools[pool]
    return executor.submit(req.store.run_held(call)).result


def search_both(req: SearchRequest, k: int, with_vectors: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The vector and the text search at once (LanceDB runs each outside the GIL, so a hybrid
    query waits for the slower of the two, not their sum)."""
    text = beside(req, _text_rows, req, k, with_vectors)
    return _vector_rows(req, k, with_vectors), text()


@define("vector", options=SearchOptions, scale="cosine")
def vector(req: SearchRequest) -> list[ScoredChunk]:
    """Cosine similarity of the query and chunk embeddings."""
    rows = _vector_rows(req, req.limit, req.options_as(SearchOptions).with_vectors)
    return [to_scored(r, r["_score"], "vector", scores=_parts(r)) for r in rows]


def _parts(row: Mapping[str, Any]) -> dict[str, float]:
    """The chunk's own cosine and its best sentence's, when the sentence lift scored it."""
    if "_chunk_score" not in row:
        return {}
    return {"vector": float(row["_score"]), "chunk": float(row["_chunk_score"]),
            "sentence": float(row["_sentence_score"])}


@define("bm25", options=SearchOptions)
def bm25(req: SearchRequest) -> list[ScoredChunk]:
    """BM25 over the indexed text (contextualised unless the index was built naked)."""
    rows = _text_rows(req, req.limit, req.options_as(SearchOptions).with_vectors)
    return [to_scored(r, r["_score"], "bm25") for r in rows]


@define("hybrid", options=HybridOptions)
def hybrid(req: SearchRequest) -> list[ScoredChunk]:
    """Reciprocal-rank fusion of ``vector`` and ``bm25``, each contributing ``candidates`` results;
    when the query holds exact terms (identifiers, versions, codes, paths), a third list joins:
    the candidates that hold the terms verbatim, the most terms first."""
    options = req.options_as(HybridOptions)
    n = max(req.candidates, req.limit)
    by_vector, by_text = search_both(req, n, options.with_vectors)
    lists: dict[str, list[Mapping[str, Any]]] = {"vector": list(by_vector), "bm25": list(by_text)}
    rrf_k = req.settings.retrieval.rrf_k
    fused = reciprocal_rank_fusion(lists, k=rrf_k, weights=options.fusion_weights)
    terms = exact_terms(req.text) if options.exact_weight > 0 else []
    if terms:
        with req.timed("exact terms"):
            lists["exact"] = list(exact_ranking([row for row, _, _ in fused], terms))
        weights = {"vector": 1.0, "bm25": 1.0, **(options.fusion_weights or {}), "exact": options.exact_weight}
        fused = reciprocal_rank_fusion(lists, k=rrf_k, weights=weights)
    return [to_scored(row, score, "hybrid", scores={**parts, "rrf": score}) for row, score, parts in fused[: req.limit]]


VECTOR, BM25, HYBRID = vector, bm25, hybrid
