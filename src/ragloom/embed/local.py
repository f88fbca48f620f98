"""A local sentence-transformers model (default: the bundled all-MiniLM-L6-v2).

A text longer than the model's window (256 word pieces for MiniLM) is not truncated: it is
cut into windows at word boundaries, every window is embedded, and the text's vector is the
mean of its windows' vectors weighted by their length, normalised again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragloom.embed.base import ProgressCallback, normalize_rows
from ragloom.errors import EmbeddingError, MissingExtraError
from ragloom.tokens import minilm_folder

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
# Room left in each window for special tokens and for a window's text tokenising to a few
# more pieces on its own than it did inside the whole text.
_WINDOW_MARGIN = 6


def resolve_model(model: str) -> str:
    """A local folder for the bundled model, a path as given, or a hub name."""
    if model in _BUNDLED:
        return str(minilm_folder())
    return model


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model, loaded on first use, on the CPU by default."""

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str = "cpu", batch_size: int = 32) -> None:
        self.model_name = model
        self.name = f"st:{model}"
        self.device = device
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):  # noqa: ANN201 - a SentenceTransformer
        with self._lock:
            if self._model is None:
                self._model = self._load()
        return self._model

    def _load(self):  # noqa: ANN202
        path = resolve_model(self.model_name)
        if Path(path).exists():
            # The weights are on disk: never let the hub client try the network.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtraError("sentence-transformers", "local", "the local embedding model") from exc
        try:  # the weight-loading bar would draw over ragloom's own progress bars
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()
        except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
            pass
        try:
            return SentenceTransformer(path, device=self.device)
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

    def windows(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Window texts, the index of the text each belongs to, and each window's piece count."""
        tokenizer = self.model.tokenizer
        room = max(self.max_tokens - _WINDOW_MARGIN, 8)
        encoded = tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True, truncation=False,
                            verbose=False)
        pieces: list[str] = []
        owner: list[int] = []
        weight: list[int] = []
        for i, text in enumerate(texts):
            offsets = encoded["offset_mapping"][i]
            if len(offsets) <= room:
                pieces.append(text)
                owner.append(i)
                weight.append(max(len(offsets), 1))
                continue
            word_ids = encoded.word_ids(i)
            start = 0
            while start < len(offsets):
                stop = min(start + room, len(offsets))
                if stop < len(offsets):
                    # Back up to the first piece of a word so no word is split between windows.
                    back = stop
                    while back > start + room // 2 and word_ids[back] == word_ids[back - 1]:
                        back -= 1
                    stop = back
                pieces.append(text[offsets[start][0] : offsets[stop - 1][1]])
                owner.append(i)
                weight.append(stop - start)
                start = stop
        return pieces, np.asarray(owner, dtype=np.int64), np.asarray(weight, dtype=np.float32)

    def embed(self, texts: Sequence[str], *, progress: ProgressCallback | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        pieces, owner, weight = self.windows(texts)
        order = np.argsort([-len(p) for p in pieces], kind="stable")  # similar lengths batch well
        vectors = np.zeros((len(pieces), self.dim), dtype=np.float32)
        reported = 0
        for lo in range(0, len(order), self.batch_size):
            idx = order[lo : lo + self.batch_size]
            vectors[idx] = self.model.encode(
                [pieces[j] for j in idx], batch_size=self.batch_size, convert_to_numpy=True,
                normalize_embeddings=True, show_progress_bar=False,
            )
            if progress is not None:
                # The bar counts texts; windows done are reported as the same share of texts.
                done = min(len(texts), int(round((lo + len(idx)) * len(texts) / len(pieces))))
                progress(done - reported)
                reported = done
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        np.add.at(out, owner, vectors * weight[:, None])
        return normalize_rows(out)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
