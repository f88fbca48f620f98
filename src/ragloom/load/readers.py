"""Readers: bytes of one file to Markdown text.

Markdown and plain text are decoded here. HTML and DOCX go through Microsoft's markitdown
converters (MIT; HTML via BeautifulSoup and markdownify, DOCX via mammoth, headings kept),
called by format rather than through markitdown's content sniffing, which would turn a
corrupt PDF into "text". PDF goes through pdfminer.six's layout analysis (the library
markitdown itself uses), read here so that font sizes become Markdown headings: markitdown's
PDF output is flat text, and sections are what contextual prefixes are made of.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragloom.errors import (
    BinaryFileError,
    CorruptFileError,
    EncryptedFileError,
    LoadError,
    MissingExtraError,
    UnsupportedFormatError,
)


@dataclass(frozen=True, slots=True)
class Converted:
    markdown: str
    title: str | None = None


def _decode(path: Path, data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    if b"\x00" in data[:8192]:
        raise BinaryFileError(path, "NUL bytes found", fix="only text files can have this extension")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    text = data.decode("cp1252", errors="replace")
    controls = sum(1 for ch in text[:8192] if ord(ch) < 32 and ch not in "\t\n\r\f")
    if controls > len(text[:8192]) * 0.05:
        raise BinaryFileError(path, "not UTF-8 and mostly control characters")
    return text


def read_text(path: Path, data: bytes) -> Converted:
    return Converted(_decode(path, data))


def _markitdown(path: Path, data: bytes, converter_name: str, extension: str) -> Converted:
    try:
        from markitdown import StreamInfo, converters
    except ImportError as exc:
        raise MissingExtraError("markitdown", "convert", f"reading {extension} files such as {path}") from exc
    converter = getattr(converters, converter_name)()
    charset = "utf-8" if extension == ".html" else None
    try:
        result = converter.convert(io.BytesIO(data), StreamInfo(extension=extension, charset=charset))
    except ImportError as exc:  # markitdown installed without the extra for this format
        raise MissingExtraError(str(exc.name or "markitdown"), "convert", f"reading {path}") from exc
    except Exception as exc:  # converters raise whatever their parser raises
        name = type(exc).__name__
        if "Password" in name or "Encrypt" in name or "password" in str(exc).lower():
            raise EncryptedFileError(path, fix="remove the password and ingest again") from exc
        detail = f"{name}: {exc}".strip().rstrip(":")
        raise CorruptFileError(path, detail[:200]) from exc
    return Converted(result.markdown or "", result.title)


def read_html(path: Path, data: bytes) -> Converted:
    return _markitdown(path, _decode(path, data).encode("utf-8"), "HtmlConverter", ".html")


def read_pdf(path: Path, data: bytes) -> Converted:
    if not data.lstrip()[:5] == b"%PDF-":
        raise CorruptFileError(path, "no %PDF- header")
    try:
        from ragloom.load.pdf import pdf_to_markdown
    except ImportError as exc:
        raise MissingExtraError("pdfminer.six", "convert", f"reading PDF files such as {path}") from exc
    try:
        markdown, title = pdf_to_markdown(data)
    except Exception as exc:  # pdfminer raises many unrelated types for bad input
        name = type(exc).__name__
        if "Password" in name or "Encrypt" in name:
            raise EncryptedFileError(path, fix="remove the password and ingest again") from exc
        raise CorruptFileError(path, f"{name}: {exc}"[:200].rstrip(": ")) from exc
    return Converted(markdown, title)


def read_docx(path: Path, data: bytes) -> Converted:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
    except zipfile.BadZipFile as exc:
        raise CorruptFileError(path, "not a ZIP container, as a .docx must be") from exc
    if "EncryptedPackage" in names:
        raise EncryptedFileError(path, fix="remove the password and ingest again")
    if "word/document.xml" not in names:
        raise CorruptFileError(path, "no word/document.xml inside")
    converted = _markitdown(path, data, "DocxConverter", ".docx")
    return Converted(converted.markdown, converted.title or _docx_title(data))


_CORE_TITLE = re.compile(rb"<dc:title>([^<]*)</dc:title>")


def _docx_title(data: bytes) -> str | None:
    """The title in the document's properties (docProps/core.xml), if set."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            core = zf.read("docProps/core.xml")
    except (KeyError, zipfile.BadZipFile):
        return None
    m = _CORE_TITLE.search(core)
    if not m:
        return None
    import html

    return html.unescape(m.group(1).decode("utf-8", "replace")).strip() or None


def _ole_encrypted(path: Path, data: bytes) -> Converted:
    # Password-protected Office files are OLE compound files, not ZIPs.
    raise EncryptedFileError(path, fix="remove the password and ingest again")


#: extension -> (media type, reader)
READERS: dict[str, tuple[str, Callable[[Path, bytes], Converted]]] = {
    ".md": ("text/markdown", read_text),
    ".markdown": ("text/markdown", read_text),
    ".mdx": ("text/markdown", read_text),
    ".txt": ("text/plain", read_text),
    ".text": ("text/plain", read_text),
    ".rst": ("text/x-rst", read_text),
    ".html": ("text/html", read_html),
    ".htm": ("text/html", read_html),
    ".pdf": ("application/pdf", read_pdf),
    ".docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", read_docx),
}

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def convert(path: Path, data: bytes) -> tuple[str, Converted]:
    """(media type, converted text) of a file's bytes, chosen by its extension."""
    ext = path.suffix.lower()
    if ext not in READERS:
        raise UnsupportedFormatError(
            path, f"extension {ext or '(none)'!r}", fix="supported: " + ", ".join(sorted(READERS))
        )
    media_type, reader = READERS[ext]
    if ext == ".docx" and data.startswith(_OLE_MAGIC):
        return media_type, _ole_encrypted(path, data)
    try:
        return media_type, reader(path, data)
    except LoadError:
        raise
    except RecursionError as exc:
        raise CorruptFileError(path, "nesting too deep to convert") from exc
