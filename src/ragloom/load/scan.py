"""Finding the files of an ingest: every file once, and a reason for each that is not a document.

A folder is read recursively (sorted, hidden entries skipped unless asked), following links to
folders; a link that leads back into a folder being read is a loop, reported and not followed.
The same file reached twice (a link, a path given twice, folders that overlap) is listed once,
by its real path. FIFOs, sockets and devices are reported without ever being opened (reading a
FIFO blocks), and so are files whose names the store cannot hold.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ragloom.errors import (
    FileNameError,
    LoadError,
    NotRegularFileError,
    OutsideRootsError,
    SymlinkLoopError,
    UnreadableFileError,
)
from ragloom.load.limits import display_path


@dataclass(frozen=True, slots=True)
class Found:
    """A file to ingest (``problem`` is None), or an entry to report and skip."""

    path: Path
    #: The real path (links resolved), POSIX form; what a document is stored under.
    real: str
    problem: LoadError | None = None

    @property
    def display(self) -> str:
        """The path as one printable line (for messages)."""
        return display_path(self.path)


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a file"


def stat_error(path: Path, exc: OSError) -> LoadError:
    """The :class:`LoadError` for an ``OSError`` met while looking at or reading ``path``."""
    shown = display_path(path)
    if exc.errno == errno.ELOOP:
        return SymlinkLoopError(shown, "the link leads back to itself", fix="fix or remove the link")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return UnreadableFileError(shown, "permission denied", fix="make it readable (chmod +r) or leave it out")
    if exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return UnreadableFileError(shown, f"broken link to {display_path(os.readlink(path))}",
                                       fix="fix or remove the link")
        return UnreadableFileError(shown, "no such file or folder", fix="check the path")
    return UnreadableFileError(shown, exc.strerror or type(exc).__name__)


def name_problem(path: Path) -> LoadError | None:
    """A file name the store cannot keep: LanceDB holds paths as UTF-8 text."""
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        return FileNameError(display_path(path), "its bytes are shown as \\x..", fix="rename the file")
    return None


def real_path(path: Path) -> str:
    """``path`` with every link resolved, as POSIX text (the identity of a file in one run)."""
    return Path(os.path.realpath(path)).as_posix()


def scan(paths: Iterable[str | Path], *, extensions: Sequence[str], include_hidden: bool = False,
         skipped: Counter[str] | None = None, within: Sequence[str | Path] | None = None) -> list[Found]:
    """Every file under ``paths``, once each, and every entry that must be reported instead.

    With ``within``, every entry whose real path (links resolved) lies outside those folders is
    reported and never read (the HTTP API's ``server.ingest_roots``).

    Folders are filtered by ``extensions``; a path named explicitly is always listed, so that
    an unsupported one gets its error. The files of other types found in folders are counted
    by extension in ``skipped`` (``""`` for none), so that a caller can say what it left out.
    """
    scanner = _Scanner({e.lower() for e in extensions}, include_hidden,
                       skipped if skipped is not None else Counter())
    for raw in paths:
        scanner.root(Path(raw))
    if within is None:
        return scanner.found
    return [f if inside(f.path, within) else replace(f, problem=OutsideRootsError(f.display))
            for f in scanner.found]


def inside(path: str | Path, roots: Iterable[str | Path]) -> bool:
    """Whether ``path``, every link resolved, is one of ``roots`` or lies under one (resolved too)."""
    real = real_path(Path(path)).rstrip("/") + "/"
    return any(real.startswith(real_path(Path(r)).rstrip("/") + "/") for r in roots)


class _Scanner:
    def __init__(self, allowed: set[str], include_hidden: bool, skipped: Counter[str]) -> None:
        self.allowed = allowed
        self.include_hidden = include_hidden
        self.skipped = skipped
        self.found: list[Found] = []
        self.seen: dict[str, int] = {}  # real paths of the files listed -> where in ``found``
        self.walked: set[str] = set()  # real paths of the folders read

    def root(self, path: Path) -> None:
        try:
            st = path.stat()
        except OSError as exc:
            self.found.append(Found(path, path.as_posix(), stat_error(path, exc)))
            return
        if stat.S_ISDIR(st.st_mode):
            self.walk(path)
        else:
            self.add(path, st, explicit=True)

    def add(self, path: Path, st: os.stat_result, *, explicit: bool) -> None:
        if not stat.S_ISREG(st.st_mode):
            if explicit or not stat.S_ISDIR(st.st_mode):
                self.found.append(Found(path, path.as_posix(), NotRegularFileError(
                    display_path(path), f"it is {file_kind(st.st_mode)}; never opened", fix="leave it out")))
            return
        real = real_path(path)
        if real in self.seen:
            # The same file reached again: read once, named by its own path rather than a link's.
            at = self.seen[real]
            if Path(os.path.abspath(path)).as_posix() == real and self.found[at].path != path:
                self.found[at] = Found(path, real, name_problem(path))
            return
        self.seen[real] = len(self.found)
        self.found.append(Found(path, real, name_problem(path)))

    def walk(self, root: Path) -> None:
        """Depth first, sorted, without recursion (a deep tree must not exhaust the stack)."""
        top = real_path(root)
        if top in self.walked:
            return
        self.walked.add(top)
        stack: list[tuple[Path, str]] = [(root, top)]
        while stack:
            folder, real = stack.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                self.found.append(Found(folder, real, stat_error(folder, exc)))
                continue
            subfolders: list[tuple[Path, str]] = []
            for entry in entries:
                if not self.include_hidden and entry.name.startswith("."):
                    continue
                path = Path(entry.path)
                wanted = Path(entry.name).suffix.lower() in self.allowed
                try:
                    st = entry.stat()  # follows links
                except OSError as exc:
                    if wanted:
                        self.found.append(Found(path, path.as_posix(), stat_error(path, exc)))
                    continue
                if stat.S_ISDIR(st.st_mode):
                    target = real_path(path)
                    if target == real or real.startswith(target.rstrip("/") + "/"):
                        self.found.append(Found(path, target, SymlinkLoopError(
                            display_path(path), f"leads back to {display_path(target)}, which contains it",
                            fix="not followed; remove the link or point it elsewhere")))
                    elif target not in self.walked:
                        self.walked.add(target)
                        subfolders.append((path, target))
                elif wanted:
                    self.add(path, st, explicit=False)
                elif stat.S_ISREG(st.st_mode):
                    self.skipped[path.suffix.lower()] += 1
            stack.extend(reversed(subfolders))
