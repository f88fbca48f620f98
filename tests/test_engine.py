from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import (
    ConfigError,
    EmbeddingError,
    InvalidParameterError,
    NothingToIngestError,
    StoreError,
    UnknownNameError,
    WorkspaceMismatchWarning,
)
from ragloom.store.lance import LanceStore

from .conftest import fast_settings, ingest_all


def copy_materials(materials: Path, tmp_path: Path) -> Path:
    target = tmp_path / "materials"
    shutil.copytree(materials, target)
    return target


def test_ingest_then_query_finds_the_expected_section(engine: Engine, materials: Path) -> None:
    ingest_all(engine, materials)
    stats = engine.stats()
    assert stats["documents"] == 15 and set(stats["lenses"]) == {p.name for p in materials.iterdir() if p.is_dir()}
    result = engine.query("engineers headcount offer acceptance rate", k=3, mode="bm25")
    top = result[0]
    assert top.source_path.endswith("capacity-plan-2025.pdf") and top.section_path[-1] == "Headcount"
    document = engine.store.document("default", top.document_id)
    assert document["text"][top.start : top.end] == top.text  # offsets exact in the stored document


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid"])
def test_every_mode_respects_lens_filter(engine: Engine, materials: Path, mode: str) -> None:
    ingest_all(engine, materials)
    result = engine.query("catalog integration QuickBooks", k=10, mode=mode, lenses=["engineering"])
    assert result.results and {r.lens for r in result} == {"engineering"}
    assert all(r.retriever == mode for r in result)
    # A lens the workspace does not have is a mistake to report (the text reaches no filter).
    with pytest.raises(InvalidParameterError, match="has no lens \"it's' OR lens != '\"; its lenses are: "):
        engine.query("catalog", mode=mode, lenses=["it's' OR lens != '"])


def test_hybrid_fuses_both_rankings(engine: Engine, materials: Path) -> None:
    ingest_all(engine, materials)
    hybrid = engine.query("QuickBooks rate limits per minute", k=5, mode="hybrid")
    assert hybrid[0].scores.keys() >= {"rrf"}
    assert "rate limits" in hybrid[0].text.lower()
    scores = [r.score for r in hybrid]
    assert scores == sorted(scores, reverse=True)


def test_unknown_mode_lists_the_valid_ones(engine: Engine) -> None:
    with pytest.raises(UnknownNameError, match="bm25.*hybrid.*vector"):
        engine.query("x", mode="telepathy")


