"""Helpers shared by the benchmarks: the corpora, timing, result files."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragloom.evaluate.report import markdown_table as markdown_table  # re-exported for the benchmarks

if TYPE_CHECKING:
    from ragloom.evaluate.chunking import Config
    from ragloom.evaluate.context import EvalContext
    from ragloom.evaluate.datasets import ChunkingEval
    from ragloom.evaluate.report import SuiteResult

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


def sample_corpus(path: Path | None, documents: int) -> list[Path]:
    """Every ninth file of :func:`doc_corpus`, at most ``documents`` of them."""
    return doc_corpus(path)[::9][:documents]


def stage(files: list[Path], folder: Path) -> None:
    """Copy ``files`` into ``folder`` (created if need be) as ``0000-<name>``, ``0001-<name>``, ...:
    numbered, since names repeat across the corpus."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, f in enumerate(files):
        (folder / f"{i:04d}-{f.name}").write_bytes(f.read_bytes())


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



#: The ``ragloom eval chunking`` rows of the boundary chunker, the baseline of the cut-point scripts.
BOUNDARY_ROWS = frozenset({"ragloom boundary 250", "ragloom boundary 400", "ragloom boundary 800"})


def chunking_variants(label: str, dataset: str, make: Callable[[EvalContext], list[Config]],
                      ) -> tuple[SuiteResult, ChunkingEval, Callable[[str], str], dict[str, Config]]:
    """``ragloom eval chunking`` on ``dataset`` with the configurations ``make`` builds, beside the
    suite's boundary rows and LangChain's recursive splitter; prints the table and returns the
    result, the data, the part of each corpus and every configuration by name."""
    from ragloom.evaluate import chunking
    from ragloom.evaluate.context import EvalContext

    ctx = EvalContext(data=SHARED, out=Path(f"/tmp/ragloom-{label}") / dataset)
    baseline = [c for c in chunking.configurations()
                if c.name in BOUNDARY_ROWS or (c.family == "langchain" and "Recursive" in c.name and not c.lift)]
    configs = make(ctx) + baseline
    corpus = str(ROOT / chunking.DOC_CORPUS) if dataset == "docs" else None
    result = chunking.run(ctx, configs, dataset=dataset, corpus=corpus)
    print(f"\n{dataset}:")
    for row in result.rows:
        parts = "  ".join(f"{k} {v:.1f}" for k, v in row.items() if k.startswith(("recall ", "iou ")))
        print(f"  {row['configuration']:48s} recall {row['recall']:5.1f}  IoU {row['iou']:5.1f}  {parts}  "
              f"vs recursive {row['vs recursive']}")
    data, part_of = chunking.load(ctx, dataset, corpus)
    return result, data, part_of, {c.name: c for c in configs}
