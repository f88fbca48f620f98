"""The text indexed for BM25: what is embedded, plus the parts of compound identifiers.

``DiffExecutor``, ``run_target`` and ``HTTPServer2`` are one token each to a full-text index,
so a query about "the target runner" cannot meet ``run_target``. Their parts ("diff
executor", "run target", "http server 2") are appended to the indexed text, never to the text
shown or embedded; the whole identifiers stay indexed too.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(
    r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"  # snake_case
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"  # camelCase
    r"|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b"  # PascalCase
    r"|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b"  # HTTPServer
)
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def identifier_parts(text: str) -> str:
    """The distinct parts of the compound identifiers in ``text``, lower-cased, in order."""
    seen: dict[str, None] = {}
    for m in _IDENTIFIER.finditer(text):
        for part in _PARTS.findall(m.group(0)):
            seen.setdefault(part.lower(), None)
    return " ".join(seen)


def search_text(embedded: str, *, split_identifiers: bool = True) -> str:
    if not split_identifiers:
        return embedded
    parts = identifier_parts(embedded)
    return f"{embedded}\n{parts}" if parts else embedded
