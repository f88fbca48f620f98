"""Arrays derived from a table version, kept as files beside the tables and memory-mapped: the
sentence index read back from them is the one built in memory, a commit gets new files and drops
the old ones, and a folder that cannot be written leaves the index in memory."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.retrieve.graph import chunk_vectors
from ragloom.retrieve.sentences import SentenceIndex, sentence_index
from ragloom.store.derived import STALE_SECONDS, DerivedFiles, RowFile
from tests.conftest import fast_settings, shared_data

ARRAYS = ["positions", "starts", "ends", "sections", "vectors"]


def folders(engine: Engine) -> list[Path]:
    root = engine.store.path / "_ragloom" / "derived"
    return sorted(p for p in root.iterdir() if p.name.startswith("sentence-index-")) if root.is_dir() else []


def mapped_file(array: np.ndarray) -> bool:
    """Whether ``array`` views a memory-mapped file (through any number of views)."""
    while array is not None:
        if isinstance(array, np.memmap):
            return True
        array = array.base
    return False


def in_memory(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> SentenceIndex:
    """The index as object storage or a transaction gets it: arrays in memory."""
    with monkeypatch.context() as m:
        m.setattr(type(engine.store), "derived_files", lambda *_, **__: None)
        engine.store.forget()
        index = sentence_index(engine.store, "default")
    engine.store.forget()
    return index


def assert_same(a: SentenceIndex, b: SentenceIndex) -> None:
    assert list(a) == list(b)
    for doc in a:
        for name in ARRAYS:
            np.testing.assert_array_equal(getattr(a[doc], name), getattr(b[doc], name))


@pytest.fixture
def minutes(tmp_path: Path) -> Path:
    """Meeting minutes written by others (the Rust Council's), a dozen files."""
    folder = tmp_path / "minutes"
    folder.mkdir()
    for path in sorted((shared_data() / "rust-council" / "minutes").rglob("*.md"))[:12]:
        shutil.copy(path, folder / path.name)
    return folder


def test_the_files_hold_the_index_built_in_memory(tmp_path: Path, minutes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(minutes, lens="minutes")
    assert not folders(engine)
    mapped = sentence_index(engine.store, "default")
    assert len(folders(engine)) == 1
    doc = next(iter(mapped))
    assert mapped_file(mapped[doc].vectors) and mapped[doc].vectors.dtype == np.float16
    assert_same(mapped, in_memory(engine, monkeypatch))
    # Every sentence of the table, once, in order within its document.
    rows = engine.store.chunks("default", table="sentences", columns=["document_id", "start_char"])
    assert sum(len(mapped[d]) for d in mapped) == len(rows)
    assert all(np.all(np.diff(mapped[d].positions) > 0) for d in mapped)
    # Another process on the same commit maps the files instead of reading the table again.
    other = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    monkeypatch.setattr("ragloom.retrieve.sentences._fill_vectors", lambda *_: pytest.fail("read the vectors again"))
    assert_same(sentence_index(other.store, "default"), mapped)
    monkeypatch.undo()
    # A commit gets its own files, and the older ones go; what was mapped stays readable.
    first = folders(engine)
    engine.ingest(shared_data() / "rust-council" / "policies", lens="policies")
    after = sentence_index(engine.store, "default")
    assert folders(engine) != first and len(folders(engine)) == 1
    assert len(after) > len(mapped)
    assert float(np.abs(mapped[doc].vectors.astype(np.float32)).sum()) > 0
    assert_same(after, in_memory(engine, monkeypatch))
    for doc in after:  # unit vectors, as the window's arithmetic expects (none, for a sentence of no words)
        norms = np.linalg.norm(after[doc].vectors.astype(np.float32), axis=1)
        assert np.all((np.abs(norms - 1.0) < 2e-3) | (norms == 0.0))


def test_a_folder_that_cannot_be_written_leaves_the_index_in_memory(tmp_path: Path, minutes: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(minutes, lens="minutes")

    def full(self: RowFile, places: np.ndarray, values: np.ndarray) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RowFile, "put", full)
    index = sentence_index(engine.store, "default")
    assert not folders(engine)
    assert not list((engine.store.path / "_ragloom" / "derived").glob(".*"))  # nothing half-written left
    monkeypatch.undo()
    assert_same(index, in_memory(engine, monkeypatch))
    assert engine.query("what did the council decide", mode="window", k=3).results


def test_a_query_reads_no_table_version_it_did_not_see(tmp_path: Path, minutes: Path) -> None:
    """Inside a write the rows belong to no version yet: no files are written for them."""
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(minutes, lens="minutes")
    with engine.store.transaction():
        assert engine.store.derived_files("default", "sentence-index", table="sentences") is None
        assert len(sentence_index(engine.store, "default")) > 0
    assert not folders(engine)


@given(st.integers(0, 60).flatmap(lambda n: st.tuples(st.permutations(list(range(n))), st.integers(1, 7))))
def test_rows_put_anywhere_land_in_their_places(tmp_path_factory: pytest.TempPathFactory,
                                                 drawn: tuple[list[int], int]) -> None:
    order, batch = drawn
    rng = np.random.default_rng(len(order))
    values = rng.standard_normal((len(order), 5)).astype(np.float16)
    path = tmp_path_factory.mktemp("rows") / "rows.npy"
    rows = RowFile(path, len(order), 5, np.dtype(np.float16))
    places = np.array(order, dtype=np.int64)
    for lo in range(0, len(order), batch):
        rows.put(places[lo:lo + batch], values[lo:lo + batch])
    rows.close()
    expected = np.zeros_like(values)
    expected[places] = values
    np.testing.assert_array_equal(np.load(path), expected)


def test_a_folder_left_by_a_dead_writer_is_cleared(tmp_path: Path) -> None:
    files = DerivedFiles(tmp_path, "thing-abc", "3-100")
    left = tmp_path / ".thing-abc-2-99.123.deadbeef"
    left.mkdir(parents=True)
    old = time.time() - STALE_SECONDS - 5
    os.utime(left, (old, old))
    fresh = tmp_path / ".thing-abc-3-100.456.cafecafe"  # another process, writing now
    fresh.mkdir()
    with files.writing() as folder:
        np.save(folder / "a.npy", np.arange(3))
    assert not left.exists() and fresh.exists()
    loaded = files.load()
    assert loaded is not None and loaded["a"].tolist() == [0, 1, 2]
    # A newer version replaces it.
    newer = DerivedFiles(tmp_path, "thing-abc", "4-101")
    with newer.writing() as folder:
        np.save(folder / "a.npy", np.arange(4))
    assert files.load() is None and newer.load() is not None


def test_the_chunk_vectors_graph_mode_scores_with_come_from_files(tmp_path: Path, minutes: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(minutes, lens="minutes")
    positions, vectors, lenses = chunk_vectors(engine.store, "default")
    assert mapped_file(vectors)
    with monkeypatch.context() as m:
        m.setattr(type(engine.store), "derived_files", lambda *_, **__: None)
        engine.store.forget()
        memory = chunk_vectors(engine.store, "default")
    assert positions == memory[0] and lenses == memory[2] == ["minutes"] * len(positions)
    np.testing.assert_array_equal(vectors, memory[1])
    rows = engine.store.chunks("default", columns=["chunk_id"])
    assert set(positions) == {r["chunk_id"] for r in rows}
    engine.store.forget()
    graph = engine.query("who chaired the meeting", mode="graph", k=5)
    assert graph.results
