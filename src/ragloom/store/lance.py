"""The LanceDB store: the only module that imports lancedb.

Tables (every row carries ``tenant_id``; every read is scoped by it):

``documents``
    one row per document version, with the full normalised text.
``chunks``
    one row per chunk version, with its vector, its naked and contextualised text and a
    full-text index for BM25.

Rows are never rewritten except to close their validity: a version is valid from ``as_of``
until ``superseded_at`` (NULL while current). A tombstone has ``as_of == superseded_at``, so it
is recorded in the history but never matched by a search. A document version's rows are
written before the document row itself, and :meth:`LanceStore.repair` removes rows whose
document row never landed, so a crash mid-write leaves the store as it was.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ragloom.errors import MissingExtraError, StoreError
from ragloom.store.filters import scope, sql_in, sql_str, sql_time

TS = pa.timestamp("us", tz="UTC")
#: Each write adds a fragment; compacting them costs more than it saves until there are this many.
SMALL_FRAGMENTS_BEFORE_COMPACTION = 16
UNINDEXED_ROWS_BEFORE_INDEXING = 5000

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
#: Edge types recomputed per chunk, per document and per lens on an incremental update.
_PER_CHUNK = ("SIMILAR_TO", "TOPIC_OVERLAP", "TEMPORAL_OVERLAP")
_PER_DOCUMENT = ("SEQUENTIAL", "SAME_SOURCE")


#: Characters of document text :meth:`LanceStore.document_texts` keeps in memory.
TEXT_MEMO_CHARS = 64_000_000

#: Chunk columns returned by searches (everything but the bulky ones).
RESULT_COLUMNS = [
    "tenant_id", "document_id", "chunk_id", "version_id", "lens", "source_path", "title", "doc_type",
    "document_date", "as_of", "created_at", "text", "prefix", "start_char", "end_char", "token_count",
    "chunk_index", "total_chunks", "section_path", "section_index", "key_terms", "time_refs", "entities",
    "quality_score",
]
_DOC_COLUMNS = [f.name for f in DOCUMENT_SCHEMA if f.name != "text"]
_CHUNK_COLUMNS = [name for name in chunk_schema(1).names if name != "vector"]


def _lancedb():
    # Lance logs routine events (a table being created, scoring columns) as warnings on stderr.
    os.environ.setdefault("LANCE_LOG", "error")
    try:
        import lancedb
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingExtraError("lancedb", "core", "the workspace store") from exc
    return lancedb


class LanceStore:
    """Embedded LanceDB tables in ``<workspace>/lancedb``."""

    def __init__(self, path: str | Path, *, fts_column: str = "search_text") -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.fts_column = fts_column
        self._db = _lancedb().connect(str(self.path))
        self._tables: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._memo: dict[Hashable, Any] = {}
        self._memo_chars = 0
        self._generation = 0  # counts forget() calls: a read older than the last write is not kept

    # -- derived data kept in memory ---------------------------------------------------------

    def memo(self, key: Hashable, load: Callable[[], Any]) -> Any:  # noqa: ANN401
        """``load()``, computed once and kept until the next write through this store.

        For derived data a query would otherwise read again from the tables every time (the
        sentence index's arrays, the context graph). Writes by other processes are not seen
        by an open store anyway (LanceDB's default read consistency), so a write here is the
        only thing that can make a kept value stale.
        """
        with self._lock:
            if key not in self._memo:
                self._memo[key] = load()
            return self._memo[key]

    def forget(self) -> None:
        """Drop everything :meth:`memo` and :meth:`document_texts` keep (every write does)."""
        with self._lock:
            self._memo.clear()
            self._memo_chars = 0
            self._generation += 1

    # -- tables ------------------------------------------------------------------------------

    def _table(self, name: str, schema: pa.Schema | None = None):  # noqa: ANN202
        with self._lock:
            if name in self._tables:
                return self._tables[name]
            try:
                table = self._db.open_table(name)
            except ValueError:  # "Table 'x' was not found"
                if schema is None:
                    return None
                table = self._db.create_table(name, schema=schema)
            self._tables[name] = table
            return table

    def has_table(self, name: str) -> bool:
        return self._table(name) is not None

    @property
    def dim(self) -> int | None:
        table = self._table("chunks")
        if table is None:
            return None
        return table.schema.field("vector").type.list_size

    def _documents(self):  # noqa: ANN202
        return self._table("documents", DOCUMENT_SCHEMA)

    def _chunks(self, dim: int | None = None, name: str = "chunks"):  # noqa: ANN202
        table = self._table(name, chunk_schema(dim) if dim else None)
        if table is not None and dim and table.schema.field("vector").type.list_size != dim:
            raise StoreError(
                f"the workspace at {self.path.parent} holds {table.schema.field('vector').type.list_size}-dimensional "
                f"vectors but the embedder makes {dim}-dimensional ones; run 'ragloom reindex' or use another workspace"
            )
        return table

    @staticmethod
    def _rows(query, limit: int | None = None) -> list[dict[str, Any]]:  # noqa: ANN001
        return query.limit(limit).to_arrow().to_pylist()

    def _select(self, table, where: str, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:  # noqa: ANN001
        if table is None:
            return []
        query = table.search().where(where)
        if columns is not None:
            query = query.select(list(columns))
        return self._rows(query, None)

    # -- writes ------------------------------------------------------------------------------

    def write(
        self,
        *,
        rows: Mapping[str, Sequence[Mapping[str, Any]]],
        close: Mapping[str, Iterable[str]] | None = None,
        close_mentions_of: Iterable[str] = (),
        at: datetime,
        dim: int,
    ) -> None:
        """Add new versions and close the ones they replace, in an order a crash cannot hurt.

        1. rows of the dependent tables (chunks, sentences, mentions) are added;
        2. the versions they replace are closed (``close`` holds version ids per table;
           ``close_mentions_of`` the document versions whose mentions end);
        3. document rows are added: the commit point of each document version;
        4. the replaced document versions are closed.

        :meth:`repair` undoes a write interrupted before step 3 and finishes one interrupted
        before step 4.
        """
        close = close or {}
        stamp = sql_time(at)
        with self._lock:
            self.forget()
            for name in DEPENDENT_TABLES:
                if rows.get(name):
                    if name == "mentions":
                        table, schema = self._table(name, MENTION_SCHEMA), MENTION_SCHEMA
                    else:
                        table, schema = self._chunks(dim, name), chunk_schema(dim)
                    table.add(pa.Table.from_pylist(list(rows[name]), schema=schema))
                    if name == "chunks":
                        self._ensure_fts(table)
            for name in ("chunks", "sentences"):
                self._close(name, "version_id", close.get(name, ()), stamp)
            self._close("mentions", "doc_version_id", close_mentions_of, stamp)
            if rows.get("documents"):
                self._documents().add(pa.Table.from_pylist(list(rows["documents"]), schema=DOCUMENT_SCHEMA))
            self._close("documents", "version_id", close.get("documents", ()), stamp)

    def _close(self, name: str, column: str, ids: Iterable[str], stamp: str) -> None:
        ids = list(ids)
        table = self._table(name) if ids else None
        if table is None:
            return
        for lo in range(0, len(ids), 2000):
            where = sql_in(column, ids[lo : lo + 2000]) + " AND superseded_at IS NULL"
            table.update(where=where, values_sql={"superseded_at": stamp})

    def _ensure_fts(self, table) -> None:  # noqa: ANN001
        if any(getattr(ix, "index_type", "") == "FTS" for ix in table.list_indices()):
            return
        from lancedb.index import FTS

        table.create_index(
            self.fts_column,
            config=FTS(with_position=False, stem=True, remove_stop_words=True, lower_case=True, ascii_folding=True),
            replace=True,
        )

    def optimize(self, *, force: bool = False) -> bool:
        """Fold new rows into the indexes and compact small fragments, when there are enough of
        them to matter (searches cover unindexed rows anyway); returns whether it ran."""
        ran = False
        with self._lock:
            for name in ("documents", *DEPENDENT_TABLES, "edges"):
                table = self._table(name)
                if table is None:
                    continue
                small = table.stats()["fragment_stats"]["num_small_fragments"]
                unindexed = sum(table.index_stats(ix.name).num_unindexed_rows for ix in table.list_indices())
                if force or small >= SMALL_FRAGMENTS_BEFORE_COMPACTION or unindexed >= UNINDEXED_ROWS_BEFORE_INDEXING:
                    table.optimize()
                    ran = True
        return ran

    def repair(self) -> int:
        """Bring the store back to a consistent state after an interrupted :meth:`write`.

        Rows whose document version never landed are removed, and the rows that write had
        already closed are opened again; a document left with two current versions keeps the
        newer. Returns the number of document versions repaired.
        """
        self.forget()
        docs = self._table("documents")
        known = {r["version_id"] for r in self._select(docs, "TRUE", ["version_id"])} if docs is not None else set()
        orphans: dict[str, tuple[str, datetime]] = {}
        for name in DEPENDENT_TABLES:
            for r in self._select(self._table(name), "TRUE", ["doc_version_id", "document_id", "as_of"]):
                if r["doc_version_id"] not in known:
                    orphans[r["doc_version_id"]] = (r["document_id"], r["as_of"])
        for document, moment in orphans.values():
            where = f"document_id = {sql_str(document)} AND superseded_at = {sql_time(moment)}"
            for name in DEPENDENT_TABLES:
                table = self._table(name)
                if table is not None:
                    table.update(where=where + " AND " + sql_in("doc_version_id", known or {""}),
                                 values_sql={"superseded_at": "NULL"})
        if orphans:
            for name in DEPENDENT_TABLES:
                table = self._table(name)
                if table is not None:
                    table.delete(sql_in("doc_version_id", orphans))
        current: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in self._select(docs, "superseded_at IS NULL", ["tenant_id", "document_id", "version_id", "as_of",
                                                                "version_sequence"]):
            current.setdefault((r["tenant_id"], r["document_id"]), []).append(r)
        doubled = [sorted(v, key=lambda r: r["version_sequence"]) for v in current.values() if len(v) > 1]
        for versions in doubled:
            newest = versions[-1]
            self._close("documents", "version_id", [v["version_id"] for v in versions[:-1]], sql_time(newest["as_of"]))
        return len(orphans) + len(doubled)

    def clear(self, tenant: str, *, lens: str | None = None) -> int:
        """Delete every row of ``tenant`` (only those of ``lens`` if given); returns documents removed."""
        where = f"tenant_id = {sql_str(tenant)}" + (f" AND lens = {sql_str(lens)}" if lens is not None else "")
        docs = self._documents()
        removed = len({r["document_id"] for r in self._select(docs, where, ["document_id"])})
        with self._lock:
            self.forget()
            docs.delete(where)
            for name in DEPENDENT_TABLES:
                table = self._table(name)
                if table is not None:
                    table.delete(where)
            edges = self._table("edges")
            if edges is not None:
                scope_edges = f"tenant_id = {sql_str(tenant)}"
                if lens is not None:
                    scope_edges += f" AND (src_lens = {sql_str(lens)} OR dst_lens = {sql_str(lens)})"
                edges.delete(scope_edges)
        return removed

    def drop_derived(self) -> None:
        """Remove every table but documents (reindex rebuilds them from the documents table)."""
        with self._lock:
            self.forget()
            for name in (*DEPENDENT_TABLES, "edges"):
                if self._table(name) is not None:
                    self._db.drop_table(name)
                self._tables.pop(name, None)

    # -- the context graph's edges ---------------------------------------------------------------

    def has_edges(self, tenant: str) -> bool:
        table = self._table("edges")
        return table is not None and table.count_rows(f"tenant_id = {sql_str(tenant)}") > 0

    def edges(self, tenant: str) -> list[dict[str, Any]]:
        return self._select(self._table("edges"), f"tenant_id = {sql_str(tenant)}")

    def edges_among(self, tenant: str, chunk_ids: Iterable[str], *,
                    skip_types: Iterable[str] = ()) -> list[tuple[str, str, str, float]]:
        """``(src, dst, type, weight)`` for the stored edges with both ends in ``chunk_ids``.

        Reads only the rows it needs, so relating a query's candidates costs milliseconds
        whatever the graph's size; ``skip_types`` leaves out edge types (the clique ones, say).
        """
        ids = set(chunk_ids)
        table = self._table("edges")
        if table is None or not ids:
            return []
        where = f"tenant_id = {sql_str(tenant)} AND {sql_in('src', ids)} AND {sql_in('dst', ids)}"
        skip = set(skip_types)
        if skip:
            where += f" AND NOT {sql_in('type', skip)}"
        rows = self._select(table, where, columns=["src", "dst", "type", "weight"])
        return [(r["src"], r["dst"], r["type"], float(r["weight"])) for r in rows]

    def replace_edges(self, tenant: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """All of a tenant's edges, replaced (a full graph build)."""
        with self._lock:
            self.forget()
            table = self._table("edges", EDGE_SCHEMA)
            table.delete(f"tenant_id = {sql_str(tenant)}")
            if rows:
                table.add(pa.Table.from_pylist(list(rows), schema=EDGE_SCHEMA))

    def update_edges(self, tenant: str, *, chunks: Iterable[str], documents: Iterable[str], lenses: Iterable[str],
                     rows: Sequence[Mapping[str, Any]]) -> None:
        """Drop the edges an incremental update recomputes, then add its new ones."""
        chunks, documents, lenses = set(chunks), set(documents), set(lenses)
        with self._lock:
            self.forget()
            table = self._table("edges", EDGE_SCHEMA)
            parts = []
            if chunks:
                ids = sql_in("src", chunks) + " OR " + sql_in("dst", chunks)
                parts.append(f"({sql_in('type', _PER_CHUNK)} AND ({ids}))")
            if documents:
                parts.append(f"({sql_in('type', _PER_DOCUMENT)} AND {sql_in('src_document', documents)})")
            if lenses:
                parts.append(f"(type = 'SAME_LENS' AND {sql_in('src_lens', lenses)})")
            if parts:
                table.delete(f"tenant_id = {sql_str(tenant)} AND ({' OR '.join(parts)})")
            if rows:
                table.add(pa.Table.from_pylist(list(rows), schema=EDGE_SCHEMA))

    # -- reads -------------------------------------------------------------------------------

    def documents(self, tenant: str, *, lenses: Iterable[str] | None = None, as_of: datetime | None = None,
                  with_text: bool = False) -> list[dict[str, Any]]:
        columns = None if with_text else _DOC_COLUMNS
        rows = self._select(self._documents(), scope(tenant, lenses=lenses, as_of=as_of), columns)
        return sorted(rows, key=lambda r: (r["lens"], r["source_path"]))

    def document(self, tenant: str, document_id: str, *, as_of: datetime | None = None,
                 with_text: bool = True) -> dict[str, Any] | None:
        where = scope(tenant, as_of=as_of, extra=[f"document_id = {sql_str(document_id)}"])
        rows = self._select(self._documents(), where, None if with_text else _DOC_COLUMNS)
        return max(rows, key=lambda r: r["version_sequence"]) if rows else None

    def document_texts(self, tenant: str, document_ids: Iterable[str], *,
                       as_of: datetime | None = None) -> dict[str, str]:
        """The text of each document (current, or at ``as_of``), read in one query; current
        texts are kept in memory until the next write (at most ``TEXT_MEMO_CHARS`` characters).
        A document that does not exist (then) has no entry."""
        out: dict[str, str] = {}
        missing = []
        with self._lock:
            generation = self._generation
            for doc in set(document_ids):
                key = ("text", tenant, doc)
                if as_of is None and key in self._memo:
                    out[doc] = self._memo[key]
                else:
                    missing.append(doc)
        if not missing:
            return out
        rows = self._select(self._documents(), scope(tenant, as_of=as_of, extra=[sql_in("document_id", missing)]),
                            ["document_id", "version_sequence", "text"])
        for r in sorted(rows, key=lambda r: r["version_sequence"]):  # the latest version wins
            out[r["document_id"]] = r["text"] or ""
        with self._lock:
            if as_of is not None:
                return out
            if generation != self._generation:
                return out  # a write came in while reading: use the texts, keep none
            if self._memo_chars > TEXT_MEMO_CHARS:
                for key in [k for k in self._memo if isinstance(k, tuple) and k[0] == "text"]:
                    del self._memo[key]
                self._memo_chars = 0
            for doc in missing:
                if doc in out:
                    self._memo[("text", tenant, doc)] = out[doc]
                    self._memo_chars += len(out[doc])
        return out

    def lenses(self, tenant: str, *, as_of: datetime | None = None) -> set[str]:
        """The lenses that have chunks for ``tenant`` (at ``as_of``; the current ones are kept in
        memory until the next write, since balanced retrieval asks for them on every query)."""
        def read() -> set[str]:
            return {r["lens"] for r in self._select(self._table("chunks"), scope(tenant, as_of=as_of), ["lens"])}

        return read() if as_of is not None else set(self.memo(("lenses", tenant), read))

    def documents_any(self) -> bool:
        """Whether any tenant has a document row at all."""
        table = self._table("documents")
        return table is not None and table.count_rows() > 0

    def all_document_versions(self) -> list[dict[str, Any]]:
        """Every document row of every tenant, with text (for ``reindex``)."""
        return self._select(self._table("documents"), "TRUE")

    def history(self, tenant: str, document_id: str) -> list[dict[str, Any]]:
        where = f"tenant_id = {sql_str(tenant)} AND document_id = {sql_str(document_id)}"
        return sorted(self._select(self._documents(), where, _DOC_COLUMNS), key=lambda r: r["version_sequence"])

    def chunks(self, tenant: str, *, document_ids: Iterable[str] | None = None, chunk_ids: Iterable[str] | None = None,
               lenses: Iterable[str] | None = None, as_of: datetime | None = None, with_vectors: bool = False,
               columns: Sequence[str] | None = None, entity_ids: Iterable[str] | None = None,
               table: str = "chunks", where: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Rows of ``table`` (``chunks`` or ``sentences``) current at ``as_of``, filtered."""
        extra = list(where)
        if document_ids is not None:
            extra.append(sql_in("document_id", document_ids))
        if chunk_ids is not None:
            extra.append(sql_in("chunk_id", chunk_ids))
        if entity_ids is not None:
            ids = sorted(set(entity_ids))
            extra.append(f"array_has_any(entities, [{', '.join(sql_str(e) for e in ids)}])" if ids else "FALSE")
        cols = list(columns) if columns is not None else None
        if cols is None:
            cols = None if with_vectors else _CHUNK_COLUMNS
        return self._select(self._table(table), scope(tenant, lenses=lenses, as_of=as_of, extra=extra), cols)

    def current_columns(self, tenant: str, columns: Sequence[str], *, table: str = "chunks") -> pa.Table | None:
        """``columns`` of the tenant's current rows of ``table`` as one Arrow table (no per-row
        dicts, so a 100k-row read stays fast), or None when the table does not exist."""
        t = self._table(table)
        if t is None:
            return None
        return t.search().where(scope(tenant)).select(list(columns)).limit(None).to_arrow()

    def mentions(self, tenant: str, *, document_ids: Iterable[str] | None = None, entity_ids: Iterable[str] | None = None,
                 lenses: Iterable[str] | None = None, as_of: datetime | None = None) -> list[dict[str, Any]]:
        extra = []
        if document_ids is not None:
            extra.append(sql_in("document_id", document_ids))
        if entity_ids is not None:
            extra.append(sql_in("entity_id", entity_ids))
        return self._select(self._table("mentions"), scope(tenant, lenses=lenses, as_of=as_of, extra=extra))

    def vector_search(self, tenant: str, vector: np.ndarray, k: int, *, lenses: Iterable[str] | None = None,
                      as_of: datetime | None = None, with_vectors: bool = False,
                      table: str = "chunks") -> list[dict[str, Any]]:
        name = table
        table = self._table(name)
        if table is None:
            return []
        columns = RESULT_COLUMNS + (["prev_id", "next_id"] if name == "sentences" else []) \
            + (["vector"] if with_vectors else []) + ["_distance"]
        query = (
            table.search(np.asarray(vector, dtype=np.float32), vector_column_name="vector")
            .distance_type("cosine")
            .where(scope(tenant, lenses=lenses, as_of=as_of), prefilter=True)
            .select(columns)
        )
        rows = self._rows(query, k)
        for row in rows:
            row["_score"] = 1.0 - float(row.pop("_distance"))
        return rows

    def text_search(self, tenant: str, text: str, k: int, *, lenses: Iterable[str] | None = None,
                    as_of: datetime | None = None, with_vectors: bool = False) -> list[dict[str, Any]]:
        table = self._table("chunks")
        if table is None or not text.strip():
            return []
        from lancedb.query import MatchQuery

        columns = RESULT_COLUMNS + (["vector"] if with_vectors else []) + ["_score"]
        query = (
            table.search(MatchQuery(text, self.fts_column), query_type="fts")
            .where(scope(tenant, lenses=lenses, as_of=as_of), prefilter=True)
            .select(columns)
        )
        return self._rows(query, k)

    def stats(self, tenant: str) -> dict[str, Any]:
        docs = self.documents(tenant)
        chunk_rows = self.chunks(tenant, columns=["lens", "token_count"])
        by_lens: dict[str, dict[str, int]] = {}
        for d in docs:
            by_lens.setdefault(d["lens"], {"documents": 0, "chunks": 0, "tokens": 0})["documents"] += 1
        for c in chunk_rows:
            entry = by_lens.setdefault(c["lens"], {"documents": 0, "chunks": 0, "tokens": 0})
            entry["chunks"] += 1
            entry["tokens"] += int(c["token_count"] or 0)
        versions = self._table("chunks").count_rows() if self._table("chunks") is not None else 0
        return {
            "documents": len(docs),
            "chunks": len(chunk_rows),
            "tokens": sum(e["tokens"] for e in by_lens.values()),
            "chunk_versions_stored": versions,
            "lenses": by_lens,
        }


def vector_matrix(table: pa.Table, column: str = "vector") -> np.ndarray:
    """A fixed-size-list column of an Arrow table as one (rows, dim) float32 array."""
    values = table[column].combine_chunks()
    return values.values.to_numpy(zero_copy_only=False).reshape(len(values), -1).astype(np.float32, copy=False)


