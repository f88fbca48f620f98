"""What one file may cost: size on disk, converted text, unpacked parts, nesting, rows, time.

Memory and time follow what a file *expands to*, not its size on disk: a 1 MB DOCX may hold
400 MB of XML, and a 45 MB Markdown file makes a million sentence rows. Each bound is an
``[ingest]`` setting, and a file above one is refused with a line that names the setting and
its configured value, in the unit it is compared in (MiB: 2**20 bytes).
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragloom.config import IngestSettings

MIB = 1024 * 1024


def mib(size: int, limit: float | None = None) -> str:
    """A byte count in MiB, as the limits are written: ``52.4 MiB``; with more digits when one
    decimal would not show that it is above ``limit`` (``10.01 MiB`` for a limit of 10)."""
    value = size / MIB
    digits = 1
    while limit is not None and digits < 6 and round(value, digits) <= limit:
        digits += 1
    return f"{value:.{digits}f} MiB"


@dataclass(frozen=True, slots=True)
class Limits:
    """The ``[ingest]`` bounds, in the settings' own units (``None``: no bound)."""

    max_file_mb: float | None = 50.0
    max_text_mb: float | None = 10.0
    max_unpacked_mb: float | None = 256.0
    max_nesting: int | None = 256
    max_rows: int | None = 100_000
    max_seconds: float | None = None

    @classmethod
    def from_settings(cls, s: IngestSettings) -> Limits:
        return cls(max_file_mb=s.max_file_mb, max_text_mb=s.max_text_mb, max_unpacked_mb=s.max_unpacked_mb,
                   max_nesting=s.max_nesting, max_rows=s.max_rows_per_file,
                   max_seconds=s.max_seconds_per_file or None)

    @staticmethod
    def _bytes(value: float | None) -> int | None:
        return None if value is None else int(value * MIB)

    @property
    def file_bytes(self) -> int | None:
        return self._bytes(self.max_file_mb)

    @property
    def text_bytes(self) -> int | None:
        return self._bytes(self.max_text_mb)

    @property
    def unpacked_bytes(self) -> int | None:
        return self._bytes(self.max_unpacked_mb)


def display_path(path: str | Path) -> str:
    """A path as one printable line: bytes that are not UTF-8 as ``\\xff``, control characters
    (a newline in a file name) escaped, so that a message about the file stays one line and
    can be written to any terminal or JSON."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace") if not isinstance(path, str) or _has_surrogates(
        path) else path
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else _escape(c) for c in text)


def _escape(char: str) -> str:
    if unicodedata.category(char) == "Zs":
        return char
    return char.encode("unicode_escape").decode("ascii")


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
