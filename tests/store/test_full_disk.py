"""A workspace on a disk that fills up: one clear error, the workspace as it was before the write
that failed, and a re-run (once there is space) equal to a clean ingest, graph included.

Each test mounts a small tmpfs, so it needs root (and a kernel that lets this process mount);
without them it is skipped, saying why. Before this was fixed, 24 documents ingested onto a
disk left with 100, 250 or 400 KB ended, after space was freed and the ingest run again, with
100 to 104 current chunks where a clean ingest has 96 (the same chunk ids twice), the graph
hundreds of edges off, and a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import DiskFullError
from ragloom.store.lance import PENDING, RESERVE, STATE_DIR

from ..conftest import ROOT, fast_settings
from .test_crashes import consistent, snapshot, write_corpus


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 40 MB tmpfs, unmounted at the end."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(disk: Path, leave: int) -> Path:
    """A file that takes all but ``leave`` bytes of the disk."""
    st = os.statvfs(disk)
    ballast = disk / "ballast"
    with ballast.open("wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))
    return ballast


def engine_at(ws: Path) -> Engine:
    return Engine(ws, settings=fast_settings(**{"ingest.batch_chunks": 24}), embedder=HashingEmbedder())


def clean_snapshot(tmp_path: Path, folder: Path) -> dict[str, object]:
    clean = engine_at(tmp_path / "clean")
    clean.ingest(folder, lens="notes")
    return snapshot(clean)


@pytest.mark.parametrize("leave_kb", [100, 250, 400])
def test_a_first_ingest_on_a_full_disk_then_a_rerun_equals_a_clean_ingest(small_disk: Path, tmp_path: Path,
                                                                         leave_kb: int) -> None:
    folder, ws = tmp_path / "docs", small_disk / "ws"
    write_corpus(folder)
    engine = engine_at(ws)
    assert engine.stats()["documents"] == 0
    ballast = fill(small_disk, leave_kb * 1024)
    with pytest.raises(DiskFullError, match=r"no space left on the disk of the workspace .*free some space") as info:
        engine.ingest(folder, lens="notes")
    stored = info.value.report
    assert stored is not None and f"{stored.added} of 24 documents were stored" in str(info.value)  # type: ignore[attr-defined]
    # What a reader sees: the documents stored before the disk filled, each whole; nothing pending.
    assert consistent(engine_at(ws)) == []
    assert not (ws / "lancedb" / STATE_DIR / PENDING).exists()
    ballast.unlink()
    report = engine_at(ws).ingest(folder, lens="notes")
    assert report.ok and report.added + report.unchanged == 24
    assert snapshot(engine_at(ws)) == clean_snapshot(tmp_path, folder)


def test_an_update_on_a_full_disk_keeps_each_document_whole_and_the_rerun_finishes_it(small_disk: Path,
                                                                                     tmp_path: Path) -> None:
    folder, ws = tmp_path / "docs", small_disk / "ws"
    write_corpus(folder)
    engine_at(ws).ingest(folder, lens="notes")
    write_corpus(folder, edit=1)
    ballast = fill(small_disk, 200 * 1024)
    with pytest.raises(DiskFullError):
        engine_at(ws).ingest(folder, lens="notes")
    assert consistent(engine_at(ws)) == []
    # Run again on the full disk: it lands what fits (the space set aside for rollbacks may have
    # been given up) and fails the same clear way for the rest; nothing is half-written.
    for _ in range(2):
        try:
            engine_at(ws).ingest(folder, lens="notes")
        except DiskFullError:
            pass
        assert consistent(engine_at(ws)) == []
    ballast.unlink()
    assert engine_at(ws).ingest(folder, lens="notes").ok
    assert snapshot(engine_at(ws)) == clean_snapshot(tmp_path, folder)
    assert consistent(engine_at(ws)) == []


def test_the_rollback_needs_no_new_space(small_disk: Path, tmp_path: Path) -> None:
    """With not a byte left, the write that fails is still undone: the space the workspace set
    aside for it is given up. (Before, the rollback compacted the tables, which needs space, so
    after a failure every later write failed too.)"""
    folder, ws = tmp_path / "docs", small_disk / "ws"
    write_corpus(folder)
    engine_at(ws).ingest(folder, lens="notes")
    reserve = ws / "lancedb" / STATE_DIR / RESERVE
    assert reserve.stat().st_size > 0
    before = snapshot(engine_at(ws))
    write_corpus(folder, edit=2)
    ballast = fill(small_disk, 0)
    with pytest.raises(DiskFullError):
        engine_at(ws).ingest(folder, lens="notes")
    assert not (ws / "lancedb" / STATE_DIR / PENDING).exists()  # rolled back, not left for later
    after = snapshot(engine_at(ws))
    assert after["chunks"] == before["chunks"] or consistent(engine_at(ws)) == []
    ballast.unlink()
    assert engine_at(ws).ingest(folder, lens="notes").ok
    assert snapshot(engine_at(ws)) == clean_snapshot(tmp_path, folder)
    assert reserve.stat().st_size > 0  # set aside again


def test_the_command_line_says_it_in_one_line(small_disk: Path, tmp_path: Path) -> None:
    folder, ws = tmp_path / "docs", small_disk / "ws"
    write_corpus(folder)
    engine_at(ws).stats()
    config = tmp_path / "ragloom.toml"
    config.write_text('[embedding]\nmodel = "hashing"\ncache = false\n', encoding="utf-8")
    fill(small_disk, 150 * 1024)
    done = subprocess.run([sys.executable, "-m", "ragloom.cli", "ingest", str(folder), "--lens", "notes",
                           "--workspace", str(ws), "--config", str(config)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "no space left on the disk of the workspace" in lines[0], done.stderr
