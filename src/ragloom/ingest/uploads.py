"""Uploads (the web app's Ingest page, and ``POST /documents`` of the HTTP API): the name each
uploaded file is stored under, storing the batch in ``<workspace>/uploads/<tenant>/<lens>/``, and
taking back what the ingest refused.

A browser sends whatever name it likes (``..``, ``a/../../b``, a NUL, a newline). The stored
name is the last part of it after ``/`` or ``\\``; a name that is then empty, ``.`` or ``..``,
hidden, not UTF-8, longer than the file system allows, or holds a control character is refused
with a line naming the file, and the rest of the batch goes on.

Two files of one batch named alike (``notes.md`` from two folders, say) are two documents: the
second is stored as ``notes (2).md``, the way a browser names a second download, rather than
refusing the batch, which would send the user off to rename files that are fine. A file named
like an *earlier* upload of the lens is that document's new version (the page says so before
ingesting): that is how a document is updated by upload, and the earlier version stays
readable as of its date. Its earlier file is put aside while the ingest runs and put back if
the new one is refused.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ragloom.load.limits import display_path

if TYPE_CHECKING:
    from ragloom.ingest.report import IngestReport, Progress
    from ragloom.workspace import Workspace

__all__ = ["MAX_NAME_BYTES", "StoredUploads", "UploadName", "ingest_uploads", "store_uploads", "upload_folder",
           "upload_names"]

#: The longest file name (in UTF-8 bytes) that common file systems hold.
MAX_NAME_BYTES = 255
#: Where an earlier upload waits while its replacement is ingested (hidden: no ingest reads it).
ASIDE = ".replaced"


def upload_folder(workspace: Path, lens: str, tenant: str) -> Path:
    """``<workspace>/uploads/<tenant>/<lens>`` (both names already checked by ``validate_name``):
    one folder per tenant, so that two tenants' files of one name stay two files."""
    return workspace / "uploads" / tenant / lens


@dataclass(frozen=True, slots=True)
class UploadName:
    """Where one uploaded file goes: ``name`` in the lens's uploads folder, or why it is refused."""

    #: The name the browser sent.
    sent: str
    #: The file name to store it under; empty when refused.
    name: str = ""
    #: Why it is refused, as a line naming the file; empty when it is stored.
    refused: str = ""

    @property
    def renamed(self) -> bool:
        """Stored under another name than the one sent (a second file of the same name)."""
        return bool(self.name) and self.name != _last_part(self.sent)


def _last_part(sent: str) -> str:
    return sent.replace("\\", "/").rsplit("/", 1)[-1]


def _shown(sent: str) -> str:
    text = display_path(sent.encode("utf-8", "backslashreplace").decode("utf-8"))  # lone surrogates too
    return '"{}"'.format(text if len(text) <= 80 else f"{text[:60]}…{text[-12:]}")


def _problem(name: str) -> str | None:
    if not name.strip():
        return "no file name"
    if name in (".", ".."):
        return "not a file name"
    if name.startswith("."):
        return "a hidden file (its name starts with '.')"
    if any(unicodedata.category(c) == "Cc" for c in name):
        return "a control character in the name (NUL, a newline, …)"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "a name that is not valid UTF-8"
    if size > MAX_NAME_BYTES:
        return f"a name of {size} bytes, longer than the {MAX_NAME_BYTES} a file system holds"
    return None


def _key(name: str) -> str:
    # Names that one file system tells apart may be the same file on another (macOS: case and
    # Unicode form): two such names in a batch are treated as the same name.
    return unicodedata.normalize("NFC", name).casefold()


def _numbered(name: str, n: int) -> str:
    """``notes (n).md``, the stem shortened when the name would be too long."""
    dot = name.rfind(".")
    stem, suffix = (name[:dot], name[dot:]) if dot > 0 else (name, "")
    tag = f" ({n})"
    while stem and len(f"{stem}{tag}{suffix}".encode()) > MAX_NAME_BYTES:
        stem = stem[:-1]
    if not stem:  # a suffix that alone fills the name: number the name itself, shortened
        stem, suffix = name, ""
        while len(f"{stem}{tag}".encode()) > MAX_NAME_BYTES:
            stem = stem[:-1]
    return f"{stem}{tag}{suffix}"


def upload_names(sent: Sequence[str]) -> list[UploadName]:
    """The stored name of each uploaded file, in order (see the module's docstring).

    Every name given is a plain file name (no folder part, not ``.``/``..``, not hidden, no
    control character, at most :data:`MAX_NAME_BYTES` bytes), and no two are the same, even on
    a file system that ignores case. A name that comes first keeps its own spelling; a later
    file of the same name gets the first free ``name (2).ext``, ``name (3).ext``, …"""
    parts = [_last_part(s) for s in sent]
    problems = [_problem(p) for p in parts]
    taken: set[str] = set()
    first: dict[int, str] = {}
    for i, (part, problem) in enumerate(zip(parts, problems, strict=True)):
        if problem is None and _key(part) not in taken:
            taken.add(_key(part))
            first[i] = part
    out: list[UploadName] = []
    for i, (original, part, problem) in enumerate(zip(sent, parts, problems, strict=True)):
        if problem is not None:
            out.append(UploadName(original, refused=f"{_shown(original)}: {problem}; rename the file and upload it "
                                                    "again"))
            continue
        if i in first:
            out.append(UploadName(original, name=first[i]))
            continue
        n = 2
        while _key(name := _numbered(part, n)) in taken:
            n += 1
        taken.add(_key(name))
        out.append(UploadName(original, name=name))
    return out


