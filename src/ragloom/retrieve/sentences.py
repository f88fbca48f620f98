"""The sentence index: every current sentence of a tenant as per-document arrays with unit
vectors, read once per commit and shared by the modes that score or grow sentences (the
sentence lift of vector, hybrid, balanced and graph; the window modes) and by the answer writer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ragloom.embed.base import normalize_rows
from ragloom.errors import StoreError
from ragloom.retrieve.base import SearchRequest
from ragloom.store.derived import RowFile, save_arrays
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


class SentenceIndex(Mapping[str, Sentences]):
    """Every current sentence of a tenant, by document: one set of arrays sorted by document
    and position (memory-mapped files, or arrays in memory), and each document's
    :class:`Sentences` a slice of them, made when asked for."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._arrays = arrays
        self._bounds = arrays["bounds"]
        self._where = {str(doc): i for i, doc in enumerate(arrays["documents"].tolist())}

    def __getitem__(self, doc: str) -> Sentences:
        i = self._where[doc]
        lo, hi = int(self._bounds[i]), int(self._bounds[i + 1])
        a = self._arrays
        return Sentences(doc, a["positions"][lo:hi], a["starts"][lo:hi], a["ends"][lo:hi], a["sections"][lo:hi],
                         a["vectors"][lo:hi])

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


#: The columns of the sentence index besides the vectors, and the names its arrays keep them under.
_PLACES = {"chunk_index": "positions", "start_char": "starts", "end_char": "ends", "section_index": "sections"}


def sentence_index(store: LanceStore, tenant: str) -> SentenceIndex:
    """Every current sentence of ``tenant``, as per-document arrays with unit vectors in half
    precision (a million sentences of 384 dimensions in 0.77 GB), kept until the store's next
    commit.

    In a local workspace the arrays are files beside the tables, written by the first process
    that needs them after a commit and memory-mapped by every one after
    (:mod:`ragloom.store.derived`): a query touches a few pages of a few documents, and the
    process holds those, not the whole index. On object storage or inside a write they are
    arrays in memory. Either way the table is read twice, never whole: its positions first (to
    sort by document and position), then its vectors a batch at a time, each batch made unit,
    halved and put in place before the next (reading the whole table at once held 1.5 GB of
    single-precision vectors at a million sentences, and the process kept that peak).
    """
    def load() -> SentenceIndex:
        files = store.derived_files(tenant, "sentence-index", table=SENTENCES)
        kept = files.load() if files is not None else None
        if kept is not None:
            return SentenceIndex(kept)
        places = _places(store, tenant)
        dim = store.dim or 0

        def write(folder: Path) -> None:
            vectors = RowFile(folder / "vectors.npy", len(places["row_ids"]), dim, np.dtype(np.float16))
            try:
                _fill_vectors(store, tenant, places, vectors.put)
            finally:
                vectors.close()
            save_arrays(folder, _kept(places))

        kept = files.keep(write) if files is not None else None
        if kept is not None:
            return SentenceIndex(kept)
        halves = np.zeros((len(places["row_ids"]), dim), dtype=np.float16)  # object storage, a full disk

        def put(at: np.ndarray, values: np.ndarray) -> None:
            halves[at] = values

        _fill_vectors(store, tenant, places, put)
        return SentenceIndex({**_kept(places), "vectors": halves})

    index: SentenceIndex = store.memo(("sentence index", tenant), load)
    return index


def _kept(places: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays of :func:`_places` the index keeps (not those only filling it needs)."""
    return {name: values for name, values in places.items() if name not in ("row_ids", "place_of")}


def _places(store: LanceStore, tenant: str) -> dict[str, np.ndarray]:
    """Where each current sentence lies, sorted by document and position: ``documents`` and
    their ``bounds``, the :data:`_PLACES` columns, and, for :func:`_fill_vectors`, the table's
    ``row_ids`` sorted with the place of each in the sorted order (``place_of``)."""
    docs: list[np.ndarray] = []
    columns: dict[str, list[np.ndarray]] = {name: [] for name in [*_PLACES.values(), "row_ids"]}
    for batch in store.current_batches(tenant, ["document_id", *_PLACES], table=SENTENCES, row_ids=True):
        docs.append(np.asarray(batch.column("document_id").to_pylist(), dtype=object))
        for column, name in [*_PLACES.items(), ("_rowid", "row_ids")]:
            columns[name].append(batch.column(column).to_numpy())
    every_doc = np.concatenate(docs) if docs else np.zeros(0, dtype=object)
    arrays = {name: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64) for name, parts in columns.items()}
    order = np.lexsort((arrays["positions"], every_doc))  # by document, then position in it
    every_doc = every_doc[order]
    arrays = {name: values[order] for name, values in arrays.items()}
    found = runs(every_doc)
    arrays["documents"] = np.array([doc for doc, _, _ in found], dtype=str)
    arrays["bounds"] = np.array([lo for _, lo, _ in found] + [len(every_doc)], dtype=np.int64)
    by_row = np.argsort(arrays["row_ids"], kind="stable")
    arrays["place_of"] = by_row
    arrays["row_ids"] = arrays["row_ids"][by_row]
    return arrays


def _fill_vectors(store: LanceStore, tenant: str, places: Mapping[str, np.ndarray],
                  put: Callable[[np.ndarray, np.ndarray], None]) -> None:
    """Read the sentences' vectors a batch at a time and ``put(places, unit half-precision
    rows)`` each in its sorted place."""
    row_ids, place_of = places["row_ids"], places["place_of"]
    for batch in store.current_batches(tenant, ["vector"], table=SENTENCES, row_ids=True):
        ids = batch.column("_rowid").to_numpy()
        at = np.searchsorted(row_ids, ids)
        if np.any(at >= len(row_ids)) or np.any(row_ids[np.minimum(at, len(row_ids) - 1)] != ids):
            raise StoreError(f"the sentences of {store.workspace} changed between two reads of one commit; "
                             "run the query again")
        put(place_of[at], normalize_rows(vector_matrix(pa.Table.from_batches([batch]))).astype(np.float16))


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
