"""Contradictions: precision and recall against hand labels (issue 16).

    .venv/bin/python bench/contradiction_precision.py [--run NAME] [--workspaces DIR] [--dump FILE]
    # the detector before issue 16, with the vectors its negation rule read:
    mkdir -p /tmp/before && git archive 6e3e5ad src | tar -x -C /tmp/before
    .venv/bin/python bench/contradiction_precision.py --run before --src /tmp/before/src --embedder model

Three workspaces, built as ``make demo`` builds one:

- **materials**: ``examples/materials``, one lens per folder, the sample gazetteer;
- **tune** and **held-out**: the documentation corpus, one lens per second-level folder
  (``linux/RCU`` is ``linux-rcu``; the files directly under ``python/`` are ``python-root``),
  the folders sorted and dealt alternately to the two halves (the first to ``tune``). The
  detector's rules were tuned on ``materials`` and ``tune`` only; ``held-out`` was labelled
  after they were frozen (one fix came after: see docs/benchmarks.md).

The documentation corpus is always embedded by the HashingEmbedder (the detector reads no
vectors; the MiniLM model would take an hour per half on this machine); the materials by
``--embedder`` (``hashing`` by default, ``model`` for the bundled MiniLM: the detector before
issue 16 read vectors in its negation rule). The detector runs at its default settings,
``engine.contradictions(limit=None)``, in a child process whose ``PYTHONPATH`` is ``--src``
(so another commit's detector can be measured), and each reported pair is matched to
``bench/labels/contradictions.jsonl`` by its two statements' documents and offsets.

Precision is over the reported pairs that carry a label (the labels hold every pair the
detector reports now, and a seeded random sample of the thousands the old one reported on the
corpus); recall is over the pairs labelled a contradiction. Writes
``bench/results/contradiction_precision.json`` (one entry per ``--run``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import DEFAULT_CORPUS, MATERIALS, RESULTS, ROOT, environment, markdown_table

LABELS = ROOT / "bench" / "labels" / "contradictions.jsonl"
SPLITS = ("materials", "tune", "held-out")
NAME = "contradiction_precision"


def corpus_lenses(corpus: Path, half: int) -> list[tuple[list[Path], str]]:
    """(files or folders, lens) for one half of the documentation corpus."""
    folders = sorted(p for p in corpus.glob("*/*") if p.is_dir())
    chosen = [([f], f"{f.parent.name}-{f.name}".lower()) for i, f in enumerate(folders) if i % 2 == half]
    if half == 0:
        for top in sorted(p for p in corpus.iterdir() if p.is_dir()):
            loose = sorted(top.glob("*.md"))
            if loose:
                chosen.append((loose, f"{top.name}-root"))
    return chosen


# -- the child process: whatever ragloom is on PYTHONPATH ------------------------------------------


def build(split: str, workspace: Path, corpus: Path, embedder: str) -> None:
    from ragloom.config import Settings
    from ragloom.demo import install_samples
    from ragloom.embed import HashingEmbedder
    from ragloom.engine import Engine

    hashing = split != "materials" or embedder == "hashing"
    overrides: dict[str, Any] = {"embedding.cache": False} | ({"embedding.model": "hashing"} if hashing else {})
    if split == "materials":
        install_samples(MATERIALS, workspace)
    engine = Engine(workspace, settings=Settings.load(workspace, environ={}, overrides=overrides),
                    embedder=HashingEmbedder() if hashing else None)
    if split == "materials":
        sources = [([f], f.name) for f in sorted(p for p in MATERIALS.iterdir() if p.is_dir())]
    else:
        sources = corpus_lenses(corpus / "corpus", SPLITS.index(split) - 1)
    for paths, lens in sources:
        engine.ingest(paths, lens=lens)


def detect_child(out: Path, workspaces: Path, corpus: Path, embedder: str, splits: list[str]) -> None:
    from ragloom.config import Settings
    from ragloom.embed import HashingEmbedder
    from ragloom.engine import Engine

    places: dict[str, set[tuple[str, int, int]]] = {}
    if LABELS.exists():
        for line in LABELS.read_text(encoding="utf-8").splitlines():
            if line.strip():
                raw = json.loads(line)
                for side in ("a", "b"):
                    places.setdefault(raw["split"], set()).add((raw[side]["path"], raw[side]["start"], raw[side]["end"]))
    result: dict[str, Any] = {}
    for split in splits:
        name = f"{split}-{embedder}" if split == "materials" else split
        workspace = workspaces / name
        t0 = time.perf_counter()
        if not (workspace / ".built").exists():
            build(split, workspace, corpus, embedder)
            (workspace / ".built").touch()
        built = time.perf_counter() - t0
        hashing = split != "materials" or embedder == "hashing"
        engine = Engine(workspace, settings=Settings.load(workspace, environ={}, overrides={"embedding.cache": False} | (
            {"embedding.model": "hashing"} if hashing else {})), embedder=HashingEmbedder() if hashing else None)
        t0 = time.perf_counter()
        found = engine.contradictions(limit=None)
        seconds = time.perf_counter() - t0
        root = MATERIALS if split == "materials" else corpus / "corpus"
        texts = {Path(d["source_path"]).resolve().relative_to(root.resolve()).as_posix(): d["text"]
                 for d in engine.store.documents("default", with_text=True)}
        hashes = {f"{p}:{s}:{e}": hashlib.sha256(texts[p][s:e].encode("utf-8")).hexdigest() if p in texts else None
                  for p, s, e in places.get(split, ())}
        result[split] = {"contradictions": [c.to_dict() for c in found], "detect_seconds": round(seconds, 2),
                         "build_seconds": round(built, 1), "documents": len(texts), "label_hashes": hashes}
    out.write_text(json.dumps(result, default=str), encoding="utf-8")


# -- the parent: scores with this checkout's labels ------------------------------------------------


def run_detector(src: Path, workspaces: Path, corpus: Path, embedder: str, splits: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "found.json"
        env = dict(os.environ, PYTHONPATH=str(src.resolve()))
        subprocess.run([sys.executable, __file__, "--child", str(out), "--workspaces", str(workspaces),
                        "--corpus", str(corpus), "--embedder", embedder, "--splits", *splits], check=True, env=env)
        data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", default="after-current-tree",
                        help="Name of this run in the results file (after-current-tree, before, after, ...).")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="The ragloom source tree to measure.")
    parser.add_argument("--embedder", choices=("hashing", "model"), default="hashing",
                        help="What embeds the sample materials (the corpus is always hashed).")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--workspaces", type=Path, default=None,
                        help="Keep the workspaces here and reuse them (default: built afresh in a temporary folder).")
    parser.add_argument("--splits", nargs="+", choices=SPLITS, default=list(SPLITS))
    parser.add_argument("--dump", type=Path, default=None,
                        help="Write every reported pair, with its text, to this JSON Lines file for labelling "
                             "(it quotes the corpus: keep it out of the repository).")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        detect_child(args.child, args.workspaces, args.corpus, args.embedder, args.splits)
        return
    if not (args.corpus / "corpus").is_dir() and set(args.splits) - {"materials"}:
        sys.exit(f"no corpus under {args.corpus / 'corpus'}: build it with\n"
                 f"    bash ../shared/data/get_doc_corpus.sh {args.corpus}")

    from ragloom.evaluate.contradictions import load_labels, reported_pair, score

    labels = load_labels(LABELS)
    with tempfile.TemporaryDirectory() as tmp:
        workspaces = args.workspaces or Path(tmp)
        workspaces.mkdir(parents=True, exist_ok=True)
        found = run_detector(args.src, workspaces, args.corpus, args.embedder, args.splits)

    rows, splits, dump = [], {}, []
    totals = {"reported": 0, "labelled": 0, "true_positives": 0, "false_positives": 0, "positives": 0}
    for split in args.splits:
        root = MATERIALS if split == "materials" else args.corpus / "corpus"
        reported = [r for c in found[split]["contradictions"] if (r := reported_pair(c, root)) is not None]
        s = score(reported, labels, split)
        hashes = found[split]["label_hashes"]
        label_stale = sum(1 for p in labels if p.split == split for st in (p.a, p.b)
                          if hashes.get(f"{st.path}:{st.start}:{st.end}") != st.sha256)
        splits[split] = s.to_dict() | {"label_statements_not_found": label_stale,
                                       "labels": sum(p.split == split for p in labels),
                                       "detect_seconds": found[split]["detect_seconds"],
                                       "documents": found[split]["documents"],
                                       "kinds": _kinds(found[split]["contradictions"])}
        for key in totals:
            totals[key] += splits[split][key]
        rows.append([split, found[split]["documents"], s.reported, s.labelled, s.true_positives, s.false_positives,
                     len(s.unlabelled), s.positives, _fmt(s.precision), _fmt(s.recall)])
        for c in found[split]["contradictions"]:
            dump.append({"split": split, **c})
        for r in s.unlabelled[:10]:
            print(f"unlabelled {split}: {r.kind} {r.topic}: {r.difference} "
                  f"{' | '.join(f'{p}:{a}-{b}' for p, a, b in sorted(r.key))}")
    precision = totals["true_positives"] / (totals["true_positives"] + totals["false_positives"]) if (
        totals["true_positives"] + totals["false_positives"]) else None
    # Where only a sample of the reported pairs is labelled (the old detector on the corpus),
    # each split's precision stands for all it reported.
    estimated = [(s.get("precision") or 0.0) * s["reported"] for s in splits.values()]
    estimated_precision = sum(estimated) / totals["reported"] if totals["reported"] else None
    recall = totals["true_positives"] / totals["positives"] if totals["positives"] else None
    rows.append(["all", "", totals["reported"], totals["labelled"], totals["true_positives"], totals["false_positives"],
                 sum(splits[s]["unlabelled"] for s in args.splits), totals["positives"], _fmt(precision), _fmt(recall)])
    print(markdown_table(["split", "documents", "reported", "labelled", "TP", "FP", "unlabelled", "positives",
                          "precision", "recall"], rows))
    print(f"precision over every reported pair, each split's labelled sample standing for the rest: "
          f"{_fmt(estimated_precision)}")
    if args.dump:
        args.dump.write_text("".join(json.dumps(d, default=str) + "\n" for d in dump), encoding="utf-8")

    path = RESULTS / f"{NAME}.json"
    previous = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    runs = previous.get("runs", {})
    runs[args.run] = {"environment": environment(), "src": str(args.src), "embedder_materials": args.embedder,
                      "splits": splits, "all": {**totals, "precision": _round(precision), "recall": _round(recall),
                                                "precision_extrapolated": _round(estimated_precision)},
                      "labels": {"file": str(LABELS.relative_to(ROOT)), "pairs": len(labels),
                                 "contradictions": sum(p.contradiction for p in labels)}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"runs": dict(sorted(runs.items()))}, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def _kinds(contradictions: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in contradictions:
        out[c["kind"]] = out.get(c["kind"], 0) + 1
    return out


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


if __name__ == "__main__":
    main()
