"""A workspace shared by processes: readers during an ingest, and two ingests at once.

Every test here starts real processes (``spawn``) on one workspace, with the hashing embedder
so that the interleavings, not the model, take the time.
"""

from __future__ import annotations

import multiprocessing
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import WorkspaceLockedError
from ragloom.ingest import Progress

from ..conftest import fast_settings

DOCUMENTS = 12
ROUND = re.compile(r"round-(\d+)")


def write_corpus(folder: Path, round_: int) -> None:
    """Documents whose every paragraph names the round, so every chunk changes every round."""
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(DOCUMENTS):
        sections = []
        for s in range(4):
            body = " ".join(f"Paragraph {p} of section {s} in document {d} is from round-{round_} and talks about "
                            f"topic{(d + s + p) % 7} with catalog integration notes." for p in range(6))
            sections.append(f"## Section {s}\n\n{body}\n")
        (folder / f"doc{d:02d}.md").write_text(f"# Document {d}\n\n" + "\n".join(sections), encoding="utf-8")


def engine_at(ws: Path | str) -> Engine:
    return Engine(ws, settings=fast_settings(**{"ingest.batch_chunks": 40}), embedder=HashingEmbedder())


def writer(ws: str, folder: str, rounds: int, out: Any) -> None:  # noqa: ANN401 - a multiprocessing queue
    engine = engine_at(ws)
    reports = []
    for r in range(1, rounds + 1):
        write_corpus(Path(folder), r)
        report = engine.ingest(folder, lens="notes")
        reports.append((report.added, report.updated, report.unchanged, len(report.failed)))
    out.put(reports)


def consistency_problems(engine: Engine) -> tuple[list[str], int]:
    """What a reader sees that no single commit holds; and how many documents it saw."""
    problems = []
    store = engine.store
    docs = {d["document_id"]: d for d in store.documents("default")}
    rounds: dict[str, set[str]] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for row in store.chunks("default", columns=["document_id", "text"]):
        rounds[row["document_id"]].update(ROUND.findall(row["text"]))
        counts[row["document_id"]] += 1
    for doc_id, doc in docs.items():
        if counts[doc_id] != doc["chunk_count"]:
            problems.append(f"{doc['source_path']}: {counts[doc_id]} chunks, the document row says {doc['chunk_count']}")
        if len(rounds[doc_id]) > 1:
            problems.append(f"{doc['source_path']}: chunks of rounds {sorted(rounds[doc_id])}")
    if set(counts) - set(docs):
        problems.append(f"chunks of documents with no current row: {sorted(set(counts) - set(docs))}")
    result = engine.query("catalog integration notes topic3", k=50, mode="hybrid")
    by_doc: dict[str, set[str]] = defaultdict(set)
    for r in result:
        by_doc[r.document_id].update(ROUND.findall(r.text))
    problems += [f"query: {doc} mixes rounds {sorted(seen)}" for doc, seen in by_doc.items() if len(seen) > 1]
    return problems, len(docs)


def reader(ws: str, stop: Any, out: Any) -> None:  # noqa: ANN401 - multiprocessing event and queue
    problems: list[str] = []
    queries = opened = 0
    engine = None
    while not stop.is_set():
        if engine is None or queries % 3 == 0:
            engine = engine_at(ws)  # opening the workspace, again and again, must change nothing
            opened += 1
        try:
            found, _ = consistency_problems(engine)
        except Exception as exc:  # noqa: BLE001 - any error a reader meets is a failure to report
            found = [f"{type(exc).__name__}: {exc}"]
        problems += found
        queries += 1
    out.put((problems, queries, opened))


def spawn(target: Any, *args: Any) -> Any:  # noqa: ANN401
    process = multiprocessing.get_context("spawn").Process(target=target, args=args)
    process.start()
    return process


def lone_ingest(tmp_path: Path, folder: Path) -> dict[str, Any]:
    engine = engine_at(tmp_path / "lone")
    engine.ingest(folder, lens="notes")
    return engine.stats()


@pytest.mark.slow
def test_queries_during_repeated_ingests_see_whole_commits(tmp_path: Path) -> None:
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    write_corpus(folder, 0)
    engine_at(ws).ingest(folder, lens="notes")
    ctx = multiprocessing.get_context("spawn")
    stop, results, reports = ctx.Event(), ctx.Queue(), ctx.Queue()
    readers = [spawn(reader, str(ws), stop, results)]
    ingest = spawn(writer, str(ws), str(folder), 4, reports)
    ingest.join(300)
    stop.set()
    for r in readers:
        r.join(60)
    assert ingest.exitcode == 0
    problems, queries, opened = results.get(timeout=10)
    assert problems == [], problems[:5]
    assert queries >= 5 and opened >= 2
    assert reports.get(timeout=10) == [(0, DOCUMENTS, 0, 0)] * 4
    # The shared workspace holds exactly what one ingest alone gives.
    shared, lone = engine_at(ws).stats(), lone_ingest(tmp_path, folder)
    assert (shared["documents"], shared["chunks"], shared["tokens"]) == (lone["documents"], lone["chunks"], lone["tokens"])
    texts = sorted(r["text"] for r in engine_at(ws).store.chunks("default", columns=["text"]))
    assert texts == sorted(r["text"] for r in engine_at(tmp_path / "lone").store.chunks("default", columns=["text"]))


