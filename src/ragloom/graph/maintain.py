"""Keeping a workspace's context graph in step with its chunks: full builds, incremental
updates after an ingest, and the networkx view queries read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ragloom.embed.base import normalize_rows
from ragloom.graph.build import build_edges, term_counts, update_edges
from ragloom.graph.entities import changed_holders, with_entities
from ragloom.graph.model import GraphNode
from ragloom.store.schema import GRAPH_NODE_COLUMNS, GRAPH_VIEW_COLUMNS, edge_rows, graph_node

if TYPE_CHECKING:
    from ragloom.config import GraphSettings, Settings
    from ragloom.graph.view import ContextGraph
    from ragloom.store.lance import LanceStore


class Wiring(Protocol):
    """What the graph needs of an engine's wiring (:class:`ragloom.components.Components`)."""

    @property
    def store(self) -> LanceStore: ...

    @property
    def settings(self) -> Settings: ...

#: Above this share of changed chunks an update rebuilds the graph whole (it is as fast).
REBUILD_SHARE = 0.3
#: Chunk columns read besides the graph node's, to find what each chunk is about and mentions.
ENTITY_COLUMNS = ["title", "section_path", "text"]


class GraphMaintainer:
    """Builds, updates and loads one workspace's graph; every write is one store commit."""

    def __init__(self, components: Wiring) -> None:
        self.c = components

    def _nodes(self, tenant: str, removed: Iterable[Mapping[str, Any]] = ()
               ) -> tuple[list[GraphNode], dict[str, dict[str, Any]], list[GraphNode]]:
        """The current chunks as graph nodes, their rows by id, and the ``removed`` rows as
        nodes too (with what they were about and mentioned, for an update to compare)."""
        rows = self.c.store.chunks(tenant, columns=[*GRAPH_NODE_COLUMNS, *ENTITY_COLUMNS])
        gone = [(graph_node(r), r) for r in removed]
        nodes, gone_nodes = with_entities([graph_node(r) for r in rows], {r["chunk_id"]: r for r in rows}, gone)
        # The text is needed only to find mentions: it does not stay in memory with the rows.
        return nodes, {r["chunk_id"]: {k: v for k, v in r.items() if k != "text"} for r in rows}, gone_nodes

    def build(self, tenant: str) -> int:
        """Rebuild the tenant's edges from its current chunks; returns the edge count."""
        nodes, rows, _ = self._nodes(tenant)
        return self._rebuild(tenant, nodes, rows)

    def _rebuild(self, tenant: str, nodes: list[GraphNode], rows: dict[str, dict[str, Any]]) -> int:
        edges = build_edges(nodes, self.c.settings.graph)
        self.c.store.replace_edges(tenant, edge_rows(tenant, edges, rows, datetime.now(UTC)))
        return len(edges)

    def update(self, tenant: str, changed: set[str], removed: Iterable[Mapping[str, Any]]) -> int:
        """Recompute the edges of the chunks that changed (``removed``: the rows that stopped
        being current); a full build when most changed or there are no edges yet."""
        nodes, rows, gone = self._nodes(tenant, [r for r in removed if r["tenant_id"] == tenant])
        store = self.c.store
        changed = {n.chunk_id for n in nodes if n.chunk_id in changed}
        if not store.has_edges(tenant) or len(changed) > REBUILD_SHARE * max(len(nodes), 1):
            return self._rebuild(tenant, nodes, rows)
        # Entity edges are weighted by how many chunks hold their name: every holder of a name
        # whose holders changed (before: the unchanged chunks and the removed ones) is redone.
        before = [n for n in nodes if n.chunk_id not in changed] + gone
        redo = changed | {cid for cid in changed_holders(before, nodes) if cid in rows}
        # SIMILAR_TO keeps each chunk's max_similar best neighbours: the chunks whose choice
        # the change may alter, and the neighbours that may keep a redone chunk, are redone too.
        similar = SimilarReach(nodes, gone, changed, self.c.settings.graph, limit=int(REBUILD_SHARE * len(nodes)))
        reach = similar.close(redo | similar.seeds())
        if reach is None:
            return self._rebuild(tenant, nodes, rows)
        redo = reach
        # Term and period counts as they were before the run: what the run changed is taken
        # out and what it removed put back, so postings caps decide as a full build would.
        previous = term_counts(nodes)
        for node in nodes:
            if node.chunk_id in changed:
                for term in set(node.key_terms):
                    previous[f"key_terms:{term}"] -= 1
                for period in set(node.periods):
                    previous[f"periods:{period}"] -= 1
        for term, count in term_counts(gone).items():
            previous[term] = previous.get(term, 0) + count
        plan = update_edges(nodes, self.c.settings.graph, changed=redo, removed=gone, previous_terms=previous,
                            previous_count=len(before))
        # Terms that crossed their postings cap bring all their chunks into the update: the
        # neighbours that may keep those are redone too (a second plan, rarely needed).
        touched = {cid for cid in plan.remove_touching if cid in rows}
        if not touched <= redo:
            reach = similar.close(redo | touched)
            if reach is None:
                return self._rebuild(tenant, nodes, rows)
            if reach != redo | touched:
                plan = update_edges(nodes, self.c.settings.graph, changed=reach, removed=gone,
                                    previous_terms=previous, previous_count=len(before))
        store.update_edges(tenant, chunks=plan.remove_touching, documents=plan.remove_documents,
                           lenses=plan.remove_lenses, rows=edge_rows(tenant, plan.add, rows, datetime.now(UTC)))
        return len(plan.add)

    def view(self, tenant: str) -> ContextGraph:
        """The tenant's graph, loaded once per commit (as arrays: see :class:`ContextGraph`)."""
        store = self.c.store

        def load() -> ContextGraph:
            from ragloom.graph.view import ContextGraph  # networkx: only for the queries that walk the graph

            nodes = store.current_columns(tenant, [*GRAPH_VIEW_COLUMNS, "title"])
            if nodes is None:
                return ContextGraph.from_rows([], [], self.c.settings.graph)
            return ContextGraph(nodes, store.edge_table(tenant), self.c.settings.graph)

        graph: ContextGraph = store.memo(("graph", tenant), load)
        return graph


