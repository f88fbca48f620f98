"""``sentence``: one node per sentence; neighbours are linked once ids are assigned."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.chunk.base import Chunker, Protected, SizeModel, Span, require, resolve_tokenizer
from ragloom.parse.sentences import sentence_spans
from ragloom.tokens import DEFAULT_TOKENIZER, TokenCounter

if TYPE_CHECKING:
    from ragloom.config import ChunkingSettings


class SentenceChunker(Chunker):
    """Every sentence of every section, exactly as it stands in the text.

    A sentence longer than ``max_chars`` (a code block, a table) is split at line ends; two
    sentences that a protected span straddles are kept together.
    """

    name = "sentence"

    def __init__(self, max_chars: int = 2000, *, tokenizer: str | TokenCounter = DEFAULT_TOKENIZER,
                 join_bare: bool = True) -> None:
        require(max_chars >= 20, f"max_chars ({max_chars}) must be at least 20")
        self.max_chars = max_chars
        self.join_bare = join_bare
        self.tokenizer = resolve_tokenizer(tokenizer)

    @classmethod
    def from_settings(cls, settings: ChunkingSettings) -> Chunker:
        return cls.build(max_chars=settings.max_sentence_chars, tokenizer=settings.tokenizer)

    def size_model(self) -> SizeModel:
        return SizeModel("chars", 120, 20, self.max_chars)

    def params(self) -> dict[str, object]:
        return {"max_chars": self.max_chars, "tokenizer": self.tokenizer.name}

    def split_section(self, text: str, start: int, end: int, protected: Protected) -> list[Span]:
        spans = sentence_spans(text, start, end, max_chars=self.max_chars)
        if protected:
            merged: list[tuple[int, int]] = []
            for s, e in spans:
                if merged and protected.containing(merged[-1][1]) is not None:
                    merged[-1] = (merged[-1][0], e)
                else:
                    merged.append((s, e))
            spans = merged
        count = self.tokenizer.count
        return [(s, e, count(text[s:e]), ()) for s, e in spans]
