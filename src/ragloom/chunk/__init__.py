"""Chunking strategies, found by name: ``token`` (default), ``boundary`` and ``sentence``."""

from __future__ import annotations

from collections.abc import Sequence

from ragloom.chunk import boundary as _boundary  # noqa: F401  (registers the strategy)
from ragloom.chunk import sentence as _sentence  # noqa: F401
from ragloom.chunk import token as _token  # noqa: F401
from ragloom.chunk.base import Chunker, Protected, chunker_names, get_chunker, register
from ragloom.chunk.boundary import BoundaryChunker
from ragloom.chunk.sentence import SentenceChunker
from ragloom.chunk.token import TokenChunker
from ragloom.config import ChunkingSettings
from ragloom.types import Chunk

__all__ = [
    "BoundaryChunker",
    "Chunker",
    "Protected",
    "SentenceChunker",
    "TokenChunker",
    "chunk_text",
    "chunker_from_settings",
    "chunker_names",
    "get_chunker",
    "register",
]


def chunker_from_settings(settings: ChunkingSettings, strategy: str | None = None) -> Chunker:
    """The chunker the ``[chunking]`` settings describe (``strategy`` overrides theirs)."""
    name = strategy or settings.strategy
    params: dict[str, object] = {"tokenizer": settings.tokenizer}
    if name == "token":
        params.update(chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap,
                      boundary_window=settings.boundary_window)
    elif name == "boundary":
        params.update(target_size=settings.target_size, min_size=settings.min_size,
                      max_size=settings.max_size, overlap=settings.overlap_chars)
    elif name == "sentence":
        params.update(max_chars=settings.max_sentence_chars)
    return get_chunker(name, **params)


def chunk_text(text: str, strategy: str = "token", *, protected: Sequence[tuple[int, int]] = (),
               **params: object) -> list[Chunk]:
    """Chunk a Markdown string with the named strategy (sections parsed first)."""
    return get_chunker(strategy, **params).chunk(text, protected=protected)
