"""A workspace on object storage (a local S3 server): ingest, every query mode, an edited
file re-ingested, as-of queries, history; the lease lock and the commit fence."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import StoreError, WorkspaceLockedError

from ..conftest import fast_settings

pytestmark = pytest.mark.slow  # each test talks to a moto server the session starts


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def corpus(folder: Path) -> None:
    for d in range(6):
        parts = "\n\n".join(f"## Part {s}\n\nThe catalog team owns topic{d * 3 + s} and ships the search index in "
                            f"Q{s + 1} 2025. Alice Wong reviews it." for s in range(3))
        write(folder, f"doc{d}.md", f"# Document {d}\n\n{parts}\n")


def test_a_workspace_on_s3_ingests_queries_versions_and_keeps_history(s3_env: str, cache_dir: str,
                                                                      tmp_path: Path) -> None:
    uri = f"{s3_env}/teams/catalog"
    docs = tmp_path / "docs"
    corpus(docs)
    engine = Engine(uri, settings=fast_settings(), embedder=HashingEmbedder())
    assert engine.workspace.remote and str(engine.workspace) == uri
    report = engine.ingest(docs, lens="notes")
    assert report.ok and report.added == 6
    stats = engine.stats()
    assert stats["workspace"] == uri and stats["documents"] == 6 and stats["chunks"] > 0
    for mode in ("vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic"):
        result = engine.query("who owns topic4 and the search index", mode=mode, k=3)
        assert result.results, mode
    before = datetime.now(UTC)
    time.sleep(0.05)
    edited = write(docs, "doc1.md", "# Document 1\n\n## Part 0\n\nThe platform team now owns topic4 since Q3 2026.\n")
    again = engine.ingest(docs, lens="notes")
    assert again.updated == 1 and again.unchanged == 5
    now = engine.query("who owns topic4", mode="bm25", k=1).results[0]
    then = engine.query("who owns topic4", mode="bm25", k=1, as_of=before).results[0]
    assert "platform team" in now.text and "catalog team" in then.text
    versions = engine.history(edited)
    assert [v["version_sequence"] for v in versions] == [1, 2]
    # A second engine (another process, another machine) on the same URI sees the same state.
    other = Engine(uri, settings=fast_settings(), embedder=HashingEmbedder())
    assert other.stats()["chunks"] == engine.stats()["chunks"]
    assert other.workspace.manifest() is not None


def engine_at(uri: str, **settings: object) -> Engine:
    return Engine(uri, settings=fast_settings(**settings), embedder=HashingEmbedder())


def test_a_second_writer_waits_for_the_lease_then_gives_up_naming_the_holder(s3_env: str, cache_dir: str) -> None:
    first, second = engine_at(s3_env), engine_at(s3_env)
    with first.store.writer():
        heard: list[str] = []
        started = time.monotonic()
        with pytest.raises(WorkspaceLockedError) as caught, second.store.writer(timeout=1.0, on_wait=heard.append):
            pass
        assert time.monotonic() - started >= 1.0
        assert "process" in caught.value.holder and "heartbeat" in caught.value.holder
        assert heard and "waiting for the workspace write lock" in heard[0]
    with second.store.writer(timeout=1.0):  # released: taken at once
        pass


def _lock_files(uri: str):  # noqa: ANN202 - the store's object files
    from ragloom.store.remote import ObjectFiles

    return ObjectFiles(f"{uri}/lancedb/_ragloom")


def _fake_holder(uri: str, **fields: object) -> None:
    import json
    import socket

    record = {"owner": "someone", "pid": 1, "host": socket.gethostname(), "command": "ragloom ingest",
              "since": datetime.now(UTC).isoformat(timespec="seconds"),
              "beat": datetime.now(UTC).isoformat(timespec="seconds"), "lease": 2.0, "released": False, **fields}
    _lock_files(uri).write("write.lock", json.dumps(record).encode())


def test_a_lock_left_by_a_dead_or_silent_writer_is_taken_over(s3_env: str, cache_dir: str) -> None:
    engine = engine_at(s3_env, **{"workspace.lock_timeout": 2.0})
    _ = engine.store
    # A process of this machine that no longer runs: taken over at once.
    _fake_holder(s3_env, pid=2**22 + 12345)
    started = time.monotonic()
    with engine.store.writer(timeout=10):
        pass
    assert time.monotonic() - started < 1.5
    # Another machine's writer whose heartbeat is older than the lease: at once too.
    _fake_holder(s3_env, host="elsewhere", beat="2020-01-01T00:00:00+00:00")
    started = time.monotonic()
    with engine.store.writer(timeout=10):
        pass
    assert time.monotonic() - started < 1.5
    # One whose clock is ahead (its record looks fresh) but that never beats again: after a
    # whole lease of watching it not change.
    _fake_holder(s3_env, host="elsewhere", beat="2999-01-01T00:00:00+00:00")
    started = time.monotonic()
    with engine.store.writer(timeout=10):
        pass
    assert 2.0 <= time.monotonic() - started < 6.0


def test_a_writer_that_lost_its_lease_cannot_commit_and_the_next_one_rolls_it_back(
        s3_env: str, cache_dir: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    corpus(docs)
    settings = {"workspace.lock_timeout": 2.0, "workspace.version_retention": 0}
    first = engine_at(s3_env, **settings)
    assert first.ingest(docs, lens="notes").ok
    chunks = first.stats()["chunks"]
    write(docs, "doc2.md", "# Document 2\n\nRewritten while the writer was paused.\n")
    with first.store.writer():
        # Another writer takes the lock over (as if this one had stalled past its lease) and
        # then dies; this one's heartbeat finds the lock gone.
        _fake_holder(s3_env, pid=2**22 + 12345)
        time.sleep(1.2)
        report = first.ingest(docs, lens="notes")  # the batch fails, as any failed write does
        assert [source for source, _ in report.failed] == [str(docs / "doc2.md")]
        assert "lost its write lock" in report.failed[0][1]
    second = engine_at(s3_env, **settings)
    assert second.stats()["chunks"] == chunks  # the lost write was never visible
    report = second.ingest(docs, lens="notes")
    assert report.updated == 1 and second.store.rolled_back >= 1


def test_the_commit_record_is_fenced_to_the_version_seen_when_the_lock_was_taken(s3_env: str, cache_dir: str) -> None:
    from ragloom.store.remote import ObjectState

    state = ObjectState(f"{s3_env}/lancedb/_ragloom", lock_timeout=5)
    state.arm("commit.json")
    state.write("commit.json", '{"sequence": 1}', fenced=True)
    state.write("commit.json", '{"sequence": 2}', fenced=True)  # over its own write
    ObjectState(f"{s3_env}/lancedb/_ragloom", lock_timeout=5).write("commit.json", '{"sequence": 9}')
    with pytest.raises(StoreError, match="written by another writer"):
        state.write("commit.json", '{"sequence": 3}', fenced=True)
    assert state.read("commit.json") == '{"sequence": 9}'


def test_the_command_line_works_on_an_s3_workspace_with_its_settings_in_the_bucket(
        s3_env: str, s3_server: str, cache_dir: str, tmp_path: Path) -> None:
    import boto3
    from typer.testing import CliRunner

    from ragloom.cli import app

    uri = f"{s3_env}/cli-ws"
    docs = tmp_path / "docs"
    corpus(docs)
    cli = CliRunner()
    missing = cli.invoke(app, ["stats", "--workspace", uri])
    assert missing.exit_code == 2 and f"there is no workspace at {uri}" in missing.output
    refused = cli.invoke(app, ["init", uri])
    assert refused.exit_code == 2 and "upload it there" in refused.output
    bucket = s3_env.removeprefix("s3://")
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").put_object(
        Bucket=bucket, Key="cli-ws/ragloom.toml", Body=b'[embedding]\nmodel = "hashing"\ncache = false\n')
    done = cli.invoke(app, ["ingest", str(docs), "--lens", "notes", "--workspace", uri])
    assert done.exit_code == 0 and "6 files: 6 added" in done.output, done.output
    stats = cli.invoke(app, ["stats", "--json", "--workspace", uri])
    assert stats.exit_code == 0 and '"workspace": "' + uri + '"' in stats.output
    assert '"embedder": "hashing-384-bigrams"' in stats.output  # the settings came from the bucket
    found = cli.invoke(app, ["query", "who owns topic4", "--mode", "hybrid", "--workspace", uri])
    assert found.exit_code == 0 and "topic4" in found.output
    history = cli.invoke(app, ["history", str(docs / "doc1.md"), "--workspace", uri])
    assert history.exit_code == 0 and "create" in history.output.lower()
