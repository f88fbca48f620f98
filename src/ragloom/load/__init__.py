"""Files to :class:`~ragloom.types.Document`: Markdown, plain text, HTML, PDF and DOCX."""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from stat import S_ISREG

from ragloom.errors import (
    EmptyDocumentError,
    FileChangingError,
    FileTooLargeError,
    InvalidParameterError,
    NotRegularFileError,
)
from ragloom.load.limits import MIB, Limits, display_path, mib
from ragloom.load.normalize import (
    normalize_text,
    parse_date,
    split_front_matter,
    title_from_filename,
)
from ragloom.load.readers import ISOLATED, READERS, convert, media_type_of
from ragloom.load.scan import Found, file_kind, name_problem, real_path, scan, stat_error
from ragloom.load.worker import ConverterProcess
from ragloom.parse.doctype import DEFAULT_RULES, DocTypeRule, infer_doc_type
from ragloom.parse.sections import first_title
from ragloom.parse.timeref import extract_time_refs
from ragloom.types import Document

__all__ = [
    "READERS",
    "ConverterProcess",
    "Found",
    "Limits",
    "Loaded",
    "display_path",
    "document_id",
    "file_hash",
    "iter_files",
    "load_document",
    "load_file",
    "normalize_text",
    "changed_since",
    "read_checked",
    "read_file",
    "scan",
    "validate_name",
]

# fullmatch, not ``$``: "acme\n" is not the name "acme".
#: Lens and tenant names, as a regular expression (JSON Schema's ``pattern`` too).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
_NAME = re.compile(NAME_PATTERN.strip("^$"))


