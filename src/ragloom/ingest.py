"""The ingest plan for one document version: which rows to write, which to close, what to embed.

A document yields two tracks of chunk-like rows, the retrieval chunks and the sentence index,
and one list of entity mentions. Each track is matched against the previous version's rows
(:mod:`ragloom.versions`), given final identities and neighbour links, and split into rows
that stay as they are, rows whose vectors can be reused, and rows that need embedding.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from ragloom.enrich.entities import EntityMention
from ragloom.enrich.prefix import content_hash
from ragloom.enrich.quality import ChunkQuality, SizeModel, assess
from ragloom.types import Chunk, Document
from ragloom.versions import (
    CREATE,
    DELETE,
    UPDATE,
    ChunkPlan,
    document_summary,
    plan_versions,
    same_record,
)

CHUNKS, SENTENCES = "chunks", "sentences"


def new_id() -> str:
    return uuid.uuid4().hex[:20]


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


def row_embedded_text(row: Mapping[str, Any]) -> str:
    if row.get("embedded_text") == "naked":
        return row.get("text") or ""
    return (row.get("prefix") or "") + (row.get("text") or "")


def plan_track(kind: str, document_id: str, version: str, new: Sequence[Chunk], old: Sequence[Mapping[str, Any]],
               embedded_text: Callable[[Chunk], str]) -> Track:
    """Match ``new`` to ``old``, settle identities and links, and mark what stays as it is."""
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
    keep = [p.previous is not None and same_record(p.chunk, p.previous) for p in linked]
    return Track(kind, linked, vanished, keep, [embedded_text(p.chunk) for p in linked])


@dataclass
class Prepared:
    """A document read and planned, waiting for its vectors and its write."""

    document: Document
    previous: Mapping[str, Any] | None  # the current document row, if any
    at: datetime
    version: str
    tracks: dict[str, Track]
    mentions: list[EntityMention]
    doc_row_exists: bool = False  # reindex replays versions whose document rows already exist

    def size(self) -> int:
        return sum(len(t.plans) for t in self.tracks.values())


def chunk_entities(chunks: Sequence[Chunk], mentions: Sequence[EntityMention]) -> list[list[str]]:
    """For each chunk, the entity ids of the mentions it contains (repeated per mention)."""
    starts = [m.start for m in mentions]
    out = []
    for c in chunks:
        lo = bisect.bisect_left(starts, c.start)
        hi = bisect.bisect_left(starts, c.end)
        out.append([m.entity_id for m in mentions[lo:hi] if m.end <= c.end])
    return out


def entity_splits(chunk: Chunk, mentions: Sequence[EntityMention]) -> int:
    return sum(1 for m in mentions if m.start < chunk.start < m.end or m.start < chunk.end < m.end)


def chunk_qualities(chunks: Sequence[Chunk], sentence_spans: Sequence[tuple[int, int]], sentence_vectors: np.ndarray,
                    mentions: Sequence[EntityMention], entities: Sequence[Sequence[str]], model: SizeModel,
                    overlap: int) -> list[ChunkQuality]:
    """Quality of every chunk of a document, from its sentences' vectors and its mentions."""
    starts = [s for s, _ in sentence_spans]
    ends = sorted(e for _, e in sentence_spans)
    per_section = Counter(c.section_index for c in chunks)
    out = []
    for i, chunk in enumerate(chunks):
        lo = bisect.bisect_left(starts, chunk.start)
        hi = bisect.bisect_right(starts, chunk.end - 1)
        inside = [j for j in range(lo, hi) if sentence_spans[j][1] <= chunk.end]
        vectors = sentence_vectors[inside] if inside else np.zeros((0, 1), dtype=np.float32)
        size = chunk.token_count if model.unit == "tokens" else len(chunk.text)
        nearby = [m for m in mentions if m.start < chunk.end and m.end > chunk.start]
        out.append(assess(chunk, text_size=size, model=model, entities=len(entities[i]),
                          entity_splits=entity_splits(chunk, nearby), vectors=vectors,
                          previous=chunks[i - 1] if i else None, configured_overlap=overlap,
                          sentence_starts=starts, sentence_ends=ends,
                          whole_section=per_section[chunk.section_index] == 1))
    return out


def _version_fields(doc: Document, version: str, previous: Mapping[str, Any] | None, at: datetime, summary: str,
                    digest: str) -> dict[str, Any]:
    """The version columns every document and chunk row shares: a create, or an update of ``previous``."""
    return {
        "tenant_id": doc.tenant,
        "document_id": doc.document_id,
        "version_id": version,
        "version_sequence": (previous["version_sequence"] + 1) if previous else 1,
        "previous_version_id": previous["version_id"] if previous else None,
        "change_type": CREATE if previous is None else UPDATE,
        "change_summary": summary,
        "as_of": at,
        "superseded_at": None,
        "created_at": previous["created_at"] if previous else at,
        "updated_at": at,
        "content_hash": digest,
        "lens": doc.lens,
        "source_path": doc.source_path,
        "title": doc.title,
        "doc_type": doc.doc_type,
        "document_date": doc.document_date,
    }


