"""Numbered sources: what a writer may cite, and where each one is in its document.

The number of a source is assigned here, by the code, and never by a model: a writer cites
``[n]`` and :func:`~ragloom.synthesise.citations.check_citations` holds it to the numbers that
exist.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from ragloom.analyse.contradictions import Contradiction, Statement
from ragloom.errors import InvalidParameterError
from ragloom.types import ScoredChunk

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Source:
    """One citable span: ``text == document.text[start:end]``."""

    number: int
    chunk_id: str
    document_id: str
    source_path: str
    title: str
    section_path: str  # " > " joined
    lens: str
    start: int
    end: int
    text: str
    document_date: date | None = None
    score: float = 0.0

    @property
    def source_name(self) -> str:
        return self.source_path.rsplit("/", 1)[-1]

    def contains(self, document_id: str, start: int, end: int) -> bool:
        """Whether the span ``[start, end)`` of ``document_id`` lies within this source."""
        return document_id == self.document_id and self.start <= start and end <= self.end

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "source_path": self.source_path,
            "title": self.title,
            "section_path": self.section_path,
            "lens": self.lens,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "document_date": self.document_date.isoformat() if self.document_date else None,
            "score": self.score,
        }


def number_sources(chunks: Sequence[ScoredChunk], start: int = 1) -> list[Source]:
    """The chunks as sources numbered ``start``, ``start + 1``, … in the given order."""
    if start < 1:
        raise InvalidParameterError(f"start ({start}) must be at least 1: source numbers are 1-based")
    return [
        Source(number=n, chunk_id=c.chunk_id, document_id=c.document_id, source_path=c.source_path, title=c.title,
               section_path=c.section_path_str, lens=c.lens, start=c.start, end=c.end, text=c.text,
               document_date=c.document_date, score=c.score)
        for n, c in enumerate(chunks, start)
    ]


def number_report_sources(
    queries: Sequence[tuple[str, Sequence[ScoredChunk]]],
) -> tuple[list[tuple[str, tuple[Source, ...]]], list[Source]]:
    """One numbering for a whole report: each query's sources, and the report's source list.

    A chunk retrieved for several queries keeps one number (same id and same span; a chunk
    the optimiser trimmed differently is another source).
    """
    numbered: dict[tuple[str, int, int], Source] = {}
    per_query: list[tuple[str, tuple[Source, ...]]] = []
    for query, chunks in queries:
        mine: list[Source] = []
        for c in chunks:
            key = (c.chunk_id, c.start, c.end)
            if key not in numbered:
                numbered[key] = number_sources([c], start=len(numbered) + 1)[0]
            if numbered[key] not in mine:
                mine.append(numbered[key])
        per_query.append((query, tuple(mine)))
    return per_query, list(numbered.values())


def statement_number(statement: Statement, sources: Sequence[Source],
                     numbers: Mapping[str, int] | None = None) -> int | None:
    """The number of the source that holds ``statement``: the one its chunk id maps to when
    that source really contains its span, else any source of the same document that does."""
    by_number = {s.number: s for s in sources}
    if numbers and statement.chunk_id in numbers:
        mapped = by_number.get(numbers[statement.chunk_id])
        if mapped is not None and mapped.contains(statement.document_id, statement.start, statement.end):
            return mapped.number
    holders = [s for s in sources if s.contains(statement.document_id, statement.start, statement.end)]
    # Prefer the statement's own chunk, then the narrowest span: it reads closest to the claim.
    holders.sort(key=lambda s: (s.chunk_id != statement.chunk_id, s.end - s.start, s.number))
    return holders[0].number if holders else None


def add_statement_sources(sources: Sequence[Source], contradictions: Iterable[Contradiction],
                          numbers: Mapping[str, int] | None = None) -> list[Source]:
    """``sources`` plus one source per contradiction statement that none of them contains
    (see :func:`add_span_sources`)."""
    return add_span_sources(sources, (st for c in contradictions for st in c.statements), numbers)


def add_span_sources(sources: Sequence[Source], statements: Iterable[Statement],
                     numbers: Mapping[str, int] | None = None) -> list[Source]:
    """``sources`` plus one source per statement (a contradiction's side, a decision, a dated
    event) that none of them contains.

    The new sources are numbered after the last one; each is the statement's sentence, so its
    text is still the exact document span. Titles and dates come from the statement, or from
    another source of the same document when there is one.
    """
    out = list(sources)
    for st in statements:
        if statement_number(st, out, numbers) is not None:
            continue
        sibling = next((s for s in out if s.document_id == st.document_id), None)
        out.append(Source(
            number=max((s.number for s in out), default=0) + 1, chunk_id=st.chunk_id,
            document_id=st.document_id, source_path=st.source_path,
            title=sibling.title if sibling else st.source_path.rsplit("/", 1)[-1],
            section_path=st.section_path, lens=st.lens, start=st.start, end=st.end, text=st.text,
            document_date=st.document_date or (sibling.document_date if sibling else None), score=0.0))
    return out


def one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def format_sources(sources: Sequence[Source]) -> str:
    """The sources as the model reads them: numbered blocks with lens, document and section.

    The label ``[n]`` is the very form the model must cite, so that it copies it, not a title.
    """
    blocks = []
    for s in sources:
        document = one_line(s.title) or s.source_name
        if s.source_name and s.source_name != document:
            document += f" ({s.source_name})"
        meta = [f"Lens: {s.lens or 'none'}", f"Document: {document}"]
        if s.section_path:
            meta.append(f"Section: {one_line(s.section_path)}")
        meta.append("Date: " + (s.document_date.isoformat() if s.document_date else "undated"))
        blocks.append(f"[{s.number}]\n" + "\n".join(meta) + f"\n\n{s.text.strip()}\n")
    return "\n---\n\n".join(blocks)


def check_numbering(sources: Sequence[Source]) -> None:
    """Source numbers must be distinct and at least 1: citations are resolved through them."""
    seen: set[int] = set()
    for s in sources:
        if s.number < 1:
            raise InvalidParameterError(
                f"source number ({s.number}) must be at least 1; number them with number_sources")
        if s.number in seen:
            raise InvalidParameterError(
                f"source number {s.number} is used twice; number the sources once with number_sources")
        seen.add(s.number)


@dataclass(frozen=True, slots=True)
class Quote:
    """A verbatim statement from source ``number``: ``document.text[start:end] == text``."""

    number: int
    text: str
    start: int  # offsets in the document, not in the source
    end: int
    lens: str = ""
    document_id: str = ""

    @property
    def display(self) -> str:
        """The statement on one line, as it is written into an answer or a report."""
        return one_line(self.text)

    @classmethod
    def from_source(cls, source: Source, start: int, end: int) -> Quote:
        """The quote of ``source.text[start:end]`` (offsets in the source's text)."""
        if not 0 <= start < end <= len(source.text):
            raise InvalidParameterError(
                f"quote span ({start}, {end}) must lie within source [{source.number}] "
                f"of {len(source.text)} characters")
        return cls(source.number, source.text[start:end], source.start + start, source.start + end, source.lens,
                   source.document_id)

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "text": self.text, "start": self.start, "end": self.end, "lens": self.lens,
                "document_id": self.document_id}
