"""``boundary``: character-sized chunks cut at paragraph ends, then sentence ends, never
through a protected span (an entity mention, for example)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ragloom.chunk.base import (
    MERGE_SECTIONS,
    MIN_CHUNK_CHARS,
    Chunker,
    Protected,
    SizeModel,
    Span,
    closest,
    content_defined,
    require,
    resolve_tokenizer,
    trim,
)
from ragloom.parse.sentences import paragraph_ends, sentence_ends
from ragloom.tokens import DEFAULT_TOKENIZER, TokenCounter
from ragloom.types import QualityIssue

if TYPE_CHECKING:
    from ragloom.config import ChunkingSettings

_LINE_END = re.compile(r"[^\s](?=[ \t]*\n)")
_WORD_END = re.compile(r"[^\s](?=\s)")


def _sentence_cuts(text: str, lo: int, hi: int) -> list[int]:
    return sentence_ends(text, lo, min(hi + 2, len(text)))


def _line_cuts(text: str, lo: int, hi: int) -> list[int]:
    return [m.end() for m in _LINE_END.finditer(text, lo - 1, hi)]


def _word_cuts(text: str, lo: int, hi: int) -> list[int]:
    return [m.end() for m in _WORD_END.finditer(text, lo - 1, hi)]


class BoundaryChunker(Chunker):
    """Chunks of ``min_size`` to ``max_size`` characters, near ``target_size``, with about
    ``overlap`` characters shared by neighbours.

    Cut points, in order of preference: paragraph ends, sentence ends, line ends, word ends,
    and only if a window has none of those, a hard cut. Among the cuts of the best kind within
    a quarter of the size range of the target, the text before each decides (content-defined,
    as in deduplicating backup tools), so an edit early in a section does not move every later
    cut; with none that near, the nearest wins. A section shorter than ``min_size`` becomes one
    short chunk that says so in its quality issues.
    """

    name = "boundary"

    def __init__(
        self,
        target_size: int = 800,
        min_size: int = 500,
        max_size: int = 1200,
        overlap: int = 100,
        *,
        tokenizer: str | TokenCounter = DEFAULT_TOKENIZER,
        merge_sections: bool = MERGE_SECTIONS,
        min_chunk_chars: int = MIN_CHUNK_CHARS,
    ) -> None:
        require(min_chunk_chars >= 0, f"min_chunk_chars ({min_chunk_chars}) must not be negative")
        require(min_size >= 1, f"min_size ({min_size}) must be at least 1")
        require(
            min_size <= target_size <= max_size,
            f"sizes must satisfy min_size ({min_size}) <= target_size ({target_size}) <= max_size ({max_size})",
        )
        require(0 <= overlap < min_size, f"overlap ({overlap}) must be in [0, min_size ({min_size}))")
        require(
            max_size >= 2 * min_size - overlap,
            f"max_size ({max_size}) must be at least 2 * min_size - overlap ({2 * min_size - overlap}) "
            "so that every section can be split within the bounds",
        )
        self.target_size = target_size
        self.min_size = min_size
        self.max_size = max_size
        self.overlap = overlap
        self.tokenizer = resolve_tokenizer(tokenizer)
        self.merge_sections = merge_sections
        self.merge_limit_chars = target_size if merge_sections else 0
        self.min_chunk_chars = min_chunk_chars

    @classmethod
    def from_settings(cls, settings: ChunkingSettings) -> Chunker:
        return cls.build(target_size=settings.target_size, min_size=settings.min_size, max_size=settings.max_size,
                         overlap=settings.overlap_chars, tokenizer=settings.tokenizer,
                         merge_sections=settings.merge_sections, min_chunk_chars=settings.min_chunk_chars)

    def size_model(self) -> SizeModel:
        return SizeModel("chars", self.target_size, self.min_size, self.max_size)

    def params(self) -> dict[str, object]:
        return {
            "target_size": self.target_size,
            "min_size": self.min_size,
            "max_size": self.max_size,
            "overlap": self.overlap,
            "tokenizer": self.tokenizer.name,
            "merge_sections": self.merge_sections,
            "min_chunk_chars": self.min_chunk_chars,
        }

    def _cut(self, text: str, lo: int, hi: int, target: int, protected: Protected, paragraphs: list[int]) -> int:
        """The best cut in ``[lo, hi]``: nearest ``target`` among the best kind of boundary."""
        allowed = protected.allows if protected else None
        band = (self.max_size - self.min_size) // 4
        best = self._pick(text, paragraphs[bisect.bisect_left(paragraphs, lo) : bisect.bisect_right(paragraphs, hi)],
                          target, band, allowed)
        if best is not None:
            return best
        for finder in (_sentence_cuts, _line_cuts, _word_cuts):
            best = self._pick(text, [c for c in finder(text, lo, hi) if lo <= c <= hi], target, band, allowed)
            if best is not None:
                return best
        span = protected.containing(hi)
        if span is None:
            return hi
        # The whole window lies inside one protected span: end the chunk before or after it.
        return span[0] if span[0] > lo - self.min_size else span[1]

    @staticmethod
    def _pick(text: str, candidates: list[int], target: int, band: int,
              allowed: Callable[[int], bool] | None) -> int | None:
        """The :func:`~ragloom.chunk.base.content_defined` cut within ``band`` of ``target``, else the nearest."""
        if allowed is not None:
            candidates = [c for c in candidates if allowed(c)]
        near = [c for c in candidates if abs(c - target) <= band]
        if len(near) > 1:
            return content_defined(text, near)
        if near:
            return near[0]
        return closest(candidates, target)

    def _next_start(self, text: str, start: int, cut: int, protected: Protected) -> int:
        """Where the next chunk starts: a word start at least ``overlap`` characters before ``cut``."""
        if self.overlap == 0:
            return trim(text, cut, len(text))[0]
        # Moving back to a word start keeps the next chunk's start at or before cut - overlap,
        # which is what the window bound in split_section relies on.
        goal = cut - self.overlap
        nxt = max(text.rfind(" ", start + 1, goal), text.rfind("\n", start + 1, goal)) + 1
        if nxt <= start + 1:
            nxt = goal
        span = protected.containing(nxt) if protected else None
        if span is not None:
            nxt = span[0] if span[0] > start else span[1]
        nxt = trim(text, nxt, len(text))[0]
        return nxt if nxt <= goal or span is not None else goal

    def split_section(self, text: str, start: int, end: int, protected: Protected) -> list[Span]:
        start, end = trim(text, start, end)
        if start >= end:
            return []
        count = self.tokenizer.count
        if end - start <= self.max_size:
            # A whole section shorter than min_size is no defect: it could not have been longer
            # (issue 26: such notes were most of the length_violation flags, 0.05 precise).
            return [(start, end, count(text[start:end]), ())]
        spans: list[Span] = []
        pos = start
        paragraphs = paragraph_ends(text, start, end)  # one scan beats a regex call per window
        while end - pos > self.max_size:
            lo = pos + self.min_size
            hi = min(pos + self.max_size, end - self.min_size + self.overlap)
            cut = self._cut(text, lo, hi, pos + self.target_size, protected, paragraphs)
            _, cut = trim(text, pos, cut)
            issues: tuple[QualityIssue, ...] = ()
            if not lo <= cut <= pos + self.max_size:
                issues = (
                    QualityIssue(
                        "length_violation",
                        "medium",
                        f"chunk is {cut - pos} characters: a protected span left no cut inside "
                        f"[{self.min_size}, {self.max_size}]",
                        "shorten the protected span or raise max_size",
                    ),
                )
            spans.append((pos, cut, count(text[pos:cut]), issues))
            nxt = self._next_start(text, pos, cut, protected)
            pos = nxt if nxt > pos else cut
        spans.append((pos, end, count(text[pos:end]), ()))
        return spans
