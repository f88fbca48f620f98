"""A disk cache of embeddings keyed by model and text, so re-runs embed nothing twice."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragloom.embed.base import Embedder
from ragloom.embed.windowed import windowed

_BATCH = 500


class CachedEmbedder:
    """Wraps an embedder; vectors are stored in a SQLite file under the key (model, text)."""

    def __init__(self, inner: Embedder, path: str | Path) -> None:
        # What is cached is a whole text's vector, so the inner embedder must see whole texts.
        self.inner = windowed(inner)
        self.name = inner.name
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    @property
    def dim(self) -> int:
        return self.inner.dim

    def _key(self, text: str) -> str:
        return hashlib.blake2b(f"{self.name}\0{text}".encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._connect() as db:
            unique = list(dict.fromkeys(keys))
            for lo in range(0, len(unique), _BATCH):
                batch = unique[lo : lo + _BATCH]
                marks = ",".join("?" * len(batch))
                for key, blob in db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", batch):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        # Each missing key once, in order of first use; one key means one text (the key hashes it).
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if todo:
            vectors = self.inner.embed(list(todo.values()))
            with self._connect() as db:
                db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                    [(k, v.astype(np.float32).tobytes()) for k, v in zip(todo, vectors, strict=True)],
                )
            found.update(zip(todo, vectors, strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    @property
    def pools(self) -> bool:
        return bool(getattr(self.inner, "pools", False))

    def pool(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
             ) -> tuple[np.ndarray, list[np.ndarray]]:
        """The inner embedder's :meth:`~ragloom.embed.windowed.WindowedEmbedder.pool` (token
        states must be computed anyway); the texts' vectors are cached."""
        vectors, span_vectors = self.inner.pool(texts, spans)  # type: ignore[attr-defined]
        with self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                           [(self._key(t), v.astype(np.float32).tobytes()) for t, v in zip(texts, vectors, strict=True)])
        return vectors, span_vectors

    def embed_query(self, text: str) -> np.ndarray:
        result: np.ndarray = self.embed([text])[0]
        return result
