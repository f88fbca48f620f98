from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.config import EmbeddingSettings
from ragloom.embed import (
    CachedEmbedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    WindowedEmbedder,
    embedder_from_settings,
    windowed,
)
from ragloom.embed.base import Embedder
from ragloom.errors import UnknownNameError


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
    st_embedder = embedder_from_settings(EmbeddingSettings(cache=False, provider="sentence-transformers"))
    # Long texts are windowed; the model itself is not loaded until something is embedded.
    assert isinstance(st_embedder, WindowedEmbedder)
    assert isinstance(st_embedder.inner, SentenceTransformerEmbedder) and st_embedder.inner._model is None
    assert st_embedder.name == "st:all-MiniLM-L6-v2"


def test_an_unknown_provider_names_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match="hashing, onnx, sentence-transformers, static"):
        embedder_from_settings(EmbeddingSettings(provider="nope", cache=False))


class ReadmeEmbedder:
    """Exactly the README's protocol, plus a declared window of 16 tokens."""

    name = "readme-embedder"
    dim = 32
    max_tokens = 16

    def __init__(self) -> None:
        self.inner = HashingEmbedder(32)
        self.longest = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.longest = max([self.longest, *(len(t.split()) for t in texts)])
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def test_any_embedder_declaring_a_window_gets_long_texts_embedded_whole() -> None:
    inner = ReadmeEmbedder()
    embedder = windowed(inner)
    assert isinstance(embedder, WindowedEmbedder)
    text = " ".join(f"word{i}" for i in range(200))
    vector = embedder.embed([text])[0]
    # No window the model sees is longer than it can read, and every window counts.
    assert inner.longest <= inner.max_tokens
    assert embedder.windows_embedded > 0
    assert np.isclose(np.linalg.norm(vector), 1.0)
    head = inner.inner.embed([" ".join(f"word{i}" for i in range(10))])[0]
    assert not np.allclose(vector, head)


def test_an_embedder_without_a_window_is_left_alone() -> None:
    plain = HashingEmbedder(16)
    assert windowed(plain) is plain


@given(st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400), max_size=6),
       st.integers(min_value=8, max_value=64))
def test_windows_cover_each_text_in_order_within_the_room(texts: list[str], room: int) -> None:
    from ragloom.embed.windowed import _pattern_pieces, windows

    pieces = _pattern_pieces(texts)
    out, owner, weight = windows(texts, pieces, room)
    assert sorted(set(owner.tolist())) == list(range(len(texts)))
    assert all(w <= room for w in weight)
    for i, text in enumerate(texts):
        parts = [p for p, o in zip(out, owner.tolist(), strict=True) if o == i]
        if len(parts) > 1:  # windows are slices of the text, in order, without overlap
            at = 0
            for part in parts:
                at = text.index(part, at) + len(part)


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.mark.slow
def test_long_text_is_embedded_whole_not_truncated(minilm: SentenceTransformerEmbedder) -> None:
    head = "The Service Catalog v2 gives office managers one list of prices for quotes and invoices. " * 20
    tail = "Offline mode lets technicians take notes in basements without any mobile signal. " * 20
    long_text = head + tail
    from ragloom.embed.windowed import WINDOW_MARGIN, windows

    pieces, owner, weight = windows([long_text], minilm.token_pieces([long_text]), minilm.max_tokens - WINDOW_MARGIN)
    assert len(pieces) >= 2 and all(w <= minilm.max_tokens for w in weight)
    embedder = windowed(minilm)
    whole = embedder.embed([long_text])[0]
    truncated = embedder.embed([head[:900]])[0]
    offline = embedder.embed_query("offline mode for technicians without signal")
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


def test_a_cached_embedder_still_embeds_long_texts_whole(tmp_path: Path) -> None:
    inner = ReadmeEmbedder()
    cached = CachedEmbedder(inner, tmp_path / "c.sqlite")
    cached.embed([" ".join(f"word{i}" for i in range(200))])
    assert isinstance(cached.inner, WindowedEmbedder) and inner.longest <= inner.max_tokens
