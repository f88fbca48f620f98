"""Edges of the context graph, computed without comparing all pairs of chunks.

======================  ==========================================  ===========================
type                    condition                                   how pairs are found
======================  ==========================================  ===========================
``SIMILAR_TO``          cosine of the embeddings above a threshold   blocked exact search up to
                                                                     5,000 chunks, a two-level
                                                                     inverted-file index (k-means
                                                                     regions split into cells,
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
``MENTIONS``            one chunk's text names what another chunk    the names (titles, headings)
                        is about (its title or heading), across      keyed by their first words;
                        documents                                    names held by more than
                                                                     ``entity_postings`` chunks
                                                                     skipped
``SHARED_ENTITY``       two chunks of different documents name the   the same index
                        same title or heading
======================  ==========================================  ===========================

Entity edges are weighted by how specific their name is (:mod:`ragloom.graph.entities`).

Groups above their bound are not lost: :class:`~ragloom.graph.view.ContextGraph` treats their
members as neighbours when it expands, without storing every pair. Two chunks may hold
several relations at once; all are kept (one edge per type).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ragloom.config import GraphSettings
from ragloom.embed.base import normalize_rows
from ragloom.graph.entities import entity_edges
from ragloom.graph.model import (
    FIXED_WEIGHTS,
    SAME_LENS,
    SAME_SOURCE,
    SEQUENTIAL,
    SIMILAR_TO,
    TEMPORAL_OVERLAP,
    TOPIC_OVERLAP,
    Edge,
    GraphNode,
    edge,
)

#: Up to this many chunks, similar pairs come from an exact blocked search.
EXACT_LIMIT = 5000
CELL_SIZE = 200
PROBES = 3
PROJECTION = 64


# -- similar pairs --------------------------------------------------------------------------------


def _matrix(nodes: Sequence[GraphNode]) -> np.ndarray:
    return normalize_rows(np.stack([np.asarray(n.vector, dtype=np.float32) for n in nodes]))


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]  # (i, j, similarity), as arrays


def _join(parts: list[Pairs]) -> Pairs:
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))  # type: ignore[return-value]


def _above(sims: np.ndarray, rows_of: np.ndarray, cols_of: np.ndarray, threshold: float) -> Pairs:
    rows, cols = np.nonzero(sims > threshold)
    i, j = rows_of[rows], cols_of[cols]
    keep = i != j
    return i[keep], j[keep], sims[rows[keep], cols[keep]]


def _exact_pairs(matrix: np.ndarray, queries: np.ndarray, threshold: float) -> Pairs:
    everything = np.arange(len(matrix))
    return _join([_above(matrix[block] @ matrix.T, block, everything, threshold)
                  for block in (queries[lo : lo + 1024] for lo in range(0, len(queries), 1024))])


def _kmeans(points: np.ndarray, k: int, rng: np.random.Generator, iterations: int = 6) -> np.ndarray:
    """Spherical k-means centroids of ``points`` (unit vectors)."""
    centroids = points[rng.choice(len(points), size=k, replace=False)].copy()
    for _ in range(iterations):
        assign = np.argmax(points @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, points)
        filled = np.bincount(assign, minlength=k) > 0
        centroids[filled] = sums[filled] / np.linalg.norm(sums[filled], axis=1, keepdims=True).clip(1e-12)
    return centroids


def _top(sims: np.ndarray, count: int) -> np.ndarray:
    """Column numbers of the ``count`` largest values of each row, largest first."""
    count = min(count, sims.shape[1])
    top = np.argpartition(-sims, count - 1, axis=1)[:, :count]
    order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def _project(matrix: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors in a random ``PROJECTION``-dimensional projection (when that is smaller):
    cells are coarse, and the nearest cells found there are nearly always the nearest ones,
    at a sixth of the cost of comparing full vectors."""
    if matrix.shape[1] <= 2 * PROJECTION:
        return matrix
    seen = matrix @ rng.normal(size=(matrix.shape[1], PROJECTION)).astype(np.float32)
    result: np.ndarray = seen / np.linalg.norm(seen, axis=1, keepdims=True).clip(1e-12)
    return result


def _grouped(labels: np.ndarray, k: int) -> list[np.ndarray]:
    """Row numbers per label ``0..k-1``, from one sort."""
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(k + 1))
    return [order[bounds[c] : bounds[c + 1]] for c in range(k)]


