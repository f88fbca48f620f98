"""``token``: fixed token windows with overlap, cut at a sentence or paragraph end when one
lies in the last part of the window."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ragloom.chunk.base import (
    MERGE_SECTIONS,
    MIN_CHUNK_CHARS,
    Chunker,
    Protected,
    SizeModel,
    Span,
    require,
    resolve_tokenizer,
    trim,
)
from ragloom.parse.sentences import paragraph_ends, sentence_ends
from ragloom.tokens import DEFAULT_TOKENIZER, TokenCounter

if TYPE_CHECKING:
    from ragloom.config import ChunkingSettings

# A natural cut may sit just past the window's last token boundary (a sentence's final
# punctuation can share a token with the whitespace after it); look this far beyond it.
_LOOKAHEAD = 4
CHARS_PER_TOKEN = 3


class TokenChunker(Chunker):
    """At most ``chunk_size`` tokens per chunk, ``chunk_overlap`` tokens shared by neighbours.

    The section is tokenised once; windows are laid over the token offsets. When a paragraph
    end (preferred) or a sentence end lies in the last ``boundary_window`` share of a window,
    the chunk ends there. Every chunk is counted again on its own text, so the limit holds
    under the tokenizer even where cutting changes how the edges tokenise.
    """

    name = "token"

    def __init__(
        self,
        chunk_size: int = 1024,
        chunk_overlap: int = 150,
        *,
        tokenizer: str | TokenCounter = DEFAULT_TOKENIZER,
        boundary_window: float = 0.15,
        merge_sections: bool = MERGE_SECTIONS,
        min_chunk_chars: int = MIN_CHUNK_CHARS,
    ) -> None:
        require(chunk_size >= 1, f"chunk_size ({chunk_size}) must be at least 1")
        require(chunk_overlap >= 0, f"chunk_overlap ({chunk_overlap}) must not be negative")
        require(
            chunk_overlap < chunk_size,
            f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})",
        )
        require(0 <= boundary_window < 1, f"boundary_window ({boundary_window}) must be in [0, 1)")
        require(min_chunk_chars >= 0, f"min_chunk_chars ({min_chunk_chars}) must not be negative")
        self.merge_sections = merge_sections
        # Siblings are joined by characters, not tokens, so that grouping costs no tokenising;
        # at 3 characters a token (English prose runs at about 4 in cl100k) the group fits one chunk.
        self.merge_limit_chars = CHARS_PER_TOKEN * chunk_size if merge_sections else 0
        self.min_chunk_chars = min_chunk_chars
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.overlap = chunk_overlap
        self.boundary_window = boundary_window
        self.tokenizer = resolve_tokenizer(tokenizer)

    @classmethod
    def from_settings(cls, settings: ChunkingSettings) -> Chunker:
        return cls.build(chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap,
                         boundary_window=settings.boundary_window, tokenizer=settings.tokenizer,
                         merge_sections=settings.merge_sections, min_chunk_chars=settings.min_chunk_chars)

    def size_model(self) -> SizeModel:
        return SizeModel("tokens", self.chunk_size, max(1, self.chunk_size // 4), self.chunk_size)

    def params(self) -> dict[str, object]:
        return {
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "tokenizer": self.tokenizer.name,
            "boundary_window": self.boundary_window,
            "merge_sections": self.merge_sections,
            "min_chunk_chars": self.min_chunk_chars,
        }

    def _natural_cut(self, text: str, lo: int, hi: int, limit: int) -> int | None:
        """The last paragraph end in ``(lo, hi]``, else the last sentence end, else None.

        (A content-defined choice, as the boundary strategy makes, was measured here too: with
        1,024-token windows it did not reduce what an edit re-embeds; see docs/benchmarks.md.)
        """
        stop = min(hi + _LOOKAHEAD, limit)
        for finder in (paragraph_ends, sentence_ends):  # the sentence scan only when no paragraph end fits
            inside = [c for c in finder(text, lo, stop) if lo < c <= hi]
            if inside:
                return inside[-1]
        return None

    def split_section(self, text: str, start: int, end: int, protected: Protected) -> list[Span]:
        start, end = trim(text, start, end)
        if start >= end:
            return []
        tok = self.tokenizer
        size = self.chunk_size
        whole = tok.count_within(text[start:end], size)
        if whole is not None:  # most sections: one count, no offsets needed
            return [(start, end, whole, ())]
        ends = tok.token_ends(text[start:end]) + start
        n = len(ends)
        tail = int(size * self.boundary_window)
        spans: list[Span] = []
        first, pos = 0, start  # first token of the chunk, and where its text starts
        while True:
            last = min(first + size, n)  # one past the window's last token
            if last >= n:
                cut = end
            else:
                cut = int(ends[last - 1])
                if tail:
                    lo = int(ends[max(first, last - tail) - 1]) if max(first, last - tail) > 0 else start
                    cut = self._natural_cut(text, max(lo, pos), cut, end) or cut
                if protected and (span := protected.containing(cut)) and span[0] > pos:
                    cut = span[0]
            _, cut = trim(text, pos, cut)
            count = tok.count(text[pos:cut])
            while count > size:
                # Re-tokenising the cut text gave more tokens than the window: step back a token.
                k = int(np.searchsorted(ends, cut, side="left")) - 1
                _, cut = trim(text, pos, int(ends[k]) if k >= 0 else pos)
                count = tok.count(text[pos:cut])
            if cut <= pos:
                # Only reachable when one character takes more tokens than chunk_size (an emoji
                # with chunk_size 1): keep that character rather than loop.
                cut = int(ends[np.searchsorted(ends, pos, side="right")])
                count = tok.count(text[pos:cut])
            spans.append((pos, cut, count, ()))
            if cut >= end:
                break
            done = int(np.searchsorted(ends, cut, side="right"))  # tokens that end inside the chunk
            first = max(done - self.chunk_overlap, first + 1)
            nxt, _ = trim(text, int(ends[first - 1]), end)
            if nxt <= pos:
                first = done
                nxt, _ = trim(text, int(ends[first - 1]), end)
            if nxt >= end:
                break
            pos = nxt
        return spans
