"""The store's own files beside local tables (commit record, pending marker, reserve) and its ``flock`` lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from pathlib import Path

from ragloom.errors import WorkspaceLockedError
from ragloom.store.locks import ReentrantLock

#: Where the store keeps its lock, commit record and pending marker, beside the tables.
STATE_DIR = "_ragloom"
#: The commit record, the pending marker and the space set aside for a rollback, in that folder.
COMMIT, PENDING, RESERVE = "commit.json", "pending", "reserve"
#: Space a local workspace sets aside (a file in its state folder) so that a write that fails
#: on a full disk can still be rolled back: the rollback gives it up first if it must. A
#: rollback writes a manifest per table and the commit record, a few KB each.
RESERVE_BYTES = 4 * 2**20


class FileLock(ReentrantLock):
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


class LocalState:
    """The commit record, the pending marker and the write lock as files beside the tables."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lock = FileLock(folder / "write.lock")

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
