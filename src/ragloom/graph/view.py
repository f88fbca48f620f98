"""The context graph as a networkx multigraph: nodes are current chunks, edges their relations."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import networkx as nx

from ragloom.checks import check_count
from ragloom.config import GraphSettings
from ragloom.errors import UnknownChunkError
from ragloom.graph.entities import NameIndex, about_names, subjects
from ragloom.graph.model import FIXED_WEIGHTS, MENTIONS, SAME_LENS, SAME_SOURCE, Edge
from ragloom.ids import is_prefix, pick, short_id

PREVIEW = 200


def node_attributes(row: Mapping[str, Any]) -> dict[str, Any]:
    """The seed's node attributes, from a chunk row."""
    created = row.get("created_at")
    return {
        "lens": row["lens"],
        "source_path": row["source_path"],
        "source_name": row["source_path"].rsplit("/", 1)[-1],
        "title": row.get("title") or "",
        "document_id": row["document_id"],
        "chunk_index": int(row["chunk_index"]),
        "total_chunks": int(row["total_chunks"]),
        "token_count": int(row["token_count"]),
        "section_path": row.get("section_path") or "",
        "content_preview": (row.get("text") or "")[:PREVIEW],
        "key_terms": list(row.get("key_terms") or ()),
        "time_references": list(row.get("time_refs") or ()),
        "created_at": created.isoformat() if isinstance(created, datetime | date) else created,
    }


