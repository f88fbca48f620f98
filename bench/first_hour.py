"""What a new user waits for (issue 16): a question by the command line, the same question to a
warm engine (``ragloom serve``), and an unchanged re-ingest.

    .venv/bin/python bench/first_hour.py [--ragloom PATH] [--questions N]

Builds a demo workspace in a temporary folder (``ragloom demo``, the default embedder), then:

- **command line**: ``ragloom query QUESTION`` as a new process, wall time, ``--questions`` times;
- **warm**: ``ragloom serve`` started once (its start-up and model load timed apart, until
  ``/health`` says the model is loaded), then the same questions over HTTP, each timed;
- **unchanged re-ingest**: ``ragloom ingest`` of a lens folder that is already in the workspace,
  as a new process, and whether the process loaded the embedding model (``--json`` timings).

``--ragloom`` runs another checkout's command line (the commit before, for a before/after);
the serve rows need the checkout to have ``serve``. Writes ``bench/results/first_hour.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import MATERIALS, ROOT, markdown_table, save

QUESTIONS = [
    "When will the QuickBooks catalog integration ship?",
    "How many engineers does the team have?",
    "What are customers asking for about offline mode?",
    "What risks threaten the 2025 roadmap?",
    "Why does churn matter?",
]


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command[:3])} failed: {done.stderr[-800:]}")
    return time.perf_counter() - started, done


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def warm(ragloom: str, cwd: Path, env: dict[str, str], questions: list[str]) -> dict[str, Any]:
    import httpx

    port = free_port()
    started = time.perf_counter()
    server = subprocess.Popen([ragloom, "serve", "--port", str(port)], cwd=cwd, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        listening = loaded = None
        while loaded is None:
            if server.poll() is not None:
                sys.exit(f"ragloom serve stopped: {server.stderr.read()[-800:] if server.stderr else ''}")
            try:
                health = httpx.get(f"{url}/health", timeout=2).json()
                listening = listening or time.perf_counter() - started
                if health.get("model_loaded"):
                    loaded = time.perf_counter() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        times = []
        for q in questions:
            t0 = time.perf_counter()
            reply = httpx.post(f"{url}/query", json={"text": q, "k": 5}, timeout=60)
            reply.raise_for_status()
            times.append(time.perf_counter() - t0)
        return {"listening_s": listening, "model_loaded_s": loaded, "query_s": times}
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ragloom", default=str(ROOT / ".venv" / "bin" / "ragloom"))
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--name", default="first_hour")
    args = parser.parse_args()
    questions = (QUESTIONS * 4)[: args.questions]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        shutil.copytree(MATERIALS, cwd / "examples" / "materials")
        shutil.copy(MATERIALS.parent / "entities.toml", cwd / "examples" / "entities.toml")
        demo_s, _ = timed([args.ragloom, "demo"], cwd, env)
        cli = [timed([args.ragloom, "query", q, "-k", "5"], cwd, env)[0] for q in questions]
        reingest_s, done = timed([args.ragloom, "ingest", "examples/materials/engineering", "--lens", "engineering",
                                  "--json"], cwd, env)
        report = json.loads(done.stdout)
        has_serve = subprocess.run([args.ragloom, "serve", "--help"], capture_output=True).returncode == 0
        served = warm(args.ragloom, cwd, env, questions) if has_serve else None
    result: dict[str, Any] = {
        "ragloom": args.ragloom, "questions": questions, "demo_s": demo_s, "cli_query_s": cli,
        "reingest_unchanged_s": reingest_s, "reingest_report": {k: report.get(k) for k in
                                                                 ("files", "unchanged", "seconds", "timings")},
        "serve": served,
    }
    rows = [["`ragloom query` as a new process (per question)",
             f"{sorted(cli)[len(cli) // 2]:.2f} (median of {len(cli)}; {min(cli):.2f}–{max(cli):.2f})"],
            ["`ragloom ingest` of an unchanged lens folder, as a new process",
             f"{reingest_s:.2f} (of which the ingest itself {report.get('seconds', 0):.2f})"]]
    if served:
        q = sorted(served["query_s"])
        rows += [["`ragloom serve`: listening / the model loaded",
                  f"{served['listening_s']:.2f} / {served['model_loaded_s']:.2f}"],
                 ["a question to the warm server (HTTP)",
                  f"{q[len(q) // 2]:.3f} (median of {len(q)}; {q[0]:.3f}–{q[-1]:.3f})"]]
    print(markdown_table(["what", "seconds"], rows))
    print(f"wrote {save(args.name, result)}")


if __name__ == "__main__":
    main()
