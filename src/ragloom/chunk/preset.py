"""Chunks whose spans are decided elsewhere (a dataset's own chunking, an upstream parser)."""

from __future__ import annotations

from collections.abc import Sequence

from ragloom.chunk.base import Chunker, Protected, SizeModel, Span, require, resolve_tokenizer
from ragloom.tokens import DEFAULT_TOKENIZER, TokenCounter
from ragloom.types import Chunk, Section

#: (start, end, section path) of one chunk.
PresetSpan = tuple[int, int, tuple[str, ...]]


class PresetChunker(Chunker):
    """Returns the given spans as chunks, in order, with token counts and section paths.

    Not in the strategy registry: it chunks one known document, not any text.
    """

    name = "preset"

    def __init__(self, spans: Sequence[PresetSpan], *, tokenizer: str | TokenCounter = DEFAULT_TOKENIZER) -> None:
        self.spans = sorted(spans, key=lambda s: (s[0], s[1]))
        self.tokenizer = resolve_tokenizer(tokenizer)

    def chunk(self, text: str, sections: Sequence[Section] | None = None, *,
              protected: Sequence[tuple[int, int]] = ()) -> list[Chunk]:
        for start, end, _ in self.spans:
            require(0 <= start < end <= len(text), f"preset span ({start}, {end}) must lie inside the text (0, {len(text)})")
        paths = {path: i for i, path in enumerate(dict.fromkeys(path for *_, path in self.spans))}
        per_section: dict[tuple[str, ...], int] = {}
        chunks = []
        for i, (start, end, path) in enumerate(self.spans):
            in_section = per_section.get(path, 0)
            per_section[path] = in_section + 1
            chunks.append(Chunk(text[start:end], start, end, self.tokenizer.count(text[start:end]), i, len(self.spans),
                                tuple(path), paths[path], in_section, self.name))
        return chunks

    def size_model(self) -> SizeModel:
        """The spans' own sizes: whatever chunking decided them is taken as intended."""
        sizes = sorted(b - a for a, b, _ in self.spans) or [1]
        return SizeModel("chars", sizes[len(sizes) // 2], sizes[0], sizes[-1])

    def split_section(self, text: str, start: int, end: int, protected: Protected) -> list[Span]:
        """The preset spans that lie inside ``[start, end)``."""
        return [(a, b, self.tokenizer.count(text[a:b]), ()) for a, b, _ in self.spans if start <= a and b <= end]
