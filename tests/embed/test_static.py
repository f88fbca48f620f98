"""The static model distilled from the bundled MiniLM: cached, fast, and still about meaning."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.config import EmbeddingSettings
from ragloom.embed import embedder_from_settings
from ragloom.embed.static import StaticEmbedder

pytestmark = pytest.mark.slow


def test_the_static_model_is_distilled_once_and_ranks_by_meaning() -> None:
    static = StaticEmbedder()
    texts = ["when does the catalog integration ship", "the QuickBooks catalog integration ships in Q3 2025",
             "technicians lose signal in basements"]
    v = static.embed(texts)
    assert v.shape == (3, 256) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]
    long = static.embed(["catalog " * 5000])[0]  # no window: any length, whole
    assert np.isclose(np.linalg.norm(long), 1.0, atol=1e-5)
    embedder = embedder_from_settings(EmbeddingSettings(model="minilm-static", cache=False))
    assert embedder.name == "static:all-MiniLM-L6-v2:256" and embedder.dim == 256
