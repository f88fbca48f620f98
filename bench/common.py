"""Helpers shared by the benchmarks: the corpora, timing, result files."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DEFAULT_CORPUS = ROOT / "bench" / "data" / "doc-corpus"
SHARED = ROOT.parent / "shared" / "data"
MATERIALS = ROOT / "examples" / "materials"


def doc_corpus(path: Path | None = None) -> list[Path]:
    """The Markdown files that ../shared/data/get_doc_corpus.sh builds, sorted."""
    folder = (path or DEFAULT_CORPUS) / "corpus"
    files = sorted(folder.rglob("*.md"))
    if not files:
        sys.exit(
            f"no corpus under {folder}: build it with\n"
            f"    bash ../shared/data/get_doc_corpus.sh {path or DEFAULT_CORPUS}"
        )
    return files


def best_of(fn: Callable[[], Any], repeats: int) -> float:
    """The fastest of ``repeats`` runs, in seconds: the least disturbed by other load."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def environment() -> dict[str, Any]:
    def version(pkg: str) -> str | None:
        try:
            from importlib.metadata import version as v

            return v(pkg)
        except Exception:
            return None

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "packages": {p: version(p) for p in ("ragloom", "langchain-text-splitters", "chonkie", "semchunk", "tiktoken",
                                             "bpe-openai", "lancedb", "sentence-transformers", "torch", "llama-index-core")},
    }


def save(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"environment": environment(), **data}, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
