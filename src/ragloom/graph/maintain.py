"""Keeping a workspace's context graph in step with its chunks: full builds, incremental
updates after an ingest, and the networkx view queries read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ragloom.graph.build import GraphNode, build_edges, term_counts, update_edges
from ragloom.graph.entities import changed_holders, with_entities
from ragloom.graph.view import ContextGraph
from ragloom.store.schema import GRAPH_NODE_COLUMNS, GRAPH_VIEW_COLUMNS, edge_rows, edges_from_rows, graph_node

if TYPE_CHECKING:
    from ragloom.components import Components

#: Above this share of changed chunks an update rebuilds the graph whole (it is as fast).
REBUILD_SHARE = 0.3
#: Chunk columns read besides the graph node's, to find what each chunk is about and mentions.
ENTITY_COLUMNS = ["title", "section_path", "text"]


class GraphMaintainer:
    """Builds, updates and loads one workspace's graph; every write is one store commit."""

    def __init__(self, components: Components) -> None:
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
        store.update_edges(tenant, chunks=plan.remove_touching, documents=plan.remove_documents,
                           lenses=plan.remove_lenses, rows=edge_rows(tenant, plan.add, rows, datetime.now(UTC)))
        return len(plan.add)

    def view(self, tenant: str) -> ContextGraph:
        """The tenant's graph as a networkx view, loaded once per commit; treat it as read-only."""
        store = self.c.store

        def load() -> ContextGraph:
            rows = store.chunks(tenant, columns=[*GRAPH_VIEW_COLUMNS, "title"])
            return ContextGraph.from_rows(rows, edges_from_rows(store.edges(tenant)), self.c.settings.graph)

        graph: ContextGraph = store.memo(("graph", tenant), load)
        return graph
