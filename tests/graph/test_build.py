from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from ragloom.config import GraphSettings
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.graph import (
    SAME_LENS,
    SAME_SOURCE,
    SEQUENTIAL,
    SIMILAR_TO,
    TEMPORAL_OVERLAP,
    TOPIC_OVERLAP,
    GraphNode,
    build_edges,
)
from ragloom.graph.build import similar_edges

from ..conftest import fast_settings


def node(cid: str, doc: str = "d", lens: str = "x", index: int = 0, terms=(), periods=(), vector=(1.0, 0.0)):
    return GraphNode(cid, doc, lens, index, tuple(terms), tuple(periods), np.asarray(vector, dtype=np.float32))


def by_type(edges):
    out = {}
    for e in edges:
        out.setdefault(e.type, set()).add((e.src, e.dst))
    return out


def test_each_edge_type_on_crafted_nodes() -> None:
    nodes = [
        node("a1", "A", "eng", 0, ["catalog", "quickbooks", "event bus"], ["Q3 2025"], (1, 0)),
        node("a2", "A", "eng", 1, ["catalog"], [], (0.95, 0.31)),
        node("b1", "B", "pm", 0, ["catalog", "quickbooks"], ["Q3 2025", "2025-08"], (0, 1)),
        node("c1", "C", "pm", 0, ["pricing"], ["2025-08"], (-1, 0)),
    ]
    edges = build_edges(nodes, GraphSettings(similarity_threshold=0.8))
    kinds = by_type(edges)
    assert kinds[SEQUENTIAL] == {("a1", "a2")}
    assert kinds[SAME_SOURCE] == {("a1", "a2")}
    assert kinds[SAME_LENS] == {("a1", "a2"), ("b1", "c1")}
    assert kinds[TOPIC_OVERLAP] == {("a1", "b1")}
    assert kinds[TEMPORAL_OVERLAP] == {("a1", "b1"), ("b1", "c1")}
    assert kinds[SIMILAR_TO] == {("a1", "a2")}
    topic = next(e for e in edges if e.type == TOPIC_OVERLAP)
    assert topic.weight == 2 and topic.attrs["shared_terms"] == ["catalog", "quickbooks"]
    similar = next(e for e in edges if e.type == SIMILAR_TO)
    assert similar.weight == pytest.approx(0.95 / np.hypot(0.95, 0.31), abs=1e-5)
    # Two chunks can hold several relations at once; all are kept.
    assert {e.type for e in edges if (e.src, e.dst) == ("a1", "a2")} == {SEQUENTIAL, SAME_SOURCE, SAME_LENS, SIMILAR_TO}


def test_groups_above_their_bound_are_not_materialised() -> None:
    settings = GraphSettings(source_clique_bound=3, lens_clique_bound=4)
    nodes = [node(f"n{i}", "big", "lens", i, vector=(np.cos(i), np.sin(i))) for i in range(6)]
    kinds = by_type(build_edges(nodes, settings))
    assert SAME_SOURCE not in kinds and SAME_LENS not in kinds
    assert len(kinds[SEQUENTIAL]) == 5  # adjacency is always stored


def test_terms_present_everywhere_carry_no_signal() -> None:
    nodes = [node(f"n{i}", f"d{i}", "x", 0, ["common", "also common", f"own{i}"]) for i in range(5)]
    assert TOPIC_OVERLAP in by_type(build_edges(nodes, GraphSettings(max_postings=5)))
    assert TOPIC_OVERLAP not in by_type(build_edges(nodes, GraphSettings(max_postings=4)))


def test_similar_pairs_approximate_search_finds_the_close_ones() -> None:
    rng = np.random.default_rng(1)
    base = rng.normal(size=(60, 32))
    vectors = np.concatenate([base + rng.normal(scale=0.05, size=base.shape) for _ in range(120)])  # 7,200 > exact limit
    nodes = [node(str(i), f"d{i}", "x", 0, vector=v) for i, v in enumerate(vectors)]
    settings = GraphSettings(similarity_threshold=0.95, max_similar=500)
    found = {(e.src, e.dst) for e in similar_edges(nodes, settings)}
    sample = rng.choice(len(nodes), 200, replace=False)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    truth = {(min(str(i), str(j)), max(str(i), str(j))) for i in sample for j in range(len(nodes))
             if i != j and unit[i] @ unit[j] > 0.95}
    recall = len(truth & found) / len(truth)
    assert recall > 0.97


def ingest_folder(engine: Engine, folder: Path, lens: str) -> None:
    assert engine.ingest(folder, lens=lens).ok


def edge_set(engine: Engine) -> set:
    return {(r["src"], r["dst"], r["type"], round(r["weight"], 5), r["attrs"]) for r in engine.store.edges("default")}


