"""Small text and date helpers shared by the optimiser's steps."""

from __future__ import annotations

from datetime import date
from functools import lru_cache

from ragloom.enrich.timeref import period_bounds
from ragloom.types import ScoredChunk

# Splitting on a translated copy is three times faster than ``re.findall(r"\w+")``, which
# matters at 200 texts per query; punctuation beyond this table stays attached to its word.
_PUNCTUATION = str.maketrans(dict.fromkeys(
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\u00a0\u00ab\u00bb\u00b7\u2010\u2011\u2012\u2013\u2014\u2015"
    "\u2018\u2019\u201a\u201c\u201d\u201e\u2022\u2026\u2039\u203a", " "))

#: Function words that say nothing about what a query asks for. Months, quarters and other
#: words that carry meaning in a query ("what shipped in March") are deliberately absent.
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can could did didn do does doesn doing don down during each
    either else etc ever every few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just let me more most my myself neither no nor not
    now of off on once only or other our ours ourselves out over own per please same she should so
    some such than that the their theirs them themselves then there these they this those through to
    too under until up upon us very via was we were what when where whether which while who whom
    whose why will with within without would yet you your yours yourself yourselves tell show give
    get find list describe explain summarise summarize many much
    """.split()
)


# Small caches: they exist so that dedup and prioritising, within one call, split each text
# once; across queries texts rarely repeat, and a large cache would pin them in memory.
@lru_cache(maxsize=512)
def words(text: str) -> tuple[str, ...]:
    """Lower-cased word tokens."""
    return tuple(text.lower().translate(_PUNCTUATION).split())


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
