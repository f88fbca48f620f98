"""Contextual prefixes, content hashes and chunk identities."""

from __future__ import annotations

import hashlib
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ragloom.config import PrefixSettings
from ragloom.errors import ConfigError
from ragloom.types import SECTION_SEPARATOR, Chunk, Document

ELLIPSIS = "…"
_FIELDS = {"title", "doc_type", "section", "lens", "source_name", "date"}


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _clip(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 1)
    if cut < limit // 2:
        cut = limit - 1
    return text[:cut].rstrip() + ELLIPSIS


def shorten_path(path: Sequence[str], limit: int) -> str:
    """A heading path of at most ``limit`` characters that keeps its two ends.

    The top heading and the innermost one carry the most context, so middle headings are
    replaced by an ellipsis first; if that is still too long, the titles themselves are cut.
    """
    full = SECTION_SEPARATOR.join(path)
    if len(full) <= limit:
        return full
    if len(path) == 1:
        return _clip(full, limit)
    head, middle, tail = path[0], list(path[1:-1]), path[-1]
    while middle:
        middle.pop(0)  # drop from the top: headings near the leaf say more about the chunk
        candidate = SECTION_SEPARATOR.join([head, ELLIPSIS, *middle, tail])
        if len(candidate) <= limit:
            return candidate
    # Even the two ends are too long: the leaf gets at least two thirds of the room.
    gap = [ELLIPSIS] if len(path) > 2 else []
    room = limit - len(SECTION_SEPARATOR.join(["", *gap, ""]))
    tail = _clip(tail, max(room - min(len(head), room // 3), 2))
    head = _clip(head, max(room - len(tail), 2))
    return _clip(SECTION_SEPARATOR.join([head, *gap, tail]), limit)


class PrefixBuilder:
    """Formats ``[Document: <title> - Type: <type> - Section: <A > B>]`` (the template is a setting)."""

    def __init__(self, settings: PrefixSettings | None = None) -> None:
        self.settings = settings or PrefixSettings()
        names = {f for _, f, _, _ in string.Formatter().parse(self.settings.template) if f}
        unknown = names - _FIELDS
        if unknown:
            raise ConfigError(
                f"prefix.template uses unknown field(s) {sorted(unknown)}; available: {sorted(_FIELDS)}"
            )

    def __call__(self, document: Document, section_path: Sequence[str]) -> str:
        s = self.settings
        section = shorten_path(section_path, s.max_section_chars) if section_path else s.empty_section
        body = s.template.format(
            title=_clip(document.title, s.max_title_chars),
            doc_type=document.doc_type,
            section=section,
            lens=document.lens,
            source_name=document.source_name,
            date=document.document_date.isoformat() if document.document_date else "undated",
        )
        return body + s.separator


def chunk_id(document_id: str, digest: str, occurrence: int) -> str:
    key = f"{document_id}:{digest}:{occurrence}"
    return hashlib.blake2b(key.encode(), digest_size=10).hexdigest()


def enrich_chunks(document: Document, chunks: Sequence[Chunk], prefix: PrefixBuilder | None) -> list[Chunk]:
    """Chunks with prefix, content hash, stable id and neighbour links.

    A chunk's id depends on the document, its text and how many identical texts precede it,
    so an unchanged chunk keeps its id when the document around it changes.
    """
    seen: Counter[str] = Counter()
    prefixes: dict[tuple[str, ...], str] = {}
    staged: list[Chunk] = []
    for chunk in chunks:
        digest = content_hash(chunk.text)
        occurrence = seen[digest]
        seen[digest] += 1
        text_prefix = ""
        if prefix is not None:
            if chunk.section_path not in prefixes:
                prefixes[chunk.section_path] = prefix(document, chunk.section_path)
            text_prefix = prefixes[chunk.section_path]
        staged.append(
            replace(
                chunk,
                chunk_id=chunk_id(document.document_id, digest, occurrence),
                document_id=document.document_id,
                content_hash=digest,
                prefix=text_prefix,
            )
        )
    return [
        replace(
            c,
            prev_id=staged[i - 1].chunk_id if i else None,
            next_id=staged[i + 1].chunk_id if i + 1 < len(staged) else None,
        )
        for i, c in enumerate(staged)
    ]
