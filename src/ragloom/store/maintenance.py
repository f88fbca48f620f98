"""Whole-table upkeep: optimisation (compaction, index folding, old versions) and bulk deletions."""

from __future__ import annotations

import warnings
from datetime import datetime, timedelta
from typing import Any

from ragloom.store.commits import KEEP_COMMITS, ORPHANS, Commits
from ragloom.store.filters import sql_str
from ragloom.store.indexes import ensure_ann, optimize_due
from ragloom.store.schema import DEPENDENT_TABLES, DOCUMENT_SCHEMA, TABLES


class Maintenance(Commits):
    """Optimising the tables, and deleting a tenant's rows or every derived row."""

    def optimize(self, *, force: bool = False) -> bool:
        """Fold new rows into the indexes and compact small fragments, when there are enough of
        them to matter; returns whether it ran. The BM25 index takes its new rows once they pass
        :data:`~ragloom.store.indexes.FTS_UNINDEXED_SHARE` of its rows (why: there; on the
        contextual set, with 116 of 737 chunks indexed, BM25 Pass@10 was 87.9 against 89.8 with
        all, tuning half).

        Old table versions go once past ``version_retention``, and sooner once older than the
        last :data:`~ragloom.store.commits.KEEP_COMMITS` commits (they hold the files of every
        write since, and no as-of query reads them: the rows carry their own history); after a
        rolled-back write, the files it left go too."""
        ran = False
        orphans = bool(self.commit_info().get(ORPHANS))
        with self._change(**({ORPHANS: False} if orphans else {})):
            for name in TABLES:
                table = self._writable(name)
                if table is None:
                    continue
                keep, old = self._cleanup_age(name, table)
                if force or orphans or optimize_due(table, old):
                    # The rows' own history (as_of, superseded_at) is untouched: only the table's
                    # versions go. New rows are folded into the existing indexes, the ANN index
                    # included. No other writer can be writing: this one holds the lock.
                    with warnings.catch_warnings():  # "cleanup_older_than=0 removes every version": meant
                        warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
                        table.optimize(cleanup_older_than=keep, delete_unverified=orphans)
                    ran = True
                if name in ("chunks", "sentences"):
                    ran = ensure_ann(table, self.ann) or ran
            if ran:
                # An optimisation reads the index versions it replaces into the connection's
                # cache, which keeps a file of each open as long as the connection lives.
                self._db = self._connect()
                self._writers.clear()
        return ran

    def _cleanup_age(self, name: str, table: Any) -> tuple[timedelta, int]:  # noqa: ANN401
        """How old a version of ``table`` may be and stay, and how many versions are older:
        ``version_retention``, or less when older than every version the last
        :data:`~ragloom.store.commits.KEEP_COMMITS` commits and the reads of this process still name."""
        commit = self.commit_info()
        named = [tables[name] for tables in [commit.get("tables", {}), *commit.get("recent", [])] if name in tables]
        if len(named) <= KEEP_COMMITS:
            return self.version_retention, 0  # too few commits yet to know which versions are old
        with self._refresh:
            named += [view.pins[name] for view in self._live if name in view.pins]
        stamps = {int(v["version"]): v["timestamp"] for v in table.list_versions()}
        oldest = stamps.get(min(named))
        if oldest is None:
            return self.version_retention, 0
        # A second more: LanceDB measures the age from its own "now", a moment later than this one.
        age: timedelta = datetime.now(oldest.tzinfo) - oldest + timedelta(seconds=1)
        return min(self.version_retention, max(timedelta(0), age)), sum(1 for v in stamps if v < min(named))

    def clear(self, tenant: str, *, lens: str | None = None) -> int:
        """Delete every row of ``tenant`` (only those of ``lens`` if given); returns documents removed."""
        where = f"tenant_id = {sql_str(tenant)}" + (f" AND lens = {sql_str(lens)}" if lens is not None else "")
        with self._change():
            docs = self._writable("documents", DOCUMENT_SCHEMA)
            removed = len({r["document_id"] for r in self._select(docs, where, ["document_id"])})
            docs.delete(where)
            for name in DEPENDENT_TABLES:
                table = self._writable(name)
                if table is not None:
                    table.delete(where)
            edges = self._writable("edges")
            if edges is not None:
                scope_edges = f"tenant_id = {sql_str(tenant)}"
                if lens is not None:
                    scope_edges += f" AND (src_lens = {sql_str(lens)} OR dst_lens = {sql_str(lens)})"
                edges.delete(scope_edges)
        return removed

    def drop_derived(self, dim: int) -> None:
        """Empty every table but documents (reindex rebuilds them from the documents table).
        Rows are deleted, so readers still on the last commit keep reading it; a table whose
        vectors have another dimension than ``dim`` is dropped (it cannot take the new rows)."""
        with self._change():
            for name in (*DEPENDENT_TABLES, "edges"):
                table = self._writable(name)
                if table is None:
                    continue
                vector = table.schema.field("vector") if "vector" in table.schema.names else None
                if vector is not None and vector.type.list_size != dim:
                    self._db.drop_table(name)
                    self._writers.pop(name, None)
                else:
                    table.delete("TRUE")
