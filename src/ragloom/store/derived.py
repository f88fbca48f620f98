"""Arrays derived from one version of a table, kept as files beside a local workspace's tables
and read back memory-mapped.

A query process holds what it derives from the tables once per commit (the sentence index: a
million sentences' vectors in 0.77 GB of half precision). Kept in memory, every process pays
for it in resident memory and in the seconds it takes to read the table again. Kept as ``.npy``
files named after the table's version, the first process to need them writes them, and every
process after maps them: the kernel reads in the pages a query touches, and they stay in the
page cache, shared between processes and given back under pressure, instead of in each
process's own memory.

A folder is written whole under a temporary name and renamed into place, so a reader finds it
complete or not at all; a newer version's folder replaces the older ones of the same name
(a process that mapped an older file keeps reading it: the file lives until it is unmapped).
Object storage, a write transaction (whose rows belong to no version yet) and a folder that
cannot be written all fall back to arrays in memory: the caller's ``load`` returns None then.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import numpy as np

#: A temporary folder older than this was left by a process that died while writing it.
STALE_SECONDS = 3600.0


class DerivedFiles:
    """The files derived under one name from one version of a table (``key``)."""

    def __init__(self, root: Path, name: str, key: str) -> None:
        self.root = root
        self.name = name
        self.folder = root / f"{name}-{key}"

    def load(self) -> dict[str, np.ndarray] | None:
        """Every array of the folder, memory-mapped read-only; None when there is no whole folder.

        Each is a plain array viewing its mapped file: a row of a ``numpy.memmap`` costs three
        times a plain array's to index (1.7 against 0.5 ms for 500 rows)."""
        try:
            return {path.stem: np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))
                    for path in sorted(self.folder.glob("*.npy"))} or None
        except (OSError, ValueError):  # removed by a newer version meanwhile, or cut short
            return None

    def keep(self, write: Callable[[Path], None]) -> dict[str, np.ndarray] | None:
        """The arrays ``write(folder)`` saves as ``.npy`` files there, mapped back; None when
        they could not be written (a full disk, a read-only workspace), and the caller keeps
        them in memory."""
        try:
            with self.writing() as folder:
                write(folder)
        except OSError:
            return None
        return self.load()

    @contextlib.contextmanager
    def writing(self) -> Iterator[Path]:
        """A temporary folder to write the arrays into, renamed into place when the block ends
        (another process's whole folder, if it won the race, is kept instead); removed, and the
        error raised, if the block fails."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._clear_stale()
        temporary = self.root / f".{self.folder.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        temporary.mkdir()
        try:
            yield temporary
            try:
                temporary.rename(self.folder)
            except OSError:
                if not self.folder.is_dir():
                    raise
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
        for older in self.root.glob(f"{self.name}-*"):
            if older != self.folder:
                shutil.rmtree(older, ignore_errors=True)

    def _clear_stale(self) -> None:
        now = time.time()
        for left in self.root.glob(f".{self.name}-*"):
            with contextlib.suppress(OSError):
                if now - left.stat().st_mtime > STALE_SECONDS:
                    shutil.rmtree(left, ignore_errors=True)


def save_arrays(folder: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Each array as ``folder/<name>.npy``."""
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)


class RowFile:
    """A ``.npy`` file of ``rows`` rows of ``dim`` values, written a few rows at a time at the
    places they go (rows arrive in the table's order, and the file is in another)."""

    def __init__(self, path: Path, rows: int, dim: int, dtype: np.dtype[np.generic]) -> None:
        self.dtype, self.dim = dtype, dim
        header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (rows, dim)}
        self._file = path.open("wb")
        np.lib.format.write_array_header_1_0(self._file, header)
        self._offset = self._file.tell()
        self._file.truncate(self._offset + rows * dim * dtype.itemsize)

    def put(self, places: np.ndarray, values: np.ndarray) -> None:
        """``values[i]`` as row ``places[i]``, one write per run of consecutive places."""
        order = np.argsort(places, kind="stable")
        places, values = places[order], np.ascontiguousarray(values[order], dtype=self.dtype)
        cuts = np.flatnonzero(np.diff(places) != 1) + 1
        row_bytes = self.dim * self.dtype.itemsize
        fd = self._file.fileno()
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(places)], strict=True):
            os.pwrite(fd, values[lo:hi].tobytes(), self._offset + int(places[lo]) * row_bytes)

    def close(self) -> None:
        self._file.close()
