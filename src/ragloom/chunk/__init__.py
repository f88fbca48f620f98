"""Chunking strategies, found by name: ``token`` (default), ``boundary`` and ``sentence``, plus
any installed package's ``ragloom.chunkers`` entry points."""

from __future__ import annotations

from collections.abc import Sequence

from ragloom.chunk.base import (
    CHUNKERS,
    Chunker,
    Protected,
    SizeModel,
    _builtin_chunkers,
    chunker_names,
    get_chunker,
    register,
)
from ragloom.chunk.boundary import BoundaryChunker
from ragloom.chunk.sentence import SentenceChunker
from ragloom.chunk.token import TokenChunker
from ragloom.config import ChunkingSettings
from ragloom.errors import ConfigError
from ragloom.types import Chunk

__all__ = [
    "CHUNKERS",
    "BoundaryChunker",
    "Chunker",
    "Protected",
    "SentenceChunker",
    "SizeModel",
    "TokenChunker",
    "chunk_text",
    "chunker_from_settings",
    "chunker_names",
    "get_chunker",
    "register",
]


def chunker_from_settings(settings: ChunkingSettings, strategy: str | None = None) -> Chunker:
    """The chunker the ``[chunking]`` settings describe (``strategy`` overrides theirs).

    ``[chunking.options.<name>]`` is for plugin strategies: the built-ins read ``[chunking]``
    itself, so options given for one are an error rather than silently ignored."""
    built_in = _builtin_chunkers()
    for name in settings.options:
        if name in built_in:
            raise ConfigError(f"[chunking.options.{name}] is for plugin strategies; the built-in '{name}' reads "
                              "[chunking] itself: move the keys there ('ragloom init' writes them all, commented)")
    return CHUNKERS.get(strategy or settings.strategy).from_settings(settings)


def chunk_text(text: str, strategy: str = "token", *, protected: Sequence[tuple[int, int]] = (),
               **params: object) -> list[Chunk]:
    """Chunk a Markdown string with the named strategy (sections parsed first)."""
    return get_chunker(strategy, **params).chunk(text, protected=protected)