def _cells(matrix: np.ndarray, seed: int = 0) -> tuple[int, np.ndarray]:
    """Cells of about ``CELL_SIZE`` vectors, and the ``PROBES`` nearest cells of every vector
    (nearest first; ``-1`` where fewer exist).

    Two levels, so that no step compares every vector with every cell (which would grow with
    the square of the corpus): about sqrt(n / CELL_SIZE) coarse regions from spherical k-means,
    each region split into as many cells as its size needs (so a crowded region, such as a
    corpus's repeated boilerplate, gets more cells instead of one huge cell), and every vector
    probes the cells of its two nearest regions only.
    """
    rng = np.random.default_rng(seed)
    seen = _project(matrix, rng)
    n = len(seen)
    regions = max(1, min(n, round(math.sqrt(n / CELL_SIZE))))
    sample = seen[rng.choice(n, size=min(n, max(2000, 16 * regions)), replace=False)]
    # Eight or more sample points per centroid place coarse cells well enough; more only costs time.
    region_centroids = _kmeans(sample, regions, rng, iterations=4)
    nearest = np.concatenate([_top(seen[lo : lo + 8192] @ region_centroids.T, min(2, regions))
                              for lo in range(0, n, 8192)])
    cells, offsets = [], [0]
    for members in _grouped(nearest[:, 0], regions):
        k = max(1, math.ceil(len(members) / CELL_SIZE)) if len(members) else 0
        if k:
            pick = members[rng.choice(len(members), size=min(len(members), max(8 * k, 256)), replace=False)]
            cells.append(_kmeans(seen[pick], min(k, len(pick)), rng, iterations=4))
        else:
            cells.append(np.zeros((0, seen.shape[1]), dtype=np.float32))
        offsets.append(offsets[-1] + len(cells[-1]))
    # Each vector's best PROBES cells within each of its regions, then the best PROBES of those.
    width = nearest.shape[1] * PROBES
    found = np.full((n, width), -1, dtype=np.int64)
    sims_found = np.full((n, width), -np.inf, dtype=np.float32)
    for w in range(nearest.shape[1]):
        for region, rows in enumerate(_grouped(nearest[:, w], regions)):
            centroids = cells[region]
            if len(rows) == 0 or len(centroids) == 0:
                continue
            sims = seen[rows] @ centroids.T
            best = _top(sims, PROBES)
            cols = slice(w * PROBES, w * PROBES + best.shape[1])
            found[rows, cols] = best + offsets[region]
            sims_found[rows, cols] = np.take_along_axis(sims, best, axis=1)
    choice = np.argsort(-sims_found, axis=1, kind="stable")[:, :PROBES]
    return offsets[-1], np.take_along_axis(found, choice, axis=1)


def _ivf_pairs(matrix: np.ndarray, threshold: float) -> Pairs:
    """Pairs above ``threshold``: every vector is compared with the members of its nearest
    ``PROBES`` cells only, so the comparisons grow linearly with the number of vectors."""
    k, probes = _cells(matrix)
    # Rows sorted by cell make each cell's members one contiguous slice: no gathering copies.
    members_of = _grouped(probes[:, 0], k)
    order = np.concatenate(members_of)
    ordered = matrix[order]
    bounds = np.cumsum([0] + [len(m) for m in members_of])
    # For each cell, the vectors that probe it (a missing probe, -1, goes to a dummy cell k).
    rows = np.repeat(np.arange(len(probes)), probes.shape[1])
    queries = [rows[g] for g in _grouped(np.where(probes < 0, k, probes).ravel(), k + 1)]
    parts = []
    for c in range(k):
        lo_c, hi_c = bounds[c], bounds[c + 1]
        if hi_c == lo_c:
            continue
        members, inside = ordered[lo_c:hi_c], order[lo_c:hi_c]
        for lo in range(0, len(queries[c]), 2048):
            block = queries[c][lo : lo + 2048]
            parts.append(_above(matrix[block] @ members.T, block, inside, threshold))
    return _join(parts)


