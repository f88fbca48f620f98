"""The workspace's table schemas, and every conversion between their rows and ragloom's values.

Tables (every row carries ``tenant_id``; every read is scoped by it):

``documents``
    one row per document version, with the full normalised text.
``chunks`` and ``sentences``
    one row per chunk (sentence) version, with its vector, its naked and contextualised text
    and, for chunks, the text indexed for BM25.
``mentions``
    one row per entity mention of a document version.
``edges``
    the context graph's stored relations (not versioned: they follow the current chunks).

Rows are never rewritten except to close their validity: a version is valid from ``as_of``
until ``superseded_at`` (NULL while current). A tombstone has ``as_of == superseded_at``, so it
is recorded in the history but never matched by a search.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from ragloom.enrich.entities import EntityMention
from ragloom.enrich.prefix import content_hash
from ragloom.enrich.quality import ChunkQuality
from ragloom.graph.model import Edge, GraphNode
from ragloom.parse.timeref import UNRESOLVED
from ragloom.types import SECTION_SEPARATOR, Chunk, Document, ScoredChunk
from ragloom.versions import CREATE, DELETE, UPDATE

TS = pa.timestamp("us", tz="UTC")

_VERSION_FIELDS = [
    pa.field("tenant_id", pa.string(), nullable=False),
    pa.field("document_id", pa.string(), nullable=False),
    pa.field("version_id", pa.string(), nullable=False),
    pa.field("version_sequence", pa.int32(), nullable=False),
    pa.field("previous_version_id", pa.string()),
    pa.field("change_type", pa.string(), nullable=False),
    pa.field("change_summary", pa.string()),
    pa.field("as_of", TS, nullable=False),
    pa.field("superseded_at", TS),
    pa.field("created_at", TS, nullable=False),
    pa.field("updated_at", TS, nullable=False),
    pa.field("content_hash", pa.string(), nullable=False),
    pa.field("lens", pa.string(), nullable=False),
    pa.field("source_path", pa.string(), nullable=False),
    pa.field("title", pa.string()),
    pa.field("doc_type", pa.string()),
    pa.field("document_date", pa.date32()),
]

DOCUMENT_SCHEMA = pa.schema(
    [
        *_VERSION_FIELDS,
        pa.field("media_type", pa.string()),
        pa.field("modified_at", TS),
        pa.field("file_hash", pa.string()),
        pa.field("size_chars", pa.int64()),
        pa.field("chunk_count", pa.int32()),
        pa.field("text", pa.large_string()),
        pa.field("metadata_json", pa.string()),
    ]
)


def chunk_schema(dim: int) -> pa.Schema:
    """The ``chunks`` and ``sentences`` tables, with ``dim``-dimensional vectors."""
    return pa.schema(
        [
            *_VERSION_FIELDS,
            pa.field("chunk_id", pa.string(), nullable=False),
            pa.field("doc_version_id", pa.string(), nullable=False),
            pa.field("text", pa.string()),
            pa.field("prefix", pa.string()),
            pa.field("contextualized_text", pa.string()),
            pa.field("search_text", pa.string()),
            pa.field("start_char", pa.int64()),
            pa.field("end_char", pa.int64()),
            pa.field("token_count", pa.int32()),
            pa.field("chunk_index", pa.int32()),
            pa.field("total_chunks", pa.int32()),
            pa.field("section_path", pa.string()),
            pa.field("section_index", pa.int32()),
            pa.field("chunk_index_in_section", pa.int32()),
            pa.field("strategy", pa.string()),
            pa.field("embedded_text", pa.string()),
            pa.field("key_terms", pa.list_(pa.string())),
            pa.field("time_refs", pa.list_(pa.string())),
            pa.field("entities", pa.list_(pa.string())),
            pa.field("quality_score", pa.float32()),
            pa.field("quality_json", pa.string()),
            pa.field("prev_id", pa.string()),
            pa.field("next_id", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


MENTION_SCHEMA = pa.schema(
    [
        pa.field("tenant_id", pa.string(), nullable=False),
        pa.field("document_id", pa.string(), nullable=False),
        pa.field("doc_version_id", pa.string(), nullable=False),
        pa.field("version_id", pa.string(), nullable=False),
        pa.field("entity_id", pa.string(), nullable=False),
        pa.field("canonical", pa.string()),
        pa.field("type", pa.string()),
        pa.field("text", pa.string()),
        pa.field("start_char", pa.int64()),
        pa.field("end_char", pa.int64()),
        pa.field("confidence", pa.float32()),
        pa.field("source", pa.string()),
        pa.field("lens", pa.string()),
        pa.field("source_path", pa.string()),
        pa.field("as_of", TS, nullable=False),
        pa.field("superseded_at", TS),
    ]
)

EDGE_SCHEMA = pa.schema(
    [
        pa.field("tenant_id", pa.string(), nullable=False),
        pa.field("src", pa.string(), nullable=False),
        pa.field("dst", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("weight", pa.float64()),
        pa.field("attrs", pa.string()),
        pa.field("created_at", TS),
        pa.field("src_document", pa.string()),
        pa.field("dst_document", pa.string()),
        pa.field("src_lens", pa.string()),
        pa.field("dst_lens", pa.string()),
    ]
)

#: Tables whose rows belong to a document version (``doc_version_id``), written before it.
DEPENDENT_TABLES = ("chunks", "sentences", "mentions")
#: Every table of a workspace.
TABLES = ("documents", *DEPENDENT_TABLES, "edges")

#: Chunk columns returned by searches (everything but the bulky ones).
RESULT_COLUMNS = [
    "tenant_id", "document_id", "chunk_id", "version_id", "lens", "source_path", "title", "doc_type",
    "document_date", "as_of", "created_at", "text", "prefix", "start_char", "end_char", "token_count",
    "chunk_index", "total_chunks", "section_path", "section_index", "key_terms", "time_refs", "entities",
    "quality_score",
]
DOC_COLUMNS = [f.name for f in DOCUMENT_SCHEMA if f.name != "text"]
CHUNK_COLUMNS = [name for name in chunk_schema(1).names if name != "vector"]
#: Chunk columns a graph node is made of.
GRAPH_NODE_COLUMNS = ["chunk_id", "document_id", "lens", "chunk_index", "key_terms", "time_refs", "vector"]
#: Chunk columns the graph view shows for a node.
GRAPH_VIEW_COLUMNS = ["chunk_id", "document_id", "lens", "source_path", "chunk_index", "total_chunks", "token_count",
                      "section_path", "text", "key_terms", "time_refs", "created_at"]


def new_id() -> str:
    return uuid.uuid4().hex[:20]


# -- values to rows ---------------------------------------------------------------------------


def version_fields(doc: Document, version: str, previous: Mapping[str, Any] | None, at: datetime, summary: str,
                   digest: str) -> dict[str, Any]:
    """The version columns every document and chunk row shares: a create, or an update of
    ``previous``. When ``previous`` is a deletion's tombstone, the document was ingested again
    after it was deleted: the chain goes on, and the version reads "restored"."""
    restored = previous is not None and previous.get("change_type") == DELETE
    return {
        "tenant_id": doc.tenant,
        "document_id": doc.document_id,
        "version_id": version,
        "version_sequence": (previous["version_sequence"] + 1) if previous else 1,
        "previous_version_id": previous["version_id"] if previous else None,
        "change_type": CREATE if previous is None else UPDATE,
        "change_summary": "restored" if restored else summary,
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


def quality_json(quality: ChunkQuality | None, chunk: Chunk) -> str:
    if quality is not None:
        return json.dumps(quality.to_dict())
    return json.dumps({"issues": [{"kind": i.kind, "severity": i.severity, "description": i.description,
                                   "suggestion": i.suggestion} for i in chunk.issues]})


def chunk_row(doc: Document, chunk: Chunk, vector: np.ndarray, *, version: str, previous: Mapping[str, Any] | None,
              summary: str, at: datetime, embed_kind: str, entities: Sequence[str] = (),
              quality: ChunkQuality | None = None, key_terms: Sequence[str] = (),
              time_refs: Sequence[str] = (), indexed: str | None = None) -> dict[str, Any]:
    """A ``chunks`` (or ``sentences``) row for ``chunk`` of document version ``version``."""
    return {
        **version_fields(doc, new_id(), previous, at, summary, chunk.content_hash),
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
        "quality_json": quality_json(quality, chunk),
        "prev_id": chunk.prev_id,
        "next_id": chunk.next_id,
        "vector": np.asarray(vector, dtype=np.float32),
    }


def tombstone(old: Mapping[str, Any], version: str, at: datetime) -> dict[str, Any]:
    """A row recording that ``old`` vanished at ``at``; valid for no time at all."""
    return {**old, "version_id": new_id(), "version_sequence": old["version_sequence"] + 1,
            "previous_version_id": old["version_id"], "change_type": DELETE, "change_summary": "removed",
            "as_of": at, "superseded_at": at, "updated_at": at, "doc_version_id": version}


def document_tombstone(row: Mapping[str, Any], version: str, at: datetime, *,
                       summary: str = "file removed") -> dict[str, Any]:
    """The document version that records a removal (``summary``: why). It keeps no text and no
    file hash, so a file ingested again is never taken for unchanged: it is restored."""
    return {**row, "version_id": version, "version_sequence": row["version_sequence"] + 1,
            "previous_version_id": row["version_id"], "change_type": DELETE, "change_summary": summary,
            "as_of": at, "superseded_at": at, "updated_at": at, "text": "", "chunk_count": 0, "file_hash": ""}


def document_row(doc: Document, version: str, previous: Mapping[str, Any] | None, at: datetime, chunks: int,
                 summary: str) -> dict[str, Any]:
    return {
        **version_fields(doc, version, previous, at, summary, content_hash(doc.text)),
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


def edge_rows(tenant: str, edges: Sequence[Edge], nodes: Mapping[str, Mapping[str, Any]], at: datetime) -> list[dict[str, Any]]:
    """Rows for the edges table; each carries both ends' document and lens for scoped deletes."""
    rows = []
    for e in edges:
        a, b = nodes[e.src], nodes[e.dst]
        rows.append({"tenant_id": tenant, "src": e.src, "dst": e.dst, "type": e.type, "weight": e.weight,
                     "attrs": json.dumps(dict(e.attrs), ensure_ascii=False), "created_at": at,
                     "src_document": a["document_id"], "dst_document": b["document_id"],
                     "src_lens": a["lens"], "dst_lens": b["lens"]})
    return rows


