"""``vector``, ``bm25`` and ``hybrid`` (reciprocal-rank fusion of the two) retrieval."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragloom.retrieve.base import ModeOptions, SearchRequest, define, reciprocal_rank_fusion, to_scored
from ragloom.types import ScoredChunk


@dataclass(frozen=True, slots=True)
class SearchOptions(ModeOptions):
    #: Return each result's vector too (``ScoredChunk.vector``).
    with_vectors: bool = False


@dataclass(frozen=True, slots=True)
class HybridOptions(SearchOptions):
    #: Weights of the fused lists (``{"vector": 1.0, "bm25": 0.5}``); equal when None.
    fusion_weights: Mapping[str, float] | None = None


def _vector_rows(req: SearchRequest, k: int, with_vectors: bool) -> list[dict[str, Any]]:
    vector = req.vector
    with req.timed("vector search"):
        return req.store.vector_search(req.tenant, vector, k, lenses=req.lenses, as_of=req.as_of,
                                       with_vectors=with_vectors)


def _text_rows(req: SearchRequest, k: int, with_vectors: bool) -> list[dict[str, Any]]:
    with req.timed("text search"):
        return req.store.text_search(req.tenant, req.text, k, lenses=req.lenses, as_of=req.as_of,
                                     with_vectors=with_vectors)


@define("vector", options=SearchOptions)
def vector(req: SearchRequest) -> list[ScoredChunk]:
    """Cosine similarity of the query and chunk embeddings."""
    rows = _vector_rows(req, req.limit, req.options_as(SearchOptions).with_vectors)
    return [to_scored(r, r["_score"], "vector") for r in rows]


@define("bm25", options=SearchOptions)
def bm25(req: SearchRequest) -> list[ScoredChunk]:
    """BM25 over the indexed text (contextualised unless the index was built naked)."""
    rows = _text_rows(req, req.limit, req.options_as(SearchOptions).with_vectors)
    return [to_scored(r, r["_score"], "bm25") for r in rows]


@define("hybrid", options=HybridOptions)
def hybrid(req: SearchRequest) -> list[ScoredChunk]:
    """Reciprocal-rank fusion of ``vector`` and ``bm25``, each contributing ``candidates`` results."""
    options = req.options_as(HybridOptions)
    n = max(req.candidates, req.limit)
    fused = reciprocal_rank_fusion({"vector": _vector_rows(req, n, options.with_vectors),
                                    "bm25": _text_rows(req, n, options.with_vectors)},
                                   k=req.settings.retrieval.rrf_k, weights=options.fusion_weights)
    return [to_scored(row, score, "hybrid", scores={**parts, "rrf": score}) for row, score, parts in fused[: req.limit]]


VECTOR, BM25, HYBRID = vector, bm25, hybrid
