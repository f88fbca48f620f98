"""Long texts embedded whole, for any embedder that declares how much it reads at once.

An embedder with a ``max_tokens`` attribute (all-MiniLM-L6-v2 reads 256 word pieces, special
tokens included) is wrapped by :class:`WindowedEmbedder`: a text longer than that is cut into
windows at word boundaries, every window is embedded, and the text's vector is the mean of
its windows' vectors weighted by their length, normalised again. The pieces come from the
embedder's own ``token_pieces(texts)`` when it has one, else from the bundled MiniLM
tokenizer, else from a word pattern with room to spare.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ragloom.embed.base import Embedder, normalize_rows

#: (start, end, word number) of every token piece of a text, in character offsets.
Pieces = list[tuple[int, int, int]]
PieceSplitter = Callable[[Sequence[str]], list[Pieces]]
# Room left in each window for special tokens and for a window's text tokenising to a few
# more pieces on its own than it did inside the whole text.
WINDOW_MARGIN = 6
# Without the model's tokenizer, a word is taken to be this many pieces (MiniLM's word pieces
# run about 1.3 per English word; code and numbers run higher).
_PIECES_PER_WORD = 2
_WORD = re.compile(r"\w+|[^\w\s]")


def _pattern_pieces(texts: Sequence[str]) -> list[Pieces]:
    out: list[Pieces] = []
    for text in texts:
        pieces: Pieces = []
        for n, m in enumerate(_WORD.finditer(text)):
            pieces.extend([(m.start(), m.end(), n)] * _PIECES_PER_WORD)
        out.append(pieces)
    return out


@lru_cache(maxsize=1)
def _bundled_splitter() -> PieceSplitter:
    try:
        from tokenizers import Tokenizer

        from ragloom.tokens import minilm_folder

        tokenizer = Tokenizer.from_file(str(minilm_folder() / "tokenizer.json"))
    except Exception:  # noqa: BLE001 - no tokenizers package or no bundled model: fall back
        return _pattern_pieces
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def split(texts: Sequence[str]) -> list[Pieces]:
        out: list[Pieces] = []
        for enc in tokenizer.encode_batch(list(texts), add_special_tokens=False):
            out.append([(a, b, -1 if w is None else w) for (a, b), w in zip(enc.offsets, enc.word_ids, strict=True)])
        return out

    return split


def windows(texts: Sequence[str], pieces: Sequence[Pieces], room: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Window texts, the index of the text each belongs to, and each window's piece count.

    A text of at most ``room`` pieces is its own window; a longer one is cut every ``room``
    pieces, backed up to the first piece of a word so that no word is split between windows.
    """
    out, owner, weight, _ = window_spans(texts, pieces, room)
    return out, owner, weight


def window_spans(texts: Sequence[str], pieces: Sequence[Pieces], room: int
                 ) -> tuple[list[str], np.ndarray, np.ndarray, list[int]]:
    """:func:`windows`, and where each window starts in its text."""
    out: list[str] = []
    owner: list[int] = []
    weight: list[int] = []
    starts: list[int] = []
    for i, (text, offsets) in enumerate(zip(texts, pieces, strict=True)):
        if len(offsets) <= room:
            out.append(text)
            owner.append(i)
            weight.append(max(len(offsets), 1))
            starts.append(0)
            continue
        start = 0
        while start < len(offsets):
            stop = min(start + room, len(offsets))
            if stop < len(offsets):
                back = stop
                while back > start + room // 2 and offsets[back][2] == offsets[back - 1][2]:
                    back -= 1
                stop = back
            out.append(text[offsets[start][0] : offsets[stop - 1][1]])
            owner.append(i)
            weight.append(stop - start)
            starts.append(offsets[start][0])
            start = stop
    return out, np.asarray(owner, dtype=np.int64), np.asarray(weight, dtype=np.float32), starts


def declares_window(embedder: object) -> bool:
    """Whether ``embedder`` says how many tokens it reads, without loading a lazy model."""
    return getattr(type(embedder), "max_tokens", None) is not None or "max_tokens" in getattr(embedder, "__dict__", {})


class WindowedEmbedder:
    """``inner``, with texts longer than its ``max_tokens`` embedded window by window."""

    def __init__(self, inner: Any, *, splitter: PieceSplitter | None = None) -> None:  # noqa: ANN401
        self.inner: Embedder = inner
        self.name: str = inner.name
        own = getattr(inner, "token_pieces", None)
        self._splitter = splitter or own
        self.windows_embedded = 0  # windows beyond the first of each text, for tests and stats

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def max_tokens(self) -> int:
        return int(getattr(self.inner, "max_tokens"))  # noqa: B009 - a declared attribute, maybe a lazy property

    @property
    def pools(self) -> bool:
        """Whether the model can pool token states over spans (see :meth:`pool`)."""
        return callable(getattr(self.inner, "pool", None))

    def pool(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
             ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Each text's vector (windowed as :meth:`embed`), and a normalised vector per span:
        the mean of the token states inside it, across windows; a span with no token inside
        any window gets a zero vector."""
        dim = self.dim
        if not texts:
            return np.zeros((0, dim), dtype=np.float32), []
        room = max(self.max_tokens - WINDOW_MARGIN, 8)
        splitter = self._splitter or _bundled_splitter()
        pieces, owner, weight, starts = window_spans(texts, splitter(texts), room)
        local: list[list[tuple[int, int]]] = []
        where: list[list[int]] = []  # for each window span, its index among its text's spans
        for piece, text_i, start in zip(pieces, owner.tolist(), starts, strict=True):
            end = start + len(piece)
            mine = [(j, max(a, start) - start, min(b, end) - start)
                    for j, (a, b) in enumerate(spans[text_i]) if a < end and b > start]
            local.append([(a, b) for _, a, b in mine])
            where.append([j for j, _, _ in mine])
        vectors, sums, counts = self.inner.pool(pieces, local)  # type: ignore[attr-defined]
        out = np.zeros((len(texts), dim), dtype=np.float32)
        np.add.at(out, owner, np.asarray(vectors, dtype=np.float32) * weight[:, None])
        span_sums = [np.zeros((len(s), dim), dtype=np.float32) for s in spans]
        span_counts = [np.zeros(len(s), dtype=np.float32) for s in spans]
        for w, text_i in enumerate(owner.tolist()):
            for k, j in enumerate(where[w]):
                span_sums[text_i][j] += sums[w][k]
                span_counts[text_i][j] += counts[w][k]
        span_vectors = [normalize_rows(s / np.maximum(c, 1.0)[:, None]) for s, c in zip(span_sums, span_counts,
                                                                                          strict=True)]
        return normalize_rows(out), span_vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        room = max(self.max_tokens - WINDOW_MARGIN, 8)
        splitter = self._splitter or _bundled_splitter()
        pieces, owner, weight = windows(texts, splitter(texts), room)
        self.windows_embedded += len(pieces) - len(texts)
        if len(pieces) == len(texts):
            return normalize_rows(np.asarray(self.inner.embed(list(texts)), dtype=np.float32))
        vectors = np.asarray(self.inner.embed(pieces), dtype=np.float32)
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        np.add.at(out, owner, vectors * weight[:, None])
        return normalize_rows(out)

    def embed_query(self, text: str) -> np.ndarray:
        result: np.ndarray = self.embed([text])[0]
        return result


def windowed(embedder: Embedder) -> Embedder:
    """``embedder`` wrapped so that long texts are embedded whole, when it declares a limit."""
    if isinstance(embedder, WindowedEmbedder) or not declares_window(embedder):
        return embedder
    return WindowedEmbedder(embedder)
