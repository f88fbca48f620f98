"""What every write lock of a workspace shares: re-entrant in one thread, queued between threads.

A subclass says how the lock is taken across processes (``_acquire``: a ``flock`` on a local
file, a lease on object storage) and given back (``_release``); :meth:`ReentrantLock.held`
takes it only in the outermost hold of a thread, and threads of one process queue for it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path

from ragloom.errors import WorkspaceLockedError


class ReentrantLock(ABC):
    """A cross-process lock held re-entrantly by one thread at a time."""

    def __init__(self, workspace: str | Path) -> None:
        #: What the lock guards, as its errors name it.
        self.workspace = workspace
        self._thread_lock = threading.RLock()
        self._depth = 0

    @contextlib.contextmanager
    def held(self, timeout: float, on_wait: Callable[[str], None] | None) -> Iterator[bool]:
        """Hold the lock; yields whether this is the outermost hold (the one that took it)."""
        started = time.monotonic()
        if not self._thread_lock.acquire(timeout=max(timeout, 0.0)):
            raise WorkspaceLockedError(self.workspace, "another thread of this process", timeout)
        try:
            self._depth += 1
            outer = self._depth == 1
            if outer:
                self._acquire(timeout - (time.monotonic() - started), on_wait)
            try:
                yield outer
            finally:
                if outer:
                    self._release()
        finally:
            self._depth -= 1
            self._thread_lock.release()

    @abstractmethod
    def _acquire(self, timeout: float, on_wait: Callable[[str], None] | None) -> None:
        """Take the lock across processes, waiting at most ``timeout`` seconds (``on_wait`` hears
        that it waits); raise :class:`~ragloom.errors.WorkspaceLockedError` when it cannot."""

    @abstractmethod
    def _release(self) -> None:
        """Give the lock taken by :meth:`_acquire` back."""
