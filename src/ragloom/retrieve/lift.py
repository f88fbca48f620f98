"""A chunk scored with its best sentence: retrieve by the whole and by its parts.

A chunk's embedding is the mean of what it says, so a question about one of its sentences can
rank it below chunks that are about the question's topic in general; a sentence's embedding
alone misses what the words around it say. Scoring a chunk by both,

    score = (1 - w) · cos(query, chunk) + w · max over the chunk's sentences of cos(query, sentence)

with ``w = retrieval.sentence_weight`` (0.5), keeps the chunk as the unit that is retrieved and
sent while letting its best sentence speak for it. The sentence vectors are the sentence index
that ingest builds anyway (``[sentences]``), so this costs one more vector search per query,
run beside the chunks' own.

Measured with Chroma's protocol (``ragloom eval chunking``) on both shared corpora and on the
documentation corpus, for ragloom's and LangChain's chunks alike: docs/benchmarks.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragloom.embed.base import normalize_rows
from ragloom.retrieve.base import SearchRequest, unit
from ragloom.retrieve.sentences import sentence_arrays
from ragloom.store.plan import SENTENCES
from ragloom.store.schema import RESULT_COLUMNS

#: Chunks ranked by their own vector that are scored again with their sentences, at least.
POOL = 50
#: The best sentences whose chunks join the pool (a chunk whose vector alone ranks it lower).
SENTENCE_HITS = 20


def best_sentence_scores(starts: np.ndarray, ends: np.ndarray, scores: np.ndarray,
                         spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """For each ``(start, end)`` span, the best score of the sentences inside it (``starts`` and
    ``ends`` sorted, one document); a span holding no whole sentence takes the sentences it
    overlaps; -1 where there are none."""
    out = np.full(len(spans), -1.0)
    for i, (start, end) in enumerate(spans):
        lo = int(np.searchsorted(starts, start, side="left"))
        hi = int(np.searchsorted(ends, end, side="right"))
        if hi > lo:
            out[i] = float(scores[lo:hi].max())
            continue
        overlap = (starts < end) & (ends > start)
        if overlap.any():
            out[i] = float(scores[overlap].max())
    return out


def lifted(chunk: np.ndarray, sentence: np.ndarray, weight: float) -> np.ndarray:
    """The mixed score; a chunk without sentences keeps its own."""
    return np.where(sentence > -1.0, (1.0 - weight) * chunk + weight * sentence, chunk)


def sentence_hit_rows(req: SearchRequest, *, with_vectors: bool) -> list[dict[str, Any]]:
    """The chunks that hold the :data:`SENTENCE_HITS` best sentences (a search of the sentence
    index), each with its own cosine as ``_score``: candidates a chunk's vector alone may rank
    low. Independent of the chunk search, so the two run at once (:mod:`ragloom.retrieve.basic`)."""
    query = unit(req.vector)
    hits = req.store.vector_search(req.tenant, query, SENTENCE_HITS, lenses=req.lenses, as_of=req.as_of,
                                   dated=req.dated, table=SENTENCES, columns=["document_id", "start_char", "end_char"])
    extra = req.store.chunks_holding(req.tenant, [(h["document_id"], h["start_char"], h["end_char"]) for h in hits],
                                     columns=[*RESULT_COLUMNS, "vector"], lenses=req.lenses, as_of=req.as_of,
                                     dated=req.dated)
    if extra:
        cosines = normalize_rows(np.stack([np.asarray(r["vector"], dtype=np.float32) for r in extra])) @ query
        for r, c in zip(extra, cosines, strict=True):
            r["_score"] = float(c)
            if not with_vectors:
                r.pop("vector", None)
    return extra


def lift_rows(req: SearchRequest, rows: list[dict[str, Any]], extra: list[dict[str, Any]], k: int, *,
              weight: float) -> list[dict[str, Any]]:
    """The chunk rows of a vector search (``_score``: their cosine), with the chunks of the best
    sentences (``extra``, from :func:`sentence_hit_rows`) added, scored again with their best
    sentences, best first, ``k`` of them. Each row keeps its own cosine as ``_chunk_score`` and
    its best sentence's as ``_sentence_score``."""
    query = unit(req.vector)
    known = {r["chunk_id"] for r in rows}
    rows = rows + [r for r in extra if r["chunk_id"] not in known]
    if not rows:
        return rows
    sentences = sentence_arrays(req, {r["document_id"] for r in rows})
    best = np.full(len(rows), -1.0)
    by_doc: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_doc.setdefault(r["document_id"], []).append(i)
    for doc, positions in by_doc.items():
        if doc not in sentences:
            continue
        starts, ends, vectors = sentences[doc]
        scores = vectors.astype(np.float32) @ query
        spans = [(int(rows[i]["start_char"]), int(rows[i]["end_char"])) for i in positions]
        best[positions] = best_sentence_scores(starts, ends, scores, spans)
    chunk = np.array([float(r["_score"]) for r in rows])
    mixed = lifted(chunk, best, weight)
    for r, c, s, m in zip(rows, chunk, best, mixed, strict=True):
        r["_chunk_score"], r["_sentence_score"], r["_score"] = float(c), float(s), float(m)
    order = np.argsort(-mixed, kind="stable")[:k]
    return [rows[i] for i in order]
