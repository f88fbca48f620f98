"""Text normalisation, done once, before any offset is taken."""

from __future__ import annotations

import re
import unicodedata
from datetime import date

_NEWLINES = re.compile(r"\r\n?|[\u2028\u2029\x0b\x0c\x85]")
# C0/C1 control characters other than tab and newline carry no text and confuse tokenizers.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
# The value is stripped in Python: "(.*?)[ \t]*$" backtracked over trailing blanks, quadratic
# in a line like "title: a" and 100,000 spaces (70 s for a 160 KB file).
_FM_LINE = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:(.*)$", re.MULTILINE)
_DATE = re.compile(r"(?<!\d)(20\d{2}|19\d{2})[-_.](0[1-9]|1[0-2])[-_.](0[1-9]|[12]\d|3[01])(?!\d)")


def normalize_text(text: str) -> str:
    """Newlines to ``\\n``, Unicode NFC, no BOM, no control characters, no lone surrogates."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.isascii():
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        text = unicodedata.normalize("NFC", text)
    text = _NEWLINES.sub("\n", text)
    return _CONTROL.sub("", text)


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """YAML-style ``key: value`` front matter at the top of a Markdown file, and the rest.

    Only flat scalar keys are read (title, date, lens, type ...); lists and nesting are kept as
    their raw text. The front matter is removed from the document text.
    """
    m = _FRONT_MATTER.match(text)
    if not m:
        return {}, text
    meta = {k.lower(): v.strip().strip("\"'") for k, v in _FM_LINE.findall(m.group(1))}
    return meta, text[m.end() :]


def parse_date(value: str) -> date | None:
    """The first ``YYYY-MM-DD`` (or with ``_`` / ``.``) date in ``value``."""
    m = _DATE.search(value)
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def title_from_filename(stem: str) -> str:
    words = re.sub(r"[_\-.]+", " ", stem).split()
    if not words:
        return stem
    return " ".join(w if any(c.isupper() for c in w) else w.capitalize() for w in words)