class ContextGraph:
    """Chunks and their relations; groups larger than their clique bound stay implicit.

    A document with more chunks than ``source_clique_bound`` (a lens with more than
    ``lens_clique_bound``) has no stored ``SAME_SOURCE`` (``SAME_LENS``) pairs, but
    :meth:`neighbours` still reports its members as neighbours of each other.
    """

    def __init__(self, graph: nx.MultiGraph, settings: GraphSettings) -> None:
        self.graph = graph
        self.settings = settings
        self._by_doc: dict[str, list[str]] = defaultdict(list)
        self._by_lens: dict[str, list[str]] = defaultdict(list)
        entries: list[tuple[str, tuple[str, ...]]] = []
        for node, data in graph.nodes(data=True):
            self._by_doc[data["document_id"]].append(node)
            self._by_lens[data["lens"]].append(node)
            entries.append((data["document_id"],
                            about_names(data.get("title") or "", data.get("section_path") or "", data["chunk_index"])))
        #: Chunks by the subjects they are about (titles, headings: :mod:`ragloom.graph.entities`).
        ids = list(graph.nodes)
        self._about = {name: [ids[i] for i in members] for name, members in subjects(entries).items()}
        self._names: NameIndex | None = None

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]], edges: Iterable[Edge], settings: GraphSettings) -> ContextGraph:
        graph = nx.MultiGraph()
        for row in rows:
            graph.add_node(row["chunk_id"], **node_attributes(row))
        for e in edges:
            if e.src in graph and e.dst in graph:
                graph.add_edge(e.src, e.dst, key=e.type, type=e.type, weight=e.weight, **dict(e.attrs))
        return cls(graph, settings)

    def implicit_groups(self) -> dict[str, dict[str, int]]:
        """Documents and lenses whose pairs are implied, not stored, with their sizes."""
        return {
            SAME_SOURCE: {d: len(m) for d, m in self._by_doc.items() if len(m) > self.settings.source_clique_bound},
            SAME_LENS: {lens: len(m) for lens, m in self._by_lens.items() if len(m) > self.settings.lens_clique_bound},
        }

    def neighbours(self, node: str, *, implicit: bool = True, whole_lens: bool = True) -> list[tuple[str, str, float]]:
        """(neighbour, edge type, weight) for every relation of ``node``, implied ones included
        (``whole_lens=False`` leaves out the implied members of a lens too large to keep its
        pairs: every chunk of it, which at scale is most of the workspace)."""
        if node not in self.graph:
            return []
        out = [(nbr, data["type"], float(data["weight"]))
               for _, nbr, data in self.graph.edges(node, data=True)]
        if implicit:
            data = self.graph.nodes[node]
            members = self._by_doc[data["document_id"]]
            if len(members) > self.settings.source_clique_bound:
                out.extend((m, SAME_SOURCE, FIXED_WEIGHTS[SAME_SOURCE]) for m in members if m != node)
            members = self._by_lens[data["lens"]]
            if whole_lens and len(members) > self.settings.lens_clique_bound:
                out.extend((m, SAME_LENS, FIXED_WEIGHTS[SAME_LENS]) for m in members if m != node)
        return out

    def follow(self, node: str, kinds: Iterable[str]) -> list[tuple[str, str, float]]:
        """(neighbour, edge type, weight) over the edges of ``kinds`` only, the implied members
        of a large document included when ``SAME_SOURCE`` is one (never a whole lens); a
        ``MENTIONS`` edge only from the chunk that mentions a name to the chunk about it."""
        if node not in self.graph:
            return []
        wanted = set(kinds)
        out = []
        for _, nbr, data in self.graph.edges(node, data=True):
            kind = data["type"]
            if kind in wanted and (kind != MENTIONS or nbr in data.get("about", ())):
                out.append((nbr, kind, float(data["weight"])))
        if SAME_SOURCE in wanted:
            members = self._by_doc[self.graph.nodes[node]["document_id"]]
            if len(members) > self.settings.source_clique_bound:
                out.extend((m, SAME_SOURCE, FIXED_WEIGHTS[SAME_SOURCE]) for m in members if m != node)
        return out

    def named_in(self, text: str) -> dict[str, list[str]]:
        """The subjects (titles, headings of one document) that ``text`` mentions, whole words
        in the same case, each with the chunks about it; a subject more than
        ``entity_postings`` chunks are about is left out."""
        if self._names is None:
            cap = self.settings.entity_postings
            self._names = NameIndex(name for name, members in self._about.items() if len(members) <= cap)
        return {name: list(self._about[name]) for name in sorted(self._names.find(text))}

    def stats(self) -> dict[str, Any]:
        g = self.graph
        by_type = Counter(data["type"] for _, _, data in g.edges(data=True))
        implicit = self.implicit_groups()
        return {
            "nodes": g.number_of_nodes(),
            "edges": g.number_of_edges(),
            "edge_types": dict(sorted(by_type.items())),
            "density": nx.density(nx.Graph(g)) if g.number_of_nodes() > 1 else 0.0,
            "components": nx.number_connected_components(g) if g.number_of_nodes() else 0,
            "implicit_groups": {kind: len(groups) for kind, groups in implicit.items()},
            "implicit_pairs": {kind: sum(n * (n - 1) // 2 for n in groups.values()) for kind, groups in implicit.items()},
        }

    def resolve(self, node: str) -> str:
        """The whole id of a node given by a short id (an unambiguous prefix); a whole id as is."""
        if node in self.graph or not is_prefix(node):
            return node
        return pick(node, (n for n in self.graph if n.startswith(node)), "the graph")

    def show(self, node: str, *, limit: int = 20) -> dict[str, Any]:
        """A node's attributes and its strongest relations (stored ones first), each naming the
        neighbour (short id, document, section) so that a reader can walk on."""
        check_count("limit", limit, "how many relations to show")
        node = self.resolve(node)
        if node not in self.graph:
            raise UnknownChunkError(node, "the graph")
        relations = sorted(self.neighbours(node, implicit=False), key=lambda r: -r[2])
        nodes = self.graph.nodes
        return {
            "id": node,
            "short_id": short_id(node),
            **nodes[node],
            "relations": [{"neighbour": n, "neighbour_short_id": short_id(n), "type": t, "weight": w,
                           "neighbour_source": nodes[n]["source_name"], "neighbour_section": nodes[n]["section_path"],
                           "neighbour_lens": nodes[n]["lens"],
                           **{k: v for k, v in self.graph.get_edge_data(node, n, key=t).items() if k not in ("type", "weight")}}
                          for n, t, w in relations[:limit]],
            "relations_total": len(relations),
        }

    def export(self, path: str | Path, *, format: str = "json") -> Path:  # noqa: A002
        """networkx node-link JSON (the seed's format) or GraphML (lists become JSON strings)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if format == "json":
            data = nx.node_link_data(self.graph, edges="links")
            path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
        elif format == "graphml":
            flat = nx.MultiGraph()
            for node, data in self.graph.nodes(data=True):
                flat.add_node(node, **{k: _scalar(v) for k, v in data.items()})
            for a, b, key, data in self.graph.edges(keys=True, data=True):
                flat.add_edge(a, b, key=key, **{k: _scalar(v) for k, v in data.items()})
            nx.write_graphml(flat, path)
        else:
            from ragloom.errors import UnknownNameError

            raise UnknownNameError("graph export format", format, ["graphml", "json"])
        return path


def _scalar(value: Any) -> Any:  # noqa: ANN401
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return ""
    return value
