"""The ONNX embedder: the same vectors as sentence-transformers, long texts windowed, spans pooled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom.config import EmbeddingSettings
from ragloom.embed import SentenceTransformerEmbedder, WindowedEmbedder, embedder_from_settings, windowed
from ragloom.embed.onnx import OnnxEmbedder, exported, model_folder, weights_hash
from ragloom.errors import EmbeddingError

pytestmark = pytest.mark.slow

TEXTS = ["hello world", "The catalog integration with QuickBooks ships in Q3 2025.",
         "Offline mode lets technicians take notes in basements without any signal. " * 3, ""]


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder()


def test_fp32_vectors_equal_sentence_transformers(onnx: OnnxEmbedder) -> None:
    theirs = SentenceTransformerEmbedder().embed(TEXTS)
    ours = onnx.embed(TEXTS)
    assert ours.shape == (4, 384) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-4
    assert onnx.name == "st:all-MiniLM-L6-v2" and onnx.max_tokens == 256


def test_the_export_is_cached_outside_the_workspace_by_weights(onnx: OnnxEmbedder) -> None:
    folder = model_folder("all-MiniLM-L6-v2")
    path = exported(folder, "fp32")
    assert path.is_file() and weights_hash(folder) in str(path) and path.parent.parent.name == "onnx"


def test_int8_stays_close_to_fp32(onnx: OnnxEmbedder) -> None:
    int8 = OnnxEmbedder(precision="int8")
    cos = np.sum(int8.embed(TEXTS[:3]) * onnx.embed(TEXTS[:3]), axis=1)
    assert cos.min() > 0.97 and int8.name.endswith(":int8")


def test_long_texts_are_windowed_and_spans_pooled(onnx: OnnxEmbedder) -> None:
    embedder = windowed(onnx)
    assert isinstance(embedder, WindowedEmbedder) and embedder.pools
    sentence = "The event bus migration finishes by May 15, 2025."
    text = "Introduction to the plan. " * 120 + sentence + " Closing words follow here."
    start = text.index(sentence)
    vectors, spans = embedder.pool([text], [[(start, start + len(sentence)), (0, 25)]])
    assert np.isclose(np.linalg.norm(vectors[0]), 1.0) and spans[0].shape == (2, 384)
    assert np.allclose(vectors[0], embedder.embed([text])[0], atol=1e-5)
    alone = onnx.embed([sentence])[0]
    # The pooled span is about the sentence: closer to it than the text's opening words are.
    assert spans[0][0] @ alone > spans[0][1] @ alone


def test_settings_pick_onnx_when_it_can_run() -> None:
    assert isinstance(embedder_from_settings(EmbeddingSettings(cache=False)).inner, OnnxEmbedder)  # type: ignore[attr-defined]
    assert isinstance(embedder_from_settings(EmbeddingSettings(cache=False, provider="sentence-transformers")).inner,  # type: ignore[attr-defined]
                      SentenceTransformerEmbedder)


def test_a_folder_that_is_not_a_model_is_named(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="no sentence-transformers folder"):
        OnnxEmbedder(str(tmp_path))