def validate_name(kind: str, value: str) -> str:
    """Lens and tenant names: letters, digits, ``_ . -``; 1 to 64 characters."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        shown = repr(value) if not isinstance(value, str) or len(value) <= 80 else (
            f"{value[:40]!r}… ({len(value)} characters)")
        raise InvalidParameterError(
            f"{kind} {shown} is not a valid name; use 1 to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit (for example 'team-structured')"
        )
    return value


def document_id(tenant: str, source_path: str) -> str:
    return hashlib.blake2b(f"{tenant}\0{source_path}".encode(), digest_size=10).hexdigest()


def iter_files(paths: Iterable[str | Path], *, extensions: Sequence[str] | None = None,
               include_hidden: bool = False) -> Iterator[Path]:
    """Every file under ``paths`` (recursively, sorted, each once), filtered by extension for
    folders; see :func:`scan`, which also says why an entry is not a document.

    A file named explicitly is always yielded, so that an unsupported one gets its error.
    """
    for found in scan(paths, extensions=extensions or list(READERS), include_hidden=include_hidden):
        yield found.path


@dataclass(frozen=True, slots=True)
class Loaded:
    """A loaded document, and what was done to read it (one note per fix: "read as
    Windows-1252 (not valid UTF-8)")."""

    document: Document
    notes: tuple[str, ...] = ()


def load_document(
    path: str | Path,
    *,
    lens: str,
    tenant: str = "default",
    max_bytes: int | None = 50 * MIB,
    doc_type_rules: Sequence[DocTypeRule] = DEFAULT_RULES,
    default_doc_type: str = "Document",
    data: bytes | None = None,
) -> Document:
    """Read, convert and normalise one file. Raises a :class:`~ragloom.errors.LoadError`.

    ``max_bytes`` bounds the file on disk (``ingest.max_file_mb``); :func:`load_file` takes
    every ``[ingest]`` bound and says what was done to read the file.
    """
    limits = Limits(max_file_mb=None if max_bytes is None else max_bytes / MIB, max_text_mb=None,
                    max_unpacked_mb=None, max_nesting=None, max_rows=None)
    return load_file(path, lens=lens, tenant=tenant, limits=limits, doc_type_rules=doc_type_rules,
                     default_doc_type=default_doc_type, data=data).document


def load_file(
    path: str | Path,
    *,
    lens: str,
    tenant: str = "default",
    limits: Limits = Limits(),  # noqa: B008 - frozen
    doc_type_rules: Sequence[DocTypeRule] = DEFAULT_RULES,
    default_doc_type: str = "Document",
    data: bytes | None = None,
    converter: ConverterProcess | None = None,
) -> Loaded:
    """Read, convert and normalise one file within ``limits`` (the ``[ingest]`` settings).

    A file that is not a regular file is never opened; one above ``max_file_mb`` is never
    read; rich formats go to ``converter`` (a child process under ``max_seconds``) when given.
    Raises a :class:`~ragloom.errors.LoadError` that names the file, the reason and the fix.
    """
    path = Path(path)
    shown = display_path(path)
    stat = check_file(path, limits)
    if data is None:
        data, stat = _read(path, limits.file_bytes, stat)
    if not data.strip():
        raise EmptyDocumentError(shown)
    if converter is not None and path.suffix.lower() in ISOLATED:
        media_type, converted = converter.convert(path, data, limits)
    else:
        media_type, converted = convert(path, data, limits)
    text = normalize_text(converted.markdown)
    meta: dict[str, str] = {}
    if media_type == "text/markdown":
        meta, text = split_front_matter(text)
    if not text.strip():
        raise EmptyDocumentError(shown, "no text after conversion")
    source_path = Path(real_path(path)).as_posix()
    heading = _first_heading(text)
    title = meta.get("title") or converted.title or heading or title_from_filename(path.stem)
    document_date, date_source = dated(meta, path.name, heading, converted.date)
    if date_source:
        meta = {**meta, "date_source": date_source}
    doc_type = meta.get("type") or infer_doc_type(
        path.name, text, lens, rules=doc_type_rules, default=default_doc_type
    )
    document = Document(
        text=text,
        source_path=source_path,
        title=" ".join(title.split()),
        lens=lens,
        tenant=tenant,
        media_type=media_type,
        modified_at=datetime.fromtimestamp(stat.st_mtime, tz=UTC),
        document_id=document_id(tenant, source_path),
        file_hash=file_hash(data),
        doc_type=doc_type,
        document_date=document_date,
        metadata=meta,
    )
    return Loaded(document, converted.notes)


def check_file(path: Path, limits: Limits) -> os.stat_result:
    """Everything that can be said of a file before reading it: a name the store can hold, a
    supported extension, a regular file (a FIFO is never opened), within ``ingest.max_file_mb``."""
    problem = name_problem(path)
    if problem is not None:
        raise problem
    if path.is_dir():  # before the extension, which a folder rarely has
        raise NotRegularFileError(display_path(path), "it is a folder; one file is read here",
                                  fix="name one file in it, or ingest the folder ('ragloom ingest FOLDER --lens NAME')")
    media_type_of(path)  # an unsupported extension fails before anything is read
    try:
        stat = path.stat()
    except OSError as exc:
        raise stat_error(path, exc) from exc
    if not S_ISREG(stat.st_mode):
        raise NotRegularFileError(display_path(path), f"it is {file_kind(stat.st_mode)}; never opened",
                                  fix="leave it out")
    limit = limits.file_bytes
    if limit is not None and stat.st_size > limit:
        size = mib(stat.st_size, limits.max_file_mb)
        raise FileTooLargeError(display_path(path), f"{size}, above ingest.max_file_mb = {limits.max_file_mb:g}",
                                fix="raise ingest.max_file_mb or leave the file out")
    return stat


def read_file(path: str | Path, limits: Limits = Limits()) -> bytes:  # noqa: B008 - frozen
    """A file's bytes after :func:`check_file` (what ingest hashes to tell an unchanged file)."""
    return read_checked(path, limits)[0]


def read_checked(path: str | Path, limits: Limits = Limits()) -> tuple[bytes, os.stat_result]:  # noqa: B008
    """A file's bytes after :func:`check_file`, and the file's state when they were read (for
    :func:`changed_since`, once whatever uses them is about to keep them)."""
    path = Path(path)
    return _read(path, limits.file_bytes, check_file(path, limits))


#: A file modified this recently when read may still be being written in parts: it is looked at
#: again, at least this long after, before what was read is stored (:func:`changed_since`).
SETTLE_SECONDS = 0.05
#: Reads of a file that keeps changing before it is reported.
READ_TRIES = 4


def _read(path: Path, limit: int | None, before: os.stat_result) -> tuple[bytes, os.stat_result]:
    """The file's bytes, never more than ``limit`` (a file growing past it is refused), read
    while it did not change: the same file, size and modification time before the read, on the
    open file after it and on the path after it. A file that keeps changing is reported, not
    stored half-written."""
    for attempt in range(READ_TRIES):
        try:
            with path.open("rb") as f:
                data = f.read() if limit is None else f.read(limit + 1)
                opened = os.fstat(f.fileno())
            after = path.stat()
        except OSError as exc:
            raise stat_error(path, exc) from exc
        if limit is not None and len(data) > limit:
            raise FileTooLargeError(display_path(path), f"more than {mib(limit)} when read (it is growing)",
                                    fix="ingest it once it is complete")
        if _same(opened, before) and _same(after, before) and len(data) == after.st_size:
            return data, after
        before = after
        time.sleep(SETTLE_SECONDS * (attempt + 1))
    raise _changing(path, f"it changed each of the {READ_TRIES} times it was read")


def changed_since(path: str | Path, read: os.stat_result) -> FileChangingError | None:
    """Whether the file changed after it was read as ``read`` says (another program was still
    writing it, in parts, with a pause while it was read): the error to report, or None.

    Called just before what was read is stored; a file modified within :data:`SETTLE_SECONDS`
    of the read is looked at no sooner than that after, so that a writer's short pause is not
    taken for the end. A file gone since is not a change (what was read was whole)."""
    wait = SETTLE_SECONDS - (time.time() - read.st_mtime)
    if wait > 0:
        time.sleep(wait)
    try:
        now = Path(path).stat()
    except OSError:
        return None
    if _same(now, read):
        return None
    return _changing(Path(path), "it changed after it was read")


def _changing(path: Path, detail: str) -> FileChangingError:
    return FileChangingError(display_path(path), detail,
                             fix="ingest it again once the program writing it has finished")


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    """The same file, unchanged: device, inode, size and modification time (in nanoseconds)."""
    return (a.st_dev, a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_dev, b.st_ino, b.st_size, b.st_mtime_ns)


def file_hash(data: bytes) -> str:
    """The hash that tells an unchanged file on re-ingest (sha256 of its bytes)."""
    return hashlib.sha256(data).hexdigest()


def dated(meta: Mapping[str, str], filename: str, heading: str | None,
          embedded: str | None) -> tuple[date | None, str]:
    """A document's own date and where it came from: its front matter's ``date``, a date in
    its file name (``2026-02-18.md``), one in its first heading ("Sync meeting, March 5, 2024"),
    or its file's metadata (a PDF's creation date), in that order; ``(None, "")`` when none."""
    for source, value in (("front matter", meta.get("date", "")), ("file name", filename)):
        found = parse_date(value)
        if found is not None:
            return found, source
    if heading:
        found = parse_date(heading) or next((r.period_start for r in extract_time_refs(heading)
                                             if r.kind == "date" and r.period_start is not None), None)
        if found is not None:
            return found, "first heading"
    if embedded:
        found = parse_date(embedded)
        if found is not None:
            return found, "file metadata"
    return None, ""


def _first_heading(text: str) -> str | None:
    return first_title(text[:20000])
