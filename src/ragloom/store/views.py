"""Read views: one commit's tables, opened at the versions the commit names and never moved.

A :class:`ReadView` is what one read operation holds from its start to its end (see
:meth:`LanceStore.reading <ragloom.store.lance.LanceStore.reading>`): every table it reads is
a handle checked out at the version of one commit, so a query's chunks, sentences, edges and
mentions all come from that commit, whatever is committed meanwhile. A newer commit makes a
new view; the old one stays valid for the operations still holding it. What the store derives
from the tables (the sentence index's arrays, the context graph, document texts) is kept in the
view it was derived from, and goes with it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragloom.errors import StoreError

#: Characters of document text one view keeps in memory (:meth:`ReadView.texts`).
TEXT_MEMO_CHARS = 64_000_000
#: How LanceDB says that a table version was cleaned up (a ``ValueError``).
_GONE = re.compile(r"[Vv]ersion \d+ no longer exists")


#: How LanceDB says that a file of a version it reads was removed (a ``RuntimeError``).
_FILE_GONE = re.compile(r"Not found: \S*\.(?:lance|manifest|idx)\b|[Nn]o such file or directory")


def version_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says that a table version no longer exists (cleaned up by a writer)."""
    return isinstance(exc, ValueError) and bool(_GONE.search(str(exc)))


def files_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says that the version a read held, or a file of it, was cleaned up by a
    writer in another process (the read may run again on the newest commit)."""
    return version_gone(exc) or (isinstance(exc, RuntimeError | OSError) and bool(_FILE_GONE.search(str(exc))))


@dataclass(eq=False)
class ReadView:
    """The tables of one commit, for reading. ``tables`` maps a table's name to a handle at the
    version ``pins`` names (a table the commit does not have is absent); neither is changed once
    the view is made, so any number of threads may read through one view."""

    pins: Mapping[str, int]
    tables: Mapping[str, Any]
    #: The commit's sequence number (0: a workspace without commits, read at its newest versions).
    sequence: int = 0
    _memo: dict[Hashable, Any] = field(default_factory=dict, repr=False)
    _text_chars: int = field(default=0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def table(self, name: str) -> Any:  # noqa: ANN401 - a LanceDB table
        return self.tables.get(name)

    def memo(self, key: Hashable, load: Callable[[], Any]) -> Any:  # noqa: ANN401
        """``load()``, computed once for this view (two threads may both compute it; one value stays)."""
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        value = load()
        with self._lock:
            return self._memo.setdefault(key, value)

    def forget(self) -> None:
        with self._lock:
            self._memo.clear()
            self._text_chars = 0

    def texts(self, tenant: str, ids: set[str]) -> tuple[dict[str, str], list[str]]:
        """The document texts this view keeps, and the ids it does not have."""
        found: dict[str, str] = {}
        missing = []
        with self._lock:
            for doc in ids:
                text = self._memo.get(("text", tenant, doc))
                if text is None:
                    missing.append(doc)
                else:
                    found[doc] = text
        return found, missing

    def keep_texts(self, tenant: str, texts: Mapping[str, str]) -> None:
        """Keep ``texts`` for this view, within :data:`TEXT_MEMO_CHARS` (all dropped once past it)."""
        with self._lock:
            if self._text_chars > TEXT_MEMO_CHARS:
                for key in [k for k in self._memo if isinstance(k, tuple) and k[0] == "text"]:
                    del self._memo[key]
                self._text_chars = 0
            for doc, text in texts.items():
                self._memo[("text", tenant, doc)] = text
                self._text_chars += len(text)


def open_view(pins: Mapping[str, int], sequence: int, opener: Callable[[str], Any],
              previous: ReadView | None) -> ReadView:
    """A view at ``pins``: each table opened by ``opener(name)`` and checked out at its pinned
    version, reusing ``previous``'s handle where the version is the same (a handle at a fixed
    version is never moved, so two views may share it). Raises LanceDB's ``ValueError`` when a
    version no longer exists (:func:`version_gone`), for the caller to read the commit again."""
    tables: dict[str, Any] = {}
    for name, version in pins.items():
        if previous is not None and previous.pins.get(name) == version and name in previous.tables:
            tables[name] = previous.tables[name]
            continue
        handle = opener(name)
        if handle is None:
            raise StoreError(f"the commit names the table {name!r} at version {version}, but the table is missing; "
                             "run 'ragloom reindex' to rebuild the workspace")
        handle.checkout(version)  # time travel even at the newest version: the handle never moves
        tables[name] = handle
    return ReadView(dict(pins), tables, sequence)
