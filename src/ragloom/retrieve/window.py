"""Sentence-level retrieval: the fixed sentence window and the dynamic semantic window.

Both start from the best sentences of the sentence index (vector search) and grow each into
a span of neighbouring sentences of the same document:

``window``
    a fixed number of sentences on each side (LlamaIndex's sentence window).
``dynamic``
    left and right while the cosine similarity of the current edge sentence and its neighbour
    is at least ``threshold``, at most ``max_expand`` per side, never across a document and, by
    default, never across a section. Options: a *query floor* (a neighbour must also stay that
    similar to the query) and an *adaptive threshold* (per document, a quantile of the
    similarities of its adjacent sentences).

Spans of one document that overlap or touch are merged into one, keeping the best score, so
no sentence is sent twice. Every result is one contiguous span with exact offsets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ragloom.retrieve.base import ModeOptions, SearchRequest, define, to_scored, unit
from ragloom.retrieve.sentences import SENTENCE_COLUMNS, Sentences, sentence_index, sentences_from_columns
from ragloom.store.filters import sql_str
from ragloom.types import ScoredChunk


@dataclass(frozen=True, slots=True)
class Expansion:
    """How to grow a seed sentence into a span."""

    threshold: float = 0.75
    max_expand: int = 5
    cross_sections: bool = False
    query_floor: float | None = None
    adaptive_quantile: float | None = None  # None: fixed threshold
    fixed: int | None = None  # a fixed window of this many sentences per side instead

    def threshold_for(self, doc: Sentences) -> float:
        if self.adaptive_quantile is None or len(doc) < 3:
            return self.threshold
        return float(np.quantile(doc.adjacent(), self.adaptive_quantile))


@dataclass(frozen=True, slots=True)
class Span:
    document_id: str
    first: int  # indexes into the document's Sentences, inclusive
    last: int
    score: float
    seed: int

    def merge(self, other: Span) -> Span:
        best = self if self.score >= other.score else other
        return Span(self.document_id, min(self.first, other.first), max(self.last, other.last), best.score, best.seed)


def grow(doc: Sentences, seed: int, score: float, rule: Expansion, query: np.ndarray | None = None,
         threshold: float | None = None) -> Span:
    """The span one seed sentence grows into under ``rule``."""
    limit = rule.threshold_for(doc) if threshold is None else threshold
    bounds = []
    for step in (-1, 1):
        edge = seed
        for _ in range(rule.fixed if rule.fixed is not None else rule.max_expand):
            nxt = edge + step
            if not doc.next_to(edge, nxt):
                break  # a document boundary
            if not rule.cross_sections and doc.sections[nxt] != doc.sections[seed]:
                break
            if rule.fixed is not None:
                edge = nxt
                continue
            if float(doc.vectors[edge] @ doc.vectors[nxt]) < limit:
                break
            if rule.query_floor is not None and query is not None and float(query @ doc.vectors[nxt]) < rule.query_floor:
                break
            edge = nxt
        bounds.append(edge)
    return Span(doc.document_id, bounds[0], bounds[1], score, seed)


def merge_spans(spans: Sequence[Span], documents: Mapping[str, Sentences]) -> list[Span]:
    """Spans of one document that overlap or touch become one (the best score stays)."""
    merged: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.document_id, s.first)):
        last = merged[-1] if merged else None
        if last is not None and last.document_id == span.document_id and (
                span.first <= last.last or documents[span.document_id].next_to(last.last, span.first)):
            merged[-1] = last.merge(span)
        else:
            merged.append(span)
    return sorted(merged, key=lambda s: -s.score)


def expand(seeds: Sequence[tuple[str, int, float]], documents: Mapping[str, Sentences], rule: Expansion,
           query: np.ndarray | None = None, *, merge: bool = True) -> list[Span]:
    """Grow every (document id, position, score) seed and merge what overlaps."""
    thresholds: dict[str, float] = {}
    spans = []
    for doc_id, position, score in seeds:
        doc = documents[doc_id]
        if doc_id not in thresholds:
            thresholds[doc_id] = rule.threshold_for(doc)
        spans.append(grow(doc, position, score, rule, query, thresholds[doc_id]))
    return merge_spans(spans, documents) if merge else sorted(spans, key=lambda s: -s.score)


# -- the retrieval modes ----------------------------------------------------------------------------


def load_sentences(req: SearchRequest, hits: Sequence[Mapping[str, Any]], rule: Expansion) -> dict[str, Sentences]:
    """The sentences each expansion may need. Current queries take whole documents from the
    in-memory :func:`sentence_index`; an as-of query reads a window around every hit (whole
    documents when the threshold is adaptive, which looks at every adjacent pair)."""
    wanted = {h["document_id"] for h in hits}
    if req.as_of is None:
        index = sentence_index(req.store, req.tenant)
        return {doc: index[doc].exact() for doc in wanted if doc in index}
    reach = rule.fixed if rule.fixed is not None else rule.max_expand
    by_doc: dict[str, list[int]] = {}
    for h in hits:
        by_doc.setdefault(h["document_id"], []).append(int(h["chunk_index"]))
    clauses = []
    for doc, positions in by_doc.items():
        if rule.adaptive_quantile is not None:
            clauses.append(f"document_id = {sql_str(doc)}")
        else:
            ranges = " OR ".join(f"(chunk_index BETWEEN {p - reach} AND {p + reach})" for p in positions)
            clauses.append(f"(document_id = {sql_str(doc)} AND ({ranges}))")
    rows = req.store.chunks(req.tenant, table="sentences", as_of=req.as_of, with_vectors=True,
                            columns=SENTENCE_COLUMNS, where=["(" + " OR ".join(clauses) + ")"])
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        grouped.setdefault(r["document_id"], []).append(r)
    return {doc: sentences_from_columns(doc, [np.array([r[c] for r in rs]) for c in SENTENCE_COLUMNS[1:5]],
                            np.stack([r["vector"] for r in rs]))
            for doc, rs in grouped.items()}


@dataclass(frozen=True, slots=True)
class WindowOptions(ModeOptions):
    """``window`` mode (``[sentences]`` settings): sentences retrieved, sentences added per side."""

    top_k: int = 10
    window: int = 3
    cross_sections: bool = False
    #: Merge the windows of one document that overlap or touch.
    merge: bool = True

    SETTINGS: ClassVar[Mapping[str, str]] = {name: f"sentences.{name}" for name in ("top_k", "window",
                                                                                     "cross_sections")}

    def rule(self) -> Expansion:
        return Expansion(cross_sections=self.cross_sections, fixed=self.window)


@dataclass(frozen=True, slots=True)
class DynamicOptions(ModeOptions):
    """``dynamic`` mode (``[sentences]`` settings): how far and on what similarity a window grows."""

    top_k: int = 10
    threshold: float = 0.75
    max_expand: int = 5
    cross_sections: bool = False
    query_floor: float | None = None
    adaptive: bool = False
    adaptive_quantile: float = 0.5
    merge: bool = True

    SETTINGS: ClassVar[Mapping[str, str]] = {
        name: f"sentences.{name}" for name in ("top_k", "threshold", "max_expand", "cross_sections", "query_floor",
                                               "adaptive", "adaptive_quantile")}

    def rule(self) -> Expansion:
        return Expansion(threshold=self.threshold, max_expand=self.max_expand, cross_sections=self.cross_sections,
                         query_floor=self.query_floor,
                         adaptive_quantile=self.adaptive_quantile if self.adaptive else None)


@dataclass(frozen=True, slots=True)
class Window:
    """One grown span with its exact offsets, text and sentences."""

    span: Span
    start: int
    end: int
    text: str
    position: int  # of its first sentence in the document
    sentences: tuple[tuple[int, int], ...]
    hit: Mapping[str, Any]  # the row of the seed sentence the span grew from (the best one, when merged)


def grow_hits(req: SearchRequest, hits: Sequence[Mapping[str, Any]], rule: Expansion, query: np.ndarray | None, *,
              merge: bool = True, limit: int | None = None) -> list[Window]:
    """Every hit (a sentence row: ``document_id``, ``chunk_index``, ``start_char``, ``_score``)
    grown into its window under ``rule``; windows of one document that overlap or touch are
    merged. Best first, at most ``limit``."""
    with req.timed("load sentences"):
        documents = load_sentences(req, hits, rule)
    with req.timed("expand"):
        # The hit's position in its document's loaded sentences.
        seeds = [(h["document_id"], int(np.searchsorted(documents[h["document_id"]].starts, h["start_char"])),
                  float(h["_score"])) for h in hits]
        spans = expand(seeds, documents, rule, query, merge=merge)[:limit]
    hit_at: dict[tuple[str, int], Mapping[str, Any]] = {}
    for h, (doc_id, position, _) in zip(hits, seeds, strict=True):
        hit_at.setdefault((doc_id, position), h)
    with req.timed("load texts"):
        texts = req.store.document_texts(req.tenant, {s.document_id for s in spans}, as_of=req.as_of)
    windows = []
    for span in spans:
        doc = documents[span.document_id]
        start, end = int(doc.starts[span.first]), int(doc.ends[span.last])
        sentences = tuple(zip(doc.starts[span.first : span.last + 1].tolist(),
                              doc.ends[span.first : span.last + 1].tolist(), strict=True))
        windows.append(Window(span, start, end, texts.get(span.document_id, "")[start:end],
                              int(doc.positions[span.first]), sentences, hit_at[(span.document_id, span.seed)]))
    return windows


def sentence_windows(req: SearchRequest, options: WindowOptions | DynamicOptions, name: str) -> list[ScoredChunk]:
    rule, top_k = options.rule(), options.top_k
    vector = req.vector
    with req.timed("sentence search"):
        hits = req.store.vector_search(req.tenant, vector, top_k, lenses=req.lenses, as_of=req.as_of, dated=req.dated,
                                       table="sentences")
    if not hits:
        if not req.store.has_table("sentences"):
            req.notes.append("no sentence index in this workspace: ingest with sentences.enabled = true")
        return []
    windows = grow_hits(req, hits, rule, unit(vector), merge=options.merge, limit=req.limit)
    results = []
    for w in windows:
        row = dict(w.hit)  # document fields, and the section of the sentence the span grew from
        row.update(chunk_id=f"{w.span.document_id}:{w.start}-{w.end}", start_char=w.start, end_char=w.end,
                   text=w.text, prefix="", token_count=0, chunk_index=w.position, total_chunks=0)
        scored = to_scored(row, w.span.score, name,
                           scores={"seed_similarity": w.span.score, "sentences": w.span.last - w.span.first + 1})
        results.append(replace(scored, sentences=w.sentences))
    return results


@define("window", options=WindowOptions, scale="cosine")
def window(req: SearchRequest) -> list[ScoredChunk]:
    """The best sentences, each widened by a fixed number of sentences per side (default 3)."""
    return sentence_windows(req, req.options_as(WindowOptions), "window")


@define("dynamic", options=DynamicOptions, scale="cosine")
def dynamic(req: SearchRequest) -> list[ScoredChunk]:
    """The best sentences, each grown while its neighbours stay semantically close."""
    return sentence_windows(req, req.options_as(DynamicOptions), "dynamic")


WINDOW, DYNAMIC = window, dynamic
