"""Reads in one process while it writes: each read operation holds one commit from start to end,
and no read waits for a write.

These are threads of one process on one engine, as in ``ragloom serve`` and the web app (the
multi-process cases are in ``test_sharing.py``). Before read views, a commit re-pointed the
table handles every thread shared, so a query could read chunks at one commit and the rest at
the next (9 of about 6,900 HTTP answers during an ingest mixed two versions of a document),
and every read waited for the store's lock while an ingest wrote and compacted.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.query import QueryResult

from ..conftest import fast_settings
from .test_sharing import DOCUMENTS, ROUND, write_corpus

MODES = ("hybrid", "graph", "vector", "bm25", "window", "dynamic", "balanced")


class HookedEmbedder(HashingEmbedder):
    """Calls ``hook`` in the middle of a query: after the query began reading, before its
    vector search (hybrid mode has its text search running meanwhile)."""

    def __init__(self) -> None:
        super().__init__()
        self.hook: object = None

    def embed_query(self, text: str) -> np.ndarray:
        hook, self.hook = self.hook, None
        if callable(hook):
            hook()
        return super().embed_query(text)


def engine_at(ws: Path, embedder: HashingEmbedder | None = None) -> Engine:
    return Engine(ws, settings=fast_settings(**{"ingest.batch_chunks": 40}), embedder=embedder or HashingEmbedder())


def rounds_by_document(result: QueryResult) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = defaultdict(set)
    for r in result:
        seen[r.document_id].update(ROUND.findall(r.text))
    return seen


def in_thread(work: object) -> None:
    """Run ``work`` on another thread and wait for it (a writer that is not this operation)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()  # type: ignore[operator]
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    assert not thread.is_alive() and not errors, errors


@pytest.mark.parametrize("mode", ["hybrid", "graph", "window"])
def test_a_query_reads_one_commit_while_another_thread_commits_in_its_middle(tmp_path: Path, mode: str) -> None:
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    write_corpus(folder, 1)
    embedder = HookedEmbedder()
    engine = engine_at(ws, embedder)
    engine.ingest(folder, lens="notes")
    engine.query("warm up", mode=mode)

    def commit_round_2() -> None:
        write_corpus(folder, 2)
        report = engine.ingest(folder, lens="notes")
        assert report.updated == DOCUMENTS

    embedder.hook = lambda: in_thread(commit_round_2)
    result = engine.query("catalog integration notes topic3", k=20, mode=mode)
    assert embedder.hook is None  # the ingest ran in the middle of this query
    seen = rounds_by_document(result)
    assert seen and all(rounds == {"1"} for rounds in seen.values()), dict(seen)
    # The next operation reads the new commit.
    assert all(rounds == {"2"} for rounds in rounds_by_document(engine.query("catalog topic3", mode=mode)).values())


def test_an_operation_holds_its_view_and_the_writer_reads_its_own(tmp_path: Path) -> None:
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    write_corpus(folder, 1)
    engine = engine_at(ws)
    engine.ingest(folder, lens="notes")
    store = engine.store

    def texts() -> list[str]:
        return sorted(r["text"] for r in store.chunks("default", columns=["text"]))

    with store.reading() as view:
        before = texts()
        in_thread(lambda: (write_corpus(folder, 2), engine.ingest(folder, lens="notes")))
        assert texts() == before and store.view() is view
        assert engine.stats()["chunks"] == len(before)
        # A write inside the operation reads the newest commit, and its own writes.
        with store.writer():
            assert {r for t in texts() for r in ROUND.findall(t)} == {"2"}
        assert texts() == before
    assert {r for t in texts() for r in ROUND.findall(t)} == {"2"}


