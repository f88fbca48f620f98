"""The embedder protocol, and a hashing embedder that needs nothing but numpy."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ragloom.errors import InvalidParameterError


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    That is the whole protocol. An embedder that can read only so many tokens at once also
    declares ``max_tokens`` (and, optionally, ``token_pieces``, see
    :mod:`ragloom.embed.windowed`), and ragloom embeds longer texts window by window.
    """

    #: Identifies the model (and its settings) in caches and in the workspace manifest.
    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dim)`` array."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One vector for a search query."""
        ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: np.ndarray = (matrix / norms).astype(np.float32, copy=False)
    return result


_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Feature hashing of words and word bigrams into ``dim`` signed buckets.

    Deterministic, offline and about a thousand times faster than a transformer: for tests,
    for graph-building benchmarks, and as a lexical fallback. It has no notion of synonyms,
    and no length limit.
    """

    def __init__(self, dim: int = 384, *, bigrams: bool = True) -> None:
        if dim < 8:
            raise InvalidParameterError(f"dim ({dim}) must be at least 8")
        self._dim = dim
        self.bigrams = bigrams
        self.name = f"hashing-{dim}{'-bigrams' if bigrams else ''}"
        self.calls = 0  # texts embedded so far; tests use it to prove what was re-embedded

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = [w.lower() for w in _WORD.findall(text)]
            features = words
            if self.bigrams:
                features = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
            row = out[i]
            for feature in features:
                h = zlib.crc32(feature.encode("utf-8", "surrogatepass"))
                row[h % self._dim] += 1.0 if h & 0x80000000 else -1.0
            # Sublinear term frequency, as in tf-idf: repeated words should not dominate.
            np.copyto(row, np.sign(row) * np.log1p(np.abs(row)))
        self.calls += len(texts)
        return normalize_rows(out)

    def embed_query(self, text: str) -> np.ndarray:
        result: np.ndarray = self.embed([text])[0]
        return result
