"""Embedders: the protocol, the local sentence-transformers model, a hashing fallback, a cache."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragloom.embed.base import Embedder, HashingEmbedder, ProgressCallback, normalize_rows
from ragloom.embed.cache import CachedEmbedder
from ragloom.embed.local import DEFAULT_MODEL, SentenceTransformerEmbedder

if TYPE_CHECKING:  # ragloom.config imports DEFAULT_MODEL from this package: no import back at run time
    from ragloom.config import EmbeddingSettings

__all__ = [
    "DEFAULT_MODEL",
    "CachedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "ProgressCallback",
    "SentenceTransformerEmbedder",
    "embedder_from_settings",
    "normalize_rows",
]


def embedder_from_settings(settings: EmbeddingSettings, cache_dir: Path | None = None) -> Embedder:
    """``hashing`` or ``hashing-<dim>`` selects the hashing embedder; anything else names a
    sentence-transformers model (a local folder, the bundled default, or a hub name)."""
    model = settings.model
    embedder: Embedder
    if model == "hashing" or model.startswith("hashing-"):
        dim = int(model.split("-", 1)[1]) if "-" in model else 384
        embedder = HashingEmbedder(dim)
    else:
        embedder = SentenceTransformerEmbedder(model, device=settings.device, batch_size=settings.batch_size)
    if settings.cache and cache_dir is not None:
        embedder = CachedEmbedder(embedder, cache_dir / "embeddings.sqlite")
    return embedder
