"""Entity edges: titles and headings as the workspace's subjects, their mentions, and the
MENTIONS and SHARED_ENTITY edges between chunks of different documents."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.graph import MENTIONS, SHARED_ENTITY, GraphNode, build_edges
from ragloom.graph.entities import (
    NameIndex,
    about_names,
    changed_holders,
    entity_edges,
    holders,
    name_variants,
    specificity,
    subjects,
)

from ..conftest import fast_settings


def node(cid: str, doc: str, about: tuple[str, ...] = (), mentions: tuple[str, ...] = ()) -> GraphNode:
    return GraphNode(cid, doc, "x", 0, vector=np.ones(2, dtype=np.float32), about=about, mentions=mentions)


def by_pair(edges: list) -> dict:
    return {(e.src, e.dst, e.type): e for e in edges}


def test_a_chunk_is_about_its_heading_and_the_first_one_about_the_title() -> None:
    assert about_names("Doctor Strange (2016 film)", "Doctor Strange (2016 film)", 0) == ("Doctor Strange (2016 film)",)
    assert about_names("asyncio", "asyncio > Event  loop", 3) == ("Event loop",)  # whitespace normalised
    assert about_names("asyncio", "asyncio > Event loop", 0) == ("Event loop", "asyncio")
    assert about_names("Notes", "", 2) == ()
    assert name_variants("Winner (band)") == ("Winner (band)", "Winner")
    assert name_variants("2.1") == () and name_variants("x") == ()  # no letter, one character: not names


def test_names_are_found_as_whole_words_in_the_same_case() -> None:
    index = NameIndex(["New York", "New York City", "Apple", "C++", "Guns N' Roses"])
    assert index.find("She moved to New York City in 1990.") == {"New York", "New York City"}
    assert index.find("an apple pie, Applesauce, APPLE") == set()
    assert index.find("Apple's results") == {"Apple"}
    assert index.find("written in C++ and C") == {"C++"}
    assert index.find("a Guns N' Roses song") == {"Guns N' Roses"}
    assert index.find("") == set() and len(index) == 5


words = st.sampled_from(["New", "York", "City", "new", "C++", "A", "Ab", "ab", "x_y", "Été", "N'"])


@given(st.lists(st.lists(words, min_size=1, max_size=3).map(" ".join), max_size=6),
       st.lists(st.one_of(words, st.sampled_from([" ", ", ", "-", "_", "\n", "."])), max_size=30).map("".join))
def test_the_index_finds_what_a_word_bounded_regex_finds(names: list, text: str) -> None:
    expected = {n for n in names if re.search(r"(?<!\w)" + re.escape(n) + r"(?!\w)", text)}
    assert NameIndex(names).find(text) == expected


def test_subjects_prefer_the_exact_name_and_stay_in_one_document() -> None:
    entries = [("d1", ("Ed Wood",)), ("d2", ("Ed Wood (film)",)), ("d3", ("Doctor Strange (2016 film)",)),
               ("d4", ("Examples",)), ("d5", ("Examples",))]
    found = subjects(entries)
    assert found["Ed Wood"] == [0]  # the person, not the film named after him
    assert found["Ed Wood (film)"] == [1] and found["Doctor Strange"] == [2]
    assert "Examples" not in found  # a heading of many documents labels a kind of section


def test_mentions_link_a_chunk_to_what_it_names_across_documents() -> None:
    nodes = [
        node("a0", "A", about=("Kiss and Tell (1945 film)",), mentions=("Shirley Temple",)),
        node("a1", "A", mentions=("Kiss and Tell",)),  # its own document's title: no edge
        node("b0", "B", about=("Shirley Temple",)),
        node("c0", "C", mentions=("Kiss and Tell", "Shirley Temple")),
        node("d0", "D", mentions=("Nobody",)),  # a name no chunk is about is no entity
    ]
    edges = by_pair(entity_edges(nodes, cap=20))
    assert set(edges) == {("a0", "b0", MENTIONS), ("a0", "c0", MENTIONS), ("b0", "c0", MENTIONS),
                          ("a0", "c0", SHARED_ENTITY)}
    assert edges[("a0", "b0", MENTIONS)].attrs == {"entities": ["Shirley Temple"], "about": ["b0"]}
    assert edges[("a0", "c0", MENTIONS)].attrs == {"entities": ["Kiss and Tell"], "about": ["a0"]}
    assert edges[("a0", "c0", SHARED_ENTITY)].attrs == {"entities": ["Shirley Temple"]}
    # Held by three chunks, Shirley Temple weighs less than a name held by two would.
    weight = edges[("a0", "b0", MENTIONS)].weight
    assert weight == pytest.approx(specificity(3, 20), abs=1e-6) and weight < specificity(2, 20)


def test_a_name_mentioned_everywhere_makes_no_edges_and_weighs_little() -> None:
    nodes = [node("s", "S", about=("Python",)), node("r", "R", about=("Rare",))]
    nodes += [node(f"m{i}", f"M{i}", mentions=("Python",)) for i in range(30)]
    nodes.append(node("x", "X", mentions=("Python", "Rare")))
    assert {e.type for e in entity_edges(nodes, cap=20) if "Python" in e.attrs["entities"]} == set()
    edges = entity_edges(nodes, cap=40)
    common = max(e.weight for e in edges if e.attrs["entities"] == ["Python"])
    rare = by_pair(edges)[("r", "x", MENTIONS)].weight
    assert common < 0.25 and 0.8 < rare <= 1.0


names = st.sampled_from(["Alpha", "Beta", "Gamma (film)", "Gamma", "Delta"])
nodes_strategy = st.lists(st.tuples(st.sampled_from("ABCD"), st.lists(names, max_size=2, unique=True),
                                    st.lists(names, max_size=3, unique=True)), min_size=1, max_size=12)


def make(spec: list, prefix: str = "n") -> list[GraphNode]:
    return [node(f"{prefix}{i}", doc, tuple(about), tuple(sorted(mentions))) for i, (doc, about, mentions) in enumerate(spec)]


@given(nodes_strategy, st.integers(2, 12))
def test_every_entity_edge_joins_holders_of_its_names(spec: list, cap: int) -> None:
    nodes = make(spec)
    by_id = {n.chunk_id: n for n in nodes}
    held = holders(nodes)
    for e in entity_edges(nodes, cap):
        a, b = by_id[e.src], by_id[e.dst]
        if e.type == MENTIONS:  # the ends named as subjects are about one of the edge's names
            assert e.attrs["about"] and set(e.attrs["about"]) <= {e.src, e.dst}
            assert all(set(by_id[x].about) & {v for n in e.attrs["entities"] for v in (n, n + " (film)")}
                       for x in e.attrs["about"])
        assert a.document_id != b.document_id and 0 < e.weight <= 1
        assert e.weight == pytest.approx(max(specificity(held[n].count, cap) for n in e.attrs["entities"]), abs=1e-6)
        for name in e.attrs["entities"]:
            about = {nodes[i].chunk_id for i in held[name].about}
            mentioning = {nodes[i].chunk_id for i in held[name].mentioning}
            assert held[name].count <= cap
            if e.type == MENTIONS:
                assert (e.src in about and e.dst in mentioning) or (e.dst in about and e.src in mentioning)
            else:
                assert {e.src, e.dst} <= mentioning


@given(nodes_strategy, st.sets(st.integers(0, 11)))
def test_edges_touching_some_chunks_are_those_of_the_full_build(spec: list, positions: set) -> None:
    nodes = make(spec)
    only = {p for p in positions if p < len(nodes)}
    ids = {nodes[p].chunk_id for p in only}
    full = [e for e in entity_edges(nodes, 6) if e.src in ids or e.dst in ids]
    assert by_pair(entity_edges(nodes, 6, only=only)) == by_pair(full)


@given(nodes_strategy, nodes_strategy, st.sets(st.integers(0, 11)), st.sets(st.integers(0, 11)))
def test_an_update_redoing_the_changed_holders_equals_a_full_build(before_spec: list, added_spec: list,
                                                                  dropped: set, edited: set) -> None:
    # A workspace before, then after some chunks went, some were edited and some came.
    before = make(before_spec)
    after, gone = [], []
    for i, n in enumerate(before):
        if i in dropped:
            gone.append(n)
        elif i in edited and added_spec and (edit := replace(n, about=tuple(added_spec[i % len(added_spec)][1]),
                                                             mentions=tuple(sorted(added_spec[i % len(added_spec)][2])))) != n:
            gone.append(n)  # the old version goes; the new one keeps the id
            after.append(edit)
        else:
            after.append(n)
    after += make(added_spec, prefix="new")
    changed = {n.chunk_id for n in after if n not in before}
    unchanged = [n for n in after if n.chunk_id not in changed]
    redo = changed | (changed_holders(unchanged + gone, after) & {n.chunk_id for n in after})
    dropped_ids = redo | {n.chunk_id for n in gone}
    kept = [e for e in entity_edges(before, 6) if e.src not in dropped_ids and e.dst not in dropped_ids]
    added = entity_edges(after, 6, only={i for i, n in enumerate(after) if n.chunk_id in redo})
    assert by_pair(kept + added) == by_pair(entity_edges(after, 6))


def edge_set(engine: Engine) -> set:
    return {(r["src"], r["dst"], r["type"], round(r["weight"], 5), r["attrs"]) for r in engine.store.edges("default")}


PAGES = {
    "kiss.md": "# Kiss and Tell (1945 film)\n\nKiss and Tell is a 1945 comedy film starring Shirley Temple as "
               "Corliss Archer, produced in Hollywood.",
    "temple.md": "# Shirley Temple\n\nShirley Temple was an American actress who later served as United States "
                 "Ambassador to Ghana.",
    "archer.md": "# Corliss Archer\n\nCorliss Archer is a fictional teenager, played on film by Shirley Temple in "
                 "Kiss and Tell.",
    "hollywood.md": "# Hollywood\n\nHollywood is a neighbourhood of Los Angeles.",
}


def test_incremental_updates_equal_a_full_rebuild_with_entity_edges(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"graph.entity_postings": 3}), embedder=HashingEmbedder())
    folder = tmp_path / "pages"
    folder.mkdir()
    for name in ("kiss.md", "archer.md"):
        (folder / name).write_text(PAGES[name])
    assert engine.ingest(folder, lens="wiki").ok

    def check() -> set:
        incremental = edge_set(engine)
        engine.build_graph()
        assert edge_set(engine) == incremental
        return {t for _, _, t, _, _ in incremental}

    assert MENTIONS in check()
    # A page about a name that others mention already: new subjects reach old chunks.
    (folder / "temple.md").write_text(PAGES["temple.md"])
    (folder / "hollywood.md").write_text(PAGES["hollywood.md"])
    assert engine.ingest(folder, lens="wiki").ok
    assert {MENTIONS, SHARED_ENTITY} <= check()
    # A renamed title: its old name is mentioned no more, its new one is.
    (folder / "hollywood.md").write_text(PAGES["hollywood.md"].replace("# Hollywood", "# Los Angeles"))
    assert engine.ingest(folder, lens="wiki").ok
    check()
    # One more mention pushes Shirley Temple past the cap (4 holders, 3 allowed): her edges go.
    (folder / "fan.md").write_text("# Fan page\n\nA page about Shirley Temple and Corliss Archer.")
    assert engine.ingest(folder, lens="wiki").ok
    check()
    assert not any("Shirley Temple" in r["attrs"] for r in engine.store.edges("default"))
    # A page that others mention goes away.
    (folder / "temple.md").unlink()
    (folder / "fan.md").unlink()
    assert engine.ingest(folder, lens="wiki", sync=True).deleted == 2
    check()
    assert any("Shirley Temple" not in r["attrs"] and r["type"] == MENTIONS for r in engine.store.edges("default"))


def test_the_full_build_holds_entity_edges_for_graph_nodes() -> None:
    nodes = [node("a0", "A", about=("Alpha",), mentions=("Beta",)), node("b0", "B", about=("Beta",))]
    from ragloom.config import GraphSettings

    assert [(e.src, e.dst, e.type) for e in build_edges(nodes, GraphSettings()) if e.type == MENTIONS] == [
        ("a0", "b0", MENTIONS)]
