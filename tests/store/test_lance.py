"""The LanceDB store: the edges table (full replacement, scoped updates, reads among candidates),
the BM25 index's statistics after an ingest, and the files a long-lived process keeps open."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.graph import Edge
from ragloom.store.lance import FTS_UNINDEXED_SHARE, LanceStore
from ragloom.store.schema import edge_rows
from tests.conftest import fast_settings, real_texts

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


def _fts_counts(engine: Engine) -> tuple[int, int]:
    table = engine.store._writable("chunks")
    stats = next(table.index_stats(ix.name) for ix in table.list_indices() if ix.index_type == "FTS")
    return stats.num_indexed_rows, stats.num_unindexed_rows


def test_bm25_ranks_with_the_statistics_of_every_row_after_an_ingest(tmp_path: Path) -> None:
    """The BM25 index is built from an ingest's first batch; the rows of the later batches are
    folded in before the ingest ends, so a query ranks as it will after any later optimisation
    (on the contextual set, 58 of 60 queries ranked otherwise with 116 of 737 chunks indexed)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    texts = real_texts()[:12]
    for i, (_, text) in enumerate(texts):
        (folder / f"{i:02}.md").write_text(text, encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"ingest.batch_chunks": 16}), embedder=HashingEmbedder())
    assert engine.ingest(folder, lens="x").ok
    indexed, unindexed = _fts_counts(engine)
    assert unindexed == 0 and indexed == engine.store._writable("chunks").count_rows()
    queries = [" ".join(text.split()[j:j + 4]) for _, text in texts for j in (5, 40)]

    def ranked() -> list[list[tuple[str, float]]]:
        return [[(r.chunk_id, round(r.score, 6)) for r in engine.query(q, k=10, mode="bm25")] for q in queries]

    before = ranked()
    assert engine.store.optimize(force=True)
    assert ranked() == before


def test_a_small_addition_waits_for_its_share_before_the_bm25_index_takes_it(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    texts = real_texts()
    for i, (_, text) in enumerate(texts[:6]):
        (folder / f"{i:02}.md").write_text(text, encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(folder, lens="x")
    indexed, _ = _fts_counts(engine)
    small = next(text for _, text in texts[6:] if 0 < len(text) < 1500)
    (folder / "small.md").write_text(small, encoding="utf-8")
    engine.ingest(folder, lens="x")
    grown, waiting = _fts_counts(engine)
    # Folding it in costs an optimisation of the whole table (1-4 s at 100,000 chunks) for a handful of rows.
    assert grown == indexed and 0 < waiting <= FTS_UNINDEXED_SHARE * indexed
    (folder / "large.md").write_text("\n\n".join(text for _, text in texts[6:12]), encoding="utf-8")
    engine.ingest(folder, lens="x")
    assert _fts_counts(engine)[1] == 0


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files through /proc (Linux)")
def test_a_process_that_ingests_and_queries_keeps_few_files_open(tmp_path: Path) -> None:
    """LanceDB's connection keeps a file of every index version it read open while it lives; each
    fold of the BM25 index makes a new version, so the store renews its connections (on one
    connection this loop ended with 80 more open files than it began with)."""

    def open_files() -> int:
        return len(os.listdir("/proc/self/fd"))

    folder = tmp_path / "docs"
    folder.mkdir()
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.stats()
    counts = [open_files()]
    for i in range(80):
        path = folder / f"d{i}.md"
        path.write_text(f"# Doc {i}\n\n" + " ".join(f"alpha w{i} beta{j} gamma{i * j}." for j in range(60)),
                        encoding="utf-8")
        engine.ingest([path], lens="x")
        assert engine.query("alpha beta3", mode="hybrid") and engine.query(f"beta5 w{i}", mode="bm25")
        counts.append(open_files())
    # Measured from the fifth round: the first ones open what a process opens once (the
    # tokenizer's files, the tables' first versions), which is not a leak.
    assert max(counts[5:]) - counts[5] <= 20, counts  # without the renewal: 80 more after 80 rounds


def test_document_count_counts_current_documents_at_the_pinned_commit(tmp_path: Path) -> None:
    """``document_count`` is ``len(documents(tenant))`` counted by LanceDB: versions, deletions and
    other tenants do not count, a held view keeps its commit, and neither rows nor chunks are read."""
    assert LanceStore(tmp_path / "empty").document_count("default") == 0  # no documents table yet
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.md").write_text(f"# {name}\n\nNotes about {name}.", encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(folder, lens="x")
    engine.ingest([folder / "a.md"], lens="x", tenant="other")
    store = engine.store

    def counted() -> int:
        count = store.document_count("default")
        assert count == len(store.documents("default"))
        return count

    assert counted() == 3 and store.document_count("other") == 1 and store.document_count("nobody") == 0
    (folder / "b.md").write_text("# b\n\nNotes about b, edited.", encoding="utf-8")
    engine.ingest(folder, lens="x")  # a second version of b
    assert counted() == 3 and len(store.history("default", store.documents("default")[1]["document_id"])) == 2
    engine.delete(folder / "c.md")
    assert counted() == 2

    with store.reading():
        done = threading.Event()

        def add() -> None:
            (folder / "d.md").write_text("# d\n\nNotes about d.", encoding="utf-8")
            engine.ingest([folder / "d.md"], lens="x")
            done.set()

        thread = threading.Thread(target=add)
        thread.start()
        thread.join(120)
        assert done.is_set()
        assert counted() == 2  # the view this operation holds
    assert counted() == 3

    opened: list[str] = []
    table, select = store._table, store._select
    store._table = lambda name: opened.append(name) or table(name)  # type: ignore[method-assign]
    store._select = lambda *a, **k: pytest.fail("document_count read rows")  # type: ignore[method-assign]
    assert store.document_count("default") == 3 and opened == ["documents"]
    store._table, store._select = table, select  # type: ignore[method-assign]