#: Similarities this little below the threshold count as above it where an update decides what
#: to redo: float32 products of other shapes than the build's may differ in the last bits.
SIMILAR_MARGIN = 1e-5
_BLOCK = 1024


class SimilarReach:
    """Which chunks an update must redo for its ``SIMILAR_TO`` edges to equal a full build's.

    Each chunk keeps its ``max_similar`` most similar neighbours and a pair is an edge when
    either end keeps it, but an update ranks the neighbours of the chunks it redoes only. So it
    redoes (:meth:`seeds`) every chunk near a changed or removed one whose neighbours overflowed
    ``max_similar`` before the change or do after (which of them it keeps may have changed),
    and (:meth:`close`) every neighbour of a redone chunk that overflows now, over and over
    (the neighbour may keep it where it does not keep the neighbour). A chunk whose neighbours
    never overflow keeps them all, before and after: its edges to the chunks not redone stay
    as they were.

    ``nodes``: the chunks after the change; ``gone``: the removed ones (old versions of edited
    chunks included); ``limit``: when the neighbours :meth:`close` adds make more chunks to
    redo than this, a full build is as good, and it says ``None``.
    """

    def __init__(self, nodes: Sequence[GraphNode], gone: Sequence[GraphNode], changed: set[str],
                 settings: GraphSettings, *, limit: int | None = None) -> None:
        self.nodes, self.limit = nodes, limit
        self._overflow: dict[int, bool] = {}  # position -> has more neighbours than it keeps, now
        self.cap, n = settings.max_similar, len(nodes)
        # No chunk has more neighbours than it keeps, before or after: nothing to widen.
        self.idle = not nodes or max(n, n - len(changed) + len(gone)) - 1 <= self.cap
        self.unknown = any(g.vector is None for g in gone)  # a removed chunk's neighbours cannot be found
        if self.idle or self.unknown:
            return
        self.matrix = normalize_rows(np.stack([np.asarray(v.vector, dtype=np.float32) for v in nodes]))
        self.old = (normalize_rows(np.stack([np.asarray(g.vector, dtype=np.float32) for g in gone])) if gone
                    else np.zeros((0, self.matrix.shape[1]), dtype=np.float32))
        self.threshold = settings.similarity_threshold - SIMILAR_MARGIN
        self.is_changed = np.zeros(n, dtype=bool)
        self.is_changed[[i for i, node in enumerate(nodes) if node.chunk_id in changed]] = True
        self.position = {node.chunk_id: i for i, node in enumerate(nodes)}

    def _near(self, queries: np.ndarray) -> np.ndarray:
        """Whether each current chunk is above the threshold for any of ``queries`` (vectors)."""
        found = np.zeros(len(self.nodes), dtype=bool)
        for lo in range(0, len(queries), _BLOCK):
            found |= (queries[lo : lo + _BLOCK] @ self.matrix.T > self.threshold).any(axis=0)
        return found

    def _neighbours(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """How many neighbours the chunks at ``rows`` have now, and had before the change."""
        now, before = np.zeros(len(rows), dtype=np.int64), np.zeros(len(rows), dtype=np.int64)
        for lo in range(0, len(rows), _BLOCK):
            block = rows[lo : lo + _BLOCK]
            above = self.matrix[block] @ self.matrix.T > self.threshold
            above[np.arange(len(block)), block] = False  # a chunk is not its own neighbour
            now[lo : lo + len(block)] = above.sum(axis=1)
            was = (self.matrix[block] @ self.old.T > self.threshold).sum(axis=1)
            before[lo : lo + len(block)] = above[:, ~self.is_changed].sum(axis=1) + was
        return now, before

    def seeds(self) -> set[str]:
        """The unchanged chunks near a changed or removed one whose neighbours overflow now or
        did before the change."""
        if self.idle or self.unknown:
            return set()
        near = self._near(self.matrix[np.flatnonzero(self.is_changed)]) | self._near(self.old)
        candidates = np.flatnonzero(near & ~self.is_changed)
        now, before = self._neighbours(candidates)
        return {self.nodes[i].chunk_id for i in candidates[(now > self.cap) | (before > self.cap)].tolist()}

    def close(self, ids: set[str]) -> set[str] | None:
        """``ids`` (current chunks) with every neighbour of one that overflows now, over and
        over; ``None`` when that is more than ``limit`` chunks, or unknowable."""
        if self.idle:
            return set(ids)
        if self.unknown:
            return None
        redo = {self.position[c] for c in ids if c in self.position}
        frontier = self._overflowing(sorted(redo))
        while frontier:
            new = sorted(set(np.flatnonzero(self._near(self.matrix[frontier])).tolist()) - redo)
            redo.update(new)
            if new and self.limit is not None and len(redo) > self.limit:
                return None
            frontier = self._overflowing(new)
        return {self.nodes[i].chunk_id for i in redo} | set(ids)

    def _overflowing(self, rows: list[int]) -> list[int]:
        """Those of ``rows`` that have more neighbours now than they keep."""
        unknown = np.asarray([r for r in rows if r not in self._overflow], dtype=np.int64)
        self._overflow.update(zip(unknown.tolist(), (self._neighbours(unknown)[0] > self.cap).tolist(), strict=True))
        return [r for r in rows if self._overflow[r]]
