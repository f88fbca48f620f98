"""The context graph as a networkx multigraph: nodes are current chunks, edges their relations."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragloom.checks import check_count
from ragloom.config import GraphSettings
from ragloom.errors import UnknownChunkError
from ragloom.graph.entities import NameIndex, about_names, subjects
from ragloom.graph.model import EDGE_TYPES, FIXED_WEIGHTS, MENTIONS, SAME_LENS, SAME_SOURCE, Edge
from ragloom.ids import is_prefix, pick, short_id
from ragloom.store.schema import GRAPH_VIEW_COLUMNS

PREVIEW = 200
#: Arrow types of the node table's columns that rows given as dicts may leave ambiguous.
NODE_TYPES: dict[str, pa.DataType] = {
    "chunk_id": pa.string(), "document_id": pa.string(), "lens": pa.string(), "source_path": pa.string(),
    "chunk_index": pa.int64(), "total_chunks": pa.int64(), "token_count": pa.int64(), "section_path": pa.string(),
    "text": pa.string(), "key_terms": pa.list_(pa.string()), "time_refs": pa.list_(pa.string()), "title": pa.string(),
}


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

    Held as arrays, not Python objects: the nodes' attributes as one Arrow table (the text cut
    to its preview), the edges as arrays of end positions, kinds and weights, and each node's
    edges as a slice of one sorted array (compressed sparse rows). At 100,000 chunks that is a
    few tens of megabytes where a networkx multigraph of the same held about 0.5 GB; walking a
    node's edges costs the same. :attr:`graph` builds the networkx multigraph on first use, for
    what needs one (themes, export, the web app's picture).
    """

    def __init__(self, nodes: pa.Table, edges: pa.Table, settings: GraphSettings) -> None:
        """``nodes``: a chunk row per node (:data:`~ragloom.store.schema.GRAPH_VIEW_COLUMNS` and
        ``title``); ``edges``: ``src``, ``dst``, ``type``, ``weight`` and ``attrs`` (JSON).
        Edges with an end outside ``nodes`` are left out; an edge given again (the same ends
        and type) keeps its first place, its last weight and every row's attributes (later ones
        over earlier), as a networkx multigraph keyed by type would."""
        self.settings = settings
        if "text" in nodes.column_names:  # only its preview is shown
            nodes = nodes.set_column(nodes.column_names.index("text"), "text",
                                     pc.utf8_slice_codeunits(nodes["text"], 0, PREVIEW))
        self._nodes = nodes
        self.ids: list[str] = nodes["chunk_id"].to_pylist()
        self._index = {cid: i for i, cid in enumerate(self.ids)}
        docs: list[str] = nodes["document_id"].to_pylist()
        lenses: list[str] = nodes["lens"].to_pylist()
        self._doc_of, self._lens_of = docs, lenses
        self._by_doc: dict[str, list[str]] = defaultdict(list)
        self._by_lens: dict[str, list[str]] = defaultdict(list)
        for cid, doc, lens in zip(self.ids, docs, lenses, strict=True):
            self._by_doc[doc].append(cid)
            self._by_lens[lens].append(cid)
        titles = nodes["title"].to_pylist() if "title" in nodes.column_names else [""] * len(self.ids)
        entries = [(doc, about_names(title or "", section or "", int(index)))
                   for doc, title, section, index in zip(docs, titles, nodes["section_path"].to_pylist(),
                                                         nodes["chunk_index"].to_pylist(), strict=True)]
        #: Chunks by the subjects they are about (titles, headings: :mod:`ragloom.graph.entities`).
        self._about = {name: [self.ids[i] for i in members] for name, members in subjects(entries).items()}
        self._names: NameIndex | None = None
        self._edges(edges)
        self._nx: nx.MultiGraph | None = None

    def _edges(self, edges: pa.Table) -> None:
        ids = pa.array(self.ids, pa.string())
        src = pc.index_in(edges["src"], value_set=ids).to_numpy(zero_copy_only=False)
        dst = pc.index_in(edges["dst"], value_set=ids).to_numpy(zero_copy_only=False)
        kinds = pc.index_in(edges["type"], value_set=pa.array(EDGE_TYPES)).to_numpy(zero_copy_only=False)
        inside = ~(np.isnan(src) | np.isnan(dst) | np.isnan(kinds))
        src, dst, kinds = src[inside].astype(np.int64), dst[inside].astype(np.int64), kinds[inside].astype(np.int64)
        weights = edges["weight"].to_numpy(zero_copy_only=False)[inside].astype(np.float64)
        rows = np.flatnonzero(inside)
        # One edge per (ends, type): its first place, its last row's values.
        low, high = np.minimum(src, dst), np.maximum(src, dst)
        key = (low * len(self.ids) + high) * len(EDGE_TYPES) + kinds
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        last = np.zeros(len(first), dtype=np.int64)
        np.maximum.at(last, inverse, np.arange(len(key)))
        keep = np.sort(first)
        latest = last[inverse[keep]]
        self._src, self._dst, self._kind = src[keep], dst[keep], kinds[keep].astype(np.uint8)
        self._weight = weights[latest]
        attrs = edges["attrs"].take(pa.array(rows[latest], pa.int64()))
        counts = np.bincount(inverse, minlength=len(first))
        if np.any(counts > 1):  # each row's attributes over the ones before, in order
            texts = attrs.to_pylist()
            group_of = {int(g): place for place, g in enumerate(inverse[keep].tolist()) if counts[g] > 1}
            merged: dict[int, dict[str, Any]] = {}
            for e, g in enumerate(inverse.tolist()):
                if g in group_of:
                    text = edges["attrs"][int(rows[e])].as_py()
                    merged.setdefault(group_of[g], {}).update(json.loads(text) if text else {})
            for place, values in merged.items():
                texts[place] = json.dumps(values, ensure_ascii=False)
            attrs = pa.array(texts, pa.string())
        self._attrs = attrs
        # Each node's edges, in the order a networkx multigraph walks them: neighbours by their
        # first edge with the node, then that neighbour's edges in order (ties fall the same way).
        n, m = len(self.ids), len(self._src)
        loop = self._src == self._dst
        at = np.concatenate([self._src, self._dst[~loop]])
        other = np.concatenate([self._dst, self._src[~loop]])
        edge = np.concatenate([np.arange(m), np.flatnonzero(~loop)])
        pair = np.minimum(at, other) * n + np.maximum(at, other)
        _, pair_first_at, pair_of = np.unique(pair, return_index=True, return_inverse=True)
        first_edge = edge[pair_first_at][pair_of]
        order = np.lexsort((edge, first_edge, at))
        self._other, self._edge = other[order].astype(np.int32), edge[order].astype(np.int32)
        self._indptr = np.searchsorted(at[order], np.arange(n + 1))

    def __contains__(self, node: object) -> bool:
        return node in self._index

    def lenses(self) -> list[str]:
        """The lenses the graph's chunks are filed under, sorted."""
        return sorted(self._by_lens)

    def node(self, node: str) -> dict[str, Any]:
        """A node's attributes (:func:`node_attributes`); :class:`UnknownChunkError` when absent."""
        if node not in self._index:
            raise UnknownChunkError(node, "the graph")
        return node_attributes(self._nodes.slice(self._index[node], 1).to_pylist()[0])

    def _attrs_of(self, edge: int) -> dict[str, Any]:
        text = self._attrs[edge].as_py()
        attrs: dict[str, Any] = json.loads(text) if text else {}
        return attrs

    def _incident(self, node: str) -> list[tuple[str, str, float, int]]:
        """(neighbour, edge type, weight, edge) for the stored edges of ``node``."""
        i = self._index[node]
        lo, hi = int(self._indptr[i]), int(self._indptr[i + 1])
        ids = self.ids
        return [(ids[o], EDGE_TYPES[self._kind[e]], float(self._weight[e]), int(e))
                for o, e in zip(self._other[lo:hi].tolist(), self._edge[lo:hi].tolist(), strict=True)]

    @property
    def graph(self) -> nx.MultiGraph:
        """The graph as a networkx multigraph (nodes with :func:`node_attributes`, edges keyed by
        type), built on first use and kept; treat it as read-only."""
        if self._nx is None:
            graph = nx.MultiGraph()
            for row in self._nodes.to_pylist():
                graph.add_node(row["chunk_id"], **node_attributes(row))
            ids, attrs = self.ids, self._attrs.to_pylist()
            for e, (a, b, kind) in enumerate(zip(self._src.tolist(), self._dst.tolist(), self._kind.tolist(), strict=True)):
                graph.add_edge(ids[a], ids[b], key=EDGE_TYPES[kind], type=EDGE_TYPES[kind],
                               weight=float(self._weight[e]), **(json.loads(attrs[e]) if attrs[e] else {}))
            self._nx = graph
        return self._nx

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]], edges: Iterable[Edge], settings: GraphSettings) -> ContextGraph:
        edge_list = list(edges)
        edge_table = pa.table({
            "src": pa.array([e.src for e in edge_list], pa.string()),
            "dst": pa.array([e.dst for e in edge_list], pa.string()),
            "type": pa.array([e.type for e in edge_list], pa.string()),
            "weight": pa.array([e.weight for e in edge_list], pa.float64()),
            "attrs": pa.array([json.dumps(dict(e.attrs), ensure_ascii=False) if e.attrs else "" for e in edge_list],
                              pa.string()),
        })
        return cls(_node_table(list(rows)), edge_table, settings)

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
        if node not in self._index:
            return []
        out = [(nbr, kind, weight) for nbr, kind, weight, _ in self._incident(node)]
        if implicit:
            i = self._index[node]
            members = self._by_doc[self._doc_of[i]]
            if len(members) > self.settings.source_clique_bound:
                out.extend((m, SAME_SOURCE, FIXED_WEIGHTS[SAME_SOURCE]) for m in members if m != node)
            members = self._by_lens[self._lens_of[i]]
            if whole_lens and len(members) > self.settings.lens_clique_bound:
                out.extend((m, SAME_LENS, FIXED_WEIGHTS[SAME_LENS]) for m in members if m != node)
        return out

    def follow(self, node: str, kinds: Iterable[str]) -> list[tuple[str, str, float]]:
        """(neighbour, edge type, weight) over the edges of ``kinds`` only, the implied members
        of a large document included when ``SAME_SOURCE`` is one (never a whole lens); a
        ``MENTIONS`` edge only from the chunk that mentions a name to the chunk about it."""
        if node not in self._index:
            return []
        wanted = set(kinds)
        out = []
        for nbr, kind, weight, e in self._incident(node):
            if kind in wanted and (kind != MENTIONS or nbr in self._attrs_of(e).get("about", ())):
                out.append((nbr, kind, weight))
        if SAME_SOURCE in wanted:
            members = self._by_doc[self._doc_of[self._index[node]]]
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
        n, m = len(self.ids), len(self._src)
        low, high = np.minimum(self._src, self._dst), np.maximum(self._src, self._dst)
        pairs = len(np.unique(low * max(n, 1) + high)) if m else 0
        implicit = self.implicit_groups()
        return {
            "nodes": n,
            "edges": m,
            "edge_types": dict(sorted(Counter(EDGE_TYPES[k] for k in self._kind.tolist()).items())),
            "density": pairs / (n * (n - 1) / 2) if n > 1 else 0.0,
            "components": _components(n, self._src, self._dst),
            "implicit_groups": {kind: len(groups) for kind, groups in implicit.items()},
            "implicit_pairs": {kind: sum(n * (n - 1) // 2 for n in groups.values()) for kind, groups in implicit.items()},
        }

    def resolve(self, node: str) -> str:
        """The whole id of a node given by a short id (an unambiguous prefix); a whole id as is."""
        if node in self._index or not is_prefix(node):
            return node
        return pick(node, (n for n in self.ids if n.startswith(node)), "the graph")

    def show(self, node: str, *, limit: int = 20) -> dict[str, Any]:
        """A node's attributes and its strongest relations (stored ones first), each naming the
        neighbour (short id, document, section) so that a reader can walk on."""
        check_count("limit", limit, "how many relations to show")
        node = self.resolve(node)
        attributes = self.node(node)
        relations = sorted(self._incident(node), key=lambda r: -r[2])
        shown = []
        for neighbour, kind, weight, e in relations[:limit]:
            other = self.node(neighbour)
            shown.append({"neighbour": neighbour, "neighbour_short_id": short_id(neighbour), "type": kind,
                          "weight": weight, "neighbour_source": other["source_name"],
                          "neighbour_section": other["section_path"], "neighbour_lens": other["lens"],
                          **{k: v for k, v in self._attrs_of(e).items() if k not in ("type", "weight")}})
        return {"id": node, "short_id": short_id(node), **attributes, "relations": shown,
                "relations_total": len(relations)}

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


def _node_table(rows: list[Mapping[str, Any]]) -> pa.Table:
    """Chunk rows as the graph's node table (the columns it reads; ``title`` may be absent)."""
    columns = [*GRAPH_VIEW_COLUMNS, "title"]
    return pa.table({name: pa.array([row.get(name) for row in rows], type=NODE_TYPES.get(name)) for name in columns})


def _components(n: int, src: np.ndarray, dst: np.ndarray) -> int:
    """How many connected components ``n`` nodes and the edges ``src``–``dst`` make."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    count = n
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
            count -= 1
    return count


def _scalar(value: Any) -> Any:  # noqa: ANN401
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return ""
    return value
