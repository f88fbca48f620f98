"""Reads of documents, chunks and mentions at the view's commit, and the vector and BM25 searches."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from ragloom.store.connection import StoreCore
from ragloom.store.derived import DerivedFiles
from ragloom.store.filters import DateRange, scope, sql_in, sql_str
from ragloom.store.indexes import vector_index
from ragloom.store.local import STATE_DIR
from ragloom.store.schema import CHUNK_COLUMNS, DOC_COLUMNS, RESULT_COLUMNS


def vector_matrix(table: pa.Table, column: str = "vector") -> np.ndarray:
    """A fixed-size-list column of an Arrow table as one (rows, dim) float32 array."""
    values = table[column].combine_chunks()
    result: np.ndarray = values.values.to_numpy(zero_copy_only=False).reshape(len(values), -1).astype(np.float32, copy=False)
    return result


def runs(keys: np.ndarray) -> list[tuple[Any, int, int]]:
    """``(key, start, end)`` of each run of equal values in ``keys`` (sorted, so one run per key)."""
    if len(keys) == 0:
        return []
    cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    return [(keys[lo], int(lo), int(hi)) for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(keys)], strict=True)]


class Reads(StoreCore):
    """Rows current now (or at ``as_of``) as the view of this operation sees them."""

    def documents(self, tenant: str, *, lenses: Iterable[str] | None = None, as_of: datetime | None = None,
                  with_text: bool = False) -> list[dict[str, Any]]:
        columns = None if with_text else DOC_COLUMNS
        rows = self._select(self._table("documents"), scope(tenant, lenses=lenses, as_of=as_of), columns)
        return sorted(rows, key=lambda r: (r["lens"], r["source_path"]))

    def document(self, tenant: str, document_id: str, *, as_of: datetime | None = None,
                 with_text: bool = True) -> dict[str, Any] | None:
        where = scope(tenant, as_of=as_of, extra=[f"document_id = {sql_str(document_id)}"])
        rows = self._select(self._table("documents"), where, None if with_text else DOC_COLUMNS)
        return max(rows, key=lambda r: r["version_sequence"]) if rows else None

    def document_texts(self, tenant: str, document_ids: Iterable[str], *,
                       as_of: datetime | None = None) -> dict[str, str]:
        """The text of each document (current, or at ``as_of``), read in one query; current
        texts are kept in memory with the commit's view (at most ``TEXT_MEMO_CHARS`` characters).
        A document that does not exist (then) has no entry."""
        ids = set(document_ids)
        with self.reading() as view:
            kept = as_of is None and not self._in_transaction()
            out, missing = view.texts(tenant, ids) if kept else ({}, list(ids))
            if not missing:
                return out
            read: dict[str, str] = {}
            rows = self._select(self._table("documents"),
                                scope(tenant, as_of=as_of, extra=[sql_in("document_id", missing)]),
                                ["document_id", "version_sequence", "text"])
            for r in sorted(rows, key=lambda r: r["version_sequence"]):  # the latest version wins
                read[r["document_id"]] = r["text"] or ""
            if kept:
                view.keep_texts(tenant, read)
        return {**out, **read}

    def lenses(self, tenant: str, *, as_of: datetime | None = None) -> set[str]:
        """The lenses that have chunks for ``tenant`` (at ``as_of``; the current ones are kept in
        memory for the commit, since balanced retrieval asks for them on every query)."""
        def read() -> set[str]:
            return {r["lens"] for r in self._select(self._table("chunks"), scope(tenant, as_of=as_of), ["lens"])}

        return read() if as_of is not None else set(self.memo(("lenses", tenant), read))

    def lens_order(self, tenant: str) -> list[str]:
        """The tenant's lenses that have chunks, in the order they were first ingested (every
        version counts: a lens keeps its place when its documents are updated)."""
        def read() -> list[str]:
            present = self.lenses(tenant)
            first: dict[str, Any] = {}
            for r in self._select(self._table("documents"), f"tenant_id = {sql_str(tenant)}", ["lens", "created_at"]):
                if r["lens"] in present and (r["lens"] not in first or r["created_at"] < first[r["lens"]]):
                    first[r["lens"]] = r["created_at"]
            return sorted(present, key=lambda lens: (first.get(lens) is None, first.get(lens) or 0, lens))

        return list(self.memo(("lens order", tenant), read))

    def tombstones(self, tenant: str) -> dict[str, Mapping[str, Any]]:
        """Per document id, its latest deletion row (whether or not it was restored since)."""
        rows = self._select(self._table("documents"), f"tenant_id = {sql_str(tenant)} AND change_type = 'delete'",
                            DOC_COLUMNS)
        latest: dict[str, Mapping[str, Any]] = {}
        for row in sorted(rows, key=lambda r: r["version_sequence"]):
            latest[row["document_id"]] = row
        return latest

    def tenants(self) -> set[str]:
        """Every tenant with a document row."""
        return {r["tenant_id"] for r in self._select(self._table("documents"), "TRUE", ["tenant_id"])}

    def documents_any(self) -> bool:
        """Whether any tenant has a document row at all."""
        table = self._table("documents")
        return table is not None and int(table.count_rows()) > 0

    def all_document_versions(self) -> list[dict[str, Any]]:
        """Every document row of every tenant, with text (for ``reindex``)."""
        return self._select(self._table("documents"), "TRUE")

    def history(self, tenant: str, document_id: str) -> list[dict[str, Any]]:
        where = f"tenant_id = {sql_str(tenant)} AND document_id = {sql_str(document_id)}"
        return sorted(self._select(self._table("documents"), where, DOC_COLUMNS), key=lambda r: r["version_sequence"])

    def chunks(self, tenant: str, *, document_ids: Iterable[str] | None = None, chunk_ids: Iterable[str] | None = None,
               lenses: Iterable[str] | None = None, as_of: datetime | None = None, with_vectors: bool = False,
               columns: Sequence[str] | None = None, entity_ids: Iterable[str] | None = None,
               table: str = "chunks", where: Iterable[str] = (), dated: DateRange | None = None) -> list[dict[str, Any]]:
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
            cols = None if with_vectors else CHUNK_COLUMNS
        return self._select(self._table(table), scope(tenant, lenses=lenses, as_of=as_of, dated=dated, extra=extra),
                            cols)

    def chunks_holding(self, tenant: str, spans: Iterable[tuple[str, int, int]], *, columns: Sequence[str],
                       lenses: Iterable[str] | None = None, as_of: datetime | None = None,
                       dated: DateRange | None = None) -> list[dict[str, Any]]:
        """The chunks that hold any of ``spans`` (``(document_id, start, end)``: a chunk starts at
        or before ``start`` and ends at or after ``end``), each once.

        A current read without a date range finds them in a per-commit map of where each chunk
        lies and takes them by row id: 2-3 ms at 100,000 chunks, where the filtered read it
        replaces took 14-21 ms (the sentence lift makes one per vector search). At ``as_of``,
        over a date range or inside a write transaction it is that filtered read."""
        spans = list(spans)
        if not spans:
            return []
        if as_of is not None or dated is not None or self._in_transaction():
            clauses = [f"(document_id = {sql_str(doc)} AND start_char <= {int(start)} AND end_char >= {int(end)})"
                       for doc, start, end in spans]
            return self.chunks(tenant, lenses=lenses, as_of=as_of, dated=dated, columns=columns,
                               where=["(" + " OR ".join(clauses) + ")"])
        where = self.memo(("chunk spans", tenant), lambda: self._chunk_spans(tenant))
        found: set[int] = set()
        for doc, start, end in spans:
            if doc in where:
                starts, ends, row_ids = where[doc]
                found.update(int(i) for i in row_ids[(starts <= start) & (ends >= end)])
        table = self._table("chunks")
        if not found or table is None:
            return []
        rows: list[dict[str, Any]] = table.take_row_ids(sorted(found)).select(list(columns)).to_list()
        allowed = set(lenses) if lenses is not None else None
        return [r for r in rows if allowed is None or r["lens"] in allowed]

    def _chunk_spans(self, tenant: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Where each current chunk of ``tenant`` lies: per document, (starts, ends, row ids)."""
        read = self.current_columns(tenant, ["document_id", "start_char", "end_char"], row_ids=True)
        if read is None:
            return {}
        docs = np.asarray(read["document_id"].to_pylist(), dtype=object)
        starts, ends = read["start_char"].to_numpy(), read["end_char"].to_numpy()
        row_ids = read["_rowid"].to_numpy()
        order = np.argsort(docs, kind="stable")
        docs, starts, ends, row_ids = docs[order], starts[order], ends[order], row_ids[order]
        return {doc: (starts[lo:hi], ends[lo:hi], row_ids[lo:hi]) for doc, lo, hi in runs(docs)}

    def chunk_ids_starting(self, tenant: str, prefix: str, *, as_of: datetime | None = None) -> list[str]:
        """Ids of the tenant's chunks (current at ``as_of``) that start with ``prefix``, a short id."""
        if not prefix or any(c in prefix for c in "%_\\"):
            return []  # LIKE's wildcards never come from the user
        rows = self.chunks(tenant, as_of=as_of, columns=["chunk_id"], where=[f"chunk_id LIKE {sql_str(prefix + '%')}"])
        return [r["chunk_id"] for r in rows]

    def _current(self, tenant: str, columns: Sequence[str], table: str, row_ids: bool) -> Any:  # noqa: ANN401
        """The query for ``columns`` of the tenant's current rows of ``table`` (``_rowid`` too
        with ``row_ids``), or None when the table does not exist."""
        t = self._table(table)
        return None if t is None else t.search().where(scope(tenant)).with_row_id(row_ids).select(list(columns)).limit(None)

    def current_columns(self, tenant: str, columns: Sequence[str], *, table: str = "chunks",
                        row_ids: bool = False) -> pa.Table | None:
        """``columns`` of the tenant's current rows of ``table`` as one Arrow table (no per-row
        dicts, so a 100k-row read stays fast), or None when the table does not exist.
        ``row_ids`` adds ``_rowid``."""
        query = self._current(tenant, columns, table, row_ids)
        return None if query is None else query.to_arrow()

    def current_batches(self, tenant: str, columns: Sequence[str], *, table: str = "chunks",
                        batch_size: int = 65_536, row_ids: bool = False) -> Iterator[pa.RecordBatch]:
        """Like :meth:`current_columns`, a batch at a time: a reader that turns each batch into
        something smaller (the sentence index's half-precision vectors) never holds the whole
        read (1.5 GB of vectors at a million sentences)."""
        query = self._current(tenant, columns, table, row_ids)
        if query is not None:
            yield from query.to_batches(batch_size)

    def derived_files(self, tenant: str, name: str, *, table: str) -> DerivedFiles | None:
        """Where arrays derived under ``name`` from the tenant's rows of ``table``, as this
        operation reads it, are kept as files (:mod:`ragloom.store.derived`); None on object
        storage, inside a write transaction, or when the table does not exist."""
        t = self._table(table)
        if self.remote or self._in_transaction() or t is None:
            return None
        version = int(t.version)
        try:
            made = next((v["timestamp"] for v in t.list_versions() if int(v["version"]) == version), None)
        except (OSError, RuntimeError, ValueError):  # an old version's manifest cleaned up meanwhile
            return None  # this read keeps its arrays in memory
        if made is None:
            return None
        stamp = int(made.timestamp() * 1_000_000)  # a table made again restarts its versions
        who = hashlib.sha256(tenant.encode()).hexdigest()[:12]
        return DerivedFiles(self.path / STATE_DIR / "derived", f"{name}-{who}", f"{version}-{stamp}")

    def chunk_counts(self, tenant: str) -> dict[str, int]:
        """Current chunks per document id (to check that a document is whole)."""
        table = self.current_columns(tenant, ["document_id"])
        if table is None:
            return {}
        counts = table.group_by("document_id").aggregate([("document_id", "count")])
        return dict(zip(counts["document_id"].to_pylist(), counts["document_id_count"].to_pylist(), strict=True))

    def mentions(self, tenant: str, *, document_ids: Iterable[str] | None = None, entity_ids: Iterable[str] | None = None,
                 lenses: Iterable[str] | None = None, as_of: datetime | None = None) -> list[dict[str, Any]]:
        extra = []
        if document_ids is not None:
            extra.append(sql_in("document_id", document_ids))
        if entity_ids is not None:
            extra.append(sql_in("entity_id", entity_ids))
        return self._select(self._table("mentions"), scope(tenant, lenses=lenses, as_of=as_of, extra=extra))

    # -- searches ------------------------------------------------------------------------------

    def _indexed(self, name: str, table: Any) -> bool:  # noqa: ANN401
        """Whether ``table`` has an ANN index (asked once per commit)."""
        found: bool = self.memo(("ann", name), lambda: vector_index(table) is not None)
        return found

    def vector_search(self, tenant: str, vector: np.ndarray, k: int, *, lenses: Iterable[str] | None = None,
                      as_of: datetime | None = None, with_vectors: bool = False,
                      table: str = "chunks", dated: DateRange | None = None,
                      columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The ``k`` rows nearest ``vector`` (``_score``: their cosine), with ``columns`` (by default
        what a result shows; reading a sentence's text and neighbours costs more than the search
        itself, 32 against 14 ms at a million sentences, so the sentence lift reads only where
        each hit lies)."""
        handle = self._table(table)
        if handle is None:
            return []
        columns = (list(columns) if columns is not None
                   else RESULT_COLUMNS + (["prev_id", "next_id"] if table == "sentences" else [])) \
            + (["vector"] if with_vectors else []) + ["_distance"]
        indexed = self._indexed(table, handle)

        def search(prefilter: bool, limit: int) -> list[dict[str, Any]]:
            query = (
                handle.search(np.asarray(vector, dtype=np.float32), vector_column_name="vector")
                .distance_type("cosine")
                .where(scope(tenant, lenses=lenses, as_of=as_of, dated=dated), prefilter=prefilter)
                .select(columns)
            )
            if indexed:
                query = query.nprobes(self.ann.nprobes)
                if self.ann.refine_factor:
                    query = query.refine_factor(self.ann.refine_factor)
            return self._rows(query, limit)[:k]

        # Through an ANN index, filtering every row first costs more than the search (47 of
        # 64 ms over a million sentences): a current query without lenses, whose filter keeps
        # nearly every row, filters the nearest 2k instead, and filters first only when that
        # leaves fewer than k (many superseded versions, another tenant's rows).
        try:
            rows = search(False, 2 * k) if indexed and lenses is None and as_of is None and dated is None else []
            if len(rows) < k:
                rows = search(True, k)
        except ValueError:
            self._check_dim(handle, int(np.asarray(vector).shape[-1]))  # a query of another model: say so
            raise
        for row in rows:
            row["_score"] = 1.0 - float(row.pop("_distance"))
        return rows

    def text_search(self, tenant: str, text: str, k: int, *, lenses: Iterable[str] | None = None,
                    as_of: datetime | None = None, with_vectors: bool = False,
                    dated: DateRange | None = None) -> list[dict[str, Any]]:
        table = self._table("chunks")
        if table is None or not text.strip():
            return []
        from lancedb.query import FullTextOperator, MatchQuery

        # Every parameter spelled out (lancedb's defaults): exact terms, any of them.
        match = MatchQuery(text, self.fts_column, boost=1.0, fuzziness=0, max_expansions=50,
                           operator=FullTextOperator.OR, prefix_length=0, document_granularity=None)
        columns = RESULT_COLUMNS + (["vector"] if with_vectors else []) + ["_score"]
        query = (
            table.search(match, query_type="fts")
            .where(scope(tenant, lenses=lenses, as_of=as_of, dated=dated), prefilter=True)
            .select(columns)
        )
        return self._rows(query, k)