@dataclass
class StoredUploads:
    """A batch written to its folder: the paths to ingest, and the earlier files they replace."""

    folder: Path
    paths: list[Path] = field(default_factory=list)
    #: stored path -> where the earlier file of that name waits (put back if the new one is refused).
    aside: dict[Path, Path] = field(default_factory=dict)
    _aside_folder: Path | None = None

    def put_aside(self, target: Path) -> None:
        if self._aside_folder is None:
            (self.folder / ASIDE).mkdir(exist_ok=True)
            self._aside_folder = Path(tempfile.mkdtemp(dir=self.folder / ASIDE))
        kept = self._aside_folder / target.name
        os.replace(target, kept)
        self.aside[target] = kept

    def keep_only(self, landed: Iterable[str]) -> list[Path]:
        """After an ingest that stopped part way: :meth:`settle` with every upload refused but
        those that ``landed`` (the sources of its report's lines that did not fail)."""
        kept = set(landed)
        return self.settle([display_path(p) for p in self.paths if display_path(p) not in kept and str(p) not in kept])

    def settle(self, refused: Iterable[str] | None) -> list[Path]:
        """After the ingest: remove the file of every upload it refused (``refused``: the report's
        failed sources; ``None``: every one, as when the ingest stopped), putting back the
        earlier file each replaced; drop the earlier files of the others. Returns the paths
        removed."""
        failed = None if refused is None else set(refused)
        removed: list[Path] = []
        for path in self.paths:
            if failed is None or display_path(path) in failed or str(path) in failed:
                path.unlink(missing_ok=True)
                removed.append(path)
                if path in self.aside:
                    os.replace(self.aside.pop(path), path)
        self.aside.clear()
        if self._aside_folder is not None:
            shutil.rmtree(self._aside_folder, ignore_errors=True)
            self._aside_folder = None
            try:
                (self.folder / ASIDE).rmdir()  # unless another batch left something there
            except OSError:
                pass
        return removed


def store_uploads(folder: Path, files: Sequence[tuple[str, bytes]]) -> StoredUploads:
    """Write ``(name, bytes)`` pairs (names from :func:`upload_names`) into ``folder``. A file
    already there with other bytes is put aside first (see :meth:`StoredUploads.settle`); on
    an error, nothing of the batch is left behind."""
    folder.mkdir(parents=True, exist_ok=True)
    stored = StoredUploads(folder)
    try:
        for name, data in files:
            _store(stored, name, data)
    except BaseException:
        stored.settle(None)
        raise
    return stored


def _store(stored: StoredUploads, name: str, data: bytes) -> None:
    target = stored.folder / name
    if target.parent != stored.folder or name in ("", ".", ".."):  # upload_names gives none of these
        raise ValueError(f"{name!r} is not a plain file name")
    if target.is_file() and not target.is_symlink() and target.read_bytes() != data:
        stored.put_aside(target)
    fd, tmp = tempfile.mkstemp(dir=stored.folder, prefix=".upload-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        # A reader never sees half a file; a link of that name is replaced, never written through.
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    stored.paths.append(target)


class Ingests(Protocol):
    """What storing uploads needs of an engine: its workspace and its ingest."""

    @property
    def workspace(self) -> Workspace: ...

    def ingest(self, paths: Sequence[Path], *, lens: str, tenant: str | None = ...,  # noqa: D102
               progress: Progress | None = ..., within: Sequence[str | Path] | None = ...) -> IngestReport: ...


def ingest_uploads(engine: Ingests, files: Sequence[tuple[str, bytes]], *, lens: str, tenant: str,
                   progress: Progress | None = None) -> IngestReport:
    """Store ``(name, bytes)`` pairs (names from :func:`upload_names`) in the tenant's uploads
    folder of ``lens`` and ingest them (nothing outside that folder is read, links included);
    then remove the file of every upload the ingest refused, putting back the earlier file of
    that name, so that a refused file (a zip bomb, say) does not stay on disk."""
    from ragloom.ingest.report import IngestReport

    folder = upload_folder(engine.workspace.path, lens, tenant)
    stored = store_uploads(folder, files)
    try:
        report = engine.ingest(stored.paths, lens=lens, tenant=tenant, progress=progress, within=[folder])
    except BaseException as exc:
        partial = getattr(exc, "report", None)  # a full disk says what landed before it
        if isinstance(partial, IngestReport):
            stored.keep_only(d["source"] for d in partial.documents if d["status"] != "failed")
        else:
            stored.settle(None)
        raise
    stored.settle(source for source, _ in report.failed)
    return report
