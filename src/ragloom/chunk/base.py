"""The chunker interface, the strategy registry, and helpers shared by strategies."""

from __future__ import annotations

import bisect
import inspect
import re
import threading
import zlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ragloom.checks import check_known
from ragloom.errors import InvalidParameterError
from ragloom.parse.sections import MERGE_SECTIONS as MERGE_SECTIONS
from ragloom.parse.sections import MIN_CHUNK_CHARS as MIN_CHUNK_CHARS
from ragloom.parse.sections import merge_sections, parse_sections
from ragloom.parse.sentences import trim as trim  # re-exported: the strategies import it from here
from ragloom.plugins import Registry
from ragloom.tokens import DEFAULT_TOKENIZER, TokenCounter, get_tokenizer
from ragloom.types import Chunk, QualityIssue, Section

if TYPE_CHECKING:
    from ragloom.config import ChunkingSettings

#: (start, end, token_count, quality issues) of one chunk, in document offsets.
Span = tuple[int, int, int, tuple[QualityIssue, ...]]


def _builtin_chunkers() -> dict[str, type[Chunker]]:
    from ragloom.chunk.boundary import BoundaryChunker
    from ragloom.chunk.sentence import SentenceChunker
    from ragloom.chunk.token import TokenChunker

    return {c.name: c for c in (TokenChunker, BoundaryChunker, SentenceChunker)}


#: Chunking strategies by name: the built-ins, then the ``ragloom.chunkers`` entry points.
CHUNKERS: Registry[type[Chunker]] = Registry("chunking strategy", "ragloom.chunkers", _builtin_chunkers)
_BUILT: dict[tuple[type[Chunker], tuple[tuple[str, Any], ...]], Chunker] = {}
_BUILT_LOCK = threading.Lock()
_BUILT_MAX = 64


def register(cls: type[Chunker]) -> type[Chunker]:
    """Add a strategy under its ``name`` (for code that defines one without a package)."""
    return CHUNKERS.register(cls.name, cls)


def chunker_names() -> list[str]:
    return CHUNKERS.names()


def get_chunker(name: str, **params: object) -> Chunker:
    """The chunking strategy registered as ``name``, built with ``params``.

    Chunkers hold no state between calls, so one built with the same parameters is reused:
    building one per document (``chunk_text`` in a loop) would otherwise cost a third of the
    chunking time.
    """
    return CHUNKERS.get(name).build(**params)


@dataclass(frozen=True, slots=True)
class SizeModel:
    """What "too short" and "too long" mean for a strategy's chunks, in ``unit`` (chars or
    tokens); chunk quality scores lengths against it."""

    unit: str
    target: int
    minimum: int
    maximum: int


def resolve_tokenizer(tokenizer: str | TokenCounter) -> TokenCounter:
    return get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer


def require(condition: bool, message: str) -> None:
    if not condition:
        raise InvalidParameterError(message)


class Protected:
    """Sorted, merged spans that no cut may fall strictly inside."""

    def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for a, b in sorted((int(a), int(b)) for a, b in spans if b - a > 1):
            if merged and a < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]

    def __bool__(self) -> bool:
        return bool(self.starts)

    def containing(self, cut: int) -> tuple[int, int] | None:
        """The protected span with ``start < cut < end``, if any."""
        i = bisect.bisect_left(self.starts, cut) - 1
        if i >= 0 and self.ends[i] > cut:
            return self.starts[i], self.ends[i]
        return None

    def allows(self, cut: int) -> bool:
        return self.containing(cut) is None


