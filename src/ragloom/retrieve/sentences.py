"""The sentence index: every current sentence of a tenant as per-document arrays with unit
vectors, read once per commit and shared by the modes that score or grow sentences (the
sentence lift of vector, hybrid, balanced and graph; the window modes) and by the answer writer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from ragloom.embed.base import normalize_rows
from ragloom.retrieve.base import SearchRequest
from ragloom.store.lance import LanceStore, vector_matrix
from ragloom.store.plan import SENTENCES
from ragloom.store.reads import runs


@dataclass(frozen=True, slots=True)
class Sentences:
    """Sentences of one document in order: positions, offsets, sections and unit vectors.

    They may be only windows of the document (around the hits); ``positions`` tells where the
    gaps are, and a gap is a boundary like the document's own ends.
    """

    document_id: str
    positions: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    sections: np.ndarray
    vectors: np.ndarray  # (n, dim), L2-normalised

    def __len__(self) -> int:
        return len(self.starts)

    def next_to(self, i: int, j: int) -> bool:
        return 0 <= j < len(self) and abs(int(self.positions[j]) - int(self.positions[i])) == 1

    def compact(self) -> Sentences:
        """The same sentences with half-precision vectors, to keep in memory (a million
        sentences in 0.8 GB instead of 1.5)."""
        return replace(self, vectors=self.vectors.astype(np.float16))

    def exact(self) -> Sentences:
        """Single-precision vectors again, for the arithmetic of growing spans."""
        return self if self.vectors.dtype == np.float32 else replace(self, vectors=self.vectors.astype(np.float32))

    def adjacent(self) -> np.ndarray:
        """Cosine similarity of each sentence with the next one (where they are neighbours)."""
        if len(self) < 2:
            return np.zeros(0)
        sims = np.sum(self.vectors[:-1] * self.vectors[1:], axis=1)
        result: np.ndarray = sims[np.diff(self.positions) == 1]
        return result



#: Columns of the sentence index that expansion reads.
SENTENCE_COLUMNS = ["document_id", "chunk_index", "start_char", "end_char", "section_index", "vector"]


def sentences_from_columns(doc: str, columns: Sequence[np.ndarray], vectors: np.ndarray) -> Sentences:
    """A document's sentences from its (positions, starts, ends, sections) columns and vectors."""
    positions, starts, ends, sections = columns
    order = np.argsort(positions, kind="stable")
    return Sentences(doc, positions[order], starts[order], ends[order], sections[order],
                     normalize_rows(np.asarray(vectors, dtype=np.float32)[order]))


def sentence_index(store: LanceStore, tenant: str) -> dict[str, Sentences]:
    """Every current sentence of ``tenant``, as per-document arrays with unit vectors in half
    precision (a million sentences of 384 dimensions in 0.77 GB).

    Read from the sentences table a batch at a time, each batch's vectors made unit and halved
    before the next is read, and kept by the store until its next write, so that growing
    windows costs array lookups, not a filtered table read per query (over 100k sentences those
    reads took 65-140 ms; see docs/benchmarks.md). Reading the whole table at once, as before,
    held 1.5 GB of vectors in single precision at a million sentences, and the process kept that
    peak: 4.4 GB resident after the first query.
    """
    def load() -> dict[str, Sentences]:
        docs: list[np.ndarray] = []
        columns: list[list[np.ndarray]] = [[], [], [], []]
        vectors: list[np.ndarray] = []
        for batch in store.current_batches(tenant, SENTENCE_COLUMNS, table=SENTENCES):
            docs.append(np.asarray(batch.column("document_id").to_pylist(), dtype=object))
            for kept, name in zip(columns, ("chunk_index", "start_char", "end_char", "section_index"), strict=True):
                kept.append(batch.column(name).to_numpy())
            vectors.append(normalize_rows(vector_matrix(pa.Table.from_batches([batch]))).astype(np.float16))
        if not docs:
            return {}
        positions, starts, ends, sections = (np.concatenate(c) for c in columns)
        every_doc = np.concatenate(docs)
        order = np.lexsort((positions, every_doc))  # by document, then position in it
        every_doc = every_doc[order]
        halves = np.concatenate(vectors)[order]
        del vectors
        positions, starts, ends, sections = positions[order], starts[order], ends[order], sections[order]
        pa.default_memory_pool().release_unused()  # the batches' memory, back to the system
        return {doc: Sentences(doc, positions[lo:hi], starts[lo:hi], ends[lo:hi], sections[lo:hi], halves[lo:hi])
                for doc, lo, hi in runs(every_doc)}

    index: dict[str, Sentences] = store.memo(("sentence index", tenant), load)
    return index


def sentence_arrays(req: SearchRequest, documents: set[str]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(starts, ends, unit vectors) of the sentences of ``documents``, sorted by start: from the
    in-memory sentence index for a current query, read at ``as_of`` otherwise."""
    if req.as_of is None:
        index = sentence_index(req.store, req.tenant)
        return {d: (index[d].starts, index[d].ends, index[d].vectors) for d in documents if d in index}
    found = req.store.chunks(req.tenant, table=SENTENCES, as_of=req.as_of, document_ids=documents,
                             columns=["document_id", "start_char", "end_char", "vector"])
    by_doc: dict[str, list[Mapping[str, Any]]] = {}
    for r in found:
        by_doc.setdefault(r["document_id"], []).append(r)
    out = {}
    for doc, rs in by_doc.items():
        rs.sort(key=lambda r: r["start_char"])
        out[doc] = (np.array([r["start_char"] for r in rs]), np.array([r["end_char"] for r in rs]),
                    normalize_rows(np.stack([np.asarray(r["vector"], dtype=np.float32) for r in rs])))
    return out
