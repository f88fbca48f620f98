"""Step 7: the text the model reads.

::

    # Context for query: what ships in Q2?
    Strategy: temporal | Sources: 2 | Tokens: 187

    ---
    ## Source 1: Roadmap (roadmap.md)
    Section: Plan > Q2 | Lens: engineering | Date: 2025-04-01 | Relevance: 0.92
    Related to: Source 2 (strong_overlap, temporal_sequence)

    <the chunk's naked text>

    ---
    ## Source 2: ...

Sources are named by their number in this text, never by an internal id, so the model can
cite them and a reader can follow a "Related to" line. :func:`parse_source_numbers` reads
the numbers back.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ragloom.context.model import Relationship
from ragloom.tokens import TokenCounter
from ragloom.types import ScoredChunk

SOURCE_SEPARATOR = "\n---\n"
#: Other sources named on a "Related to" line, strongest first.
MAX_RELATED = 3
#: Characters of the query repeated in the header; a pasted document is not a query.
QUERY_CHARS = 300
#: Fixed-point rounds for the header's own token count (it converges in one or two).
_TOKEN_ROUNDS = 5

_SPACE = re.compile(r"\s+")
_SOURCE_LINE = re.compile(r"^## Source (\d+): [^\n]*\n[^\n]*\n(?:Related to: ([^\n]*)\n)?", re.MULTILINE)
_RELATED_ITEM = re.compile(r"Source (\d+) \(([^)]*)\)")


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def display_query(query: str) -> str:
    q = _one_line(query)
    return q if len(q) <= QUERY_CHARS else q[: QUERY_CHARS - 1].rstrip() + "…"


def context_header(query: str, strategy: str, count: int, tokens: int) -> str:
    return f"# Context for query: {display_query(query)}\nStrategy: {strategy} | Sources: {count} | Tokens: {tokens}\n"


def source_label(chunk: ScoredChunk) -> str:
    title, name = _one_line(chunk.title), _one_line(chunk.source_name)
    if title and name and title != name:
        return f"{title} ({name})"
    return title or name or "untitled"


def source_meta(chunk: ScoredChunk) -> str:
    parts = []
    if chunk.section_path:
        parts.append("Section: " + _one_line(chunk.section_path_str))
    if chunk.lens:
        parts.append("Lens: " + _one_line(chunk.lens))
    parts.append("Date: " + (chunk.document_date.isoformat() if chunk.document_date else "undated"))
    parts.append(f"Relevance: {chunk.score:.2f}")
    return " | ".join(parts)


def related_line(related: Sequence[tuple[int, Sequence[str]]]) -> str:
    if not related:
        return ""
    return "Related to: " + ", ".join(f"Source {n} ({', '.join(types)})" for n, types in related) + "\n"


def source_block(number: int, chunk: ScoredChunk, related: Sequence[tuple[int, Sequence[str]]] = (),
                 *, text: str | None = None) -> str:
    """One source, from its separator to the end of its text."""
    body = chunk.text if text is None else text
    return (f"{SOURCE_SEPARATOR}## Source {number}: {source_label(chunk)}\n{source_meta(chunk)}\n"
            f"{related_line(related)}\n{body}\n")


def related_sources(chunk_id: str, relationships: Iterable[Relationship], numbers: Mapping[str, int],
                    *, limit: int = MAX_RELATED) -> list[tuple[int, tuple[str, ...]]]:
    """``(source number, relationship types)`` of the sources related to ``chunk_id``:
    the ``limit`` strongest in total, each with its types strongest first."""
    by_other: defaultdict[int, list[tuple[float, str]]] = defaultdict(list)
    for r in relationships:
        if chunk_id not in (r.source_id, r.target_id):
            continue
        number = numbers.get(r.other(chunk_id))
        if number is not None:
            by_other[number].append((r.strength, r.type))
    ranked = sorted(by_other.items(), key=lambda kv: (-sum(s for s, _ in kv[1]), kv[0]))[:limit]
    out = []
    for number, rels in ranked:
        types = tuple(dict.fromkeys(t for _, t in sorted(rels, key=lambda st: (-st[0], st[1]))))
        out.append((number, types))
    return out


def format_context(chunks: Sequence[ScoredChunk], relationships: Iterable[Relationship], query: str,
                   strategy: str, *, tokenizer: TokenCounter) -> tuple[str, int]:
    """The formatted context for ``chunks`` (already in reading order) and its token count.

    The header states the total token count of the whole text, itself included; the count
    is iterated to its fixed point, and the returned count is always that of the returned
    text.
    """
    # Each chunk's relationships, in their given order, so that no chunk scans all of them.
    by_chunk: defaultdict[str, list[Relationship]] = defaultdict(list)
    for r in relationships:
        by_chunk[r.source_id].append(r)
        if r.target_id != r.source_id:
            by_chunk[r.target_id].append(r)
    numbers = {c.chunk_id: n for n, c in enumerate(chunks, 1)}
    body = "".join(source_block(numbers[c.chunk_id], c, related_sources(c.chunk_id, by_chunk[c.chunk_id], numbers))
                   for c in chunks)
    stated = 0
    text = context_header(query, strategy, len(chunks), stated) + body
    actual = tokenizer.count(text)
    for _ in range(_TOKEN_ROUNDS):
        if actual == stated:
            break
        stated = actual
        text = context_header(query, strategy, len(chunks), stated) + body
        actual = tokenizer.count(text)
    return text, actual


def _source_headings(formatted: str) -> Iterator[tuple[int, list[tuple[str, str]]]]:
    """(source number, its "Related to" items as (number, types) text) for every source heading."""
    for m in _SOURCE_LINE.finditer(formatted):
        start = m.start()
        if formatted[max(0, start - len(SOURCE_SEPARATOR)) : start] != SOURCE_SEPARATOR:
            continue  # a "## Source" heading inside a chunk's own text
        yield int(m.group(1)), _RELATED_ITEM.findall(m.group(2) or "")


def parse_source_numbers(formatted: str) -> dict[int, tuple[int, ...]]:
    """Source number -> the source numbers on its "Related to" line, in the order written."""
    return {number: tuple(int(n) for n, _ in related) for number, related in _source_headings(formatted)}


def parse_related_types(formatted: str) -> dict[int, dict[int, tuple[str, ...]]]:
    """Source number -> {related source number: relationship types} from "Related to" lines."""
    return {number: {int(n): tuple(t.strip() for t in types.split(",")) for n, types in related}
            for number, related in _source_headings(formatted)}
