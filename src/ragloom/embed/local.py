"""A local sentence-transformers model (default: the bundled all-MiniLM-L6-v2).

It declares ``max_tokens`` (the model's window: 256 word pieces for MiniLM) and
``token_pieces`` (its own tokenizer's offsets), so that :mod:`ragloom.embed.windowed` embeds a
longer text window by window instead of letting the model truncate it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.config import DEFAULT_MODEL
from ragloom.embed.windowed import Pieces
from ragloom.errors import EmbeddingError, MissingExtraError
from ragloom.tokens import minilm_folder

_BUNDLED = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}


def resolve_model(model: str) -> str:
    """A local folder for the bundled model, a path as given, or a hub name."""
    if model in _BUNDLED:
        return str(minilm_folder())
    return model


def _device(device: str) -> str:
    """``auto``: the GPU when torch sees one, else the CPU."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@contextlib.contextmanager
def _no_loading_bar() -> Iterator[None]:
    """transformers' weight-loading bar off while the model loads (it would draw over
    ragloom's own bars), and back as it was afterwards."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        yield
        return
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # untyped in transformers
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model, loaded on first use, on the CPU by default."""

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str = "auto", batch_size: int = 32) -> None:
        self.model_name = model
        self.name = f"st:{model}"
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:  # noqa: ANN401 - a SentenceTransformer
        with self._lock:
            if self._model is None:
                self._model = self._load()
        return self._model

    def _load(self) -> Any:  # noqa: ANN401
        path = resolve_model(self.model_name)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtraError("sentence-transformers", "local", "the local embedding model") from exc
        try:
            # Weights on disk are read from disk only: the hub client is never asked (the
            # process's HF_HUB_OFFLINE is left as the user set it).
            with _no_loading_bar():
                return SentenceTransformer(path, device=_device(self.device), local_files_only=Path(path).exists())
        except Exception as exc:  # hub, file and torch errors all mean the same to the user
            raise EmbeddingError(
                f"could not load embedding model {self.model_name!r} from {path} ({type(exc).__name__}: {exc}); "
                "set embedding.model to a local sentence-transformers folder or install ragloom[local]"
            ) from exc

    @property
    def dim(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def max_tokens(self) -> int:
        """Word pieces the model reads at once, special tokens included."""
        return int(self.model.max_seq_length)

    def token_pieces(self, texts: Sequence[str]) -> list[Pieces]:
        """(start, end, word number) of every word piece of each text, by the model's tokenizer."""
        encoded = self.model.tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True,
                                       truncation=False, verbose=False)
        out: list[Pieces] = []
        for i in range(len(texts)):
            words = encoded.word_ids(i)
            out.append([(int(a), int(b), -1 if w is None else int(w))
                        for (a, b), w in zip(encoded["offset_mapping"][i], words, strict=True)])
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")  # similar lengths pad little
        vectors = self.model.encode([texts[j] for j in order], batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False)
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        out[order] = vectors
        return out

    def embed_query(self, text: str) -> np.ndarray:
        result: np.ndarray = self.embed([text])[0]
        return result
