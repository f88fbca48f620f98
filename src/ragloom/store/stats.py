"""Statistics: how many documents, chunks and tokens a tenant holds, per lens and in all."""

from __future__ import annotations

from typing import Any

from ragloom.store.filters import scope, sql_str
from ragloom.store.reads import Reads


class Stats(Reads):
    """Counts of a tenant's rows at the view's commit."""

    def document_count(self, tenant: str) -> int:
        """The tenant's current documents (``len(documents(tenant))``), counted by LanceDB at the
        commit this operation reads: no row is read, and the chunks table is not touched."""
        table = self._table("documents")
        return int(table.count_rows(scope(tenant))) if table is not None else 0

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
        table = self._table("chunks")
        return {
            "documents": len(docs),
            "chunks": len(chunk_rows),
            "tokens": sum(e["tokens"] for e in by_lens.values()),
            "chunk_versions_stored": int(table.count_rows(f"tenant_id = {sql_str(tenant)}")) if table is not None else 0,
            "lenses": by_lens,
        }
