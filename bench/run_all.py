"""Run every benchmark in turn with the settings docs/benchmarks.md reports (``make bench``).

    .venv/bin/python bench/run_all.py [--only NAME ...] [--skip-corpus]

The throughput, ingest, re-ingest, graph and window benchmarks need the documentation corpus
(``bash ../shared/data/get_doc_corpus.sh bench/data/doc-corpus``, which needs a Debian package
mirror); ``--skip-corpus`` runs only the ones that do not. Each benchmark writes
``bench/results/<name>.json``; the ``ragloom eval`` suites write ``docs/eval``. One at a time:
they measure speed, and the machine has two cores. Everything takes under an hour.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from common import DEFAULT_CORPUS, ROOT

#: (name, command after the interpreter, needs the corpus)
BENCHMARKS = [
    ("chunking_throughput", ["bench/chunking_throughput.py", "--repeats", "3"], True),
    ("ingest_throughput", ["bench/ingest_throughput.py", "--documents", "200"], True),
    ("ingest_profile", ["bench/ingest_profile.py", "--documents", "200"], True),
    ("reingest_edits", ["bench/reingest_edits.py", "--documents", "200", "--share", "0.01", "--seed", "7"], True),
    ("graph_scaling", ["bench/graph_scaling.py", "--sizes", "1000", "10000", "100000",
                       "--seed-sizes", "1000", "10000"], True),
    ("window_expansion", ["bench/window_expansion.py", "--sentences", "100000", "--queries", "50", "--k", "10"], True),
    ("contradiction_precision", ["bench/contradiction_precision.py"], True),
    ("lens_balance", ["bench/lens_balance.py", "--top", "24", "48"], False),
    ("optimizer_quality", ["bench/optimizer_quality.py", "--candidates", "20", "--budget", "4000"], False),
    ("contextual_tuning", ["bench/contextual_tuning.py"], False),
    ("cli_latency", ["bench/cli_latency.py"], False),
    *((f"eval {suite}", ["-m", "ragloom.cli", "eval", suite, "--out", "docs/eval",
                         *(["--option", "split=tune,report,all"] if suite == "contextual" else [])], False)
      for suite in ("chunking", "contextual", "multihop", "ab", "windows")),
    ("eval chunking docs", ["-m", "ragloom.cli", "eval", "chunking", "--option", "dataset=docs",
                            "--out", "docs/eval/docs"], True),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="names to run (default: all)")
    parser.add_argument("--skip-corpus", action="store_true", help="skip the benchmarks that need the corpus")
    args = parser.parse_args()
    has_corpus = (DEFAULT_CORPUS / "corpus").is_dir()
    failed = []
    for name, command, needs_corpus in BENCHMARKS:
        if args.only and name not in args.only:
            continue
        if needs_corpus and (args.skip_corpus or not has_corpus):
            print(f"-- {name}: skipped (no corpus under {DEFAULT_CORPUS})", flush=True)
            continue
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        code = subprocess.run([sys.executable, *command], cwd=ROOT).returncode
        print(f"== {name}: exit {code}, {time.perf_counter() - started:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
