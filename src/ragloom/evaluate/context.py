"""What every suite gets: the data, an output folder, a cached embedder, a size limit."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.config import EmbeddingSettings
from ragloom.embed import Embedder, embedder_from_settings, normalize_rows
from ragloom.ingest.report import Progress

#: The name of the stage that counts a suite's steps (configurations, variants, strategies).
STEPS = "Steps"


def default_cache() -> Path:
    import os

    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ragloom" / "eval"


@dataclass
class EvalContext:
    data: Path
    out: Path
    cache: Path = field(default_factory=default_cache)
    limit: int | None = None  # questions (or queries) to use; None: all
    embedder: Embedder | None = None
    progress: Callable[[str], None] = lambda message: None
    #: Receives the stages of the long parts (the suite's steps, ingests, embedding) the way an
    #: ingest reports them: the command line draws a bar for each.
    tracker: Progress = field(default_factory=Progress)
    #: The embedder to measure when none is given (default: the default settings' one).
    embedding: EmbeddingSettings | None = None
    #: Settings over each suite's own (``{"sentences.vectors": "derived"}``), to measure a variant.
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        if self.embedder is None:
            # Cached by text and model: a second run of a suite embeds nothing.
            settings = (self.embedding or EmbeddingSettings()).model_copy(update={"cache": True})
            self.embedder = embedder_from_settings(settings, self.cache)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        assert self.embedder is not None
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        # One call, so that batches (and int8 activation scales) are what they always were.
        self.tracker.stage("Embedding", len(texts))
        vectors = normalize_rows(self.embedder.embed(list(texts)))
        self.tracker.advance("Embedding", len(texts))
        return vectors

    def steps(self, names: Sequence[str]) -> Iterator[str]:
        """The suite's steps in turn, each named in the progress and counted on a bar."""
        self.tracker.stage(STEPS, len(names))
        for name in names:
            self.progress(name)
            yield name
            self.tracker.advance(STEPS)


def cosine_top(query: np.ndarray, matrix: np.ndarray, k: int) -> np.ndarray:
    """Indexes of the ``k`` rows of ``matrix`` most similar to ``query`` (both unit vectors)."""
    if len(matrix) == 0:
        return np.zeros(0, dtype=np.int64)
    scores = matrix @ query
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top], kind="stable")]
