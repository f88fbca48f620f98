"""The write plan for one document version: which rows to write, which to close, what to embed.

A document yields two tracks of chunk-like rows, the retrieval chunks and the sentence index,
and one list of entity mentions. Each track is matched against the previous version's rows
(:mod:`ragloom.versions`), given final identities and neighbour links, and split into rows
that stay as they are, rows whose vectors can be reused, and rows that need embedding.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ragloom.enrich.quality import ChunkQuality
from ragloom.store.schema import chunk_row, row_embedded_text, tombstone
from ragloom.types import Chunk, Document
from ragloom.versions import ChunkPlan, document_summary, plan_versions, same_record

CHUNKS, SENTENCES = "chunks", "sentences"


@dataclass
class Track:
    """The planned rows of one table (chunks or sentences) for one document version."""

    kind: str
    plans: list[ChunkPlan]
    vanished: list[Mapping[str, Any]]
    keep: list[bool]
    embedded: list[str]  # the text each chunk is embedded from
    vectors: dict[int, np.ndarray] = field(default_factory=dict)  # filled before rows are built

    @property
    def chunks(self) -> list[Chunk]:
        return [p.chunk for p in self.plans]

    def needs_vector(self) -> list[int]:
        """Positions whose vector must be computed: not kept, and not reusable from the old row."""
        todo = []
        for i, plan in enumerate(self.plans):
            if self.keep[i]:
                continue
            old = plan.previous
            if old is not None and old.get("vector") is not None and row_embedded_text(old) == self.embedded[i]:
                self.vectors[i] = np.asarray(old["vector"], dtype=np.float32)
            else:
                todo.append(i)
        return todo

    def vector_of(self, i: int) -> np.ndarray:
        """Position ``i``'s vector: computed or reused for this version, else the kept row's."""
        if i in self.vectors:
            return self.vectors[i]
        previous = self.plans[i].previous
        assert previous is not None, "a position with no new vector is a kept row"
        return np.asarray(previous["vector"], dtype=np.float32)

    def changed(self) -> list[ChunkPlan]:
        """The plans that write a row (everything but what is kept as it is)."""
        return [p for i, p in enumerate(self.plans) if not self.keep[i]]


def plan_track(kind: str, document: Document, version: str, new: Sequence[Chunk], old: Sequence[Mapping[str, Any]],
               embedded_text: Callable[[Chunk], str]) -> Track:
    """Match ``new`` to ``old``, settle identities and links, and mark what stays as it is: a
    row stays only when it says everything about its chunk, the document's own columns (lens,
    title, type, date) included, so a document moved to another lens is rewritten whole (its
    vectors reused where the embedded text is the same)."""
    document_id = document.document_id
    plans, vanished = plan_versions(new, old)
    taken: set[str] = set()
    ids: list[str] = []
    for i, plan in enumerate(plans):
        chunk_id = plan.previous["chunk_id"] if plan.previous is not None else plan.chunk.chunk_id
        if chunk_id in taken:  # a new chunk whose content id an edited chunk already carries
            chunk_id = hashlib.blake2b(f"{chunk_id}:{version}:{i}".encode(), digest_size=10).hexdigest()
        taken.add(chunk_id)
        ids.append(chunk_id)
    linked = []
    for i, plan in enumerate(plans):
        chunk = replace(plan.chunk, chunk_id=ids[i], document_id=document_id,
                        prev_id=ids[i - 1] if i else None, next_id=ids[i + 1] if i + 1 < len(ids) else None)
        linked.append(replace(plan, chunk=chunk))
    keep = [p.previous is not None and same_record(p.chunk, p.previous) and same_document(document, p.previous)
            for p in linked]
    return Track(kind, linked, vanished, keep, [embedded_text(p.chunk) for p in linked])


def same_document(document: Document, row: Mapping[str, Any]) -> bool:
    """Whether a chunk row's copies of the document's columns are still the document's."""
    return (row.get("lens") == document.lens and (row.get("title") or "") == document.title
            and (row.get("doc_type") or "") == document.doc_type and row.get("document_date") == document.document_date
            and row.get("source_path") == document.source_path)


def track_rows(document: Document, track: Track, *, version: str, at: Any, embed_kind: str,  # noqa: ANN401
               entities: Sequence[Sequence[str]] | None = None, qualities: Sequence[ChunkQuality] | None = None,
               key_terms: Sequence[Sequence[str]] | None = None, time_refs: Sequence[Sequence[str]] | None = None,
               indexed: Callable[[str], str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(rows to add, version ids to close) for one track of a document version."""
    rows: list[dict[str, Any]] = []
    closes: list[str] = []
    for i, plan in enumerate(track.plans):
        if track.keep[i]:
            continue
        if plan.previous is not None:
            closes.append(plan.previous["version_id"])
        rows.append(chunk_row(
            document, plan.chunk, track.vectors[i], version=version, previous=plan.previous,
            summary=plan.summary, at=at, embed_kind=embed_kind,
            entities=entities[i] if entities is not None else (),
            quality=qualities[i] if qualities is not None else None,
            key_terms=key_terms[i] if key_terms is not None else (),
            time_refs=time_refs[i] if time_refs is not None else (),
            indexed=indexed(track.embedded[i]) if indexed is not None else None,
        ))
    for old in track.vanished:
        closes.append(old["version_id"])
        rows.append(tombstone(old, version, at))
    return rows, closes


def summary_of(track: Track, *, first: bool) -> str:
    """``2 chunks edited, 1 added, 0 removed, 14 unchanged`` for a version's chunk track."""
    return document_summary(track.plans, track.vanished, first=first)
