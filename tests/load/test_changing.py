"""A file that another program rewrites while ragloom reads it is never stored half-written.

Before the read checked the file, a file rewritten non-atomically (truncated, then written in
parts) during an ingest was stored half-length with no note in 2 of 3 runs.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.load import read_file
from ragloom.load.normalize import normalize_text

from ..conftest import fast_settings

PARTS = 16


def version(n: int) -> str:
    return "".join(f"Line {i} of version {n}: the rewrite keeps going in parts, and a reader must not "
                   "stop half way.\n" for i in range(3000))


WRITER = """
import sys, time
path, parts = sys.argv[1], int(sys.argv[2])
texts = [open(name, "rb").read() for name in sys.argv[3:]]
i = 0
while True:
    data = texts[i % len(texts)]
    step = len(data) // parts + 1
    with open(path, "wb") as f:  # truncates first, then writes in parts, as an editor without atomic saves
        for start in range(0, len(data), step):
            f.write(data[start:start + step])
            f.flush()
            time.sleep(0.002)
    print(i, flush=True)
    i += 1
"""


def test_a_file_rewritten_while_it_is_read_is_stored_whole_or_reported(tmp_path: Path) -> None:
    texts = [version(1), version(2)]
    sources = []
    for i, text in enumerate(texts):
        sources.append(tmp_path / f"v{i}.txt")
        sources[-1].write_text(text, encoding="utf-8")
    path = tmp_path / "docs" / "notes.txt"
    path.parent.mkdir()
    path.write_text(texts[0], encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    whole = {normalize_text(t) for t in texts}
    # Another program, as in the report (a thread of this process would wait for the interpreter).
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(PARTS), *map(str, sources)],
                              stdout=subprocess.PIPE, text=True)
    outcomes: list[str] = []
    try:
        assert writer.stdout is not None and writer.stdout.readline()  # it is rewriting
        for _ in range(12):
            report = engine.ingest(path, lens="notes")
            if report.failed:
                # Reported, never stored: caught changing, or caught just after the truncation
                # and still empty after the pause (a writer stalled that long looks finished).
                (source, message), = report.failed
                assert "changed while it was read" in message or "empty document" in message, message
                outcomes.append(message)
                continue
            doc = engine.store.documents("default")[0]
            stored = engine.store.document_texts("default", [doc["document_id"]])[doc["document_id"]]
            assert stored in whole, f"stored {len(stored)} characters of a {len(texts[0])}-character file"
            outcomes.append("whole")
    finally:
        writer.kill()
        writer.wait(30)
    assert len(outcomes) == 12
    print(f"\n{outcomes.count('whole')} of 12 stored whole, the others reported: "
          + "; ".join(sorted({m.split(': ', 1)[1][:60] for m in outcomes if m != 'whole'})))


def test_a_file_that_stopped_changing_reads_at_once(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("settled", encoding="utf-8")
    time.sleep(0.1)
    started = time.perf_counter()
    assert read_file(path) == b"settled"
    assert time.perf_counter() - started < 0.04  # no pause for a file not modified just now