def test_bad_files_are_reported_and_the_rest_lands(engine: Engine, materials: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(materials / "engineering" / "tech-debt-register.md", folder)
    (folder / "empty.md").write_bytes(b"")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n%%EOF garbage")
    (folder / "binary.txt").write_bytes(b"\x00\x01\x02" * 100)
    report = engine.ingest(folder, lens="engineering")
    assert report.added == 1 and len(report.failed) == 3
    assert all(Path(path).name in message for path, message in report.failed)
    assert engine.stats()["documents"] == 1


class ExplodingEmbedder(HashingEmbedder):
    """Fails when it meets a text containing a marker, as a crash mid-ingest would."""

    def embed(self, texts):
        if any("EXPLODE" in t for t in texts):
            raise EmbeddingError("the model crashed")
        return super().embed(texts)


def test_a_document_that_fails_half_way_leaves_nothing_behind(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=ExplodingEmbedder())
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir(), bad.mkdir()
    (good / "a.md").write_text("# A\nalpha text here.", encoding="utf-8")
    assert engine.ingest(good, lens="x").ok
    before = engine.stats()
    (bad / "b.md").write_text("# B\n" + "EXPLODE in the middle. " * 5, encoding="utf-8")
    report = engine.ingest(bad, lens="x")
    assert not report.ok and "the model crashed" in report.failed[0][1]
    after = engine.stats()
    assert (after["documents"], after["chunks"]) == (before["documents"], before["chunks"])
    assert after["chunk_versions_stored"] == before["chunk_versions_stored"]


class CrashingDocuments:
    """The documents table, except that adding rows ends the process as a kill would."""

    def __init__(self, table) -> None:
        self.table = table

    def add(self, *args, **kwargs):
        os._exit(9)

    def __getattr__(self, name):
        return getattr(self.table, name)


def ingest_then_die(ws: str, folder: str) -> None:
    """In a child process: ingest, dying when the document rows are about to land."""
    original = LanceStore._writable

    def writable(self, name, schema=None):
        table = original(self, name, schema)
        return CrashingDocuments(table) if name == "documents" and table is not None else table

    LanceStore._writable = writable
    Engine(ws, settings=fast_settings(), embedder=HashingEmbedder()).ingest(folder, lens="x")


def snapshot(engine: Engine) -> tuple:
    store = engine.store
    return (
        sorted((r["document_id"], r["version_id"]) for r in store.documents("default")),
        sorted(r["version_id"] for r in store.chunks("default")),
        sorted(r["version_id"] for r in store.chunks("default", table="sentences")),
        sorted(r["version_id"] for r in store.mentions("default")),
    )


def test_a_crash_mid_write_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    folder.mkdir()
    doc = folder / "plan.md"
    doc.write_text("# Plan\nApex HVAC wants offline mode in Q3 2025.\n\n# Team\nEighteen engineers.", encoding="utf-8")
    engine = Engine(ws, settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(folder, lens="x")
    before = snapshot(engine)
    doc.write_text("# Plan\nApex HVAC wants offline mode in Q4 2025.\n\n# Team\nTwenty engineers.", encoding="utf-8")
    child = multiprocessing.get_context("spawn").Process(target=ingest_then_die, args=(str(ws), str(folder)))
    child.start()
    child.join(60)
    assert child.exitcode == 9  # killed with its chunk rows written and its document rows not
    pending = ws / "lancedb" / "_ragloom" / "pending"
    assert pending.exists()
    versions = {name: engine.store._open(name).version for name in ("documents", "chunks")}
    # A reader sees the last commit, and repairs nothing: the tables are as the crash left them.
    reopened = Engine(ws, settings=fast_settings(), embedder=HashingEmbedder())
    assert snapshot(reopened) == before
    assert "Q3 2025" in reopened.query("offline mode", mode="bm25")[0].text
    assert pending.exists()
    assert {name: reopened.store._open(name).version for name in versions} == versions
    # The next writer rolls the crashed write back, then its own edit lands.
    assert reopened.ingest(folder, lens="x").updated == 1
    assert not pending.exists()
    assert "Q4 2025" in reopened.query("offline mode", mode="bm25")[0].text
    assert len(reopened.history(doc)) == 2


def test_taking_the_lock_rolls_back_only_when_a_marker_says_so(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nalpha.", encoding="utf-8")
    engine.ingest(folder, lens="x")
    store = engine.store
    with store.writer():
        assert store.rolled_back == 0
    committed = store.pins["documents"]
    (store.path / "_ragloom" / "pending").write_text(json.dumps({"tables": dict(store.pins)}), encoding="utf-8")
    store._writable("documents").update(where="TRUE", values_sql={"superseded_at": "NULL"})
    with store.writer():
        assert store.rolled_back == 1  # the documents table went back to its committed version
    assert [d["version_sequence"] for d in engine.store.documents("default")] == [1]
    assert engine.store.pins["documents"] > committed  # a restore is a new version with the old rows


def test_reingest_of_unchanged_files_embeds_nothing(tmp_path: Path, materials: Path) -> None:
    embedder = HashingEmbedder()
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=embedder)
    ingest_all(engine, materials)
    calls = embedder.calls
    ingest_all(engine, materials)
    assert embedder.calls == calls


def test_changed_file_keeps_old_version_queryable(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=embedder)
    folder = tmp_path / "docs"
    folder.mkdir()
    doc = folder / "plan.md"
    doc.write_text("# Plan\nWe ship the catalog in Q2.\n\n# Team\nEighteen engineers.", encoding="utf-8")
    engine.ingest(folder, lens="team-structured")
    moment = datetime.now(UTC)
    time.sleep(0.01)
    doc.write_text("# Plan\nWe ship the catalog in Q3.\n\n# Team\nEighteen engineers.", encoding="utf-8")
    calls = embedder.calls
    report = engine.ingest(folder, lens="team-structured")
    # Only the edited chunk and the edited sentence are embedded again.
    assert report.updated == 1 and report.chunks_embedded == 1 and embedder.calls - calls == 2
    now = engine.query("when do we ship the catalog", mode="bm25", k=5)
    then = engine.query("when do we ship the catalog", mode="bm25", k=5, as_of=moment)
    assert "Q3" in now[0].text and "Q2" in then[0].text
    history = engine.history(doc)
    assert [h["change_type"] for h in history] == ["create", "update"]
    assert "1 chunk edited" in history[1]["change_summary"]


def test_sync_tombstones_removed_files(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nalpha.", encoding="utf-8")
    (folder / "b.md").write_text("# B\nbravo.", encoding="utf-8")
    engine.ingest(folder, lens="x")
    before = datetime.now(UTC)
    (folder / "b.md").unlink()
    report = engine.ingest(folder, lens="x", sync=True)
    assert report.deleted == 1
    assert engine.stats()["documents"] == 1
    assert len(engine.query("bravo", mode="bm25")) == 0
    assert len(engine.query("bravo", mode="bm25", as_of=before)) == 1
    assert [h["change_type"] for h in engine.history(folder / "b.md")] == ["create", "delete"]


def test_settings_change_warns_and_reindex_rebuilds(tmp_path: Path, materials: Path) -> None:
    ws = tmp_path / "ws"
    engine = Engine(ws, settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(materials / "engineering", lens="engineering")
    before = engine.stats()["chunks"]
    changed = Engine(ws, settings=fast_settings(**{"chunking.chunk_size": 64, "chunking.chunk_overlap": 8}),
                     embedder=HashingEmbedder())
    assert changed.warnings and "chunking.chunk_size 1024 -> 64" in changed.warnings[0]
    with pytest.warns(WorkspaceMismatchWarning, match="ragloom reindex"):
        changed.query("capacity")
    report = changed.reindex()
    assert report.files == 3 and not changed.warnings
    assert changed.stats()["chunks"] > before
    assert all(c["token_count"] <= 64 for c in changed.store.chunks("default"))


def test_reindex_keeps_history(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    folder = tmp_path / "docs"
    folder.mkdir()
    doc = folder / "plan.md"
    doc.write_text("# Plan\nWe ship in Q2.", encoding="utf-8")
    engine.ingest(folder, lens="x")
    moment = datetime.now(UTC)
    time.sleep(0.01)
    doc.write_text("# Plan\nWe ship in Q4.", encoding="utf-8")
    engine.ingest(folder, lens="x")
    engine.reindex()
    assert "Q2" in engine.query("ship", mode="bm25", as_of=moment)[0].text
    assert "Q4" in engine.query("ship", mode="bm25")[0].text


def test_tenants_do_not_see_each_other(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Secret\nacme merger plans.", encoding="utf-8")
    engine.ingest(folder, lens="x", tenant="acme")
    assert len(engine.query("merger", mode="bm25", tenant="acme")) == 1
    for mode in ("bm25", "vector", "hybrid"):
        found = engine.query("merger", mode=mode, tenant="globex")
        assert len(found) == 0 and found.notes == [
            f"tenant 'globex' has no documents in the workspace {engine.workspace}; check the tenant's name, or "
            "ingest into it"]  # the other tenants are not named
    assert engine.query("nothing like it", mode="bm25", tenant="acme").notes == []
    assert engine.stats(tenant="globex")["documents"] == 0


def test_an_empty_list_of_paths_is_nothing_to_ingest(engine: Engine) -> None:
    for paths in ([], ()):
        with pytest.raises(NothingToIngestError, match="nothing to ingest: no paths were given; pass one or more"):
            engine.ingest(paths, lens="x")


def test_clear_one_lens_then_everything(engine: Engine, materials: Path) -> None:
    ingest_all(engine, materials)
    assert engine.clear(lens="engineering") == 3
    assert "engineering" not in engine.stats()["lenses"]
    with pytest.raises(InvalidParameterError, match=r"has no lens 'engineering'; its lenses are: business-framework"):
        engine.clear(lens="engineering")  # gone, or misspelt: named, not "removed 0"
    engine.clear()
    assert engine.stats()["documents"] == 0 and engine.workspace.manifest() is None


def test_naked_embedding_rollback_is_recorded(tmp_path: Path, materials: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"embedding.embed_text": "naked"}),
                    embedder=HashingEmbedder())
    engine.ingest(materials / "engineering", lens="engineering")
    rows = engine.store.chunks("default", with_vectors=True)
    assert {r["embedded_text"] for r in rows} == {"naked"}
    row = rows[0]
    assert np.allclose(row["vector"], HashingEmbedder().embed([row["text"]])[0])
    assert engine.stats()["embedded_text"] == "naked"


def test_contextual_embedding_uses_the_prefix(engine: Engine, materials: Path) -> None:
    engine.ingest(materials / "engineering", lens="engineering")
    row = engine.store.chunks("default", with_vectors=True)[0]
    assert row["prefix"].startswith("[Document: ")
    assert np.allclose(row["vector"], HashingEmbedder().embed([row["prefix"] + row["text"]])[0])


@pytest.mark.slow
def test_real_model_finds_the_expected_sections(tmp_path: Path, materials: Path) -> None:
    engine = Engine(tmp_path / "ws")  # the default: local all-MiniLM-L6-v2, contextual embeddings
    ingest_all(engine, materials)
    expectations = {
        "How many engineers do we have today?": "Headcount",
        "What happens to QuickBooks rate limits during large syncs?": "Risks",
        "What is the Pro plan price per technician?": "Pro",
    }
    for question, section in expectations.items():
        result = engine.query(question, k=5, mode="hybrid")
        # The section's own chunk, or a chunk it joined (a section under chunking.min_chunk_chars).
        found = [r for r in result if (r.section_path and r.section_path[-1] == section)
                 or re.search(rf"^#+ {re.escape(section)}$", r.text, re.MULTILINE)]
        assert found, (question, [r.section_path for r in result])


def test_a_document_missing_chunks_is_not_unchanged(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n" + "Alpha paragraph with words. " * 400, encoding="utf-8")
    first = engine.ingest(folder, lens="x")
    whole = engine.stats()["chunks"]
    assert first.added == 1 and whole > 1
    assert engine.ingest(folder, lens="x").unchanged == 1
    store = engine.store
    victim = store.chunks("default", columns=["chunk_id"])[0]["chunk_id"]
    with store._change():  # rows lost by some accident the store did not see
        store._writable("chunks").delete(f"chunk_id = '{victim}'")
    assert engine.stats()["chunks"] == whole - 1
    again = engine.ingest(folder, lens="x")
    assert (again.unchanged, again.updated) == (0, 1)
    assert engine.stats()["chunks"] == whole


@pytest.mark.parametrize("path", [None, "bad\0name.md", 5])
def test_history_of_a_path_that_cannot_be_resolved_is_an_error_naming_it(engine: Engine, path: object) -> None:
    with pytest.raises(InvalidParameterError, match="history: the path .* cannot be resolved"):
        engine.history(path)  # type: ignore[arg-type]


def test_a_query_by_another_embedder_says_the_dimensions_differ(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Apples\n\nApples are red.\n", encoding="utf-8")
    engine.ingest(folder, lens="x")
    other = Engine(engine.workspace.path, settings=fast_settings(), embedder=HashingEmbedder(dim=64))
    for mode in ("vector", "hybrid", "dynamic"):
        with pytest.raises(StoreError, match="holds 384-dimensional vectors but the embedder makes 64-dimensional "
                                             "ones; run 'ragloom reindex'"):
            other.query("apples", mode=mode)
    assert len(other.query("apples", mode="bm25")) == 1  # words need no vectors


def test_a_workspace_that_is_a_file_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"the workspace .*notes.md is a file, not a folder; name a folder"):
        Engine(tmp_path / "notes.md", settings=fast_settings(), embedder=HashingEmbedder())


def test_settings_given_as_a_mapping_change_the_workspace_ones(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "ragloom.toml").write_text("[retrieval]\nk = 7\n", encoding="utf-8")
    for given in ({"retrieval.k": 3, "embedding.model": "hashing"}, {"retrieval": {"k": 3}}):
        settings = Engine(tmp_path / "ws", settings=given, embedder=HashingEmbedder()).settings
        assert settings.retrieval.k == 3
    assert Engine(tmp_path / "ws", embedder=HashingEmbedder()).settings.retrieval.k == 7
    assert Engine(tmp_path / "ws", settings={}, embedder=HashingEmbedder()).settings.retrieval.k == 7
    with pytest.raises(ConfigError, match=r"retrieval.k: Input should be greater than or equal to 1 \(from the "
                                          r"settings given in code\)"):
        Engine(tmp_path / "ws", settings={"retrieval.k": 0}, embedder=HashingEmbedder())
    with pytest.raises(InvalidParameterError, match="settings must be a Settings or a mapping of settings, not int"):
        Engine(tmp_path / "ws", settings=5, embedder=HashingEmbedder())  # type: ignore[arg-type]
