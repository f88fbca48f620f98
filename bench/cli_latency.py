"""How long a question from the command line takes: cold, and with a ``ragloom serve`` running.

    .venv/bin/python bench/cli_latency.py                       # this tree
    .venv/bin/python bench/cli_latency.py --baseline /tmp/head/src   # and another tree, same run

Each figure is the median wall time of whole processes (``ragloom --help``, ``ragloom query``,
``ragloom ask``) on the Rust Leadership Council workspace of ``bench/roadmap_eval.py`` (built
once), with the default model. A baseline tree (a ``git worktree`` of an earlier commit) is run
the same way in the same run, so that the ratio holds on a noisy machine. The command line's
imports are measured with ``python -X importtime``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import ROOT, markdown_table, save
from roadmap_eval import workspace

QUESTIONS = ("Who takes the notes in council meetings?", "How is a new council representative chosen?",
             "What did the council decide about the project director role?")


def run(src: Path, *args: str) -> float:
    """Seconds one ``ragloom`` process takes, run from the source tree ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragloom.cli", *args], env=env, capture_output=True, text=True,
                          check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: an answer whose citations failed the check still ran
        sys.exit(f"ragloom {' '.join(args)} failed: {done.stderr[-2000:]}")
    return seconds


def import_seconds(src: Path) -> float:
    """Cumulative seconds of ``import ragloom.cli``, by ``python -X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import ragloom.cli"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(src)}, check=True)
    line = next(line for line in done.stderr.splitlines()[::-1] if line.rstrip().endswith("| ragloom.cli"))
    return int(line.split("|")[1]) / 1e6


def median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def measure(src: Path, ws: Path, repeat: int) -> dict[str, Any]:
    w = ["-w", str(ws)]
    out: dict[str, Any] = {
        "import ragloom.cli": median([import_seconds(src) for _ in range(repeat)]),
        "ragloom --help": median([run(src, "--help") for _ in range(repeat)]),
    }
    has_local = "--local" in subprocess.run([sys.executable, "-m", "ragloom.cli", "query", "--help"],
                                            env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True,
                                            text=True, check=False).stdout
    local = ["--local"] if has_local else []
    out["query, cold"] = median([run(src, "query", q, "-k", "5", *local, *w) for q in QUESTIONS])
    out["ask, cold"] = median([run(src, "ask", q, *local, *w) for q in QUESTIONS])
    if not has_local:
        return out
    server = subprocess.Popen([sys.executable, "-m", "ragloom.cli", "serve", "--port", "0", *w],
                              env={**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        for line in server.stdout:  # waits for the line, however long the model takes to load
            if "are answered here" in line:
                break
        else:
            sys.exit("ragloom serve ended before it listened")
        run(src, "query", "warm up", *w)
        queries = [run(src, "query", q, "-k", "5", *w) for q in QUESTIONS * repeat]
        asks = [run(src, "ask", q, *w) for q in QUESTIONS * repeat]
        out["query, with serve running"] = median(queries)
        out["query, with serve running (slowest)"] = round(max(queries), 3)
        out["ask, with serve running"] = median(asks)
        out["ask, with serve running (slowest)"] = round(max(asks), 3)
    finally:
        server.terminate()
        server.wait(timeout=60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, help="a workspace (default: bench/data/rust-council-ws, built once)")
    parser.add_argument("--baseline", type=Path, help="another source tree to time in the same run (its src/)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    ws = workspace(args.workspace).workspace.path
    trees = {"this tree": ROOT / "src", **({"baseline": args.baseline} if args.baseline else {})}
    results = {name: measure(src, ws, args.repeat) for name, src in trees.items()}
    rows = [[what, *(f"{r[what]:.2f} s" if what in r else "-" for r in results.values())]
            for what in results["this tree"]]
    print(markdown_table(["seconds (median)", *results], rows))
    save("cli_latency", {"workspace": str(ws), "repeat": args.repeat, "results": results})


if __name__ == "__main__":
    main()