def similar_edges(nodes: Sequence[GraphNode], settings: GraphSettings, *, only: set[int] | None = None) -> list[Edge]:
    """``SIMILAR_TO`` edges; with ``only``, just those touching the chunks at those positions.

    Each chunk keeps its ``max_similar`` most similar neighbours; a pair is an edge when either
    end keeps it. Everything after the search is vectorised: the search can return hundreds
    of thousands of pairs on repetitive text.
    """
    n = len(nodes)
    if n < 2:
        return []
    matrix = _matrix(nodes)
    threshold = settings.similarity_threshold
    if only is not None:
        i, j, sim = _exact_pairs(matrix, np.asarray(sorted(only), dtype=np.int64), threshold)
    elif n <= EXACT_LIMIT:
        i, j, sim = _exact_pairs(matrix, np.arange(n), threshold)
    else:
        i, j, sim = _ivf_pairs(matrix, threshold)
    # Both directions of every pair, once each: (node, neighbour, similarity).
    low, high = np.minimum(i, j), np.maximum(i, j)
    codes, first = np.unique(low * n + high, return_index=True)
    low, high, sim = codes // n, codes % n, sim[first]
    node = np.concatenate([low, high])
    other = np.concatenate([high, low])
    both = np.concatenate([sim, sim])
    if only is not None:
        chosen = np.isin(node, np.fromiter(only, dtype=np.int64))
        node, other, both = node[chosen], other[chosen], both[chosen]
    # Rank each node's neighbours by similarity and keep the first max_similar.
    order = np.lexsort((other, -both, node))
    node, other, both = node[order], other[order], both[order]
    starts = np.searchsorted(node, node, side="left")
    kept = (np.arange(len(node)) - starts) < settings.max_similar
    a, b, s = node[kept], other[kept], both[kept]
    codes, first = np.unique(np.minimum(a, b) * n + np.maximum(a, b), return_index=True)
    return [edge(nodes[c // n].chunk_id, nodes[c % n].chunk_id, SIMILAR_TO, round(float(s[f]), 6))
            for c, f in zip(codes.tolist(), first.tolist(), strict=True)]


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
        edges.extend(edge(a.chunk_id, b.chunk_id, SEQUENTIAL, FIXED_WEIGHTS[SEQUENTIAL])
                     for a, b in zip(members, members[1:], strict=False))
        if len(members) <= settings.source_clique_bound:
            edges.extend(edge(a.chunk_id, b.chunk_id, SAME_SOURCE, FIXED_WEIGHTS[SAME_SOURCE])
                         for a, b in itertools.combinations(members, 2))
    for lens, members in by_lens.items():
        if lenses is not None and lens not in lenses:
            continue
        if len(members) <= settings.lens_clique_bound:
            edges.extend(edge(a.chunk_id, b.chunk_id, SAME_LENS, FIXED_WEIGHTS[SAME_LENS])
                         for a, b in itertools.combinations(members, 2))
    return edges


def postings(nodes: Sequence[GraphNode], attribute: str) -> dict[str, list[int]]:
    index: dict[str, list[int]] = defaultdict(list)
    for i, n in enumerate(nodes):
        for term in set(getattr(n, attribute)):
            index[term].append(i)
    return index


@lru_cache(maxsize=512)
def _upper_pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(m, k=1)


def _shared_counts(lists: Mapping[str, list[int]], n: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(pair codes ``i * n + j`` with i < j, how many terms each pair shares), over the terms
    with 2 to ``cap`` postings: one vectorised count instead of a dictionary per pair."""
    codes = []
    for members in lists.values():
        if 2 <= len(members) <= cap:
            rows, cols = _upper_pairs(len(members))
            ids = np.asarray(members, dtype=np.int64)  # ascending: postings are built in node order
            codes.append(ids[rows] * n + ids[cols])
    if not codes:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(codes), return_counts=True)


def overlap_edges(nodes: Sequence[GraphNode], settings: GraphSettings, *, only: set[int] | None = None,
                  index: Mapping[str, Mapping[str, list[int]]] | None = None) -> list[Edge]:
    """``TOPIC_OVERLAP`` (shared key terms) and ``TEMPORAL_OVERLAP`` (shared periods) edges.

    Pairs are enumerated inside each term's postings list; a term found in more than
    ``max_postings`` chunks links too much to mean anything and is skipped. With ``only``, just
    the pairs touching those positions.
    """
    edges: list[Edge] = []
    cap = posting_cap(settings, len(nodes))
    for attribute, kind, minimum in (("key_terms", TOPIC_OVERLAP, settings.min_shared_terms),
                                     ("periods", TEMPORAL_OVERLAP, 1)):
        lists = index[attribute] if index is not None else postings(nodes, attribute)
        usable = {term for term, members in lists.items() if 2 <= len(members) <= cap}
        if only is None:
            codes, counts = _shared_counts(lists, len(nodes), cap)
            pairs = [divmod(int(code), len(nodes)) for code in codes[counts >= minimum]]
        else:
            found: dict[tuple[int, int], int] = defaultdict(int)
            for term in usable:
                members = lists[term]
                for i in (m for m in members if m in only):
                    for j in members:
                        if i != j and not (j in only and j < i):  # each pair once
                            found[(min(i, j), max(i, j))] += 1
            pairs = [pair for pair, count in found.items() if count >= minimum]
        # Each node's usable terms, built once however many pairs it is in.
        kept = {i: set(getattr(nodes[i], attribute)) & usable for i in {i for pair in pairs for i in pair}}
        for i, j in pairs:
            terms = sorted(kept[i] & kept[j])
            weight = float(len(terms)) if kind == TOPIC_OVERLAP else FIXED_WEIGHTS[TEMPORAL_OVERLAP]
            attr = {"shared_terms": terms} if kind == TOPIC_OVERLAP else {"shared_periods": terms}
            edges.append(edge(nodes[i].chunk_id, nodes[j].chunk_id, kind, weight, **attr))
    return edges


#: The postings cap never falls below this many chunks, however small the workspace.
MIN_POSTING_CAP = 20


def posting_cap(settings: GraphSettings, chunks: int) -> int:
    """How many chunks a term or period may be in and still link them: ``max_postings``, or
    ``max_posting_share`` of the workspace's chunks when that is fewer (at least
    :data:`MIN_POSTING_CAP`). Which terms distinguish a chunk is learned from the workspace."""
    return min(settings.max_postings, max(MIN_POSTING_CAP, int(settings.max_posting_share * chunks)))


def build_edges(nodes: Sequence[GraphNode], settings: GraphSettings) -> list[Edge]:
    """Every edge of the graph over ``nodes``."""
    return [*group_edges(nodes, settings), *overlap_edges(nodes, settings), *similar_edges(nodes, settings),
            *entity_edges(nodes, settings.entity_postings)]


@dataclass
class Update:
    """An incremental change: which stored edges go, which edges come."""

    remove_touching: set[str]  # chunk ids whose SIMILAR/TOPIC/TEMPORAL/entity edges are recomputed
    remove_documents: set[str]  # documents whose SEQUENTIAL/SAME_SOURCE edges are recomputed
    remove_lenses: set[str]  # lenses whose SAME_LENS edges are recomputed
    add: list[Edge]


def update_edges(nodes: Sequence[GraphNode], settings: GraphSettings, *, changed: set[str],
                 removed: Sequence[GraphNode] = (), previous_terms: Mapping[str, int] | None = None,
                 previous_count: int | None = None) -> Update:
    """The edge changes after ``changed`` chunk ids were added or edited and ``removed``
    chunks (their old versions) went away; ``nodes`` is the graph's chunks afterwards.

    The result equals a full :func:`build_edges` when ``changed`` also holds every unchanged
    chunk whose kept ``max_similar`` neighbours the change alters (the caller widens it:
    :class:`~ragloom.graph.maintain.SimilarReach`). A term whose postings crossed
    ``max_postings`` in either direction brings all
    its chunks into the recomputation, so the cap means the same as in a full build (the cap
    before is that of ``previous_count`` chunks, the workspace's size before the change). Entity
    edges are weighted by how many chunks hold their name, so ``changed`` must also hold every
    holder of a name whose holders changed (:func:`~ragloom.graph.entities.changed_holders`).
    """
    position = {n.chunk_id: i for i, n in enumerate(nodes)}
    index = {"key_terms": postings(nodes, "key_terms"), "periods": postings(nodes, "periods")}
    touched = {position[c] for c in changed if c in position}
    if previous_terms is not None:
        cap_before = posting_cap(settings, len(nodes) if previous_count is None else previous_count)
        cap_after = posting_cap(settings, len(nodes))
        for attribute in ("key_terms", "periods"):
            for term, members in index[attribute].items():
                before = previous_terms.get(f"{attribute}:{term}", 0)
                if (before > cap_before) != (len(members) > cap_after):
                    touched.update(members)
    affected_docs = {nodes[i].document_id for i in touched} | {n.document_id for n in removed}
    affected_lenses = {nodes[i].lens for i in touched} | {n.lens for n in removed}
    ids = {nodes[i].chunk_id for i in touched} | {n.chunk_id for n in removed}
    add = [
        *group_edges(nodes, settings, documents=affected_docs, lenses=affected_lenses),
        *overlap_edges(nodes, settings, only=touched, index=index),
        *similar_edges(nodes, settings, only=touched),
        *entity_edges(nodes, settings.entity_postings, only=touched),
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
