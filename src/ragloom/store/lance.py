"""The LanceDB store: the only module that imports lancedb.

The tables and their rows are described in :mod:`ragloom.store.schema`. This module decides
how a workspace is shared: any number of processes may read while one writes.

- **Writes** take the workspace's write lock (:meth:`LanceStore.writer`; a second writer waits,
  and gives up with a clear error after ``lock_timeout`` seconds). Each logical write (a batch
  of documents, a graph update, a deletion) leaves a *pending* marker, changes the tables, then
  records a *commit*: the version of every table. A write that fails is rolled back at once; a
  crash between the two leaves the marker, and the next writer rolls every table back to the
  commit before it writes. A rollback writes only manifests and the commit record, so that it
  works on a full disk (a local workspace sets 4 MiB aside for it).
- **Reads** see one commit and nothing after it: a read operation holds a *read view*
  (:meth:`LanceStore.reading`; :mod:`ragloom.store.views`), every table opened at the version
  the commit names (LanceDB's time travel), from its first read to its last, whoever commits
  meanwhile. Readers never wait for a writer. :meth:`LanceStore.snapshot` makes the newest
  commit the view new operations start from (one ``stat`` when nothing changed).
- What the store keeps in memory (:meth:`LanceStore.memo`, document texts) belongs to the view
  it was read from, and goes with it.
- Old table versions go once older than the last few commits (:data:`KEEP_COMMITS`) or
  ``version_retention``; a read elsewhere that loses them runs again on the newest commit.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import json
import math
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from ragloom.errors import MissingExtraError, StoreError, WorkspaceLockedError
from ragloom.store.faults import disk_full, is_disk_full
from ragloom.store.filters import DateRange, scope, sql_in, sql_str, sql_time
from ragloom.store.locks import ReentrantLock
from ragloom.store.schema import (
    CHUNK_COLUMNS,
    DEPENDENT_TABLES,
    DOC_COLUMNS,
    DOCUMENT_SCHEMA,
    EDGE_SCHEMA,
    MENTION_SCHEMA,
    RESULT_COLUMNS,
    TABLES,
    chunk_schema,
)
from ragloom.store.views import ReadView, open_view, version_gone

T = TypeVar("T")

#: Each write adds a fragment; compacting them costs more than it saves until there are this many.
SMALL_FRAGMENTS_BEFORE_COMPACTION = 16
UNINDEXED_ROWS_BEFORE_INDEXING = 5000
#: The BM25 index keeps the statistics of the rows it holds (document count, term frequencies,
#: mean length); rows added since are searched too, but ranked with those statistics. Once the
#: unindexed rows pass this share of the indexed ones they are folded in, so that a workspace
#: never ranks with the statistics of its first batch.
FTS_UNINDEXED_SHARE = 0.05
#: A LanceDB connection keeps every index version it has read in its cache, with a file of each
#: open, for as long as it lives; the read connection is renewed once it holds this many
#: versions that the tables no longer use (see :meth:`LanceStore._open_view`).
STALE_INDEXES_BEFORE_RECONNECT = 4
#: Edge types recomputed per chunk, per document and per lens on an incremental update.
_PER_CHUNK = ("SIMILAR_TO", "TOPIC_OVERLAP", "TEMPORAL_OVERLAP", "MENTIONS", "SHARED_ENTITY")
_PER_DOCUMENT = ("SEQUENTIAL", "SAME_SOURCE")
#: Where the store keeps its lock, commit record and pending marker, beside the tables.
STATE_DIR = "_ragloom"
#: The commit record, the pending marker and the space set aside for a rollback, in that folder.
COMMIT, PENDING, RESERVE = "commit.json", "pending", "reserve"
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
#: Versions older than those before a table is optimised for their sake alone (LanceDB's
#: optimisation also compacts and folds new rows into the indexes, 1-4 s at 100,000 chunks, so
#: it does not run for every few versions).
OLD_VERSIONS_BEFORE_CLEANUP = 24
#: Space a local workspace sets aside (a file in its state folder) so that a write that fails
#: on a full disk can still be rolled back: the rollback gives it up first if it must. A
#: rollback writes a manifest per table and the commit record, a few KB each.
RESERVE_BYTES = 4 * 2**20


def _lancedb() -> Any:  # noqa: ANN401 - the lancedb module
    # Lance logs routine events (a table being created, scoring columns) as warnings on stderr.
    os.environ.setdefault("LANCE_LOG", "error")
    try:
        import lancedb
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingExtraError("lancedb", "core", "the workspace store") from exc
    return lancedb


def vector_matrix(table: pa.Table, column: str = "vector") -> np.ndarray:
    """A fixed-size-list column of an Arrow table as one (rows, dim) float32 array."""
    values = table[column].combine_chunks()
    result: np.ndarray = values.values.to_numpy(zero_copy_only=False).reshape(len(values), -1).astype(np.float32, copy=False)
    return result


@dataclass(frozen=True)
class AnnSettings:
    """When the vector tables get an approximate-nearest-neighbour index, and how it is searched
    (``[retrieval] ann_*``)."""

    min_rows: int = 50_000
    index: str = "IVF_HNSW_SQ"
    nprobes: int = 24
    refine_factor: int = 4


class _WriteLock(ReentrantLock):
    """The workspace's write lock: an exclusive ``flock`` on a file, so it dies with its
    process, plus an in-process lock so threads queue too. Re-entrant in one thread."""

    def __init__(self, path: Path) -> None:
        super().__init__(path.parent.parent)
        self.path = path
        self._fd: int | None = None

    def holder(self) -> str:
        try:
            info = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            return "another process"
        return f"process {info.get('pid', '?')} ({info.get('command', '?')}, since {info.get('since', '?')})"

    def _acquire(self, timeout: float, on_wait: Callable[[str], None] | None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        started = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - started
                if waited >= timeout:
                    holder = self.holder()
                    os.close(fd)
                    raise WorkspaceLockedError(self.path.parent.parent, holder, timeout) from None
                if not told and on_wait is not None:
                    on_wait(f"waiting for the workspace write lock, held by {self.holder()}")
                    told = True
                time.sleep(min(0.05 * (1 + waited), 0.5))
        info = {"pid": os.getpid(), "command": " ".join(os.path.basename(a) for a in sys.argv[:2]) or "python",
                "since": datetime.now(UTC).isoformat(timespec="seconds")}
        with contextlib.suppress(OSError):  # who holds it is for messages only: a full disk may refuse it
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd

    def _release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class _LocalState:
    """The commit record, the pending marker and the write lock as files beside the tables."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lock = _WriteLock(folder / "write.lock")

    def stamp(self, name: str) -> Hashable | None:
        """What changes when the file does (one ``stat``), or None when there is none."""
        try:
            st = (self.folder / name).stat()
        except FileNotFoundError:
            return None
        # The commit record is replaced by a rename, so its inode changes too: two commits within
        # one tick of the file system's clock, of the same size, still differ.
        return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)

    def read(self, name: str) -> str | None:
        try:
            return (self.folder / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        return (self.folder / name).exists()

    def write(self, name: str, text: str, *, fenced: bool = False) -> None:
        """Write the file; ``fenced`` (the commit record): atomically, through a renamed copy."""
        path = self.folder / name
        if not fenced:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)

    def unlink(self, name: str) -> None:
        (self.folder / name).unlink(missing_ok=True)

    def arm(self, name: str) -> None:
        """Nothing to fence locally: the ``flock`` dies with its process."""

    def reserve(self, size: int) -> None:
        """Set ``size`` bytes of disk aside (blocks allocated, not a sparse file), if there is room."""
        path = self.folder / RESERVE
        with contextlib.suppress(OSError):
            if path.stat().st_size >= size:
                return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError:
            os.ftruncate(fd, 0)  # no room for it now: try again at the next write
        finally:
            os.close(fd)

    def release_reserve(self) -> bool:
        """Give the set-aside space back to the disk; returns whether there was any."""
        path = self.folder / RESERVE
        try:
            had = path.stat().st_size > 0
            path.unlink()
        except OSError:
            return False
        return had


