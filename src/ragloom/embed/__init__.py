"""Embedders: the protocol, the local sentence-transformers model, a hashing fallback, the
long-text window wrapper, a cache, and a registry of providers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragloom.config import DEFAULT_MODEL, EmbeddingSettings
from ragloom.embed.base import Embedder, HashingEmbedder, normalize_rows
from ragloom.embed.cache import CachedEmbedder
from ragloom.embed.local import SentenceTransformerEmbedder
from ragloom.embed.windowed import WindowedEmbedder, windowed
from ragloom.plugins import Registry

__all__ = [
    "DEFAULT_MODEL",
    "EMBEDDERS",
    "CachedEmbedder",
    "Embedder",
    "EmbedderFactory",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "WindowedEmbedder",
    "embedder_from_settings",
    "normalize_rows",
    "windowed",
]

#: Builds an embedder from the ``[embedding]`` settings.
EmbedderFactory = Callable[[EmbeddingSettings], Embedder]


def _hashing(settings: EmbeddingSettings) -> Embedder:
    model = settings.model
    return HashingEmbedder(int(model.split("-", 1)[1]) if "-" in model else 384)


def _sentence_transformers(settings: EmbeddingSettings) -> Embedder:
    return SentenceTransformerEmbedder(settings.model, device=settings.device, batch_size=settings.batch_size)


def _onnx(settings: EmbeddingSettings) -> Embedder:
    from ragloom.embed.onnx import OnnxEmbedder

    return OnnxEmbedder(settings.model, precision=settings.precision)


def _static(settings: EmbeddingSettings) -> Embedder:
    from ragloom.embed.static import STATIC_MODEL, StaticEmbedder

    return StaticEmbedder(DEFAULT_MODEL if settings.model == STATIC_MODEL else settings.model)


def _builtin_embedders() -> dict[str, EmbedderFactory]:
    return {"hashing": _hashing, "sentence-transformers": _sentence_transformers, "onnx": _onnx, "static": _static}


#: Embedding providers by name: the built-ins, then the ``ragloom.embedders`` entry points.
EMBEDDERS: Registry[EmbedderFactory] = Registry("embedding provider", "ragloom.embedders", _builtin_embedders)


def provider_name(settings: EmbeddingSettings) -> str:
    """``embedding.provider``; ``auto`` picks ``hashing`` for a ``hashing[-dim]`` model and
    sentence-transformers for anything else (a local folder, the bundled default, a hub name)."""
    if settings.provider != "auto":
        return settings.provider
    if settings.model == "hashing" or settings.model.startswith("hashing-"):
        return "hashing"
    if settings.model == "minilm-static":
        return "static"
    return "onnx" if _onnx_usable() else "sentence-transformers"


def _onnx_usable() -> bool:
    """onnxruntime and tokenizers are installed, and the model can be (or was) exported."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("onnxruntime", "tokenizers", "onnx", "torch"))


def embedder_from_settings(settings: EmbeddingSettings, cache_dir: Path | None = None) -> Embedder:
    """The embedder the settings name, windowed for long texts, cached on disk when asked."""
    embedder = windowed(EMBEDDERS.get(provider_name(settings))(settings))
    if settings.cache and cache_dir is not None:
        embedder = CachedEmbedder(embedder, cache_dir / "embeddings.sqlite")
    return embedder
