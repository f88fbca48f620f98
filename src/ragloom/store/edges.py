"""The context graph's edges table: full replacement, scoped updates, and reads among candidates."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from ragloom.store.commits import GRAPH_STALE, Commits
from ragloom.store.filters import sql_in, sql_str
from ragloom.store.schema import EDGE_SCHEMA

#: Edge types recomputed per chunk, per document and per lens on an incremental update.
_PER_CHUNK = ("SIMILAR_TO", "TOPIC_OVERLAP", "TEMPORAL_OVERLAP", "MENTIONS", "SHARED_ENTITY")
_PER_DOCUMENT = ("SEQUENTIAL", "SAME_SOURCE")


class Edges(Commits):
    """A tenant's stored graph edges."""

    def has_edges(self, tenant: str) -> bool:
        table = self._table("edges")
        return table is not None and int(table.count_rows(f"tenant_id = {sql_str(tenant)}")) > 0

    def edges(self, tenant: str) -> list[dict[str, Any]]:
        return self._select(self._table("edges"), f"tenant_id = {sql_str(tenant)}")

    def edge_table(self, tenant: str) -> pa.Table:
        """The tenant's edges as one Arrow table (``src``, ``dst``, ``type``, ``weight``,
        ``attrs``), no per-row dicts: the context graph of 100,000 chunks reads it in one go."""
        columns = ["src", "dst", "type", "weight", "attrs"]
        table = self._table("edges")
        if table is None:
            return EDGE_SCHEMA.empty_table().select(columns)
        read: pa.Table = table.search().where(f"tenant_id = {sql_str(tenant)}").select(columns).limit(None).to_arrow()
        return read

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
        with self._change(**{GRAPH_STALE: False}):
            table = self._writable("edges", EDGE_SCHEMA)
            table.delete(f"tenant_id = {sql_str(tenant)}")
            if rows:
                table.add(pa.Table.from_pylist(list(rows), schema=EDGE_SCHEMA))

    def update_edges(self, tenant: str, *, chunks: Iterable[str], documents: Iterable[str], lenses: Iterable[str],
                     rows: Sequence[Mapping[str, Any]]) -> None:
        """Drop the edges an incremental update recomputes, then add its new ones."""
        chunks, documents, lenses = set(chunks), set(documents), set(lenses)
        with self._change(**{GRAPH_STALE: False}):
            table = self._writable("edges", EDGE_SCHEMA)
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
