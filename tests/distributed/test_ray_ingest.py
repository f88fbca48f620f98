"""The Ray runner against the local one: the same 50 documents (Markdown, PDF, DOCX, HTML,
code) give the same chunks, versions, sentences, mentions and graph; a worker killed mid-run
is retried; one killed every time fails the job with a clear message and leaves the workspace
as a local crash leaves it, and a re-run completes it."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import DistributedIngestError
from ragloom.ingest import IngestRun, Work

from ..conftest import MATERIALS, Tally, fast_settings, shared_data
from ..store.test_crashes import consistent

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_ray")]

#: Columns that differ between two ingests of the same files by design: new random version ids
#: and the moments of writing.
VOLATILE = {"version_id", "previous_version_id", "doc_version_id", "as_of", "superseded_at", "updated_at",
            "created_at", "ingested_at", "vector", "_rowid"}


def fifty_documents(folder: Path) -> Path:
    """The sample materials (Markdown, PDF, DOCX, HTML), two long essays and 32 source files
    from the shared data: 50 documents."""
    data = shared_data()
    for path in sorted(MATERIALS.rglob("*")):
        if path.is_file():
            target = folder / path.relative_to(MATERIALS)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    for path in sorted((data / "chunking-eval" / "corpora").glob("*.md")):
        shutil.copy(path, folder / path.name)
    code = json.loads((data / "contextual" / "codebase_chunks.json").read_text(encoding="utf-8"))
    for doc in code:
        if sum(1 for p in folder.rglob("*") if p.is_file()) >= 50:
            break
        (folder / f"{doc['doc_id']}.md").write_text(doc["content"], encoding="utf-8")
    assert sum(1 for p in folder.rglob("*") if p.is_file()) == 50
    return folder


def engine_at(path: str | Path, **settings: object) -> Engine:
    return Engine(path, settings=fast_settings(**{"ingest.batch_chunks": 200, **settings}), embedder=HashingEmbedder())


def rows(engine: Engine, table: str) -> dict[Any, dict[str, Any]]:
    store = engine.store
    handle = store._table(table)
    found = handle.search().limit(None).to_arrow().to_pylist() if handle is not None else []
    key = {"documents": ("document_id", "version_sequence"), "chunks": ("chunk_id", "version_sequence"),
           "sentences": ("chunk_id", "version_sequence"), "mentions": ("document_id", "entity_id", "start_char", "v"),
           "edges": ("src", "dst", "type")}[table]
    if table == "mentions":  # a mention belongs to a document version: its number, not its random id
        sequence = {r["version_id"]: r["version_sequence"] for r in rows(engine, "documents").values()}
        for row in found:
            row["v"] = sequence[row["doc_version_id"]]
    out = {}
    for row in found:
        k = tuple(row[c] for c in key)
        assert k not in out, f"{table}: {k} twice"
        out[k] = row
    return out


def assert_same_workspace(local: Engine, ray: Engine) -> None:
    for table in ("documents", "chunks", "sentences", "mentions", "edges"):
        a, b = rows(local, table), rows(ray, table)
        assert a.keys() == b.keys(), table
        for k in a:
            x = {c: v for c, v in a[k].items() if c not in VOLATILE}
            y = {c: v for c, v in b[k].items() if c not in VOLATILE}
            if table == "edges":
                assert abs(x.pop("weight") - y.pop("weight")) < 1e-6
            assert x == y, (table, k)
            if "vector" in a[k]:
                np.testing.assert_allclose(a[k]["vector"], b[k]["vector"], atol=1e-6)
        if table in ("chunks", "sentences"):  # which versions are current, and which were closed
            assert ({k for k, r in a.items() if r["superseded_at"] is None}
                    == {k for k, r in b.items() if r["superseded_at"] is None})


def same_report(local: Any, ray: Any) -> None:
    skip = {"timings", "seconds", "documents"}
    assert {k: v for k, v in local.to_dict().items() if k not in skip} == \
        {k: v for k, v in ray.to_dict().items() if k not in skip}
    assert sorted(map(json.dumps, local.documents)) == sorted(map(json.dumps, ray.documents))


def test_fifty_documents_on_ray_land_exactly_as_a_local_ingest_lands_them(tmp_path: Path) -> None:
    docs = fifty_documents(tmp_path / "docs")
    local, ray = engine_at(tmp_path / "local"), engine_at(tmp_path / "ray")
    first = local.ingest(docs, lens="mixed")
    heard = Tally()
    second = ray.ingest(docs, lens="mixed", runner="ray", workers=2, progress=heard)
    assert first.ok and first.added == 50 and first.chunks_written > 100
    same_report(first, second)
    assert_same_workspace(local, ray)
    # The bar heard every document read and every text embedded, from the workers.
    assert heard.totals["Reading"] == heard.done["Reading"] == 50
    assert heard.totals["Embedding"] == heard.done["Embedding"] == first.chunks_embedded + first.sentences_embedded
    # Edits: new versions whose unchanged chunks keep their vectors, one file gone with --sync.
    for name in ("roadmap-2025.md", "state_of_the_union.md"):
        path = next(docs.rglob(name))
        path.write_text(path.read_text(encoding="utf-8").replace("the", "THE", 3) + "\n\nA new closing line.\n",
                        encoding="utf-8")
    next(docs.rglob("doc_3.md")).unlink()
    first = local.ingest(docs, lens="mixed", sync=True)
    second = ray.ingest(docs, lens="mixed", sync=True, runner="ray", workers=2)
    assert first.updated == 2 and first.unchanged == 47 and first.deleted == 1 and first.chunks_reused > 0
    same_report(first, second)
    assert_same_workspace(local, ray)
    assert ray.query("state of the union", mode="hybrid", k=3).results


def test_the_runner_is_checked_by_name_and_options() -> None:
    from ragloom.errors import InvalidParameterError
    from ragloom.ingest.distributed import runner

    with pytest.raises(InvalidParameterError, match="unknown ingest runner 'spark'; choose one of: local, ray"):
        runner("spark")
    with pytest.raises(InvalidParameterError, match="workers \\(0\\) must be at least 1"):
        runner("ray", workers=0)
    with pytest.raises(InvalidParameterError, match="options of the ray runner"):
        runner("local", workers=2)


def small_corpus(folder: Path, n: int = 12) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(n):
        parts = "\n\n".join(f"## Part {s}\n\nThe catalog team owns topic{(d * 3 + s) % 7} and ships it in Q{s + 1} "
                            f"2025. Alice Wong reviews part {s} of note {d}." for s in range(4))
        (folder / f"note{d:02d}.md").write_text(f"# Note {d}\n\n{parts}\n", encoding="utf-8")
    return folder


class KillOnce:
    """A document stage that kills its worker process the first time it meets ``victim``
    (a marker file remembers, so the retried task passes)."""

    name, scope = "kill-once", "document"

    def __init__(self, victim: str, marker: Path) -> None:
        self.victim, self.marker = victim, marker

    def __call__(self, items: list[Work], run: IngestRun) -> list[Work]:
        if any(i.source.endswith(self.victim) for i in items) and not self.marker.exists():
            self.marker.write_text(str(os.getpid()), encoding="utf-8")
            os.kill(os.getpid(), signal.SIGKILL)
        return items


class KillAlways:
    """A batch stage (it runs in the embedding actors) that kills its actor whenever a batch
    holds ``victim``, counting the deaths in a file."""

    name, scope = "kill-always", "batch"

    def __init__(self, victim: str, deaths: Path) -> None:
        self.victim, self.deaths = victim, deaths

    def __call__(self, items: list[Work], run: IngestRun) -> list[Work]:
        if any(i.source.endswith(self.victim) for i in items):
            with self.deaths.open("a", encoding="utf-8") as f:
                f.write(f"{os.getpid()}\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return items


def test_a_worker_killed_once_is_retried_and_the_result_is_a_local_ingests(tmp_path: Path) -> None:
    docs = small_corpus(tmp_path / "docs")
    local, ray = engine_at(tmp_path / "local"), engine_at(tmp_path / "ray")
    marker = tmp_path / "killed"
    ray.pipeline.insert(KillOnce("note05.md", marker), after="parse")
    expected = local.ingest(docs, lens="notes")
    report = ray.ingest(docs, lens="notes", runner="ray", workers=2)
    assert marker.exists(), "the worker was killed"
    assert report.ok and report.added == 12
    same_report(expected, report)
    assert_same_workspace(local, ray)


def test_an_actor_killed_every_time_fails_the_job_clearly_and_a_rerun_completes_it(tmp_path: Path) -> None:
    docs = small_corpus(tmp_path / "docs", 24)
    deaths = tmp_path / "deaths"
    ray = engine_at(tmp_path / "ray", **{"ingest.batch_chunks": 20, "workspace.version_retention": 0})
    ray.pipeline.insert(KillAlways("note20.md", deaths), before="store")
    with pytest.raises(DistributedIngestError) as caught:
        ray.ingest(docs, lens="notes", runner="ray", workers=2)
    message = str(caught.value)
    assert "the Ray ingest failed" in message and "run the command again" in message
    assert len(deaths.read_text(encoding="utf-8").split()) >= 2  # it was tried again before giving up
    # As a local crash leaves it: whole documents only, every one answerable.
    again = engine_at(tmp_path / "ray", **{"ingest.batch_chunks": 20})
    assert consistent(again) == []
    landed = again.stats()["documents"]
    assert landed < 24
    report = again.ingest(docs, lens="notes", runner="ray", workers=2)
    assert report.ok and report.added == 24 - landed and report.unchanged == landed
    clean = engine_at(tmp_path / "clean")
    clean.ingest(docs, lens="notes")
    assert_same_workspace(clean, again)


def test_a_ray_ingest_into_a_workspace_on_s3_matches_a_local_one(s3_env: str, cache_dir: str, tmp_path: Path) -> None:
    docs = small_corpus(tmp_path / "docs")
    remote, local = engine_at(f"{s3_env}/ws"), engine_at(tmp_path / "local")
    report = remote.ingest(docs, lens="notes", runner="ray", workers=2)
    same_report(local.ingest(docs, lens="notes"), report)
    assert_same_workspace(local, remote)
    for mode in ("vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic"):
        assert remote.query("who owns topic3", mode=mode, k=2).results, mode


def test_the_command_line_ingests_with_ray_and_draws_its_one_bar(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragloom.cli import app

    docs = small_corpus(tmp_path / "docs", 6)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ragloom.toml").write_text('[embedding]\nmodel = "hashing"\ncache = false\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["ingest", str(docs), "--lens", "notes", "--workspace", str(ws),
                                      "--runner", "ray", "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert "6 files: 6 added" in result.output
    assert "6/6 documents" in result.output
    result = CliRunner().invoke(app, ["ingest", str(docs), "--lens", "notes", "--workspace", str(ws),
                                      "--runner", "spark"])
    assert result.exit_code == 2 and "unknown ingest runner 'spark'" in result.output