def _within(spans: Sequence[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """``spans`` clipped to a text of ``length`` characters; one that ends before it starts is an error."""
    clipped = []
    for a, b in spans:
        if b < a:
            raise InvalidParameterError(f"protected span ({a}, {b}) ends before it starts; give (start, end) "
                                        "character offsets into the text")
        clipped.append((max(0, min(int(a), length)), max(0, min(int(b), length))))
    return clipped


class Chunker(ABC):
    """Splits a document within its sections. Offsets are exact: ``text[start:end] == chunk.text``.

    A strategy describes itself: :meth:`from_settings` builds it from the ``[chunking]``
    settings, :meth:`size_model` says what its chunk sizes should be, :attr:`overlap` how
    much neighbours share. Adding a strategy is one class (and one entry point).
    """

    name: ClassVar[str]
    #: What neighbouring chunks share, in the size model's unit (0: nothing).
    overlap: int = 0
    #: Sibling sections are joined while they fit in this many characters (0: never); a
    #: section shorter than ``min_chunk_chars`` joins its neighbour (0: only a bare heading does). Strategies
    #: that cut within sections set these; see :func:`~ragloom.parse.sections.merge_sections`.
    merge_limit_chars: int = 0
    min_chunk_chars: int = 0
    #: Whether a span that is a heading alone, or holds no word, joins its neighbour (see
    #: :meth:`_absorb_bare`); off only for the sentence index, whose entries are sentences.
    join_bare: bool = True

    @classmethod
    def from_settings(cls, settings: ChunkingSettings) -> Chunker:
        """The strategy as the settings describe it: the tokenizer, plus the keys of
        ``[chunking.options.<name>]`` as keyword arguments (the built-ins read their own keys)."""
        options: Mapping[str, Any] = settings.options.get(cls.name, {})
        return cls.build(tokenizer=settings.tokenizer, **options)

    @classmethod
    def build(cls, **params: Any) -> Chunker:  # noqa: ANN401
        """``cls(**params)``, or the instance already built with the same parameters; a
        parameter the strategy does not take is an error that names those it does."""
        try:
            key = (cls, tuple(sorted(params.items())))
            hash(key)
        except TypeError:  # an unhashable parameter (a tokenizer object, say): build afresh
            return cls._checked(**params)
        with _BUILT_LOCK:
            found = _BUILT.get(key)
        if found is None:
            found = cls._checked(**params)
            with _BUILT_LOCK:
                if len(_BUILT) >= _BUILT_MAX:
                    _BUILT.clear()
                _BUILT[key] = found
        return found

    @classmethod
    def _checked(cls, **params: Any) -> Chunker:  # noqa: ANN401
        accepted = inspect.signature(cls).parameters.values()
        if all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in accepted):
            check_known(params, [p.name for p in accepted if p.kind is not inspect.Parameter.VAR_POSITIONAL],
                        "parameter", f"chunking strategy {cls.name!r}")
        return cls(**params)

    @abstractmethod
    def size_model(self) -> SizeModel:
        """Target, minimum and maximum chunk size, for quality scoring."""

    def chunk(
        self,
        text: str,
        sections: Sequence[Section] | None = None,
        *,
        protected: Sequence[tuple[int, int]] = (),
    ) -> list[Chunk]:
        """Chunks of ``text``; ``sections`` default to :func:`~ragloom.parse.parse_sections`.

        ``protected`` spans (entity mentions, for example) are never cut through by strategies
        that honour them.
        """
        if sections is None:
            sections = parse_sections(text)
        # Always: a heading with nothing under it joins the section it heads, whatever the strategy.
        sections = merge_sections(text, sections, limit_chars=self.merge_limit_chars, min_chars=self.min_chunk_chars)
        guard = Protected(_within(protected, len(text)))
        per_section = [(section, self.split_section(text, section.start, section.end, guard)) for section in sections]
        if self.join_bare:
            per_section = [(section, self._absorb_bare(text, spans)) for section, spans in per_section]
        total = sum(len(spans) for _, spans in per_section)
        chunks: list[Chunk] = []
        for section, spans in per_section:
            for i, (start, end, tokens, issues) in enumerate(spans):
                # Positional: noticeably cheaper than keywords for a frozen dataclass on this hot path.
                chunks.append(Chunk(text[start:end], start, end, tokens, len(chunks), total, section.path,
                                    section.index, i, self.name, issues=issues))
        return chunks

    def _absorb_bare(self, text: str, spans: list[Span]) -> list[Span]:
        """``spans`` with each one that is only a heading, or holds no word at all (a ``>``
        of a quotation, a rule), joined to the span after it (the last to the one before),
        unless the join would pass the strategy's maximum size: such a chunk matches a query's
        words and answers nothing."""
        if len(spans) < 2 or not any(_bare(text, s, e) for s, e, _, _ in spans):
            return spans
        counter = getattr(self, "tokenizer", None) or get_tokenizer(DEFAULT_TOKENIZER)
        model = self.size_model()

        def joined(a: Span, b: Span) -> Span | None:
            lo, hi = a[0], max(a[1], b[1])
            tokens = counter.count(text[lo:hi])
            size = tokens if model.unit == "tokens" else len(text[lo:hi])
            return (lo, hi, tokens, a[3] + b[3]) if size <= model.maximum else None

        out: list[Span] = []
        for span in spans:
            if out and _bare(text, out[-1][0], out[-1][1]):
                both = joined(out[-1], span)
                if both is not None:
                    out[-1] = both
                    continue
            out.append(span)
        if len(out) > 1 and _bare(text, out[-1][0], out[-1][1]):
            both = joined(out[-2], out[-1])
            if both is not None:
                out[-2:] = [both]
        return out

    @abstractmethod
    def split_section(self, text: str, start: int, end: int, protected: Protected) -> list[Span]:
        """Spans covering the text of ``text[start:end]``."""

    def params(self) -> dict[str, object]:
        """The parameters that define this chunker's output (recorded with an index)."""
        return {}


#: A span that is headings alone, or holds no word character.
_BARE = re.compile(r"\s*(?:#{1,6}(?:[ \t][^\n]*)?(?:\n\s*|$))+|\W*")


def _bare(text: str, start: int, end: int) -> bool:
    return _BARE.fullmatch(text, start, end) is not None


def content_defined(text: str, candidates: Sequence[int]) -> int:
    """The candidate cut whose preceding 32 characters hash lowest.

    A choice made by content rather than by position survives an edit earlier in the section,
    which shifts every offset: the same cut is found again, so the chunks after it keep their
    text and their vectors (the idea of content-defined chunking in deduplicating backups).
    """
    return min(candidates, key=lambda c: zlib.crc32(text[max(0, c - 32) : c].encode("utf-8", "surrogatepass")))


def closest(candidates: Sequence[int], target: int) -> int | None:
    """The candidate nearest ``target`` (None when there are none)."""
    return min(candidates, key=lambda c: abs(c - target), default=None)
