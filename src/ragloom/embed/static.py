"""A static embedding model distilled from the bundled all-MiniLM-L6-v2, for very large corpora.

Distillation (the idea of model2vec, done here with the ONNX export so that nothing else is
needed): every word piece of the model's vocabulary is run through the transformer on its
own, its mean-pooled output is its vector; the vectors are reduced to ``dims`` dimensions by
PCA, and weighted down for frequent pieces (smooth inverse frequency, with the vocabulary's
order standing in for frequency). A text's vector is then the weighted mean of its pieces'
vectors: no transformer at embedding time, a couple of hundred times faster, at a measured
cost in quality (docs/benchmarks.md).

Selected with ``embedding.model = "minilm-static"``. The distillation runs once, offline (about
half a minute on two cores), and is cached beside the ONNX exports
(``<cache>/static/<hash of the weights>-<dims>.npz``). A static model reads any length whole.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.config import DEFAULT_MODEL
from ragloom.embed.base import normalize_rows
from ragloom.embed.onnx import OnnxEmbedder, _export_lock, cache_root, model_folder, weights_hash
from ragloom.errors import MissingExtraError

STATIC_MODEL = "minilm-static"
#: Smooth-inverse-frequency coefficient (model2vec's default).
SIF = 1e-4


class StaticEmbedder:
    """Static piece vectors distilled from a sentence-transformers folder, ``dims`` dimensions."""

    def __init__(self, source: str = DEFAULT_MODEL, *, dims: int = 256, cache: Path | None = None) -> None:
        self.source = source
        self.dims = dims
        self.name = f"static:{source}:{dims}"
        self._cache = cache
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.dims

    def _load(self) -> tuple[np.ndarray, Any]:  # (piece vectors, tokenizer)
        with self._lock:
            if self._table is None:
                try:
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise MissingExtraError("tokenizers", "local", "the static embedding model") from exc
                folder = model_folder(self.source)
                target = (self._cache or cache_root()) / "static" / f"{weights_hash(folder)}-{self.dims}.npz"
                if not target.is_file():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with _export_lock(target.parent):
                        if not target.is_file():
                            distill(self.source, target, dims=self.dims, cache=self._cache)
                self._table = np.load(target)["vectors"]
                tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
                tokenizer.no_truncation()
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            return self._table, self._tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        table, tokenizer = self._load()
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, encoding in enumerate(tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            if encoding.ids:
                out[i] = table[np.asarray(encoding.ids)].mean(axis=0)
        return normalize_rows(out)

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector


def distill(source: str, target: Path, *, dims: int = 256, cache: Path | None = None) -> None:
    """Write ``target`` (.npz): one weighted, PCA-reduced vector per word piece of ``source``."""
    model = OnnxEmbedder(source, cache=cache, threads=1)
    sessions, tokenizer = model._load()
    size = tokenizer.get_vocab_size()
    pieces = [tokenizer.id_to_token(i) or "" for i in range(size)]
    # Run each piece on its own: as a text it may split again, so feed its id directly.
    vectors = np.zeros((size, model.dim), dtype=np.float32)
    step = 1024
    session = sessions[0]
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    for lo in range(0, size, step):
        ids = np.array([[cls, i, sep] for i in range(lo, min(lo + step, size))], dtype=np.int64)
        mask = np.ones_like(ids)
        states = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        vectors[lo : lo + len(ids)] = states.mean(axis=1)
    # Principal components of the centred vectors: most of what varies in fewer dimensions.
    keep = np.array([not (p.startswith("[unused") or p in ("[PAD]", "[UNK]", "[MASK]")) for p in pieces])
    centred = vectors - vectors[keep].mean(axis=0)
    _, _, components = np.linalg.svd(centred[keep], full_matrices=False)
    reduced = centred @ components[:dims].T
    # The vocabulary lists pieces roughly by frequency: Zipf's law turns rank into probability.
    rank = np.arange(1, size + 1, dtype=np.float64)
    probability = (1.0 / rank) / np.sum(1.0 / rank)
    weighted = reduced * (SIF / (SIF + probability))[:, None]
    weighted[~keep] = 0.0
    tmp = target.with_suffix(f".tmp{os.getpid()}.npz")
    np.savez(tmp, vectors=weighted.astype(np.float32))
    tmp.replace(target)
