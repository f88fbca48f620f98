"""The chunks that hold a span (the sentence lift's read): found through the per-commit map of
where chunks lie exactly as the filtered read finds them, for any spans, lenses and tenants,
and never a chunk of an earlier commit."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from tests.conftest import fast_settings, ingest_all

COLUMNS = ["chunk_id", "document_id", "lens", "start_char", "end_char"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Engine:
    engine = Engine(tmp_path_factory.mktemp("holding") / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    ingest_all(engine, materials)
    return engine


def filtered(engine: Engine, spans: list[tuple[str, int, int]], lenses: list[str] | None) -> set[str]:
    """What the filtered read finds (the path taken at as_of and inside a write)."""
    if not spans:
        return set()
    clauses = [f"(document_id = '{d}' AND start_char <= {s} AND end_char >= {e})" for d, s, e in spans]
    return {r["chunk_id"] for r in engine.store.chunks("default", lenses=lenses, columns=COLUMNS,
                                                         where=["(" + " OR ".join(clauses) + ")"])}


@given(data=st.data())
def test_the_map_finds_what_the_filtered_read_finds(engine: Engine, data: st.DataObject) -> None:
    sentences = engine.store.chunks("default", table="sentences", columns=["document_id", "start_char", "end_char"])
    picked = data.draw(st.lists(st.sampled_from(sentences), max_size=25))
    spans = [(r["document_id"], r["start_char"], r["end_char"]) for r in picked]
    # and spans no sentence has: across chunk boundaries, past a document's end, of no document
    spans += data.draw(st.lists(st.tuples(st.sampled_from([r["document_id"] for r in sentences] + ["nope"]),
                                          st.integers(0, 20_000), st.integers(0, 400)).map(
        lambda t: (t[0], t[1], t[1] + t[2])), max_size=5))
    lenses = data.draw(st.none() | st.lists(st.sampled_from(sorted(engine.store.lenses("default"))), min_size=1,
                                            max_size=2, unique=True))
    found = engine.store.chunks_holding("default", spans, columns=COLUMNS, lenses=lenses)
    assert len(found) == len({r["chunk_id"] for r in found})  # each once
    assert {r["chunk_id"] for r in found} == filtered(engine, spans, lenses)
    assert all(set(r) == set(COLUMNS) for r in found)


def test_another_tenant_and_a_later_commit(engine: Engine, materials: Path, tmp_path: Path) -> None:
    sentence = engine.store.chunks("default", table="sentences", columns=["document_id", "start_char", "end_char"])[0]
    span = (sentence["document_id"], sentence["start_char"], sentence["end_char"])
    assert engine.store.chunks_holding("default", [span], columns=COLUMNS)
    assert engine.store.chunks_holding("other", [span], columns=COLUMNS) == []
    # After a delete the map of the old commit is not used: the document's chunks are gone.
    other = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    ingest_all(other, materials)
    row = other.store.chunks("default", table="sentences", columns=["document_id", "start_char", "end_char"])[0]
    held = (row["document_id"], row["start_char"], row["end_char"])
    assert other.store.chunks_holding("default", [held], columns=COLUMNS)
    path = other.store.document("default", row["document_id"], with_text=False)["source_path"]
    other.delete(path)
    assert other.store.chunks_holding("default", [held], columns=COLUMNS) == []
