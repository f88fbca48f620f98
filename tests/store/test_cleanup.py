"""Old table versions are cleaned up by a bound that does not depend on time alone, and a read
that loses its versions to a writer in another process runs again on the newest commit.

A 47 KB corpus ingested again about 70 times within the 10-minute retention grew its workspace
to 840 MB: every write's versions, and every compaction's copy of a whole table, stayed for ten
minutes. Now only the last few commits' versions stay (``KEEP_COMMITS``), however young.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.store.lance import KEEP_COMMITS, TABLES

from ..conftest import fast_settings
from .test_sharing import ROUND, write_corpus
from .test_snapshots import HookedEmbedder


def write_small_corpus(folder: Path, edit: int) -> None:
    """Six documents, a third of them changed by each edit (about 25 KB)."""
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(6):
        body = "\n\n".join(f"## Part {s}\n\n" + " ".join(
            f"Sentence {p} of part {s} in doc {d}, edit {edit if (d + edit) % 3 == 0 else 0}, about topic{(d * s + p) % 9}."
            for p in range(20)) for s in range(4))
        (folder / f"d{d}.md").write_text(f"# Doc {d}\n\n{body}\n", encoding="utf-8")


def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def live_bytes(engine: Engine) -> int:
    """What the tables' current versions hold (every row of their history included)."""
    store = engine.store
    return sum(int(t.stats()["total_bytes"]) for name in TABLES if (t := store._writable(name)) is not None)


@pytest.mark.slow
def test_seventy_ingests_within_the_retention_keep_the_workspace_small(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    folder = tmp_path / "docs"
    for edit in range(70):
        write_small_corpus(folder, edit)
        engine.ingest(folder, lens="x")
    disk, live = disk_bytes(tmp_path / "ws" / "lancedb"), live_bytes(engine)
    print(f"\n70 ingests: {disk / 2**20:.0f} MB on disk for {live / 2**20:.0f} MB of rows (history included)")
    # Before: 280 MB for 39 MB of rows in the same loop (every version of ten minutes kept).
    assert disk < 4 * live, (disk, live)
    commit = engine.store.commit_info()
    assert len(commit["recent"]) == KEEP_COMMITS
    # Nothing a query needs went: every version still answers as of its time.
    assert engine.query("topic3 part 2", mode="hybrid").results


def test_a_read_that_loses_its_versions_to_another_process_runs_again(tmp_path: Path) -> None:
    """Two engines on one workspace stand for two processes: the second writes and cleans up
    (as if every version were old) in the middle of the first's query, which then reads the
    newest commit instead of failing."""
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    write_corpus(folder, 1)
    embedder = HookedEmbedder()
    reader = Engine(ws, settings=fast_settings(), embedder=embedder)
    writer = Engine(ws, settings=fast_settings(**{"workspace.version_retention": 0}), embedder=HashingEmbedder())
    writer.ingest(folder, lens="notes")
    reader.query("warm up", mode="hybrid")

    def rewrite_and_clean() -> None:
        embedder.hook = None
        for r in range(2, 3 + KEEP_COMMITS):
            write_corpus(folder, r)
            writer.ingest(folder, lens="notes")
        writer.store.optimize(force=True)

    embedder.hook = rewrite_and_clean
    result = reader.query("catalog integration notes topic3", k=10, mode="hybrid")
    rounds = {r for hit in result for r in ROUND.findall(hit.text)}
    assert rounds == {str(2 + KEEP_COMMITS)}, rounds
