"""What every retriever shares: the search request, the registry of modes, row conversion."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from ragloom.embed.base import Embedder, normalize_rows
from ragloom.errors import UnknownNameError
from ragloom.store.lance import LanceStore
from ragloom.types import AGE_FACTOR_KEY, SECTION_SEPARATOR, ScoredChunk


@dataclass
class SearchRequest:
    """One query against one tenant's store."""

    text: str
    store: LanceStore
    embedder: Embedder
    tenant: str
    k: int | None = None  # None: the mode's own default
    default_k: int = 5
    lenses: Sequence[str] | None = None
    as_of: datetime | None = None
    candidates: int = 50
    rrf_k: int = 60
    options: Mapping[str, Any] = field(default_factory=dict)
    #: Filled by the retriever: notes for the user (a lens with no chunks, for example).
    notes: list[str] = field(default_factory=list)
    query_vector: np.ndarray | None = None
    #: Filled by the retriever: seconds spent per stage ("embed query", "vector search", ...).
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def vector(self) -> np.ndarray:
        """The query's embedding, computed once and carried by copies of the request."""
        if self.query_vector is None:
            with self.timed("embed query"):
                self.query_vector = self.embedder.embed_query(self.text)
        return self.query_vector

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the time the block takes to ``timings[stage]``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - started

    @property
    def limit(self) -> int:
        return self.k if self.k is not None else self.default_k

    def narrowed(self, **changes: Any) -> SearchRequest:  # noqa: ANN401
        """A copy for a sub-search that shares the query vector and reports notes and timings to this one."""
        return replace(self, **changes, notes=self.notes, timings=self.timings)


Retriever = Callable[[SearchRequest], list[ScoredChunk]]
_MODES: dict[str, Retriever] = {}


def mode(name: str) -> Callable[[Retriever], Retriever]:
    """Register a retrieval mode under ``name``."""

    def add(fn: Retriever) -> Retriever:
        _MODES[name] = fn
        return fn

    return add


def mode_names() -> list[str]:
    return sorted(_MODES)


def get_mode(name: str) -> Retriever:
    try:
        return _MODES[name]
    except KeyError:
        raise UnknownNameError("retrieval mode", name, _MODES) from None


def to_scored(row: Mapping[str, Any], score: float, retriever: str, *, scores: Mapping[str, float] | None = None,
              via: Mapping[str, Any] | None = None) -> ScoredChunk:
    path = row.get("section_path") or ""
    return ScoredChunk(
        chunk_id=row["chunk_id"],
        document_id=row["document_id"],
        text=row["text"],
        score=float(score),
        source_path=row["source_path"],
        lens=row["lens"],
        tenant=row["tenant_id"],
        title=row.get("title") or "",
        section_path=tuple(path.split(SECTION_SEPARATOR)) if path else (),
        start=int(row["start_char"]),
        end=int(row["end_char"]),
        token_count=int(row.get("token_count") or 0),
        chunk_index=int(row.get("chunk_index") or 0),
        total_chunks=int(row.get("total_chunks") or 0),
        doc_type=row.get("doc_type") or "",
        prefix=row.get("prefix") or "",
        version_id=row.get("version_id") or "",
        as_of=row.get("as_of"),
        document_date=row.get("document_date"),
        retriever=retriever,
        scores=dict(scores or {retriever: float(score)}),
        via=via,
        key_terms=tuple(row.get("key_terms") or ()),
        time_refs=tuple(row.get("time_refs") or ()),
        entities=tuple(row.get("entities") or ()),
        vector=np.asarray(row["vector"], dtype=np.float32) if row.get("vector") is not None else None,
    )


def unit(vector: Any) -> np.ndarray:  # noqa: ANN401 - any array-like
    """``vector`` as float32 with length 1 (a zero vector stays zero), by the same arithmetic as
    :func:`~ragloom.embed.base.normalize_rows`, so a vector and its row in a matrix agree."""
    return normalize_rows(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]


def reciprocal_rank_fusion(rankings: Mapping[str, Sequence[Mapping[str, Any]]], *, k: int = 60,
                           weights: Mapping[str, float] | None = None) -> list[tuple[Mapping[str, Any], float, dict[str, float]]]:
    """Fuse ranked row lists: score = sum over lists of weight / (k + rank), rank from 1.

    Returns (row, fused score, per-list raw scores) best first; ties keep first-seen order.
    """
    fused: dict[str, float] = {}
    rows: dict[str, Mapping[str, Any]] = {}
    parts: dict[str, dict[str, float]] = {}
    for name, ranked in rankings.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, row in enumerate(ranked, start=1):
            key = row["chunk_id"]
            rows.setdefault(key, row)
            fused[key] = fused.get(key, 0.0) + weight / (k + rank)
            parts.setdefault(key, {})[name] = float(row.get("_score", 0.0))
    order = sorted(fused, key=lambda key: -fused[key])
    return [(rows[key], fused[key], parts[key]) for key in order]


def age_decay(results: Sequence[ScoredChunk], now: datetime, *, per_year: float, floor: float) -> list[ScoredChunk]:
    """Scores multiplied by ``max(floor, 1 - per_year * age in years)``, best first again.

    A chunk's age runs from its document's date, or from when it was ingested if the document
    has none, to ``now`` (the as-of moment of the query, or the present).
    """
    out = []
    for r in results:
        born = r.document_date or (r.as_of.date() if r.as_of else None)
        if born is None:
            out.append(r)
            continue
        years = max(0.0, (now.date() - born).days / 365.25)
        factor = max(floor, 1.0 - per_year * years)
        out.append(replace(r, score=r.score * factor, scores={**r.scores, AGE_FACTOR_KEY: round(factor, 4)}))
    return sorted(out, key=lambda r: -r.score)
