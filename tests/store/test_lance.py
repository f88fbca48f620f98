"""The edges table: full replacement, scoped incremental updates and reads among candidates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragloom.graph import Edge
from ragloom.store.lance import LanceStore
from ragloom.store.schema import edge_rows

NODES = {
    "a1": {"document_id": "A", "lens": "engineering"},
    "a2": {"document_id": "A", "lens": "engineering"},
    "b1": {"document_id": "B", "lens": "team-docs"},
    "c1": {"document_id": "C", "lens": "team-docs"},
}
EDGES = [
    Edge("a1", "a2", "SEQUENTIAL", 1.0, {}),
    Edge("a1", "a2", "SAME_SOURCE", 1.0, {}),
    Edge("a1", "b1", "SIMILAR_TO", 0.86, {}),
    Edge("b1", "c1", "SAME_LENS", 0.5, {}),
    Edge("a2", "c1", "TOPIC_OVERLAP", 2.0, {"terms": ["CPQ", "Q3 2025"]}),
]


@pytest.fixture
def store(tmp_path: Path) -> LanceStore:
    s = LanceStore(tmp_path / "lancedb")
    s.replace_edges("t1", edge_rows("t1", EDGES, NODES, datetime.now(UTC)))
    s.replace_edges("t2", edge_rows("t2", EDGES[:1], NODES, datetime.now(UTC)))
    return s


def test_edges_among_reads_only_edges_inside_the_set(store: LanceStore) -> None:
    got = sorted(store.edges_among("t1", ["a1", "a2", "b1"]))
    assert got == [("a1", "a2", "SAME_SOURCE", 1.0), ("a1", "a2", "SEQUENTIAL", 1.0), ("a1", "b1", "SIMILAR_TO", 0.86)]
    assert sorted(store.edges_among("t1", ["a1", "a2", "b1"], skip_types=["SAME_SOURCE", "SAME_LENS"])) == [
        ("a1", "a2", "SEQUENTIAL", 1.0), ("a1", "b1", "SIMILAR_TO", 0.86)]
    assert store.edges_among("t1", []) == []
    assert store.edges_among("t1", ["c1"]) == []


def test_edges_belong_to_their_tenant(store: LanceStore) -> None:
    assert store.edges_among("t2", ["a1", "a2", "b1", "c1"]) == [("a1", "a2", "SEQUENTIAL", 1.0)]
    assert store.has_edges("t1") and store.has_edges("t2") and not store.has_edges("t3")
    assert store.edges_among("t3", ["a1", "a2"]) == []


def test_edges_among_quotes_ids(store: LanceStore) -> None:
    assert store.edges_among("t1", ["a1' OR '1'='1"]) == []


def test_replace_edges_replaces_one_tenant(store: LanceStore) -> None:
    store.replace_edges("t1", [])
    assert not store.has_edges("t1")
    assert len(store.edges("t2")) == 1


def test_update_edges_drops_only_what_it_recomputes(store: LanceStore) -> None:
    store.update_edges("t1", chunks={"b1"}, documents=set(), lenses=set(), rows=[])
    kinds = sorted((r["src"], r["dst"], r["type"]) for r in store.edges("t1"))
    # SIMILAR_TO touching b1 goes; SAME_LENS is per lens, so it stays.
    assert kinds == [("a1", "a2", "SAME_SOURCE"), ("a1", "a2", "SEQUENTIAL"), ("a2", "c1", "TOPIC_OVERLAP"),
                     ("b1", "c1", "SAME_LENS")]
    store.update_edges("t1", chunks=set(), documents={"A"}, lenses={"team-docs"},
                       rows=edge_rows("t1", [Edge("a1", "a2", "SEQUENTIAL", 1.0, {})], NODES, datetime.now(UTC)))
    kinds = sorted((r["src"], r["dst"], r["type"]) for r in store.edges("t1"))
    assert kinds == [("a1", "a2", "SEQUENTIAL"), ("a2", "c1", "TOPIC_OVERLAP")]
    assert [r["src"] for r in store.edges("t2")] == ["a1"]


def test_memo_is_dropped_by_any_write(store: LanceStore) -> None:
    calls = []
    assert store.memo("k", lambda: calls.append(1) or len(calls)) == 1
    assert store.memo("k", lambda: calls.append(1) or len(calls)) == 1
    store.replace_edges("t1", [])
    assert store.memo("k", lambda: calls.append(1) or len(calls)) == 2
    store.update_edges("t2", chunks={"a1"}, documents=set(), lenses=set(), rows=[])
    assert store.memo("k", lambda: calls.append(1) or len(calls)) == 3


def test_document_texts_read_current_versions_and_forget_them_on_write(tmp_path: Path) -> None:
    from ragloom.config import Settings
    from ragloom.embed import HashingEmbedder
    from ragloom.engine import Engine

    engine = Engine(tmp_path / "ws", settings=Settings.load(environ={}, overrides={"embedding.model": "hashing"}),
                    embedder=HashingEmbedder())
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nfirst text", encoding="utf-8")
    (folder / "b.md").write_text("# B\nother text", encoding="utf-8")
    engine.ingest(folder, lens="x")
    ids = {d["source_path"].rsplit("/", 1)[-1]: d["document_id"] for d in engine.store.documents("default")}
    texts = engine.store.document_texts("default", ids.values())
    assert texts == {ids["a.md"]: "# A\nfirst text", ids["b.md"]: "# B\nother text"}
    (folder / "a.md").write_text("# A\nsecond text", encoding="utf-8")
    engine.ingest(folder, lens="x")
    assert engine.store.document_texts("default", [ids["a.md"]]) == {ids["a.md"]: "# A\nsecond text"}
    assert engine.store.document_texts("other", [ids["a.md"]]) == {}