def ingest_once(ws: str, folder: str, out: Any) -> None:  # noqa: ANN401
    report = engine_at(ws).ingest(folder, lens="notes")
    out.put((report.added, report.unchanged, len(report.failed)))


@pytest.mark.slow
def test_two_ingests_of_one_folder_at_once_write_it_once(tmp_path: Path) -> None:
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    write_corpus(folder, 1)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    both = [spawn(ingest_once, str(ws), str(folder), out) for _ in range(2)]
    for p in both:
        p.join(300)
    assert [p.exitcode for p in both] == [0, 0]
    reports = sorted(out.get(timeout=10) for _ in both)
    assert reports == [(0, DOCUMENTS, 0), (DOCUMENTS, 0, 0)]  # one wrote, the other found it done
    shared, lone = engine_at(ws).stats(), lone_ingest(tmp_path, folder)
    for key in ("documents", "chunks", "tokens", "chunk_versions_stored"):
        assert shared[key] == lone[key], key


def hold_lock(ws: str, seconds: float, ready: Any) -> None:  # noqa: ANN401
    store = engine_at(ws).store
    with store.writer():
        ready.set()
        time.sleep(seconds)


def test_a_second_writer_waits_then_gives_up_with_a_clear_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ready = multiprocessing.get_context("spawn").Event()
    holder = spawn(hold_lock, str(ws), 5.0, ready)
    assert ready.wait(60)
    engine = Engine(ws, settings=fast_settings(**{"workspace.lock_timeout": 0.5}), embedder=HashingEmbedder())
    heard: list[str] = []
    with pytest.raises(WorkspaceLockedError, match=r"process \d+ .*workspace.lock_timeout"):
        with engine.store.writer(on_wait=heard.append):
            pass
    assert heard and "waiting for the workspace write lock" in heard[0]
    # Reads never wait for the lock.
    assert engine.query("anything").results == []
    holder.join(30)
    with engine.store.writer():  # free again once the holder is gone
        pass


def timed_reader(ws: str, stop: Any, out: Any) -> None:  # noqa: ANN401
    """Queries in every mode until told to stop; records latencies, errors and what no commit holds."""
    engine = engine_at(ws)
    modes = ["hybrid", "vector", "bm25", "balanced", "graph", "window", "dynamic"]
    latencies: list[float] = []
    problems: list[str] = []
    i = 0
    while not stop.is_set():
        mode = modes[i % len(modes)]
        started = time.perf_counter()
        try:
            result = engine.query(f"catalog integration notes topic{i % 7}", k=10, mode=mode)
            latencies.append(time.perf_counter() - started)
            seen: dict[str, set[str]] = defaultdict(set)
            for r in result:
                seen[r.document_id].update(ROUND.findall(r.text))
            problems += [f"{mode}: a document mixes rounds {sorted(s)}" for s in seen.values() if len(s) > 1]
        except Exception as exc:  # noqa: BLE001 - every error counts
            problems.append(f"{mode}: {type(exc).__name__}: {exc}")
        i += 1
    out.put((latencies, problems))


@pytest.mark.slow
def test_four_query_processes_during_an_ingest(tmp_path: Path) -> None:
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    write_corpus(folder, 0)
    engine_at(ws).ingest(folder, lens="notes")
    ctx = multiprocessing.get_context("spawn")
    stop, results, reports = ctx.Event(), ctx.Queue(), ctx.Queue()
    readers = [spawn(timed_reader, str(ws), stop, results) for _ in range(4)]
    time.sleep(3)  # the readers are up and querying
    ingest = spawn(writer, str(ws), str(folder), 3, reports)
    ingest.join(300)
    stop.set()
    gathered = [results.get(timeout=60) for _ in readers]
    for r in readers:
        r.join(30)
    latencies = sorted(t for lat, _ in gathered for t in lat)
    problems = [p for _, found in gathered for p in found]
    assert ingest.exitcode == 0 and reports.get(timeout=10) == [(0, DOCUMENTS, 0, 0)] * 3
    assert problems == [], problems[:5]
    assert len(latencies) >= 40
    p50, p95 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.95)]
    print(f"\n{len(latencies)} queries in 4 processes during 3 ingests: p50 {p50 * 1000:.0f} ms, "
          f"p95 {p95 * 1000:.0f} ms, 0 errors")


def test_readers_keep_the_old_index_while_a_reindex_runs(tmp_path: Path) -> None:
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    write_corpus(folder, 1)
    engine = engine_at(ws)
    engine.ingest(folder, lens="notes")
    reader = engine_at(ws)
    before = sorted(r["chunk_id"] for r in reader.store.chunks("default", columns=["chunk_id"]))
    seen: list[int] = []

    class Watch(Progress):
        def advance(self, name: str, amount: int = 1) -> None:
            # Half way through the reindex, another engine reads the workspace.
            seen.append(len(reader.query("catalog integration notes", k=50).results))
            assert sorted(r["chunk_id"] for r in reader.store.chunks("default", columns=["chunk_id"])) == before

    rebuilt = Engine(ws, settings=fast_settings(**{"chunking.chunk_size": 60, "chunking.chunk_overlap": 10}),
                     embedder=HashingEmbedder())
    rebuilt.reindex(progress=Watch())
    assert seen and all(n == seen[0] for n in seen)
    after = {r["chunk_id"] for r in reader.store.chunks("default", columns=["chunk_id"])}
    assert after and after != set(before)  # the new index, whole, once the reindex committed
