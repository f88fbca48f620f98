"""Killing ingest (SIGKILL) at random points: the workspace opens every time, answers with the
documents that were complete, and a re-run finishes the job: counts, texts and graph edges
equal a clean ingest's, with no ``graph build`` by hand.

``RAGLOOM_CRASH_KILLS`` sets how many kills (default 16 in make test; docs/reliability.md reports a
larger run). The first child writes a 24-document corpus; before each later one a different third
of the files is edited, so every child has work to be killed in. Each kill lands at a random
moment inside the time an uninterrupted child takes for that kind of work, measured first.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine

from ..conftest import fast_settings

ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("RAGLOOM_CRASH_KILLS", "16"))
DOCUMENTS = 24
CHILD = """
import sys
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from tests.conftest import fast_settings
engine = Engine(sys.argv[1], settings=fast_settings(**{"ingest.batch_chunks": 24}), embedder=HashingEmbedder())
_ = engine.store
print("ready", flush=True)
report = engine.ingest(sys.argv[2], lens="notes")
print("done", report.added, report.updated, report.unchanged, len(report.failed), flush=True)
"""


def write_corpus(folder: Path, edit: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(DOCUMENTS):
        touched = edit and d % 3 == edit % 3
        sections = []
        for s in range(4):
            words = " ".join(f"Note {p} of part {s}: the catalog team tracks topic{(d * s + p) % 11} in Q{s % 4 + 1} "
                             f"2025{' (revised ' + str(edit) + ')' if touched and p == 1 else ''}." for p in range(5))
            sections.append(f"## Part {s}\n\n{words}\n")
        (folder / f"doc{d:02d}.md").write_text(f"# Document {d}\n\n" + "\n".join(sections), encoding="utf-8")


def engine_at(ws: Path) -> Engine:
    return Engine(ws, settings=fast_settings(**{"workspace.version_retention": 0}), embedder=HashingEmbedder())


def consistent(engine: Engine) -> list[str]:
    """What a reader should never see: a document whose chunks are missing, doubled or not
    its text."""
    store = engine.store
    problems = []
    docs = {d["document_id"]: d for d in store.documents("default")}
    texts = store.document_texts("default", docs)
    counts: dict[str, int] = {}
    for c in store.chunks("default", columns=["document_id", "start_char", "end_char", "text"]):
        counts[c["document_id"]] = counts.get(c["document_id"], 0) + 1
        if c["document_id"] not in docs:
            problems.append(f"a chunk of no current document: {c['document_id']}")
        elif texts[c["document_id"]][c["start_char"] : c["end_char"]] != c["text"]:
            problems.append(f"{docs[c['document_id']]['source_path']}: a chunk is not its document's slice")
    problems += [f"{d['source_path']}: {counts.get(i, 0)} chunks of {d['chunk_count']}"
                 for i, d in docs.items() if counts.get(i, 0) != d["chunk_count"]]
    engine.query("catalog team topic3", k=5, mode="hybrid")  # and it answers
    return problems


def snapshot(engine: Engine) -> dict[str, Any]:
    """Everything a clean ingest decides, keyed by what does not depend on history."""
    store = engine.store
    rows = store.chunks("default", columns=["chunk_id", "source_path", "chunk_index", "text"])
    where = {r["chunk_id"]: (Path(r["source_path"]).name, r["chunk_index"]) for r in rows}
    edges = {(min(where[e["src"]], where[e["dst"]]), max(where[e["src"]], where[e["dst"]]), e["type"])
             for e in store.edges("default")}
    return {
        "documents": len(store.documents("default")),
        "chunks": sorted((Path(r["source_path"]).name, r["chunk_index"], r["text"]) for r in rows),
        "sentences": len(store.chunks("default", table="sentences", columns=["chunk_id"])),
        "mentions": len(store.mentions("default")),
        "edges": edges,
    }


def start_child(ws: Path, folder: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(ws), str(folder)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


def timed_run(ws: Path, folder: Path) -> float:
    """Seconds an uninterrupted child takes from ready to done."""
    child = start_child(ws, folder)
    started = time.perf_counter()
    assert child.stdout is not None and child.stdout.readline().startswith("done")
    seconds = time.perf_counter() - started
    child.wait()
    return seconds


def ingest_and_kill(ws: Path, folder: Path, rng: random.Random, window: float) -> bool:
    """A child ingests; it is killed at a random moment of its ingest. True if it was killed
    before it finished (it never printed done)."""
    child = start_child(ws, folder)
    time.sleep(rng.uniform(0, window))
    child.send_signal(signal.SIGKILL)
    out = child.communicate()[0]
    return child.returncode == -signal.SIGKILL and "done" not in out


@pytest.mark.slow
def test_random_kills_never_corrupt_and_a_rerun_finishes_the_job(tmp_path: Path) -> None:
    rng = random.Random(20261124)
    ws, folder, probe, reference = tmp_path / "ws", tmp_path / "docs", tmp_path / "probe", tmp_path / "reference"
    write_corpus(folder)
    # How long uninterrupted children take once ready, so that the kills land inside them: a
    # whole corpus, then an edit of a third of it.
    full = timed_run(probe, folder)
    write_corpus(folder, edit=1)
    edit = timed_run(probe, folder)
    write_corpus(folder)
    killed, problems = 0, []
    for i in range(KILLS):
        if i:
            write_corpus(folder, edit=i)  # a different third of the files changes before each child
        killed += ingest_and_kill(ws, folder, rng, full if i == 0 else edit)
        problems += consistent(engine_at(ws))
        engine_at(reference).ingest(folder, lens="notes")  # the same edits, never killed
    assert problems == [], problems[:5]
    print(f"{killed} of {KILLS} kills landed inside an ingest")
    assert killed >= KILLS * 0.6, f"only {killed} of {KILLS} kills landed inside an ingest"
    final = engine_at(ws)
    report = final.ingest(folder, lens="notes")
    assert report.ok
    clean = engine_at(tmp_path / "clean")
    clean.ingest(folder, lens="notes")
    assert snapshot(final) == snapshot(clean)
    assert consistent(final) == []
    # Debris of the killed writes does not stay on disk: after a compaction the crashed
    # workspace is within a small factor of one that went through the same edits unkilled
    # (both keep every version's rows, which as-of queries read).
    def size_of(engine: Engine, root: Path) -> int:
        engine.store.optimize(force=True)
        return sum(p.stat().st_size for p in (root / "lancedb").rglob("*") if p.is_file())

    size, reference_size = size_of(final, ws), size_of(engine_at(reference), reference)
    print(f"on disk after compaction: {size:,} bytes, {reference_size:,} for the same edits unkilled")
    assert size < 2 * reference_size, (size, reference_size)