def test_reads_go_on_while_a_writer_holds_the_lock_mid_write(tmp_path: Path) -> None:
    """A writer stopped in the middle of a write (its rows added, not committed) holds the write
    lock and the store's own lock: queries in other threads answer meanwhile, from the last
    commit. Before read views every read waited for the lock until the write ended."""
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    write_corpus(folder, 1)
    engine = engine_at(ws)
    engine.ingest(folder, lens="notes")
    store = engine.store
    inside, release = threading.Event(), threading.Event()

    def stalled_write() -> None:
        with store._change():
            store._writable("documents").delete("TRUE")  # uncommitted: no reader may see it
            inside.set()
            release.wait(60)

    writer = threading.Thread(target=stalled_write)
    writer.start()
    try:
        assert inside.wait(30)
        answered = []
        for mode in MODES:
            started = time.perf_counter()
            result = engine.query("catalog integration notes topic3", k=10, mode=mode)
            answered.append((mode, time.perf_counter() - started, len(result)))
        assert engine.stats()["documents"] == DOCUMENTS
    finally:
        release.set()
        writer.join(60)
    assert all(n > 0 for _, _, n in answered), answered
    assert max(seconds for _, seconds, _ in answered) < 5.0, answered
    assert engine.stats()["documents"] == 0  # the write committed once released


def _load(engine: Engine, stop: threading.Event, modes: Sequence[str], out: list[tuple[float, list[str]]]) -> None:
    i = 0
    while not stop.is_set():
        mode = modes[i % len(modes)]
        started = time.perf_counter()
        problems: list[str] = []
        try:
            result = engine.query(f"catalog integration notes topic{i % 7}", k=10, mode=mode)
            problems = [f"{mode}: a document mixes {sorted(s)}" for s in rounds_by_document(result).values()
                        if len(s) > 1]
        except Exception as exc:  # noqa: BLE001 - every error counts
            problems = [f"{mode}: {type(exc).__name__}: {exc}"]
        out.append((time.perf_counter() - started, problems))
        i += 1


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


@pytest.mark.slow
def test_a_server_under_constant_queries_while_ingests_deletes_and_reindexes_run(tmp_path: Path) -> None:
    """Four query threads in every mode on one engine (as ``ragloom serve`` runs them), first
    alone, then while one thread re-ingests changed folders, deletes a document and re-indexes:
    no answer mixes two commits, none fails, and the slowest answers stay within a bound."""
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    write_corpus(folder, 0)
    engine = engine_at(ws)
    engine.ingest(folder, lens="notes")
    engine.query("warm up", mode="graph")

    def measure(seconds: float | None, writes: object = None) -> list[tuple[float, list[str]]]:
        stop, out = threading.Event(), list[tuple[float, list[str]]]()
        threads = [threading.Thread(target=_load, args=(engine, stop, MODES[i:] + MODES[:i], out)) for i in range(4)]
        for t in threads:
            t.start()
        if callable(writes):
            writes()
        else:
            time.sleep(seconds or 0)
        stop.set()
        for t in threads:
            t.join(60)
        return out

    quiet = measure(8.0)

    def writes() -> None:
        for r in range(1, 4):
            write_corpus(folder, r)
            assert engine.ingest(folder, lens="notes").updated == DOCUMENTS
        assert engine.delete(folder / "doc00.md") == 1
        engine.reindex()

    busy = measure(None, writes)
    problems = [p for _, found in quiet + busy for p in found]
    assert problems == [], problems[:5]
    assert len(quiet) >= 20 and len(busy) >= 20
    quiet_p99, busy_p99 = _percentile([s for s, _ in quiet], 0.99), _percentile([s for s, _ in busy], 0.99)
    print(f"\n{len(quiet)} answers alone: p50 {_percentile([s for s, _ in quiet], .5) * 1000:.0f} ms, "
          f"p99 {quiet_p99 * 1000:.0f} ms; {len(busy)} during writes: "
          f"p50 {_percentile([s for s, _ in busy], .5) * 1000:.0f} ms, p99 {busy_p99 * 1000:.0f} ms")
    # The writes share two cores and the interpreter with the readers, so answers slow down; a
    # read that waited for a whole write (seconds, before) would be far past this.
    assert busy_p99 < max(4 * quiet_p99, 1.5), (quiet_p99, busy_p99)
