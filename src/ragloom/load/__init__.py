"""Files to :class:`~ragloom.types.Document`: Markdown, plain text, HTML, PDF and DOCX."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ragloom.errors import EmptyDocumentError, FileTooLargeError, InvalidParameterError, LoadError
from ragloom.load.normalize import (
    normalize_text,
    parse_date,
    split_front_matter,
    title_from_filename,
)
from ragloom.load.readers import READERS, convert
from ragloom.parse.doctype import DEFAULT_RULES, DocTypeRule, infer_doc_type
from ragloom.parse.sections import parse_sections
from ragloom.types import Document

__all__ = [
    "READERS",
    "document_id",
    "file_hash",
    "iter_files",
    "load_document",
    "normalize_text",
    "validate_name",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


def validate_name(kind: str, value: str) -> str:
    """Lens and tenant names: letters, digits, ``_ . -``; 1 to 64 characters."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidParameterError(
            f"{kind} {value!r} is not a valid name; use 1 to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit (for example 'team-structured')"
        )
    return value


def document_id(tenant: str, source_path: str) -> str:
    return hashlib.blake2b(f"{tenant}\0{source_path}".encode(), digest_size=10).hexdigest()


def iter_files(paths: Iterable[str | Path], *, extensions: Sequence[str] | None = None,
               include_hidden: bool = False) -> Iterator[Path]:
    """Every file under ``paths`` (recursively, sorted), filtered by extension for folders.

    A file named explicitly is always yielded, so that an unsupported one gets its error.
    """
    allowed = {e.lower() for e in (extensions or READERS)}
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if include_hidden or not d.startswith("."))
                for name in sorted(files):
                    if not include_hidden and name.startswith("."):
                        continue
                    if Path(name).suffix.lower() in allowed:
                        yield Path(root) / name
        else:
            yield path


def load_document(
    path: str | Path,
    *,
    lens: str,
    tenant: str = "default",
    max_bytes: int | None = 50 * 1024 * 1024,
    doc_type_rules: Sequence[DocTypeRule] = DEFAULT_RULES,
    default_doc_type: str = "Document",
    data: bytes | None = None,
) -> Document:
    """Read, convert and normalise one file. Raises a :class:`~ragloom.errors.LoadError`."""
    path = Path(path)
    try:
        stat = path.stat()
        if not path.is_file():
            raise LoadError(path, "not a regular file")
        if max_bytes is not None and stat.st_size > max_bytes:
            raise FileTooLargeError(
                path, f"{stat.st_size / 1e6:.1f} MB", fix=f"raise ingest.max_file_mb above {max_bytes / 1e6:.0f}"
            )
        if data is None:
            data = path.read_bytes()
    except OSError as exc:
        raise LoadError(path, exc.strerror or str(exc)) from exc
    if not data.strip():
        raise EmptyDocumentError(path)
    media_type, converted = convert(path, data)
    text = normalize_text(converted.markdown)
    meta: dict[str, str] = {}
    if media_type == "text/markdown":
        meta, text = split_front_matter(text)
    if not text.strip():
        raise EmptyDocumentError(path, "no text after conversion")
    source_path = path.resolve().as_posix()
    title = meta.get("title") or converted.title or _first_heading(text) or title_from_filename(path.stem)
    doc_type = meta.get("type") or infer_doc_type(
        path.name, text, lens, rules=doc_type_rules, default=default_doc_type
    )
    return Document(
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
        document_date=parse_date(meta.get("date", "")) or parse_date(path.name),
        metadata=meta,
    )


def file_hash(data: bytes) -> str:
    """The hash that tells an unchanged file on re-ingest (sha256 of its bytes)."""
    return hashlib.sha256(data).hexdigest()


def _first_heading(text: str) -> str | None:
    for section in parse_sections(text[:20000]):
        if section.level == 1:
            return section.title or None
    return None
