"""The LanceDB store: the only module that imports lancedb.

The tables and their rows are described in :mod:`ragloom.store.schema`. This module decides
how a workspace is shared: any number of processes may read while one writes.

- **Writes** take the workspace's write lock (:meth:`LanceStore.writer`; a second writer waits,
  and gives up with a clear error after ``lock_timeout`` seconds). Each logical write (a batch
  of documents, a graph update, a deletion) leaves a *pending* marker, changes the tables, then
  records a *commit*: the version of every table. A crash between the two leaves the marker,
  and the next writer rolls every table back to the commit before it writes.
- **Reads** see the last commit and nothing after it: every table is read at the version the
  commit names (LanceDB's time travel), so a query never sees half a write, whoever is writing.
  :meth:`LanceStore.snapshot` moves the reads to the newest commit; the engine calls it at the
  start of each operation, so a long-lived process sees other processes' writes.
- What the store keeps in memory (:meth:`LanceStore.memo`, document texts) belongs to one
  commit and is dropped when the reads move to another.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ragloom.errors import MissingExtraError, StoreError, WorkspaceLockedError
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
#: versions that the tables no longer use (see :meth:`LanceStore._pin`).
STALE_INDEXES_BEFORE_RECONNECT = 4
#: Characters of document text :meth:`LanceStore.document_texts` keeps in memory.
TEXT_MEMO_CHARS = 64_000_000
#: Edge types recomputed per chunk, per document and per lens on an incremental update.
_PER_CHUNK = ("SIMILAR_TO", "TOPIC_OVERLAP", "TEMPORAL_OVERLAP", "MENTIONS", "SHARED_ENTITY")
_PER_DOCUMENT = ("SEQUENTIAL", "SAME_SOURCE")
#: Where the store keeps its lock, commit record and pending marker, beside the tables.
STATE_DIR = "_ragloom"
#: The commit record and the pending marker, in that folder.
COMMIT, PENDING = "commit.json", "pending"
#: Commit flag: chunks changed since the graph's edges were last written.
GRAPH_STALE = "graph_stale"


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
        return (st.st_mtime_ns, st.st_size)

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
        # Writes and reads on connections of their own, each renewed when the index versions
        # its cache holds open have been replaced (an optimisation, another process's commit).
        self._db = self._connect()
        self._read_db = self._connect()
        self._index_ids: set[str] = set()  # index versions the read connection has pinned
        self._write_lock = self._state.lock
        self._writers: dict[str, Any] = {}  # table handles at the latest version, for writes
        self._readers: dict[str, Any] = {}  # table handles at the committed version, for reads
        self._lock = threading.RLock()
        self._memo: dict[Hashable, Any] = {}
        self._memo_chars = 0
        self._pins: dict[str, int] | None = None  # table versions reads are pinned to
        self._tx_owner: int | None = None  # the thread writing a transaction
        self._tx_flags: dict[str, Any] = {}
        self._commit_stamp: Hashable | None = None
        #: Tables the last taking of the write lock rolled back (a crashed writer's leftovers).
        self.rolled_back = 0
        self.snapshot()

    # -- commits and snapshots ----------------------------------------------------------------

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

    def snapshot(self) -> bool:
        """Move reads to the newest commit; returns whether they moved. Cheap when nothing
        changed (one ``stat``), so every operation can start with it."""
        stamp = self._state.stamp(COMMIT)
        with self._lock:
            if stamp is not None and stamp == self._commit_stamp:
                return False
            commit = self._read_commit() if stamp is not None else None
            self._commit_stamp = stamp
            if commit is None:  # a workspace without commits yet: read the newest versions
                pins = {}
                for name in TABLES:
                    table = self._readers.get(name) or self._open(name, self._read_db)
                    if table is not None:
                        table.checkout_latest()
                        self._readers[name] = table
                        pins[name] = int(table.version)
            else:
                pins = {name: int(v) for name, v in commit["tables"].items()}
            if pins == self._pins:
                return False
            self._pin(pins)
            return True

    def _pin(self, pins: dict[str, int]) -> None:
        self._checkout(pins, self._readers, self._read_db)
        current = {str(ix.index_uuid) for table in self._readers.values() for ix in table.list_indices()}
        if len(self._index_ids - current) >= STALE_INDEXES_BEFORE_RECONNECT:
            # The connection's cache keeps a file of every index version a search read open;
            # a new one lets the replaced versions go (and the space of their deleted files).
            # The handles are swapped whole: a query on another thread sees old or new ones.
            db, readers = self._connect(), dict[str, Any]()
            self._checkout(pins, readers, db)
            self._read_db, self._readers, self._index_ids = db, readers, set()
        self._index_ids |= current
        self._pins = pins
        self.forget()

    def _checkout(self, pins: dict[str, int], readers: dict[str, Any], db: Any) -> None:  # noqa: ANN401
        """``readers`` at ``pins``, opened from ``db`` where missing (a version cleaned up since:
        the newest, and ``pins`` says so)."""
        for name in TABLES:
            table = readers.get(name) or (self._open(name, db) if name in pins else None)
            if name not in pins or table is None:
                readers.pop(name, None)
                continue
            if int(table.version) != pins[name]:
                try:
                    table.checkout(pins[name])
                except Exception:  # noqa: BLE001 - that version was cleaned up: read the newest
                    table.checkout_latest()
                    pins[name] = int(table.version)
            readers[name] = table

    @property
    def pins(self) -> Mapping[str, int]:
        """The table versions reads see (the last commit)."""
        return dict(self._pins or {})

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
        with self._lock:
            pins = self._pins
            if key in self._memo:
                return self._memo[key]
        value = load()
        with self._lock:
            if pins == self._pins:  # a commit came in while loading: use the value, keep none
                self._memo.setdefault(key, value)
        return value

    def forget(self) -> None:
        """Drop everything :meth:`memo` and :meth:`document_texts` keep."""
        with self._lock:
            self._memo.clear()
            self._memo_chars = 0

    # -- tables ------------------------------------------------------------------------------

    def _table(self, name: str) -> Any:  # noqa: ANN401
        """The table as of the last commit, for reading (None when it did not exist then); the
        newest version for the thread writing a transaction, which must read its own writes."""
        if self._in_transaction():
            return self._writable(name)
        return self._readers.get(name)

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

    def _check_dim(self, table: Any, dim: int) -> None:  # noqa: ANN401
        have = table.schema.field("vector").type.list_size
        if have != dim:
            raise StoreError(
                f"the workspace at {self.location.rsplit('/', 1)[0] if self.remote else self.path.parent} holds {have}-dimensional vectors but the embedder makes "
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
        tables go back to the last commit.
        """
        with self._write_lock.held(self.lock_timeout if timeout is None else timeout, on_wait) as outer:
            if outer:
                self._state.arm(COMMIT)
                self._writers.clear()  # another process may have written, or dropped, tables since
                self.rolled_back = self._rollback() if self._state.exists(PENDING) else 0
            yield

    @contextlib.contextmanager
    def _change(self, **flags: Any) -> Iterator[None]:  # noqa: ANN401
        """One logical write: marker (with the versions to return to), table changes, commit
        (with ``flags``). Takes the lock if it is not held. Inside a :meth:`transaction` the
        transaction's marker and commit stand for it."""
        if self._in_transaction():
            with self._lock:
                yield
            self._tx_flags.update(flags)
            return
        with self.writer(), self._lock:
            self._mark()
            yield
            self._commit(**flags)
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
            with self._lock:
                self._mark()
                self._tx_owner, self._tx_flags = threading.get_ident(), {}
            try:
                yield
            except BaseException:
                self._tx_owner = None
                with self._lock:
                    self._rollback()
                raise
            self._tx_owner = None
            with self._lock:
                self._commit(**self._tx_flags)
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
        record = {**{k: v for k, v in previous.items() if k != "tables"}, "tables": versions,
                  "sequence": int(previous.get("sequence", 0)) + 1,
                  "committed_at": datetime.now(UTC).isoformat(), **extra}
        check = getattr(self._write_lock, "check", None)
        if callable(check):  # a lease on object storage: still ours?
            check()
        self._state.write(COMMIT, json.dumps(record), fenced=True)
        self.snapshot()

    def commit_info(self) -> dict[str, Any]:
        """The last commit record (table versions, sequence, flags such as ``graph_stale``)."""
        return self._read_commit() or {}

    def _rollback(self) -> int:
        """Every table back to the versions the pending marker recorded before an interrupted
        write began (a table that write created is dropped); returns tables rolled back."""
        try:
            before = json.loads(self._state.read(PENDING) or "{}").get("tables")
        except (OSError, ValueError):
            before = None
        if before is None:  # a marker without versions: the last commit is the state to return to
            before = (self._read_commit() or {}).get("tables", {})
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
            # Files the crashed write left unreferenced go now (no other writer can be
            # writing: this one holds the lock); its versions go once past the retention.
            table.optimize(cleanup_older_than=self.version_retention, delete_unverified=True)
        self._commit()
        self._state.unlink(PENDING)
        return rolled

    def repair(self) -> int:
        """Roll back an interrupted write, if a marker says there was one (taking the lock does
        it); returns the number of tables rolled back."""
        with self.writer():
            return self.rolled_back

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
        737 chunks indexed, BM25 Pass@10 was 87.9 against 89.8 with all, tuning half)."""
        ran = False
        with self._change():
            for name in TABLES:
                table = self._writable(name)
                if table is None:
                    continue
                small = table.stats()["fragment_stats"]["num_small_fragments"]
                counts = [(ix.index_type, table.index_stats(ix.name)) for ix in table.list_indices()]
                unindexed = sum(stats.num_unindexed_rows for _, stats in counts)
                stale_fts = any(kind == "FTS" and stats.num_unindexed_rows > FTS_UNINDEXED_SHARE * stats.num_indexed_rows
                                for kind, stats in counts)
                if force or stale_fts or small >= SMALL_FRAGMENTS_BEFORE_COMPACTION \
                        or unindexed >= UNINDEXED_ROWS_BEFORE_INDEXING:
                    # Versions past the retention go (readers pin only the last commit); the
                    # rows' own history (as_of, superseded_at) is untouched. New rows are folded
                    # into the existing indexes, the ANN index included.
                    table.optimize(cleanup_older_than=self.version_retention)
                    ran = True
                if name in ("chunks", "sentences"):
                    ran = self._ensure_ann(table) or ran
            if ran:
                # An optimisation reads the index versions it replaces into the connection's
                # cache, which keeps a file of each open as long as the connection lives.
                self._db = self._connect()
                self._writers.clear()
        return ran

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
        texts are kept in memory for the commit (at most ``TEXT_MEMO_CHARS`` characters).
        A document that does not exist (then) has no entry."""
        out: dict[str, str] = {}
        missing = []
        with self._lock:
            pins = self._pins
            for doc in set(document_ids):
                key = ("text", tenant, doc)
                if as_of is None and key in self._memo:
                    out[doc] = self._memo[key]
                else:
                    missing.append(doc)
        if not missing:
            return out
        rows = self._select(self._table("documents"), scope(tenant, as_of=as_of, extra=[sql_in("document_id", missing)]),
                            ["document_id", "version_sequence", "text"])
        for r in sorted(rows, key=lambda r: r["version_sequence"]):  # the latest version wins
            out[r["document_id"]] = r["text"] or ""
        with self._lock:
            if as_of is not None or pins != self._pins:
                return out  # a past state, or a commit came in while reading: keep none
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
        memory for the commit, since balanced retrieval asks for them on every query)."""
        def read() -> set[str]:
            return {r["lens"] for r in self._select(self._table("chunks"), scope(tenant, as_of=as_of), ["lens"])}

        return read() if as_of is not None else set(self.memo(("lenses", tenant), read))

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
            "chunk_versions_stored": int(table.count_rows()) if table is not None else 0,
            "lenses": by_lens,
        }