def test_incremental_update_equals_a_full_rebuild(tmp_path: Path, materials: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"graph.similarity_threshold": 0.3}),
                    embedder=HashingEmbedder())
    work = tmp_path / "docs"
    lenses = sorted(p.name for p in materials.iterdir() if p.is_dir())
    for lens in lenses:
        (work / lens).mkdir(parents=True)
        for f in (materials / lens).glob("*.md"):
            (work / lens / f.name).write_text(f.read_text())
        ingest_folder(engine, work / lens, lens)  # each lens lands incrementally
    incremental = edge_set(engine)
    assert engine.build_graph() == len(incremental)
    assert edge_set(engine) == incremental
    # Edit, add and delete documents; each step updates incrementally, then compare again.
    rng = random.Random(3)
    roadmap = work / "team-structured" / "roadmap-2025.md"
    roadmap.write_text(roadmap.read_text().replace("Q3 2025", "Q4 2025").replace("Dispatch 2.0", "Dispatch Two"))
    ingest_folder(engine, work / "team-structured", "team-structured")
    (work / "engineering" / "new-note.md").write_text("# Event bus\nThe event bus migration lands in Q3 2025 for QuickBooks.")
    ingest_folder(engine, work / "engineering", "engineering")
    victim = rng.choice(sorted((work / "your-voice").glob("*.md")))
    victim.unlink()
    assert engine.ingest(work / "your-voice", lens="your-voice", sync=True).deleted == 1
    incremental = edge_set(engine)
    engine.build_graph()
    assert edge_set(engine) == incremental


def test_graph_view_stats_show_and_export(tmp_path: Path, materials: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    for lens in ("engineering", "team-structured"):
        ingest_folder(engine, materials / lens, lens)
    graph = engine.graph()
    stats = graph.stats()
    assert stats["nodes"] == engine.stats()["chunks"]
    assert stats["edges"] == sum(stats["edge_types"].values()) == len(engine.store.edges("default"))
    assert 0 < stats["density"] <= 1 and stats["components"] >= 1
    some = next(iter(graph.graph.nodes))
    shown = graph.show(some)
    assert {"lens", "source_path", "source_name", "chunk_index", "total_chunks", "token_count", "content_preview",
            "key_terms", "time_references", "created_at"} <= shown.keys()
    import json

    import networkx as nx

    data = json.loads(graph.export(tmp_path / "g.json").read_text())
    assert len(data["nodes"]) == stats["nodes"] and len(data["links"]) == stats["edges"]
    back = nx.read_graphml(graph.export(tmp_path / "g.graphml", format="graphml"))
    assert back.number_of_nodes() == stats["nodes"] and back.number_of_edges() == stats["edges"]


def test_ingest_reports_relationships(tmp_path: Path, materials: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    report = engine.ingest(materials / "engineering", lens="engineering")
    assert report.relationships == len(engine.store.edges("default")) > 0
    disabled = Engine(tmp_path / "ws2", settings=fast_settings(**{"graph.enabled": False}), embedder=HashingEmbedder())
    assert disabled.ingest(materials / "engineering", lens="engineering").relationships == 0


def test_similar_pairs_in_a_crowded_region_of_high_dimensional_vectors() -> None:
    # A corpus's repeated boilerplate: one region holds 3,000 of 8,000 vectors, all alike. It
    # gets many cells rather than one huge one (which would cost the square of its size), so
    # not every pair inside it is compared; every chunk there still gets its max_similar
    # neighbours, and the pairs elsewhere are all found.
    from ragloom.graph.build import CELL_SIZE, _cells, _ivf_pairs, _matrix

    rng = np.random.default_rng(3)
    centres = rng.normal(size=(41, 384))
    crowded = centres[0] + rng.normal(scale=0.6, size=(3000, 384))
    others = [centres[i] + rng.normal(scale=0.3, size=(125, 384)) for i in range(1, 41)]
    vectors = np.concatenate([crowded, *others])
    nodes = [node(str(i), f"d{i}", "x", 0, vector=v) for i, v in enumerate(vectors)]
    cells, probes = _cells(_matrix(nodes))
    assert np.bincount(probes[:, 0], minlength=cells).max() <= 3 * CELL_SIZE
    assert (probes[:, 0] >= 0).all() and probes.max() < cells

    settings = GraphSettings(similarity_threshold=0.7, max_similar=32)
    edges = similar_edges(nodes, settings)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    degree = np.zeros(len(nodes), dtype=int)
    for e in edges:
        a, b = int(e.src), int(e.dst)
        assert e.weight == pytest.approx(float(unit[a] @ unit[b]), abs=1e-4) and e.weight > 0.7
        degree[a] += 1
        degree[b] += 1
    assert (degree[:3000] >= settings.max_similar).all()
    # The search itself, before max_similar: the pairs outside the crowded region.
    i, j, _ = _ivf_pairs(_matrix(nodes), 0.7)
    found = {(min(a, b), max(a, b)) for a, b in zip(i.tolist(), j.tolist(), strict=True) if min(a, b) >= 3000}
    truth = {(a, b) for a in range(3000, len(nodes)) for b in np.flatnonzero(unit[a + 1 :] @ unit[a] > 0.7) + a + 1}
    assert len(truth) > 100_000 and len(truth & found) / len(truth) > 0.97
