"""The context graph held as arrays answers as a networkx multigraph of the same rows would."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.config import GraphSettings
from ragloom.errors import UnknownChunkError
from ragloom.graph.model import EDGE_TYPES, FIXED_WEIGHTS, MENTIONS, SAME_LENS, SAME_SOURCE, Edge
from ragloom.graph.view import PREVIEW, ContextGraph, node_attributes

SETTINGS = GraphSettings(source_clique_bound=3, lens_clique_bound=4)


def row(i: int, doc: int, lens: int) -> dict[str, Any]:
    return {"chunk_id": f"c{i:03d}", "document_id": f"d{doc}", "lens": f"lens-{lens}",
            "source_path": f"/tmp/docs/d{doc}.md", "chunk_index": i, "total_chunks": 9, "token_count": 10 + i,
            "section_path": f"Part {i % 3}", "text": "word " * (i * 20), "key_terms": [f"t{i % 4}"],
            "time_refs": [], "created_at": None, "title": f"Doc {doc}"}


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[Edge]]:
    n = draw(st.integers(1, 14))
    rows = [row(i, draw(st.integers(0, 3)), draw(st.integers(0, 2))) for i in range(n)]
    ends = st.integers(0, n + 1)  # n and n + 1 are not nodes: such edges are left out
    edges = []
    for a, b, kind, weight, about in draw(st.lists(st.tuples(ends, ends, st.sampled_from(EDGE_TYPES),
                                                             st.floats(0.01, 1.0), st.booleans()), max_size=40)):
        attrs: dict[str, Any] = {"about": [f"c{b:03d}"]} if kind == MENTIONS and about else {}
        if kind == SAME_LENS and about:
            attrs["note"] = "kept"
        edges.append(Edge(f"c{min(a, b):03d}", f"c{max(a, b):03d}", kind, weight, attrs))
    return rows, edges


def reference(rows: list[dict[str, Any]], edges: list[Edge]) -> nx.MultiGraph:
    """The graph as it was built before it became arrays."""
    graph = nx.MultiGraph()
    for r in rows:
        graph.add_node(r["chunk_id"], **node_attributes(r))
    for e in edges:
        if e.src in graph and e.dst in graph:
            graph.add_edge(e.src, e.dst, key=e.type, type=e.type, weight=e.weight, **dict(e.attrs))
    return graph


def expected_follow(ref: nx.MultiGraph, by_doc: dict[str, list[str]], node: str, kinds: set[str]) -> list[tuple[str, str, float]]:
    out = [(nbr, d["type"], float(d["weight"])) for _, nbr, d in ref.edges(node, data=True)
           if d["type"] in kinds and (d["type"] != MENTIONS or nbr in d.get("about", ()))]
    members = by_doc[ref.nodes[node]["document_id"]]
    if SAME_SOURCE in kinds and len(members) > SETTINGS.source_clique_bound:
        out.extend((m, SAME_SOURCE, FIXED_WEIGHTS[SAME_SOURCE]) for m in members if m != node)
    return out


@settings(max_examples=150, deadline=None)
@given(graphs(), st.sets(st.sampled_from(EDGE_TYPES)))
def test_the_arrays_walk_as_a_networkx_multigraph(drawn: tuple[list[dict[str, Any]], list[Edge]], kinds: set[str]) -> None:
    rows, edges = drawn
    graph = ContextGraph.from_rows(rows, edges, SETTINGS)
    ref = reference(rows, edges)
    by_doc: dict[str, list[str]] = {}
    by_lens: dict[str, list[str]] = {}
    for r in rows:
        by_doc.setdefault(r["document_id"], []).append(r["chunk_id"])
        by_lens.setdefault(r["lens"], []).append(r["chunk_id"])
    for node in ref.nodes:
        assert node in graph
        stored = [(nbr, d["type"], float(d["weight"])) for _, nbr, d in ref.edges(node, data=True)]
        assert graph.neighbours(node, implicit=False) == stored
        implied = list(stored)
        if len(by_doc[ref.nodes[node]["document_id"]]) > SETTINGS.source_clique_bound:
            implied += [(m, SAME_SOURCE, 1.0) for m in by_doc[ref.nodes[node]["document_id"]] if m != node]
        if len(by_lens[ref.nodes[node]["lens"]]) > SETTINGS.lens_clique_bound:
            implied += [(m, SAME_LENS, 0.5) for m in by_lens[ref.nodes[node]["lens"]] if m != node]
        assert graph.neighbours(node) == implied
        assert graph.follow(node, kinds) == expected_follow(ref, by_doc, node, kinds)
        assert graph.node(node) == ref.nodes[node]
        shown = graph.show(node, limit=50)
        assert [(r["neighbour"], r["type"], r["weight"]) for r in shown["relations"]] == \
            sorted(stored, key=lambda r: -r[2])
    # The networkx view built on demand is the reference graph itself.
    assert list(graph.graph.nodes(data=True)) == list(ref.nodes(data=True))
    assert list(graph.graph.edges(keys=True, data=True)) == list(ref.edges(keys=True, data=True))
    stats = graph.stats()
    assert stats["nodes"] == ref.number_of_nodes()
    assert stats["edges"] == ref.number_of_edges()
    assert stats["edge_types"] == dict(sorted(Counter(d["type"] for _, _, d in ref.edges(data=True)).items()))
    assert stats["components"] == nx.number_connected_components(ref)
    assert stats["density"] == pytest.approx(nx.density(nx.Graph(ref)) if len(ref) > 1 else 0.0)
    assert graph.lenses() == sorted(by_lens)


def test_a_node_shows_its_preview_and_an_unknown_one_is_named() -> None:
    rows = [row(0, 0, 0), row(9, 0, 0)]
    graph = ContextGraph.from_rows(rows, [Edge("c000", "c009", MENTIONS, 0.4, {"about": ["c009"], "entities": ["X"]})],
                                   SETTINGS)
    assert len(graph.node("c009")["content_preview"]) == PREVIEW
    assert graph.follow("c000", [MENTIONS]) == [("c009", MENTIONS, 0.4)]
    assert graph.follow("c009", [MENTIONS]) == []  # from the mention to the subject only
    assert graph.show("c000")["relations"][0]["entities"] == ["X"]
    with pytest.raises(UnknownChunkError, match="c123"):
        graph.node("c123")
    exported = json.loads(json.dumps(graph.stats()))
    assert exported["edge_types"] == {MENTIONS: 1}
