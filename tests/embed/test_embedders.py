from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom.config import EmbeddingSettings
from ragloom.embed import (
    CachedEmbedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    embedder_from_settings,
)
from ragloom.embed.base import Embedder


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    e = HashingEmbedder(64)
    a = e.embed(["the roadmap for Q2", "the roadmap for Q2", ""])
    assert a.shape == (3, 64) and a.dtype == np.float32
    assert np.allclose(a[0], a[1]) and np.isclose(np.linalg.norm(a[0]), 1.0)
    assert isinstance(e, Embedder)
    related = e.embed_query("roadmap Q2") @ a[0]
    unrelated = e.embed_query("bananas and apples") @ a[0]
    assert related > unrelated


def test_cache_embeds_each_text_once(tmp_path: Path) -> None:
    inner = HashingEmbedder(32)
    cached = CachedEmbedder(inner, tmp_path / "c.sqlite")
    first = cached.embed(["a", "b", "a"])
    assert inner.calls == 2
    again = CachedEmbedder(HashingEmbedder(32), tmp_path / "c.sqlite")
    second = again.embed(["b", "a", "c"])
    assert again.inner.calls == 1  # only "c" is new
    assert np.allclose(first[1], second[0]) and np.allclose(first[0], second[1])


def test_settings_choose_the_embedder(tmp_path: Path) -> None:
    assert embedder_from_settings(EmbeddingSettings(model="hashing-128", cache=False)).dim == 128
    cached = embedder_from_settings(EmbeddingSettings(model="hashing"), tmp_path)
    assert isinstance(cached, CachedEmbedder)
    st_embedder = embedder_from_settings(EmbeddingSettings(cache=False))
    assert isinstance(st_embedder, SentenceTransformerEmbedder) and st_embedder._model is None  # lazy


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.mark.slow
def test_long_text_is_embedded_whole_not_truncated(minilm: SentenceTransformerEmbedder) -> None:
    head = "The Service Catalog v2 gives office managers one list of prices for quotes and invoices. " * 20
    tail = "Offline mode lets technicians take notes in basements without any mobile signal. " * 20
    long_text = head + tail
    pieces, owner, weight = minilm.windows([long_text])
    assert len(pieces) >= 2 and all(w <= minilm.max_tokens for w in weight)
    whole = minilm.embed([long_text])[0]
    truncated = minilm.embed([head[:900]])[0]
    offline = minilm.embed_query("offline mode for technicians without signal")
    # The tail beyond the model window still shapes the vector.
    assert offline @ whole > offline @ truncated + 0.05
    assert np.isclose(np.linalg.norm(whole), 1.0, atol=1e-5)


@pytest.mark.slow
def test_short_texts_match_sentence_transformers(minilm: SentenceTransformerEmbedder) -> None:
    texts = ["hello world", "quarterly roadmap"]
    ours = minilm.embed(texts)
    theirs = minilm.model.encode(texts, normalize_embeddings=True)
    assert np.allclose(ours, theirs, atol=1e-5)
    assert minilm.dim == 384
