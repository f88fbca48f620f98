"""A document's life: the same file twice in one run, deleted, restored, deleted again; and
settings from the environment."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragloom.config import NON_SETTING_VARIABLES, Settings
from ragloom.engine import Engine
from ragloom.errors import ConfigError
from tests.conftest import fast_settings


def _versions(engine: Engine, path: Path) -> list[tuple[int, str, str, int]]:
    return [(r["version_sequence"], r["change_type"], r["change_summary"], r["chunk_count"])
            for r in engine.history(path)]


def test_the_same_file_reached_twice_is_stored_once(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "team").mkdir(parents=True)
    note = docs / "team" / "plan.md"
    note.write_text("# Plan\n\nThe catalog integration ships in June.\n", encoding="utf-8")
    os.symlink(note, docs / "plan-link.md")
    os.symlink(docs / "team", tmp_path / "team-link")
    engine = Engine(tmp_path / "ws", settings=fast_settings())
    report = engine.ingest([docs, note, str(note), docs / "team", tmp_path / "team-link", docs / "plan-link.md"],
                           lens="team-structured")
    assert report.ok and report.files == 1 and report.added == 1
    assert [d["source"] for d in report.documents] == [str(note)]
    assert _versions(engine, note) == [(1, "create", "created with 1 chunk", 1)]
    assert len(engine.query("catalog integration June", k=10)) == 1


def test_a_deleted_file_ingested_again_is_restored_and_its_history_goes_on(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    a, b = docs / "a.md", docs / "b.md"
    a.write_text("# Apples\n\nApples are red and sweet.\n", encoding="utf-8")
    b.write_text("# Bananas\n\nBananas are yellow.\n", encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings())
    assert engine.ingest(docs, lens="x").added == 2
    before_delete = datetime.now(UTC)
    kept = a.read_bytes()
    a.unlink()
    assert engine.ingest(docs, lens="x", sync=True).deleted == 1
    assert [r.source_path for r in engine.query("apples red sweet", k=5, mode="bm25")] == []
    assert engine.query("apples red sweet", k=5, mode="bm25", as_of=before_delete)[0].source_path == a.as_posix()
    a.write_bytes(kept)  # the very same bytes: not "unchanged", restored
    report = engine.ingest(docs, lens="x", sync=True)
    assert (report.added + report.updated, report.unchanged, report.deleted) == (1, 1, 0)
    assert _versions(engine, a) == [(1, "create", "created with 1 chunk", 1), (2, "delete", "file removed", 0),
                                    (3, "update", "restored", 1)]
    history = engine.history(a)
    assert history[2]["previous_version_id"] == history[1]["version_id"]
    assert history[2]["created_at"] == history[0]["created_at"]
    assert engine.query("apples red sweet", k=1, mode="bm25")[0].source_path == a.as_posix()
    # delete by path (the facade), then ingest again: deleted, restored again, one chain
    assert engine.delete(a) == 1 and engine.delete(a) == 0
    assert engine.query("apples red sweet", k=5, mode="bm25").results == []
    assert engine.ingest(a, lens="x").ok
    assert [v[1:3] for v in _versions(engine, a)][3:] == [("delete", "deleted"), ("update", "restored")]
    assert [r["version_sequence"] for r in engine.history(a)] == [1, 2, 3, 4, 5]
    # reindex replays the whole chain, tombstones included
    engine.reindex()
    assert [v[1:3] for v in _versions(engine, a)] == [("create", "created with 1 chunk"), ("delete", "file removed"),
                                                      ("update", "restored"), ("delete", "deleted"),
                                                      ("update", "restored")]
    assert engine.query("apples red sweet", k=1, mode="bm25")[0].source_path == a.as_posix()


def test_delete_by_document_id_and_unknown_names(tmp_path: Path) -> None:
    f = tmp_path / "n.md"
    f.write_text("# N\n\nNotes about dispatch.\n", encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings())
    engine.ingest(f, lens="x")
    doc_id = engine.query("dispatch", k=1)[0].document_id
    assert engine.delete(["nope", "/no/such/file.md"]) == 0
    assert engine.delete(doc_id) == 1
    assert engine.stats()["documents"] == 0


# -- settings from the environment -------------------------------------------------------------


def test_documented_variables_that_are_not_settings_are_left_alone() -> None:
    env = {name: "/somewhere" for name in NON_SETTING_VARIABLES}
    env["RAGLOOM_CHUNKING__CHUNK_SIZE"] = "512"
    env["RAGLOOM_TENANT"] = "2024"  # a text setting keeps its text
    env["RAGLOOM_INGEST__MAX_TEXT_MB"] = "4.5"
    settings = Settings.load(environ=env)
    assert (settings.chunking.chunk_size, settings.tenant, settings.ingest.max_text_mb) == (512, "2024", 4.5)
    assert {"RAGLOOM_SHARED_DATA", "RAGLOOM_WORKSPACE", "RAGLOOM_CONFIG", "RAGLOOM_CACHE_DIR",
            "RAGLOOM_CRASH_KILLS"} <= NON_SETTING_VARIABLES


def test_documented_variables_in_the_real_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in NON_SETTING_VARIABLES:
        monkeypatch.setenv(name, str(tmp_path))
    assert Settings.load().tenant == "default"
    Engine(tmp_path / "ws", embedder=None, settings=fast_settings()).stats()


@pytest.mark.parametrize(("env", "expected"), [
    ({"RAGLOOM_INGEST__MAX_FILEMB": "3"},
     "unknown setting 'ingest.max_filemb' (from the environment variable RAGLOOM_INGEST__MAX_FILEMB); did you mean "
     "'max_file_mb'? the keys of [ingest] are: batch_chunks, extensions, include_hidden, max_file_mb, max_nesting, "
     "max_rows_per_file, max_seconds_per_file, max_text_mb, max_unpacked_mb"),
    ({"RAGLOOM_SHARED_DATAS": "/x"},
     "unknown setting 'shared_datas' (from the environment variable RAGLOOM_SHARED_DATAS); the keys of the top level "
     "are: chunking, context_optimization, doc_types, embedding, entities, graph, ingest, llm, prefix, retrieval, "
     "|(variables that are not settings: RAGLOOM_API_KEY, RAGLOOM_CACHE_DIR, RAGLOOM_CONFIG, RAGLOOM_CRASH_KILLS, RAGLOOM_SHARED_DATA, "
     "RAGLOOM_WORKSPACE)"),
    ({"RAGLOOM_CHUNKING__CHUNK_SIZE__X": "1"}, "chunking.chunk_size is one setting, not a section"),
    ({"RAGLOOM_CHUNKING__CHUNK_SIZE": "big"},
     "chunking.chunk_size: Input should be a valid integer, unable to parse string as an integer (from the "
     "environment variable RAGLOOM_CHUNKING__CHUNK_SIZE)"),
])
def test_unknown_or_bad_variables_name_the_key_the_variable_and_the_valid_keys(env: dict[str, str],
                                                                               expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.load(environ=env)
    for piece in expected.split("|"):
        assert piece in str(info.value)
    assert "Extra inputs are not permitted" not in str(info.value)


def test_unknown_key_in_a_file_names_the_file_and_the_section_keys(tmp_path: Path) -> None:
    (tmp_path / "ragloom.toml").write_text("[ingest]\nmax_mb = 3\n\n[retrieval]\nk = 0\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        Settings.load(tmp_path, environ={})
    message = str(info.value)
    assert f"unknown setting 'ingest.max_mb' (from {tmp_path / 'ragloom.toml'}); did you mean" in message
    assert "the keys of [ingest] are: batch_chunks, extensions" in message
    assert f"retrieval.k: Input should be greater than or equal to 1 (from {tmp_path / 'ragloom.toml'})" in message
    (tmp_path / "ragloom.toml").write_text("colour = 'blue'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown setting 'colour' \(from .*ragloom.toml\); the keys of the top"):
        Settings.load(tmp_path, environ={})


@pytest.mark.parametrize(("toml", "expected"), [
    ("[chunking]\ntarget_size = 10\n",
     "chunking.min_size (500) <= chunking.target_size (10) <= chunking.max_size (1200); set target_size between"),
    ("[chunking]\nchunk_overlap = 2000\n",
     "chunking.chunk_overlap (2000) must be smaller than chunking.chunk_size (1024); lower the overlap"),
])
def test_a_check_across_settings_names_the_keys_the_file_and_the_fix(tmp_path: Path, toml: str,
                                                                     expected: str) -> None:
    (tmp_path / "ragloom.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        Settings.load(tmp_path, environ={})
    assert expected in str(info.value)
    assert str(info.value).endswith(f"(from {tmp_path / 'ragloom.toml'})")


def test_ingest_limits_are_settings_with_descriptions() -> None:
    fields = Settings.model_fields["ingest"].annotation.model_fields  # type: ignore[union-attr]
    for key, default in (("max_file_mb", 50.0), ("max_text_mb", 10.0), ("max_unpacked_mb", 256.0),
                         ("max_nesting", 256), ("max_rows_per_file", 100_000), ("max_seconds_per_file", 120.0)):
        assert fields[key].default == default and fields[key].description
