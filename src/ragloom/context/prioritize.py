"""Step 4: decide which chunks matter most.

``priority = relevance + relationship_weight x min(1, sum of relationship strengths)
+ query_overlap_weight x query-term overlap + recency_weight x recency``

*relevance* is the normalised retrieval score; *query-term overlap* the share of the
query's content words (lower-cased, stop words removed) that occur in the chunk; *recency*
places the chunk's document date (else its ingest date) between the oldest (0) and the
newest (1) candidate, and is 0 for an undated chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ragloom.context._text import content_words, recency_date, word_set
from ragloom.context.model import Prioritized, Relationship
from ragloom.context.relate import relationship_strengths
from ragloom.errors import InvalidParameterError
from ragloom.types import ScoredChunk


def query_terms(query: str) -> frozenset[str]:
    """The query's content words: lower-cased, stop words removed."""
    return content_words(query)


def query_overlap(terms: frozenset[str], text: str) -> float:
    if not terms:
        return 0.0
    return len(terms & word_set(text)) / len(terms)


def recency_scores(chunks: Sequence[ScoredChunk]) -> list[float]:
    """Each chunk's recency in [0, 1] across ``chunks``; undated chunks get 0.

    When every dated chunk has the same date they are all "the newest" and get 1.
    """
    days = [d.toordinal() if (d := recency_date(c)) is not None else None for c in chunks]
    known = [d for d in days if d is not None]
    if not known:
        return [0.0] * len(chunks)
    low, high = min(known), max(known)
    span = high - low
    return [0.0 if d is None else (1.0 if span == 0 else (d - low) / span) for d in days]


def prioritize(chunks: Sequence[ScoredChunk], relationships: Iterable[Relationship], query: str, *,
               relationship_weight: float = 0.2, query_overlap_weight: float = 0.3,
               recency_weight: float = 0.1) -> list[Prioritized]:
    """The chunks with their priorities, highest first (ties: higher relevance, then input order)."""
    for name, value in (("relationship_weight", relationship_weight),
                        ("query_overlap_weight", query_overlap_weight), ("recency_weight", recency_weight)):
        if value < 0:
            raise InvalidParameterError(f"{name} ({value}) must be at least 0")
    strengths = relationship_strengths(relationships)
    terms = query_terms(query)
    recency = recency_scores(chunks)
    out = []
    for c, rec in zip(chunks, recency, strict=True):
        rel = min(1.0, strengths.get(c.chunk_id, 0.0))
        overlap = query_overlap(terms, c.text)
        priority = c.score + relationship_weight * rel + query_overlap_weight * overlap + recency_weight * rec
        out.append(Prioritized(c, priority, c.score, rel, overlap, rec))
    order = sorted(range(len(out)), key=lambda i: (-out[i].priority, -out[i].relevance, i))
    return [out[i] for i in order]
