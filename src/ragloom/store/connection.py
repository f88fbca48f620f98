"""The store's connections, table handles and read views: the state every part of the store shares."""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

from ragloom.errors import MissingExtraError, StoreError
from ragloom.store.indexes import AnnSettings
from ragloom.store.local import COMMIT, RESERVE_BYTES, STATE_DIR, LocalState
from ragloom.store.schema import TABLES
from ragloom.store.views import ReadView, open_view, version_gone

T = TypeVar("T")

#: A LanceDB connection keeps every index version it has read in its cache, with a file of each
#: open, for as long as it lives; the read connection is renewed once it holds this many
#: versions that the tables no longer use (see :meth:`StoreCore._open_view`).
STALE_INDEXES_BEFORE_RECONNECT = 4


def _lancedb() -> Any:  # noqa: ANN401 - the lancedb module
    # Lance logs routine events (a table being created, scoring columns) as warnings on stderr.
    os.environ.setdefault("LANCE_LOG", "error")
    try:
        import lancedb
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingExtraError("lancedb", "core", "the workspace store") from exc
    return lancedb


class StoreCore:
    """What the parts of :class:`~ragloom.store.lance.LanceStore` share: the connections, the
    table handles for writing, and the read views (each part is a subclass of this one)."""

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
        self._state: LocalState | remote.ObjectState
        if self.remote:
            self._state = remote.ObjectState(remote.join(self.location, STATE_DIR), lock_timeout=lock_timeout)
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self._state = LocalState(self.path / STATE_DIR)
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
        def released() -> Any:  # noqa: ANN401
            value = load()
            # The tables read to derive it are freed by now; without this Arrow's pool keeps
            # their memory (150 MB of the 100,000 chunk vectors' raw column, say) for itself.
            pa.default_memory_pool().release_unused()
            return value

        if self._in_transaction():
            return load()  # uncommitted data belongs to no commit
        with self.reading() as view:  # what load() reads is the view it is kept in
            return view.memo(key, released)

    def forget(self) -> None:
        """Drop everything :meth:`memo` and :meth:`document_texts` keep."""
        self.view().forget()

    # -- tables ------------------------------------------------------------------------------

    def _in_transaction(self) -> bool:
        return self._tx_owner == threading.get_ident()

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
