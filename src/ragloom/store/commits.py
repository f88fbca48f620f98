"""The commit protocol: the write lock, a pending marker, the commit record, rollbacks, and the row writes."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from ragloom.errors import StoreError
from ragloom.store.connection import StoreCore
from ragloom.store.faults import disk_full, is_disk_full
from ragloom.store.filters import sql_in, sql_time
from ragloom.store.indexes import ensure_fts
from ragloom.store.local import COMMIT, PENDING, RESERVE_BYTES
from ragloom.store.schema import DEPENDENT_TABLES, DOCUMENT_SCHEMA, MENTION_SCHEMA, TABLES, chunk_schema

#: Commit flag: chunks changed since the graph's edges were last written.
GRAPH_STALE = "graph_stale"
#: Commit flag: a write was rolled back, and the files it wrote wait for the next optimisation.
ORPHANS = "orphans"
#: Commits whose table versions stay, however young (besides the last one, and those reads of
#: this process hold). Each write's versions hold the files it wrote, and a compaction rewrites a
#: whole table: a 47 KB corpus ingested again 70 times within the old 10-minute retention grew its
#: workspace to 840 MB. A read in another process that outlives this many commits loses its files,
#: and runs again on the newest commit (:func:`ragloom.components.one_commit`).
KEEP_COMMITS = 4


class Commits(StoreCore):
    """Writes under the workspace's write lock, each one commit; a failed or crashed one rolled back."""

    @contextlib.contextmanager
    def writer(self, *, timeout: float | None = None, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the workspace's write lock for a series of writes (an ingest, a reindex).

        A second writer waits (``on_wait`` hears why, once) and raises
        :class:`~ragloom.errors.WorkspaceLockedError` after ``timeout`` seconds (default
        ``lock_timeout``). Taking the lock finishes the business of a writer that crashed: the
        tables go back to the last commit. Reads of the writing thread see the newest commit
        (its own writes), even inside an operation that holds an older view.
        """
        with self._write_lock.held(self.lock_timeout if timeout is None else timeout, on_wait) as outer:
            token = self._held.set(None)
            try:
                if outer:
                    self._state.arm(COMMIT)
                    self._writers.clear()  # another process may have written, or dropped, tables since
                    self.rolled_back = self._settle()
                    self._state.reserve(RESERVE_BYTES)
                    self.snapshot()  # another process may have committed before the lock was ours
                yield
            finally:
                self._held.reset(token)

    @contextlib.contextmanager
    def _change(self, **flags: Any) -> Iterator[None]:  # noqa: ANN401
        """One logical write: marker (with the versions to return to), table changes, commit
        (with ``flags``). Takes the lock if it is not held. A write that fails is rolled back at
        once, so that what the caller tries next starts from the last commit. Inside a
        :meth:`transaction` the transaction's marker and commit stand for it."""
        if self._in_transaction():
            yield
            self._tx_flags.update(flags)
            return
        with self.writer():
            self._settle()  # an earlier write of this hold failed and could not be rolled back then
            try:
                self._mark()
                yield
                self._commit(**flags)
            except BaseException as exc:
                self._abort(exc)
                if is_disk_full(exc):
                    raise disk_full(exc, self.workspace) from exc
                raise
            self._state.unlink(PENDING)

    def _mark(self) -> None:
        marker = {"tables": self._versions(), "started_at": datetime.now(UTC).isoformat(), "pid": os.getpid()}
        self._state.write(PENDING, json.dumps(marker))

    def in_transaction(self) -> bool:
        """Whether this thread is writing a transaction (it alone may read its uncommitted rows)."""
        return self._in_transaction()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Many writes, one commit (a reindex): other readers see none of them until all are
        done, the writing thread reads its own; an error or a crash rolls every table back to
        before the first."""
        if self._in_transaction():
            yield
            return
        with self.writer():
            self._settle()
            try:
                self._mark()
                self._tx_owner, self._tx_flags = threading.get_ident(), {}
                yield
                self._tx_owner = None
                self._commit(**self._tx_flags)
            except BaseException as exc:
                self._tx_owner = None
                self._abort(exc)
                if is_disk_full(exc):
                    raise disk_full(exc, self.workspace) from exc
                raise
            self._state.unlink(PENDING)

    def _versions(self) -> dict[str, int]:
        """The newest version of every existing table."""
        versions = {}
        for name in TABLES:
            table = self._writable(name)
            if table is not None:
                versions[name] = int(table.version)
        return versions

    def _commit(self, **extra: Any) -> None:  # noqa: ANN401
        versions = self._versions()
        previous = self._read_commit() or {}
        recent = ([previous["tables"]] if "tables" in previous else []) + list(previous.get("recent", []))
        record = {**{k: v for k, v in previous.items() if k not in ("tables", "recent")}, "tables": versions,
                  "recent": recent[:KEEP_COMMITS], "sequence": int(previous.get("sequence", 0)) + 1,
                  "committed_at": datetime.now(UTC).isoformat(), **extra}
        check = getattr(self._write_lock, "check", None)
        if callable(check):  # a lease on object storage: still ours?
            check()
        self._state.write(COMMIT, json.dumps(record), fenced=True)
        self.snapshot(force=True)

    def commit_info(self) -> dict[str, Any]:
        """The last commit record (table versions, sequence, flags such as ``graph_stale``)."""
        return self._read_commit() or {}

    def _settle(self) -> int:
        """Roll back the write a pending marker stands for, if there is one (a crashed process's,
        or one of this process that failed and could not be rolled back then); returns the tables
        rolled back. Raises a :class:`StoreError` that says why when it cannot."""
        if not self._state.exists(PENDING):
            return 0
        try:
            return self._rollback()
        except Exception as exc:  # noqa: BLE001 - said in ragloom's words, with what to do
            if is_disk_full(exc):
                raise disk_full(exc, self.workspace, rolling_back=True) from None
            raise StoreError(f"the workspace {self.location} could not be returned to its last commit after an "
                             f"interrupted write ({type(exc).__name__}: {exc}); reads still see the last commit; "
                             "run the command again, or 'ragloom reindex'") from exc

    def _abort(self, exc: BaseException) -> None:
        """After a failed write: every table back to the last commit now. When that fails too
        (the disk is full, say), the space set aside for it is given up and it is tried again;
        failing still, the marker stays and the next write tries first (readers see the last
        commit meanwhile)."""
        for attempt in range(2):
            try:
                self._rollback()
                if attempt:
                    with contextlib.suppress(OSError):
                        self._state.reserve(RESERVE_BYTES)
                return
            except Exception as again:  # noqa: BLE001 - the first error is the one to raise
                if attempt or not is_disk_full(again) or not self._state.release_reserve():
                    exc.add_note(f"rolling back failed too ({type(again).__name__}: {again}); "
                                 "the next write of this workspace rolls back first")
                    return

    def _rollback(self) -> int:
        """Every table back to the versions the pending marker recorded before an interrupted
        write began (a table that write created is dropped); returns tables rolled back.

        It writes only what a restore needs (a manifest per table, the commit record), so that
        it works on a disk with little space: the files the interrupted write left go at the
        next optimisation (:meth:`~ragloom.store.lance.LanceStore.optimize`)."""
        try:
            before = json.loads(self._state.read(PENDING) or "{}").get("tables")
        except (OSError, ValueError):
            before = None
        if before is None:  # a marker without versions: the last commit is the state to return to
            before = (self._read_commit() or {}).get("tables", {})
        self._writers.clear()  # a failed write may have left a handle mid-way: open them afresh
        rolled = 0
        for name in TABLES:
            table = self._writable(name)
            if table is None:
                continue
            target = before.get(name)
            if target is None:
                self._db.drop_table(name)
                self._writers.pop(name, None)
                rolled += 1
            elif int(table.version) != int(target):
                table.restore(int(target))
                rolled += 1
        self._commit(**{ORPHANS: True})
        self._state.unlink(PENDING)
        return rolled

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
        """Add new versions and close the ones they replace, as one commit.

        Dependent rows (chunks, sentences, mentions) first, then the closing of what they
        replace, then the document rows, then the closing of the replaced document versions;
        readers see none of it until the commit, and a crash before it is rolled back.
        """
        close = close or {}
        stamp = sql_time(at)
        with self._change(**({GRAPH_STALE: True} if rows.get("chunks") or close.get("chunks") else {})):
            for name in DEPENDENT_TABLES:
                if rows.get(name):
                    if name == "mentions":
                        table, schema = self._writable(name, MENTION_SCHEMA), MENTION_SCHEMA
                    else:
                        table, schema = self._writable(name, chunk_schema(dim)), chunk_schema(dim)
                        self._check_dim(table, dim)
                    table.add(pa.Table.from_pylist(list(rows[name]), schema=schema))
                    if name == "chunks":
                        ensure_fts(table, self.fts_column)
            for name in ("chunks", "sentences"):
                self._close(name, "version_id", close.get(name, ()), stamp)
            self._close("mentions", "doc_version_id", close_mentions_of, stamp)
            if rows.get("documents"):
                self._writable("documents", DOCUMENT_SCHEMA).add(
                    pa.Table.from_pylist(list(rows["documents"]), schema=DOCUMENT_SCHEMA))
            self._close("documents", "version_id", close.get("documents", ()), stamp)

    def _close(self, name: str, column: str, ids: Iterable[str], stamp: str) -> None:
        ids = list(ids)
        table = self._writable(name) if ids else None
        if table is None:
            return
        for lo in range(0, len(ids), 2000):
            where = sql_in(column, ids[lo : lo + 2000]) + " AND superseded_at IS NULL"
            table.update(where=where, values_sql={"superseded_at": stamp})