class LanceStore:
    """LanceDB tables in ``<workspace>/lancedb`` (a folder, or a URI on object storage: see
    :mod:`ragloom.store.remote`), shared safely between processes."""

    def __init__(self, path: str | Path, *, fts_column: str = "search_text", lock_timeout: float = 600.0,
                 version_retention: float = 600.0, ann: AnnSettings | None = None) -> None:
        from ragloom.store import remote

        self.remote = remote.is_remote(path)
        #: Where the tables are: a folder, or the URI they have on object storage.
        self.location = remote.normalize(path) if self.remote else str(path)
        self.path = Path(path) if not self.remote else Path(self.location.split("://", 1)[1])
        self.fts_column = fts_column
        self.lock_timeout = lock_timeout
        #: Old table versions younger than this stay for readers still on them.
        self.version_retention = timedelta(seconds=version_retention)
        self.ann = ann or AnnSettings()
        self._state: _LocalState | remote.ObjectState
        if self.remote:
            self._state = remote.ObjectState(remote.join(self.location, STATE_DIR), lock_timeout=lock_timeout)
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self._state = _LocalState(self.path / STATE_DIR)
            self._state.reserve(RESERVE_BYTES)  # from the start: a first write may meet a full disk
        # Writes and reads on connections of their own, each renewed when the index versions
        # its cache holds open have been replaced (an optimisation, another process's commit).
        self._db = self._connect()
        self._read_db = self._connect()
        self._index_ids: set[str] = set()  # index versions the read connection has opened
        self._write_lock = self._state.lock
        self._writers: dict[str, Any] = {}  # table handles at the latest version, for writes
        #: The newest commit's view; an operation in :meth:`reading` holds the one it began with.
        self._view = ReadView({}, {}, -1)
        self._held: contextvars.ContextVar[ReadView | None] = contextvars.ContextVar(f"ragloom-view-{id(self)}",
                                                                                     default=None)
        self._refresh = threading.Lock()  # one thread opens a new view at a time; never held by a write
        self._live: list[ReadView] = []  # views operations of this process hold now (cleanup keeps them)
        self._tx_owner: int | None = None  # the thread writing a transaction
        self._tx_flags: dict[str, Any] = {}
        self._commit_stamp: Hashable | None = None
        #: Tables the last taking of the write lock rolled back (a crashed writer's leftovers).
        self.rolled_back = 0
        self.snapshot()

    # -- commits and read views ----------------------------------------------------------------

    def _read_commit(self) -> dict[str, Any] | None:
        try:
            text = self._state.read(COMMIT)
            if text is None:
                return None
            data: dict[str, Any] = json.loads(text)
            return data
        except (OSError, ValueError) as exc:
            where = f"{self.location}/{STATE_DIR}/{COMMIT}"
            raise StoreError(f"{where} is unreadable ({exc}); remove it to read the newest table versions") from exc

    def snapshot(self, *, force: bool = False) -> bool:
        """Make the newest commit the view new reads start from; returns whether it moved.
        Cheap when nothing changed (one ``stat``), so every operation can start with it. An
        operation already holding a view (:meth:`reading`) keeps it. ``force``: read the commit
        record whatever its file's stamp says (a writer, after its own commit)."""
        with self._refresh:
            stamp = self._state.stamp(COMMIT)
            if stamp is not None and stamp == self._commit_stamp and not force:
                return False
            for _ in range(8):
                commit = self._read_commit() if stamp is not None else None
                if commit is None:  # a workspace without commits yet: its newest versions
                    pins, sequence = self._newest_versions(), 0
                else:
                    pins, sequence = {name: int(v) for name, v in commit["tables"].items()}, int(commit.get("sequence", 0))
                if pins == self._view.pins:
                    self._commit_stamp = stamp
                    return False
                try:
                    self._open_view(pins, sequence)
                except ValueError as exc:
                    if not version_gone(exc):
                        raise
                    # A writer cleaned that version up after committing a newer one: read the
                    # commit record again (it names the newer one).
                    stamp = self._state.stamp(COMMIT)
                    continue
                self._commit_stamp = stamp
                return True
            raise StoreError(f"the commit record of {self.location} names table versions that no longer exist; "
                             f"remove {STATE_DIR}/{COMMIT} to read the newest versions")

    def _newest_versions(self) -> dict[str, int]:
        versions = {}
        for name in TABLES:
            table = self._open(name, self._read_db)
            if table is not None:
                versions[name] = int(table.version)
        return versions

    def _open_view(self, pins: dict[str, int], sequence: int) -> None:
        view = open_view(pins, sequence, lambda name: self._open(name, self._read_db), self._view)
        current = {str(ix.index_uuid) for table in view.tables.values() for ix in table.list_indices()}
        if len(self._index_ids - current) >= STALE_INDEXES_BEFORE_RECONNECT:
            # The connection's cache keeps a file of every index version a search read open;
            # a new one lets the replaced versions go (and the space of their deleted files).
            # Views still held keep their handles, and with them the old connection, until done.
            self._read_db, self._index_ids = self._connect(), set()
            view = open_view(pins, sequence, lambda name: self._open(name, self._read_db), None)
        self._index_ids |= current
        self._view = view

    @contextlib.contextmanager
    def reading(self) -> Iterator[ReadView]:
        """Hold one commit's view for a whole read operation (a query, an answer, a report): every
        read of this thread (and of what it hands the view to, see :meth:`run_held`) sees that
        commit, whatever is committed meanwhile. Re-entrant; inside a write it is the writer's view."""
        held = self._held.get()
        if held is not None:
            yield held
            return
        self.snapshot()
        view = self._view
        token = self._held.set(view)
        with self._refresh:
            self._live.append(view)
        try:
            yield view
        finally:
            self._held.reset(token)
            with self._refresh:
                self._live.remove(view)

    def run_held(self, fn: Callable[..., T], *args: Any) -> Callable[[], T]:  # noqa: ANN401
        """``fn(*args)`` as a callable for another thread that reads through this thread's view."""
        context = contextvars.copy_context()
        return lambda: context.run(fn, *args)

    def holds_view(self) -> bool:
        """Whether this thread's operation holds a view (it is inside :meth:`reading`)."""
        return self._held.get() is not None

    def view(self) -> ReadView:
        """The view reads of this thread see now: the one its operation holds, else the newest."""
        held = self._held.get()
        return held if held is not None else self._view

    @property
    def pins(self) -> Mapping[str, int]:
        """The table versions reads see (the last commit, or the view this operation holds)."""
        return dict(self.view().pins)

    def _connect(self) -> Any:  # noqa: ANN401 - a lancedb connection
        if self.remote:
            from ragloom.store import remote

            return _lancedb().connect(self.location, storage_options=remote.storage_options(self.location) or None)
        return _lancedb().connect(str(self.path))

    def _open(self, name: str, db: Any = None) -> Any:  # noqa: ANN401
        """The table ``name`` at its newest version, from ``db`` (the write connection by default)."""
        try:
            return (db or self._db).open_table(name)
        except ValueError:  # "Table 'x' was not found"
            return None

    # -- derived data kept in memory ---------------------------------------------------------

    def memo(self, key: Hashable, load: Callable[[], Any]) -> Any:  # noqa: ANN401
        """``load()``, computed once per commit: for derived data a query would otherwise read
        again from the tables every time (the sentence index's arrays, the context graph)."""
        if self._in_transaction():
            return load()  # uncommitted data belongs to no commit
        with self.reading() as view:  # what load() reads is the view it is kept in
            return view.memo(key, load)

    def forget(self) -> None:
        """Drop everything :meth:`memo` and :meth:`document_texts` keep."""
        self.view().forget()

    # -- tables ------------------------------------------------------------------------------

    def _table(self, name: str) -> Any:  # noqa: ANN401
        """The table as of the commit this operation reads, for reading (None when it did not
        exist then); the newest version for the thread writing a transaction, which must read
        its own writes."""
        if self._in_transaction():
            return self._writable(name)
        return self.view().table(name)

    def _writable(self, name: str, schema: pa.Schema | None = None) -> Any:  # noqa: ANN401
        """The table at its newest version, for writing (created from ``schema`` if missing)."""
        table = self._writers.get(name)
        if table is None:
            table = self._open(name)
            if table is None:
                if schema is None:
                    return None
                table = self._db.create_table(name, schema=schema)
            self._writers[name] = table
        return table

    def has_table(self, name: str) -> bool:
        return self._table(name) is not None

    @property
    def dim(self) -> int | None:
        table = self._table("chunks")
        if table is None:
            return None
        return int(table.schema.field("vector").type.list_size)

    @property
    def workspace(self) -> str:
        """The workspace the tables belong to, as messages name it (the folder above them)."""
        return self.location.rsplit("/", 1)[0] if self.remote else str(self.path.parent)

    def _check_dim(self, table: Any, dim: int) -> None:  # noqa: ANN401
        have = table.schema.field("vector").type.list_size
        if have != dim:
            raise StoreError(
                f"the workspace at {self.workspace} holds {have}-dimensional vectors but the embedder makes "
                f"{dim}-dimensional ones; run 'ragloom reindex' or use another workspace"
            )

    @staticmethod
    def _rows(query: Any, limit: int | None = None) -> list[dict[str, Any]]:  # noqa: ANN401
        rows: list[dict[str, Any]] = query.limit(limit).to_arrow().to_pylist()
        return rows

    def _select(self, table: Any, where: str, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:  # noqa: ANN401
        if table is None:
            return []
        query = table.search().where(where)
        if columns is not None:
            query = query.select(list(columns))
        return self._rows(query, None)

    # -- the write lock and commits ------------------------------------------------------------

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

    def _in_transaction(self) -> bool:
        return self._tx_owner == threading.get_ident()

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
        next optimisation (:meth:`optimize`)."""
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
                        self._ensure_fts(table)
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

    def _ensure_fts(self, table: Any) -> None:  # noqa: ANN401
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
        them to matter; returns whether it ran. The BM25 index takes its new rows once they pass
        :data:`FTS_UNINDEXED_SHARE` of its rows (why: there; on the contextual set, with 116 of
        737 chunks indexed, BM25 Pass@10 was 87.9 against 89.8 with all, tuning half).

        Old table versions go once past ``version_retention``, and sooner once older than the
        last :data:`KEEP_COMMITS` commits (they hold the files of every write since, and no as-of
        query reads them: the rows carry their own history); after a rolled-back write, the
        files it left go too."""
        ran = False
        orphans = bool(self.commit_info().get(ORPHANS))
        with self._change(**({ORPHANS: False} if orphans else {})):
            for name in TABLES:
                table = self._writable(name)
                if table is None:
                    continue
                small = table.stats()["fragment_stats"]["num_small_fragments"]
                counts = [(ix.index_type, table.index_stats(ix.name)) for ix in table.list_indices()]
                unindexed = sum(stats.num_unindexed_rows for _, stats in counts)
                stale_fts = any(kind == "FTS" and stats.num_unindexed_rows > FTS_UNINDEXED_SHARE * stats.num_indexed_rows
                                for kind, stats in counts)
                keep, old = self._cleanup_age(name, table)
                if force or orphans or stale_fts or old >= OLD_VERSIONS_BEFORE_CLEANUP \
                        or small >= SMALL_FRAGMENTS_BEFORE_COMPACTION or unindexed >= UNINDEXED_ROWS_BEFORE_INDEXING:
                    # The rows' own history (as_of, superseded_at) is untouched: only the table's
                    # versions go. New rows are folded into the existing indexes, the ANN index
                    # included. No other writer can be writing: this one holds the lock.
                    with warnings.catch_warnings():  # "cleanup_older_than=0 removes every version": meant
                        warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
                        table.optimize(cleanup_older_than=keep, delete_unverified=orphans)
                    ran = True
                if name in ("chunks", "sentences"):
                    ran = self._ensure_ann(table) or ran
            if ran:
                # An optimisation reads the index versions it replaces into the connection's
                # cache, which keeps a file of each open as long as the connection lives.
                self._db = self._connect()
                self._writers.clear()
        return ran

    def _cleanup_age(self, name: str, table: Any) -> tuple[timedelta, int]:  # noqa: ANN401
        """How old a version of ``table`` may be and stay, and how many versions are older:
        ``version_retention``, or less when older than every version the last
        :data:`KEEP_COMMITS` commits and the reads of this process still name."""
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

    def _ensure_ann(self, table: Any) -> bool:  # noqa: ANN401
        """An ANN index on the vectors once the table has ``ann.min_rows`` rows, and bitmap
        indexes on the columns every read filters by; True when one was built."""
        if self._vector_index(table) is not None or int(table.count_rows()) < self.ann.min_rows:
            return False
        rows = int(table.count_rows())
        dim = int(table.schema.field("vector").type.list_size)
        options: dict[str, Any] = {"num_partitions": max(1, int(math.sqrt(rows) / 2))}
        if self.ann.index == "IVF_PQ":
            options["num_sub_vectors"] = max(1, dim // 16)
        table.create_index(metric="cosine", vector_column_name="vector", index_type=self.ann.index, **options)
        present = {ix.columns[0] for ix in table.list_indices() if getattr(ix, "columns", None)}
        for column in ("tenant_id", "lens"):
            if column not in present:
                table.create_scalar_index(column, index_type="BITMAP")
        return True

    @staticmethod
    def _vector_index(table: Any) -> Any:  # noqa: ANN401
        return next((ix for ix in table.list_indices() if "vector" in (getattr(ix, "columns", None) or [])), None)

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

    # -- the context graph's edges ---------------------------------------------------------------

    def has_edges(self, tenant: str) -> bool:
        table = self._table("edges")
        return table is not None and int(table.count_rows(f"tenant_id = {sql_str(tenant)}")) > 0

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

    # -- reads -------------------------------------------------------------------------------

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

    def chunk_ids_starting(self, tenant: str, prefix: str, *, as_of: datetime | None = None) -> list[str]:
        """Ids of the tenant's chunks (current at ``as_of``) that start with ``prefix``, a short id."""
        if not prefix or any(c in prefix for c in "%_\\"):
            return []  # LIKE's wildcards never come from the user
        rows = self.chunks(tenant, as_of=as_of, columns=["chunk_id"], where=[f"chunk_id LIKE {sql_str(prefix + '%')}"])
        return [r["chunk_id"] for r in rows]

    def current_columns(self, tenant: str, columns: Sequence[str], *, table: str = "chunks") -> pa.Table | None:
        """``columns`` of the tenant's current rows of ``table`` as one Arrow table (no per-row
        dicts, so a 100k-row read stays fast), or None when the table does not exist."""
        t = self._table(table)
        if t is None:
            return None
        result: pa.Table = t.search().where(scope(tenant)).select(list(columns)).limit(None).to_arrow()
        return result

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

    def _indexed(self, name: str, table: Any) -> bool:  # noqa: ANN401
        """Whether ``table`` has an ANN index (asked once per commit)."""
        found: bool = self.memo(("ann", name), lambda: self._vector_index(table) is not None)
        return found

    def vector_search(self, tenant: str, vector: np.ndarray, k: int, *, lenses: Iterable[str] | None = None,
                      as_of: datetime | None = None, with_vectors: bool = False,
                      table: str = "chunks", dated: DateRange | None = None) -> list[dict[str, Any]]:
        handle = self._table(table)
        if handle is None:
            return []
        columns = RESULT_COLUMNS + (["prev_id", "next_id"] if table == "sentences" else []) \
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
