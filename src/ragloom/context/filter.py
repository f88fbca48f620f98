"""Step 1: put every retrieval mode's scores on one scale, then drop what is not relevant."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ragloom.errors import InvalidParameterError
from ragloom.types import ScoredChunk

#: Key under which :func:`normalize_scores` keeps the retriever's own score in ``scores``.
RAW_SCORE_KEY = "raw"
LOW_RELEVANCE = "low relevance"


def normalize_scores(candidates: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """Min-max normalise the scores of one query's candidates to [0, 1].

    Cosine similarities, BM25 scores and fused ranks live on different scales; after this a
    threshold such as ``min_relevance`` means the same thing whatever the mode. When all
    scores are equal nothing tells the candidates apart, so all get 1.0. A score that is not
    a finite number (NaN from an empty vector, say) ranks lowest. The retriever's score is
    kept in ``scores["raw"]``.
    """
    finite = [c.score for c in candidates if math.isfinite(c.score)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 0.0)
    span = high - low
    out = []
    for c in candidates:
        if not math.isfinite(c.score):
            value = 0.0
        elif span <= 0:
            value = 1.0
        else:
            value = (c.score - low) / span
        out.append(replace(c, score=value, scores={**c.scores, RAW_SCORE_KEY: c.score}))
    return out


def filter_relevance(chunks: Sequence[ScoredChunk], min_relevance: float
                     ) -> tuple[list[ScoredChunk], list[tuple[str, str]]]:
    """Keep chunks whose (normalised) score is at least ``min_relevance``.

    Returns the kept chunks in their order and ``(chunk_id, "low relevance")`` for the rest.
    """
    if not 0.0 <= min_relevance <= 1.0:
        raise InvalidParameterError(f"min_relevance ({min_relevance}) must be between 0 and 1")
    kept, removed = [], []
    for c in chunks:
        if c.score >= min_relevance:
            kept.append(c)
        else:
            removed.append((c.chunk_id, LOW_RELEVANCE))
    return kept, removed


REPEATED = "repeated candidate"


def drop_repeated_ids(candidates: Sequence[ScoredChunk]) -> tuple[list[ScoredChunk], list[tuple[str, str]]]:
    """Keep one candidate per chunk id, the best-scoring (first on ties), at its first place.

    Callers that concatenate several retrievers' results can hand the same chunk twice;
    every later step keys on the id.
    """
    best: dict[str, int] = {}
    for i, c in enumerate(candidates):
        j = best.get(c.chunk_id)
        if j is None or (math.isfinite(c.score) and not (candidates[j].score >= c.score)):
            best[c.chunk_id] = i
    first: dict[str, int] = {}
    for i, c in enumerate(candidates):
        first.setdefault(c.chunk_id, i)
    kept = sorted(best, key=first.__getitem__)
    repeats = [(cid, REPEATED) for cid, n in _counts(candidates).items() for _ in range(n - 1)]
    return [candidates[best[cid]] for cid in kept], repeats


def _counts(candidates: Sequence[ScoredChunk]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in candidates:
        out[c.chunk_id] = out.get(c.chunk_id, 0) + 1
    return out
