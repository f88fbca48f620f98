from __future__ import annotations

import random
from datetime import date

import pytest

from ragloom.context import find_relationships
from ragloom.context.relate import graph_edge_triples
from ragloom.errors import InvalidParameterError
from ragloom.graph import SAME_LENS, SAME_SOURCE, SIMILAR_TO, Edge

from .factory import chunk, paragraph


def kinds(rels) -> dict[frozenset[str], set[str]]:
    out: dict[frozenset[str], set[str]] = {}
    for r in rels:
        out.setdefault(frozenset((r.source_id, r.target_id)), set()).add(r.type)
    return out


def test_overlap_strength_follows_the_entity_jaccard() -> None:
    chunks = [
        chunk("a", "x", entities=("e1", "e2", "e3", "e1")),  # mentions repeat; sets count
        chunk("b", "x", entities=("e1", "e2", "e3")),  # 1.0 with a
        chunk("c", "x", entities=("e1", "e9")),  # 1/4 with a
        chunk("d", "x", entities=("e1", "e7", "e8", "e9", "e10", "e11")),  # 1/8 with a
    ]
    rels = {frozenset((r.source_id, r.target_id)): r for r in find_relationships(chunks)}
    assert rels[frozenset("ab")].type == "strong_overlap" and rels[frozenset("ab")].strength == 1.0
    assert rels[frozenset("ac")].type == "moderate_overlap" and rels[frozenset("ac")].strength == 0.25
    assert rels[frozenset("ad")].type == "weak_overlap" and rels[frozenset("ad")].strength == 0.125
    assert "e1" in rels[frozenset("ab")].description


def test_unrelated_chunks_get_no_relationship() -> None:
    rng = random.Random(1)
    chunks = [chunk(f"c{i}", paragraph(rng, 3), entities=(f"e{i}",), time_refs=(f"Q{i % 4 + 1} 202{i}",),
                    document_date=date(2020 + i, 1, 1)) for i in range(8)]
    assert find_relationships(chunks) == []


def test_shared_period_and_document_and_sequence() -> None:
    chunks = [
        chunk("a", "x", doc="d1", chunk_index=0, time_refs=("Q2 2025", "Q3 (unresolved)")),
        chunk("b", "x", doc="d1", chunk_index=1),
        chunk("c", "x", doc="d2", time_refs=("Q2 2025",), entities=("e1",), document_date=date(2025, 1, 5)),
        chunk("d", "x", doc="d3", entities=("e1",), document_date=date(2024, 6, 1)),
        chunk("e", "x", doc="d4", time_refs=("Q3 (unresolved)",)),  # unresolved periods relate nothing
    ]
    rels = find_relationships(chunks)
    k = kinds(rels)
    assert k[frozenset("ab")] == {"same_document"}
    assert k[frozenset("ac")] == {"same_period", "temporal_sequence"}
    assert k[frozenset("cd")] == {"strong_overlap", "temporal_sequence"}
    assert frozenset("ae") not in k
    seq = {(r.source_id, r.target_id) for r in rels if r.type == "temporal_sequence"}
    # a speaks of Q2 2025 (from 2025-04-01), c is dated 2025-01-05: the earlier is the source.
    assert seq == {("c", "a"), ("d", "c")}
    by_pair = {(frozenset((r.source_id, r.target_id)), r.type): r for r in rels}
    assert "Q2 2025" in by_pair[(frozenset("ac"), "same_period")].description
    assert "adjacent" in by_pair[(frozenset("ab"), "same_document")].description
    assert all(0.0 <= r.strength <= 1.0 for r in rels)


def test_graph_edges_in_every_form() -> None:
    chunks = [chunk("a", "x"), chunk("b", "y"), chunk("c", "z")]
    mapping = {("a", "b"): [("SIMILAR_TO", 0.83)], ("b", "c"): ("TOPIC_OVERLAP", 2.0), ("a", "zz"): [("SEQUENTIAL", 1)]}
    triples = graph_edge_triples(mapping, ["a", "b", "c"])
    assert triples == {("a", "b", "SIMILAR_TO"): 0.83, ("b", "c", "TOPIC_OVERLAP"): 1.0}

    edges = [Edge("b", "a", SIMILAR_TO, 0.9), Edge("a", "c", SAME_SOURCE, 1.0), Edge("a", "c", SAME_LENS, 0.5),
             ("c", "b", "SEQUENTIAL", 1.0)]
    assert graph_edge_triples(edges, ["a", "b", "c"]) == {("a", "b", SIMILAR_TO): 0.9, ("b", "c", "SEQUENTIAL"): 1.0}

    def neighbours(cid: str):
        return {"a": [("b", SIMILAR_TO, 0.7)], "old": [("c", "SEQUENTIAL", 1.0)]}.get(cid, [])

    rels = find_relationships(chunks, graph_edges=neighbours, aliases={"old": "a"})
    assert {(r.source_id, r.target_id, r.type, r.strength) for r in rels} == {
        ("a", "b", "similar_to", 0.7), ("a", "c", "sequential", 1.0)}


def test_thresholds_are_checked() -> None:
    with pytest.raises(InvalidParameterError, match=r"moderate_overlap \(0.6\).*strong_overlap \(0.5\)"):
        find_relationships([], moderate_overlap=0.6, strong_overlap=0.5)


def test_a_key_shared_by_most_chunks_links_nothing_by_itself() -> None:
    rng = random.Random(3)
    chunks = [chunk(f"c{i}", paragraph(rng, 1), entities=("org:us", f"e{i}"), time_refs=("2025",))
              for i in range(40)]
    chunks.append(chunk("x", "x", entities=("org:us", "e1")))  # shares e1 with c1 as well
    rels = find_relationships(chunks)
    assert kinds(rels) == {frozenset(("c1", "x")): {"strong_overlap"}}
    # The common entity still counts in the overlap of a pair found through another one.
    assert rels[0].strength == 1.0 and "org:us" in rels[0].description
    # Among a few chunks the same entity is a real link.
    few = find_relationships(chunks[:5])
    assert len(kinds(few)) == 10