# -- rows to values ---------------------------------------------------------------------------


def row_vector(row: Mapping[str, Any]) -> np.ndarray:
    return np.asarray(row["vector"], dtype=np.float32)


def row_embedded_text(row: Mapping[str, Any]) -> str:
    """The text a stored row's vector was computed from."""
    if row.get("embedded_text") == "naked":
        return str(row.get("text") or "")
    return (row.get("prefix") or "") + (row.get("text") or "")


def to_scored(row: Mapping[str, Any], score: float, retriever: str, *, scores: Mapping[str, float] | None = None,
              via: Mapping[str, Any] | None = None) -> ScoredChunk:
    """A search result from a ``chunks`` (or ``sentences``) row."""
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


def document_from_row(row: Mapping[str, Any], *, doc_type: str) -> Document:
    """A stored document version (its type decided by the caller, under the current rules)."""
    doc_date = row.get("document_date")
    return Document(
        text=row["text"] or "", source_path=row["source_path"], title=row.get("title") or "",
        lens=row["lens"], tenant=row["tenant_id"], media_type=row.get("media_type") or "",
        modified_at=row.get("modified_at") or row["as_of"], document_id=row["document_id"],
        file_hash=row.get("file_hash") or "", doc_type=doc_type,
        document_date=doc_date if isinstance(doc_date, date) else None, metadata=document_metadata(row),
    )


def document_metadata(row: Mapping[str, Any]) -> dict[str, str]:
    data: dict[str, str] = json.loads(row.get("metadata_json") or "{}")
    return data


def graph_node(row: Mapping[str, Any]) -> GraphNode:
    """A chunk as the graph builder sees it (resolved periods only)."""
    periods = tuple(t for t in (row.get("time_refs") or ()) if not t.endswith(UNRESOLVED))
    return GraphNode(row["chunk_id"], row["document_id"], row["lens"], int(row["chunk_index"]),
                     tuple(row.get("key_terms") or ()), periods, row.get("vector"))
