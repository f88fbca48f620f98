"""``vector``, ``bm25`` and ``hybrid`` (reciprocal-rank fusion of the two) retrieval."""

from __future__ import annotations

from ragloom.retrieve.base import SearchRequest, mode, reciprocal_rank_fusion, to_scored
from ragloom.types import ScoredChunk


def _vector_rows(req: SearchRequest, k: int) -> list[dict]:
    with_vectors = bool(req.options.get("with_vectors"))
    vector = req.vector
    with req.timed("vector search"):
        return req.store.vector_search(req.tenant, vector, k, lenses=req.lenses, as_of=req.as_of,
                                       with_vectors=with_vectors)


def _text_rows(req: SearchRequest, k: int) -> list[dict]:
    with_vectors = bool(req.options.get("with_vectors"))
    with req.timed("text search"):
        return req.store.text_search(req.tenant, req.text, k, lenses=req.lenses, as_of=req.as_of,
                                     with_vectors=with_vectors)


@mode("vector")
def vector(req: SearchRequest) -> list[ScoredChunk]:
    """Cosine similarity of the query and chunk embeddings."""
    return [to_scored(r, r["_score"], "vector") for r in _vector_rows(req, req.limit)]


@mode("bm25")
def bm25(req: SearchRequest) -> list[ScoredChunk]:
    """BM25 over the indexed text (contextualised unless the index was built naked)."""
    return [to_scored(r, r["_score"], "bm25") for r in _text_rows(req, req.limit)]


@mode("hybrid")
def hybrid(req: SearchRequest) -> list[ScoredChunk]:
    """Reciprocal-rank fusion of ``vector`` and ``bm25``, each contributing ``candidates`` results."""
    n = max(req.candidates, req.limit)
    weights = req.options.get("fusion_weights")
    fused = reciprocal_rank_fusion({"vector": _vector_rows(req, n), "bm25": _text_rows(req, n)},
                                   k=req.rrf_k, weights=weights)
    return [to_scored(row, score, "hybrid", scores={**parts, "rrf": score}) for row, score, parts in fused[: req.limit]]
