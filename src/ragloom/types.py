"""The values that flow between ragloom's stages: small frozen dataclasses.

Offsets are character offsets into ``Document.text`` (the normalised Markdown), half-open:
``document.text[chunk.start:chunk.end] == chunk.text`` always holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any

SECTION_SEPARATOR = " > "
#: Key in ``ScoredChunk.scores`` for the factor age decay multiplied the score by.
AGE_FACTOR_KEY = "age_factor"


def join_path(path: tuple[str, ...]) -> str:
    return SECTION_SEPARATOR.join(path)


def count_of(n: int, noun: str) -> str:
    """``1 chunk``, ``2 chunks``, ``1,204 sentences``: a count with its noun (regular plurals)."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


@dataclass(frozen=True, slots=True)
class Document:
    """One source file, converted to normalised Markdown."""

    text: str
    source_path: str
    title: str
    lens: str
    tenant: str
    media_type: str
    modified_at: datetime
    document_id: str
    file_hash: str
    doc_type: str = "Document"
    document_date: date | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def source_name(self) -> str:
        return self.source_path.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class Section:
    """A heading and the text under it up to the next heading (of any level)."""

    index: int
    level: int  # 1..6; 0 for text before the first heading
    title: str
    path: tuple[str, ...]
    start: int  # start of the heading line, or of the text for a section without heading
    end: int
    body_start: int  # first character after the heading line


@dataclass(frozen=True, slots=True)
class QualityIssue:
    kind: str  # length_violation | entity_split | poor_boundary
    severity: str  # low | medium | high
    description: str
    suggestion: str = ""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of a document, plus what enrichment added to it.

    ``text`` is what the language model and the user see; ``contextualized_text`` (the prefix
    followed by the text) is what gets embedded and indexed for BM25.
    """

    text: str
    start: int
    end: int
    token_count: int
    chunk_index: int = 0
    total_chunks: int = 0
    section_path: tuple[str, ...] = ()
    section_index: int = 0
    chunk_index_in_section: int = 0
    strategy: str = ""
    chunk_id: str = ""
    document_id: str = ""
    prev_id: str | None = None
    next_id: str | None = None
    prefix: str = ""
    content_hash: str = ""
    issues: tuple[QualityIssue, ...] = ()

    @property
    def contextualized_text(self) -> str:
        return self.prefix + self.text

    @property
    def section_path_str(self) -> str:
        return join_path(self.section_path)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["section_path"] = list(self.section_path)
        data["contextualized_text"] = self.contextualized_text
        return data


#: A sentence is a chunk produced by the ``sentence`` strategy: ``chunk_index`` is its
#: position in the document and ``prev_id``/``next_id`` link its neighbours.
SentenceNode = Chunk


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A stored chunk returned by a retriever, with its score and where it came from."""

    chunk_id: str
    document_id: str
    text: str
    score: float
    source_path: str
    lens: str
    tenant: str
    title: str
    section_path: tuple[str, ...]
    start: int
    end: int
    token_count: int
    chunk_index: int = 0
    total_chunks: int = 0
    doc_type: str = ""
    prefix: str = ""
    version_id: str = ""
    as_of: datetime | None = None
    document_date: date | None = None
    retriever: str = ""
    #: How well the chunk answers the query, from 0 to 1, on one scale for every mode: the
    #: cosine of query and text for the modes that rank by it (vector, window, dynamic), and
    #: the share of the best score for the modes that fuse or re-rank (bm25, hybrid,
    #: balanced, graph). Results come in its order; ``score`` and ``scores`` keep the raw values.
    relevance: float = 0.0
    scores: Mapping[str, float] = field(default_factory=dict)
    via: Mapping[str, Any] | None = None
    key_terms: tuple[str, ...] = ()
    time_refs: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    #: For sentence-window results: the (start, end) of every sentence in the span.
    sentences: tuple[tuple[int, int], ...] = ()
    vector: Any = field(default=None, repr=False, compare=False)

    @property
    def contextualized_text(self) -> str:
        return self.prefix + self.text

    @property
    def section_path_str(self) -> str:
        return join_path(self.section_path)

    @property
    def source_name(self) -> str:
        return self.source_path.rsplit("/", 1)[-1]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            if name == "vector":
                continue
            value = getattr(self, name)
            if isinstance(value, datetime | date):
                value = value.isoformat()
            elif isinstance(value, tuple):
                value = [list(v) if isinstance(v, tuple) else v for v in value]
            elif isinstance(value, Mapping):
                value = dict(value)
            out[name] = value
        return out
