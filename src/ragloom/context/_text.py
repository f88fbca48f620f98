"""Small text and date helpers shared by the optimiser's steps."""

from __future__ import annotations

from datetime import date
from functools import lru_cache

from ragloom.parse.timeref import period_bounds
from ragloom.parse.words import STOP_WORDS as STOP_WORDS
from ragloom.parse.words import words
from ragloom.types import ScoredChunk


@lru_cache(maxsize=512)
def word_set(text: str) -> frozenset[str]:
    return frozenset(words(text))


def content_words(text: str) -> frozenset[str]:
    # A lone letter is what is left of "what's" or "don't" once the apostrophe is gone.
    return frozenset(w for w in words(text) if w not in STOP_WORDS and not (len(w) == 1 and w.isalpha()))


def resolved_periods(chunk: ScoredChunk) -> tuple[str, ...]:
    """The chunk's time references that name a real period, in order, without repeats."""
    return tuple(dict.fromkeys(t for t in chunk.time_refs if period_bounds(t) is not None))


def content_date(chunk: ScoredChunk) -> date | None:
    """When the chunk speaks of: the document's date, else its earliest resolved period.

    ``as_of`` is left out on purpose: it is when the chunk was ingested, which every stored
    chunk has, so counting it would make every context look dated.
    """
    if chunk.document_date is not None:
        return chunk.document_date
    starts = [b[0] for t in chunk.time_refs if (b := period_bounds(t)) is not None]
    return min(starts) if starts else None


def order_date(chunk: ScoredChunk) -> date | None:
    """The date the temporal order sorts by: :func:`content_date`, else the ingest date."""
    found = content_date(chunk)
    if found is None and chunk.as_of is not None:
        return chunk.as_of.date()
    return found


def recency_date(chunk: ScoredChunk) -> date | None:
    """How new the source is: its document date, else when it was ingested."""
    if chunk.document_date is not None:
        return chunk.document_date
    return chunk.as_of.date() if chunk.as_of is not None else None


def known_sentences(chunk: ScoredChunk) -> tuple[tuple[int, int], ...]:
    """The chunk's own sentence spans (document offsets) when the retriever gave them and
    they lie inside the chunk; else ()."""
    spans = chunk.sentences
    if spans and all(chunk.start <= s <= e <= chunk.end for s, e in spans):
        return tuple(spans)
    return ()
