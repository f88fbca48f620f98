"""Edges of the context graph, computed without comparing all pairs of chunks.

======================  ==========================================  ===========================
type                    condition                                   how pairs are found
======================  ==========================================  ===========================
``SIMILAR_TO``          cosine of the embeddings above a threshold   blocked exact search up to
                                                                     5,000 chunks, an inverted-
                                                                     file index (k-means cells,
                                                                     three probed) beyond
``SAME_SOURCE``         same document                               grouping; materialised only
                                                                     up to ``source_clique_bound``
                                                                     chunks per document
``SAME_LENS``           same lens                                   grouping; materialised only
                                                                     up to ``lens_clique_bound``
``TOPIC_OVERLAP``       at least ``min_shared_terms`` key terms      inverted index of terms;
                        in common                                    terms in more than
                                                                     ``max_postings`` chunks skipped
``TEMPORAL_OVERLAP``    a canonical period in common                 inverted index of periods,
                                                                     capped the same way
``SEQUENTIAL``          adjacent chunks of one document             sorting
======================  ==========================================  ===========================

Groups above their bound are not lost: :class:`~ragloom.graph.view.ContextGraph` treats their
members as neighbours when it expands, without storing every pair. Two chunks may hold
several relations at once; all are kept (one edge per type).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragloom.config import GraphSettings

SIMILAR_TO, SAME_SOURCE, SAME_LENS = "SIMILAR_TO", "SAME_SOURCE", "SAME_LENS"
TOPIC_OVERLAP, TEMPORAL_OVERLAP, SEQUENTIAL = "TOPIC_OVERLAP", "TEMPORAL_OVERLAP", "SEQUENTIAL"
EDGE_TYPES = (SIMILAR_TO, SAME_SOURCE, SAME_LENS, TOPIC_OVERLAP, TEMPORAL_OVERLAP, SEQUENTIAL)
#: Weights of the edge types whose weight is fixed (seed 000).
FIXED_WEIGHTS = {SAME_SOURCE: 1.0, SAME_LENS: 0.5, TEMPORAL_OVERLAP: 1.0, SEQUENTIAL: 1.0}
#: Up to this many chunks, similar pairs come from an exact blocked search.
EXACT_LIMIT = 5000
CELL_SIZE = 1000
PROBES = 3


@dataclass(frozen=True, slots=True)
class GraphNode:
    chunk_id: str
    document_id: str
    lens: str
    chunk_index: int
    key_terms: tuple[str, ...] = ()
    periods: tuple[str, ...] = ()  # resolved canonical periods only
    vector: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    type: str
    weight: float
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.src, self.dst, self.type


def _edge(a: str, b: str, kind: str, weight: float, **attrs: Any) -> Edge:  # noqa: ANN401
    src, dst = (a, b) if a < b else (b, a)
    return Edge(src, dst, kind, float(weight), attrs)


# -- similar pairs --------------------------------------------------------------------------------


def _matrix(nodes: Sequence[GraphNode]) -> np.ndarray:
    matrix = np.asarray(np.stack([np.asarray(n.vector, dtype=np.float32) for n in nodes]), dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1
    return matrix / norms


def _exact_pairs(matrix: np.ndarray, queries: np.ndarray, threshold: float) -> Iterable[tuple[int, int, float]]:
    for lo in range(0, len(queries), 1024):
        block = queries[lo : lo + 1024]
        sims = matrix[block] @ matrix.T
        rows, cols = np.nonzero(sims > threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i = int(block[r])
            if i != c:
                yield i, c, float(sims[r, c])


def _cells(matrix: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Spherical k-means cells of about ``CELL_SIZE`` vectors: (centroids, cell of each vector)."""
    rng = np.random.default_rng(seed)
    k = max(2, len(matrix) // CELL_SIZE)
    sample = matrix[rng.choice(len(matrix), size=min(len(matrix), 50 * k), replace=False)]
    centroids = sample[rng.choice(len(sample), size=k, replace=False)].copy()
    for _ in range(8):
        assign = np.argmax(sample @ centroids.T, axis=1)
        for c in range(k):
            members = sample[assign == c]
            if len(members):
                mean = members.sum(axis=0)
                centroids[c] = mean / (np.linalg.norm(mean) or 1)
    cells = np.concatenate([np.argmax(matrix[lo : lo + 8192] @ centroids.T, axis=1)
                            for lo in range(0, len(matrix), 8192)])
    return centroids, cells


def _ivf_pairs(matrix: np.ndarray, threshold: float) -> Iterable[tuple[int, int, float]]:
    """Pairs above ``threshold``: every vector is compared with the members of its three
    nearest cells only, so the work grows linearly with the number of vectors."""
    centroids, cells = _cells(matrix)
    members = [np.nonzero(cells == c)[0] for c in range(len(centroids))]
    probes = np.concatenate([np.argsort(-(matrix[lo : lo + 8192] @ centroids.T), axis=1)[:, :PROBES]
                             for lo in range(0, len(matrix), 8192)])
    for c, inside in enumerate(members):
        if not len(inside):
            continue
        queries = np.nonzero((probes == c).any(axis=1))[0]
        for lo in range(0, len(queries), 2048):
            block = queries[lo : lo + 2048]
            sims = matrix[block] @ matrix[inside].T
            rows, cols = np.nonzero(sims > threshold)
            for r, col in zip(rows.tolist(), cols.tolist(), strict=True):
                i, j = int(block[r]), int(inside[col])
                if i != j:
                    yield i, j, float(sims[r, col])


def similar_edges(nodes: Sequence[GraphNode], settings: GraphSettings, *, only: set[int] | None = None) -> list[Edge]:
    """``SIMILAR_TO`` edges; with ``only``, just those touching the chunks at those positions.

    Each chunk keeps its ``max_similar`` most similar neighbours; a pair is an edge when either
    end keeps it.
    """
    if len(nodes) < 2:
        return []
    matrix = _matrix(nodes)
    if only is not None:
        pairs = _exact_pairs(matrix, np.asarray(sorted(only), dtype=np.int64), settings.similarity_threshold)
    elif len(nodes) <= EXACT_LIMIT:
        pairs = _exact_pairs(matrix, np.arange(len(nodes)), settings.similarity_threshold)
    else:
        pairs = _ivf_pairs(matrix, settings.similarity_threshold)
    best: dict[int, dict[int, float]] = defaultdict(dict)
    for i, j, sim in pairs:
        best[i][j] = sim
        best[j][i] = sim
    kept: dict[tuple[int, int], float] = {}
    for i, neighbours in best.items():
        if only is not None and i not in only:
            continue
        top = sorted(neighbours.items(), key=lambda kv: -kv[1])[: settings.max_similar]
        for j, sim in top:
            kept[(min(i, j), max(i, j))] = sim
    return [_edge(nodes[i].chunk_id, nodes[j].chunk_id, SIMILAR_TO, round(sim, 6)) for (i, j), sim in kept.items()]


# -- groups and inverted indexes --------------------------------------------------------------------


def group_edges(nodes: Sequence[GraphNode], settings: GraphSettings, *, documents: set[str] | None = None,
                lenses: set[str] | None = None) -> list[Edge]:
    """``SAME_SOURCE``, ``SEQUENTIAL`` and ``SAME_LENS`` edges (of the given documents and lenses)."""
    by_doc: dict[str, list[GraphNode]] = defaultdict(list)
    by_lens: dict[str, list[GraphNode]] = defaultdict(list)
    for n in nodes:
        by_doc[n.document_id].append(n)
        by_lens[n.lens].append(n)
    edges: list[Edge] = []
    for doc, members in by_doc.items():
        if documents is not None and doc not in documents:
            continue
        members.sort(key=lambda n: n.chunk_index)
        edges.extend(_edge(a.chunk_id, b.chunk_id, SEQUENTIAL, 1.0) for a, b in zip(members, members[1:], strict=False))
        if len(members) <= settings.source_clique_bound:
            edges.extend(_edge(a.chunk_id, b.chunk_id, SAME_SOURCE, 1.0) for a, b in itertools.combinations(members, 2))
    for lens, members in by_lens.items():
        if lenses is not None and lens not in lenses:
            continue
        if len(members) <= settings.lens_clique_bound:
            edges.extend(_edge(a.chunk_id, b.chunk_id, SAME_LENS, 0.5) for a, b in itertools.combinations(members, 2))
    return edges


def postings(nodes: Sequence[GraphNode], attribute: str) -> dict[str, list[int]]:
    index: dict[str, list[int]] = defaultdict(list)
    for i, n in enumerate(nodes):
        for term in set(getattr(n, attribute)):
            index[term].append(i)
    return index


def overlap_edges(nodes: Sequence[GraphNode], settings: GraphSettings, *, only: set[int] | None = None,
                  index: Mapping[str, Mapping[str, list[int]]] | None = None) -> list[Edge]:
    """``TOPIC_OVERLAP`` (shared key terms) and ``TEMPORAL_OVERLAP`` (shared periods) edges.

    Pairs are enumerated inside each term's postings list; a term found in more than
    ``max_postings`` chunks links too much to mean anything and is skipped.
    """
    edges: list[Edge] = []
    for attribute, kind, minimum in (("key_terms", TOPIC_OVERLAP, settings.min_shared_terms),
                                     ("periods", TEMPORAL_OVERLAP, 1)):
        lists = index[attribute] if index is not None else postings(nodes, attribute)
        shared: dict[tuple[int, int], list[str]] = defaultdict(list)
        for term, members in lists.items():
            if len(members) < 2 or len(members) > settings.max_postings:
                continue
            if only is None:
                for i, j in itertools.combinations(members, 2):
                    shared[(i, j) if i < j else (j, i)].append(term)
            else:
                touched = [m for m in members if m in only]
                for i in touched:
                    for j in members:
                        if i != j and not (j in only and j < i):  # each pair once
                            shared[(min(i, j), max(i, j))].append(term)
        for (i, j), terms in shared.items():
            if len(terms) >= minimum:
                terms = sorted(terms)
                weight = float(len(terms)) if kind == TOPIC_OVERLAP else 1.0
                attr = {"shared_terms": terms} if kind == TOPIC_OVERLAP else {"shared_periods": terms}
                edges.append(_edge(nodes[i].chunk_id, nodes[j].chunk_id, kind, weight, **attr))
    return edges


def build_edges(nodes: Sequence[GraphNode], settings: GraphSettings) -> list[Edge]:
    """Every edge of the graph over ``nodes``."""
    return [*group_edges(nodes, settings), *overlap_edges(nodes, settings), *similar_edges(nodes, settings)]


@dataclass
class Update:
    """An incremental change: which stored edges go, which edges come."""

    remove_touching: set[str]  # chunk ids whose SIMILAR/TOPIC/TEMPORAL edges are recomputed
    remove_documents: set[str]  # documents whose SEQUENTIAL/SAME_SOURCE edges are recomputed
    remove_lenses: set[str]  # lenses whose SAME_LENS edges are recomputed
    add: list[Edge]


def update_edges(nodes: Sequence[GraphNode], settings: GraphSettings, *, changed: set[str],
                 removed: Sequence[GraphNode] = (), previous_terms: Mapping[str, int] | None = None) -> Update:
    """The edge changes after ``changed`` chunk ids were added or edited and ``removed``
    chunks (their old versions) went away; ``nodes`` is the graph's chunks afterwards.

    The result equals a full :func:`build_edges` as long as no chunk's ``max_similar`` list
    overflows: a term whose postings crossed ``max_postings`` in either direction brings all
    its chunks into the recomputation, so the cap means the same as in a full build.
    """
    position = {n.chunk_id: i for i, n in enumerate(nodes)}
    index = {"key_terms": postings(nodes, "key_terms"), "periods": postings(nodes, "periods")}
    touched = {position[c] for c in changed if c in position}
    if previous_terms is not None:
        for attribute in ("key_terms", "periods"):
            for term, members in index[attribute].items():
                before = previous_terms.get(f"{attribute}:{term}", 0)
                if (before > settings.max_postings) != (len(members) > settings.max_postings):
                    touched.update(members)
    affected_docs = {nodes[i].document_id for i in touched} | {n.document_id for n in removed}
    affected_lenses = {nodes[i].lens for i in touched} | {n.lens for n in removed}
    ids = {nodes[i].chunk_id for i in touched} | {n.chunk_id for n in removed}
    add = [
        *group_edges(nodes, settings, documents=affected_docs, lenses=affected_lenses),
        *overlap_edges(nodes, settings, only=touched, index=index),
        *similar_edges(nodes, settings, only=touched),
    ]
    return Update(ids, affected_docs, affected_lenses, add)


def term_counts(nodes: Iterable[GraphNode]) -> dict[str, int]:
    """Postings sizes of every term and period, for :func:`update_edges`' ``previous_terms``."""
    counts: dict[str, int] = defaultdict(int)
    for n in nodes:
        for term in set(n.key_terms):
            counts[f"key_terms:{term}"] += 1
        for period in set(n.periods):
            counts[f"periods:{period}"] += 1
    return counts