def chunk_row(doc: Document, chunk: Chunk, vector: np.ndarray, *, version: str, previous: Mapping[str, Any] | None,
              summary: str, at: datetime, embed_kind: str, entities: Sequence[str] = (),
              quality: ChunkQuality | None = None, key_terms: Sequence[str] = (),
              time_refs: Sequence[str] = (), indexed: str | None = None) -> dict[str, Any]:
    issues = quality.issues if quality is not None else chunk.issues
    return {
        **_version_fields(doc, new_id(), previous, at, summary, chunk.content_hash),
        "chunk_id": chunk.chunk_id,
        "doc_version_id": version,
        "text": chunk.text,
        "prefix": chunk.prefix,
        "contextualized_text": chunk.contextualized_text,
        "search_text": indexed if indexed is not None else chunk.contextualized_text,
        "start_char": chunk.start,
        "end_char": chunk.end,
        "token_count": chunk.token_count,
        "chunk_index": chunk.chunk_index,
        "total_chunks": chunk.total_chunks,
        "section_path": chunk.section_path_str,
        "section_index": chunk.section_index,
        "chunk_index_in_section": chunk.chunk_index_in_section,
        "strategy": chunk.strategy,
        "embedded_text": embed_kind,
        "key_terms": list(key_terms),
        "time_refs": list(time_refs),
        "entities": list(entities),
        "quality_score": quality.score if quality is not None else None,
        "quality_json": json.dumps(quality.to_dict() if quality is not None else
                                   {"issues": [{"kind": i.kind, "severity": i.severity, "description": i.description,
                                                "suggestion": i.suggestion} for i in issues]}),
        "prev_id": chunk.prev_id,
        "next_id": chunk.next_id,
        "vector": np.asarray(vector, dtype=np.float32),
    }


def tombstone(old: Mapping[str, Any], version: str, at: datetime) -> dict[str, Any]:
    """A row recording that ``old`` vanished at ``at``; valid for no time at all."""
    return {**old, "version_id": new_id(), "version_sequence": old["version_sequence"] + 1,
            "previous_version_id": old["version_id"], "change_type": DELETE, "change_summary": "removed",
            "as_of": at, "superseded_at": at, "updated_at": at, "doc_version_id": version}


def document_row(doc: Document, version: str, previous: Mapping[str, Any] | None, at: datetime, chunks: int,
                 summary: str) -> dict[str, Any]:
    return {
        **_version_fields(doc, version, previous, at, summary, content_hash(doc.text)),
        "media_type": doc.media_type,
        "modified_at": doc.modified_at,
        "file_hash": doc.file_hash,
        "size_chars": len(doc.text),
        "chunk_count": chunks,
        "text": doc.text,
        "metadata_json": json.dumps(dict(doc.metadata), ensure_ascii=False),
    }


def mention_rows(doc: Document, version: str, mentions: Sequence[EntityMention], at: datetime) -> list[dict[str, Any]]:
    return [
        {
            "tenant_id": doc.tenant, "document_id": doc.document_id, "doc_version_id": version, "version_id": new_id(),
            "entity_id": m.entity_id, "canonical": m.canonical, "type": m.type, "text": m.text,
            "start_char": m.start, "end_char": m.end, "confidence": m.confidence, "source": m.source,
            "lens": doc.lens, "source_path": doc.source_path, "as_of": at, "superseded_at": None,
        }
        for m in mentions
    ]


def track_rows(prepared: Prepared, kind: str, *, embed_kind: str,
               entities: Sequence[Sequence[str]] | None = None, qualities: Sequence[ChunkQuality] | None = None,
               key_terms: Sequence[Sequence[str]] | None = None, time_refs: Sequence[Sequence[str]] | None = None,
               indexed: Callable[[str], str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(rows to add, version ids to close) for one track of a prepared document."""
    track = prepared.tracks[kind]
    rows: list[dict[str, Any]] = []
    closes: list[str] = []
    for i, plan in enumerate(track.plans):
        if track.keep[i]:
            continue
        if plan.previous is not None:
            closes.append(plan.previous["version_id"])
        rows.append(chunk_row(
            prepared.document, plan.chunk, track.vectors[i], version=prepared.version, previous=plan.previous,
            summary=plan.summary, at=prepared.at, embed_kind=embed_kind,
            entities=entities[i] if entities is not None else (),
            quality=qualities[i] if qualities is not None else None,
            key_terms=key_terms[i] if key_terms is not None else (),
            time_refs=time_refs[i] if time_refs is not None else (),
            indexed=indexed(track.embedded[i]) if indexed is not None else None,
        ))
    for old in track.vanished:
        closes.append(old["version_id"])
        rows.append(tombstone(old, prepared.version, prepared.at))
    return rows, closes


def summary_of(prepared: Prepared) -> str:
    track = prepared.tracks[CHUNKS]
    return document_summary(track.plans, track.vanished, first=prepared.previous is None)
