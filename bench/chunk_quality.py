"""Chunk quality flags against a person's labels (issue 26).

    .venv/bin/python bench/chunk_quality.py [--work DIR] [--save NAME] [--quality-from FILE]
                                             [--draw | --draw-cuts ROUND] [--worksheet FILE]

Two corpora with the default settings: the Rust leadership council's minutes and policies
(../shared/data/rust-council, each folder under its lens as bench/roadmap_eval.py files it)
and 200 files of the documentation corpus (every ninth, as the other benchmarks sample it).
Each is ingested once into ``--work`` (default /tmp/ragloom-chunk-quality) and kept; every run
then scores the stored chunks again with the quality code, from the stored sentence vectors
and mentions (the same inputs as the ingest's quality stage: a run with unchanged code
reproduces the stored quality exactly), so before and after see the same chunks. The code
before issue 26 is scored with ``--quality-from`` (its quality.py, from git) and
``--save chunk_quality_before``; a later run prints those figures beside its own.

Printed and saved (bench/results/NAME.json): how many chunks carry each flag, by severity;
and, against bench/labels/chunk_quality.jsonl, each flag's precision (the share of flagged
labelled chunks a person called bad for that flag's reason, and for any reason) and recall
(the share of chunks labelled bad for that reason that carry the flag). Flags count at any
severity.

The labels, each chunk read without its flags:

* Round 1, the sample (``--draw``): 100 chunks, seed 26, 54 from the council's corpus and 46
  from the documentation, stratified by the flag the code before issue 26 gave (the rarest it
  carried: low_coherence, poor_boundary, length_violation, none; each stratum shuffled), so
  that each flag has flagged and unflagged cases. Every other chunk of a stratum is in the
  *tune* half, the rest in the *report* half. Each is judged whole: bad for retrieval or not,
  and why: ``short`` (too little to say anything on its own), ``long_mixed`` (too long, mixing
  topics), ``cut_sentence`` (cut mid-sentence so that a reader loses meaning), ``cut_name``
  (cut through a name); ``thin`` marks whole sections that say little but read fine.
* Round 2 (``--draw-cuts 2``, seed 2626): 40 chunks with an edge inside a sentence (what
  poor_boundary flagged before), 20 per corpus, their edges alone judged.
* Round 3 (``--draw-cuts 3``, seed 2627), drawn after the poor_boundary rule was set on
  everything before it: 20 chunks it flags and 10 it does not, from the same pool, shuffled,
  edges judged. Rounds 2 and 3 speak for poor_boundary only.

``--worksheet FILE`` writes the unlabelled chunks' text with some context for a person to read
(outside the repository: the documentation corpus's text is not committed; the labels keep
offsets and a note of a few words).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from common import DEFAULT_CORPUS, RESULTS, ROOT, SHARED, markdown_table, sample_corpus, save
from ragloom.engine import Engine
from ragloom.enrich.entities import EntityMention
from ragloom.enrich.quality import assess_chunks
from ragloom.types import Chunk

LABELS = ROOT / "bench" / "labels" / "chunk_quality.jsonl"
WORK = Path("/tmp/ragloom-chunk-quality")
RUST = SHARED / "rust-council"
DOCS = DEFAULT_CORPUS / "corpus"
#: Folder -> lens, as bench/roadmap_eval.py files the council's corpus.
RUST_LENSES = {"policies": "policies", "procedures": "procedures", "committees": "committees", "roles": "roles",
               "guides": "guides", "reports": "reports", "minutes": "meetings"}
SEED = 26
#: Chunks drawn per (corpus, stratum); a stratum with fewer gives all it has.
DRAW = {"rust-council": {"entity_split": 4, "low_coherence": 4, "poor_boundary": 16, "length_violation": 20,
                         "none": 16},
        "docs": {"entity_split": 4, "low_coherence": 6, "poor_boundary": 14, "length_violation": 14, "none": 12}}
SAMPLE_SIZE = 100
#: Rounds 2 and 3: chunks drawn for their edges alone, to check poor_boundary afresh.
CUT_DRAW = 40
ROUND3_FLAGGED, ROUND3_OTHERS = 20, 10
#: The reasons a person gives for a bad chunk that each flag stands for.
REASONS = {"length_violation": {"short", "long_mixed"}, "poor_boundary": {"cut_sentence"},
           "low_coherence": {"long_mixed"}, "entity_split": {"cut_name"}}
FLAGS = tuple(REASONS)
#: What each table of results covers: the two halves of the sample, the sample, round 2.
SPLITS = {"report": {"report"}, "tune": {"tune"}, "sample": {"tune", "report"}, "round2": {"round2"},
          "round3": {"round3"}}


@dataclass(frozen=True, slots=True)
class Scored:
    corpus: str
    path: str
    start: int
    end: int
    tokens: int
    issues: tuple[tuple[str, str], ...]  # (kind, severity)
    #: An edge lies inside a sentence of the sentence index (what poor_boundary meant before).
    inside: bool = False

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.corpus, self.path, self.start, self.end)

    def kinds(self, *, medium: bool = False) -> set[str]:
        return {k for k, s in self.issues if not medium or s != "low"}


def workspace(corpus: str, work: Path) -> Engine:
    """The corpus ingested with the default settings (built once, then reused)."""
    engine = Engine(work / corpus)
    if engine.stats()["documents"] == 0:
        started = time.perf_counter()
        if corpus == "rust-council":
            for folder, lens in RUST_LENSES.items():
                if (RUST / folder).is_dir():
                    engine.ingest(RUST / folder, lens=lens)
            engine.ingest(RUST / "README.md", lens="overview")
        else:
            engine.ingest(sample_corpus(None, 200), lens="docs")
        print(f"{corpus}: built in {time.perf_counter() - started:.0f} s", flush=True)
    return engine


def relative(corpus: str, source_path: str) -> str:
    root = RUST if corpus == "rust-council" else DOCS
    return Path(source_path).resolve().relative_to(root.resolve()).as_posix()


def rescore(engine: Engine, corpus: str) -> list[Scored]:
    """Every current chunk scored again with the current quality code, from the stored chunks,
    sentence vectors and mentions (what the ingest's quality stage is given)."""
    store, tenant = engine.store, "default"
    model = engine.components.chunker.size_model()
    overlap = engine.components.chunker.overlap
    chunks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in store.chunks(tenant, columns=["document_id", "source_path", "start_char", "end_char", "text",
                                           "token_count", "section_index", "chunk_index", "entities"]):
        chunks[r["document_id"]].append(r)
    sentences: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in store.chunks(tenant, table="sentences", columns=["document_id", "start_char", "end_char", "vector"]):
        sentences[r["document_id"]].append(r)
    mentions: dict[str, list[EntityMention]] = defaultdict(list)
    for r in store.mentions(tenant):
        mentions[r["document_id"]].append(EntityMention(r["start_char"], r["end_char"], r["text"], r["canonical"],
                                                        r["type"], r["confidence"], r["source"]))
    out = []
    for doc, rows in sorted(chunks.items()):
        rows.sort(key=lambda r: r["chunk_index"])
        objs = [Chunk(r["text"], r["start_char"], r["end_char"], r["token_count"], section_index=r["section_index"])
                for r in rows]
        nodes = sorted(sentences[doc], key=lambda r: (r["start_char"], r["end_char"]))
        spans = [(s["start_char"], s["end_char"]) for s in nodes]
        vectors = (np.stack([np.asarray(s["vector"], dtype=np.float32) for s in nodes]) if nodes
                   else np.zeros((0, 1), dtype=np.float32))
        found = sorted(mentions[doc], key=lambda m: (m.start, m.end))
        qualities = assess_chunks(objs, spans, vectors, found, [r["entities"] for r in rows], model, overlap)
        path = relative(corpus, rows[0]["source_path"])
        out.extend(Scored(corpus, path, r["start_char"], r["end_char"], r["token_count"],
                          tuple((i.kind, i.severity) for i in q.issues), q.metrics["boundary_respect"] < 1)
                   for r, q in zip(rows, qualities, strict=True))
    return out


def flag_counts(scored: Sequence[Scored]) -> dict[str, Any]:
    by: dict[str, Counter[str]] = defaultdict(Counter)
    for s in scored:
        for kind, severity in s.issues:
            by[kind][severity] += 1
    return {"chunks": len(scored), "flagged": sum(1 for s in scored if s.issues),
            "flags": {k: {"chunks": sum(1 for s in scored if k in s.kinds()), **dict(sorted(by[k].items()))}
                      for k in sorted(by)}}


def stratum(s: Scored) -> str:
    """The rarest flag a chunk carries (so that rare flags get their share), else none."""
    for kind in ("entity_split", "low_coherence", "poor_boundary", "length_violation"):
        if kind in s.kinds():
            return kind
    return "none"


def draw(scored: dict[str, list[Scored]]) -> list[dict[str, Any]]:
    """The stratified sample, as label stubs; each stratum alternates tune/report."""
    rng = random.Random(SEED)
    rows: list[dict[str, Any]] = []
    for corpus, wanted in DRAW.items():
        strata: dict[str, list[Scored]] = defaultdict(list)
        for s in scored[corpus]:
            strata[stratum(s)].append(s)
        for name, n in wanted.items():
            pool = sorted(strata.get(name, []), key=lambda s: s.key)
            rng.shuffle(pool)
            for i, s in enumerate(pool[:n]):
                rows.append({"corpus": corpus, "path": s.path, "start": s.start, "end": s.end, "stratum": name,
                             "stratum_size": len(pool), "split": "tune" if i % 2 == 0 else "report"})
    # Strata short of their share (no chunk is flagged entity_split) leave room: unflagged chunks fill it.
    taken = {(r["corpus"], r["path"], r["start"], r["end"]) for r in rows}
    rest = sorted((s for c in DRAW for s in scored[c] if stratum(s) == "none" and s.key not in taken),
                  key=lambda s: s.key)
    rng.shuffle(rest)
    for i, s in enumerate(rest[: max(0, SAMPLE_SIZE - len(rows))]):
        rows.append({"corpus": s.corpus, "path": s.path, "start": s.start, "end": s.end, "stratum": "none",
                     "stratum_size": sum(1 for x in scored[s.corpus] if stratum(x) == "none"),
                     "split": "tune" if i % 2 == 0 else "report"})
    rng.shuffle(rows)  # labelled in this order: nothing in the order hints at the stratum
    for i, r in enumerate(rows):
        r["id"] = f"q{i + 1:03d}"
    return rows


def draw_cuts(scored: dict[str, list[Scored]], taken: set[tuple[str, str, int, int]], round_: int
              ) -> list[dict[str, Any]]:
    """Chunks with an edge inside a sentence (what poor_boundary meant before), not yet
    labelled, half from each corpus; their edges alone are judged. Round 2 (seed 2626) drew 40
    at random; round 3 (seed 2627), after the rule was set on all the labels before it, draws
    20 that the current code flags and 10 that it does not, in one shuffled list."""
    rng = random.Random(SEED * 101 + round_ - 2)
    rows: list[dict[str, Any]] = []
    for corpus in DRAW:
        pool = sorted((s for s in scored[corpus] if s.inside and s.key not in taken), key=lambda s: s.key)
        rng.shuffle(pool)
        if round_ == 2:
            parts = [("edge_in_sentence", pool, CUT_DRAW // 2)]
        else:
            flagged = [s for s in pool if "poor_boundary" in s.kinds()]
            parts = [("flagged", flagged, ROUND3_FLAGGED // 2),
                     ("not_flagged", [s for s in pool if "poor_boundary" not in s.kinds()], ROUND3_OTHERS // 2)]
        for name, part, n in parts:
            rows.extend({"corpus": corpus, "path": s.path, "start": s.start, "end": s.end, "stratum": name,
                         "stratum_size": len(part), "split": f"round{round_}", "judged": "edges"} for s in part[:n])
    rng.shuffle(rows)
    for i, r in enumerate(rows):
        r["id"] = f"{'e' if round_ == 2 else 'f'}{i + 1:03d}"
    return rows


def worksheet(rows: Sequence[dict[str, Any]], engines: dict[str, Engine], path: Path) -> None:
    """The sampled chunks' text with 60 characters either side, without their flags (for
    round 2, each edge with 150 characters either side)."""
    texts: dict[tuple[str, str], str] = {}
    for corpus, engine in engines.items():
        docs = engine.store.documents("default")
        ids = {relative(corpus, d["source_path"]): d["document_id"] for d in docs}
        found = engine.store.document_texts("default", list(ids.values()))
        texts.update({(corpus, p): found[i] for p, i in ids.items()})
    with path.open("w", encoding="utf-8") as out:
        for r in rows:
            text = texts[(r["corpus"], r["path"])]
            a, b = r["start"], r["end"]
            out.write(f"\n===== {r['id']} {r['corpus']} {r['path']} [{a}:{b}] {b - a} chars\n")
            if r.get("judged") == "edges":
                out.write(f"start: {text[max(0, a - 150):a]}⟦{text[a:a + 150]}\n--\nend: {text[b - 150:b]}⟧{text[b:b + 150]}\n")
            else:
                out.write(f"«before»{text[max(0, a - 60):a]}⟦{text[a:b]}⟧{text[b:b + 60]}«after»\n")


def load_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _ratio(num: float, den: float) -> float | None:
    return round(num / den, 3) if den else None


def evaluate(labels: Sequence[dict[str, Any]], flags: dict[tuple[str, str, int, int], set[str]],
             splits: set[str]) -> dict[str, Any]:
    """Precision (for the flag's reason, for any reason) and recall of each flag on the labels of
    ``splits``; labels whose chunk is gone are counted apart."""
    rows = [r for r in labels if r["split"] in splits and r.get("bad") is not None]
    known = [r for r in rows if (r["corpus"], r["path"], r["start"], r["end"]) in flags]
    out: dict[str, Any] = {"labelled": len(rows), "matched": len(known), "bad": sum(1 for r in known if r["bad"])}
    for kind, reasons in REASONS.items():
        # Rounds 2 and 3 judged the edges alone: they speak for poor_boundary only.
        judged = [r for r in known if kind == "poor_boundary" or r.get("judged") != "edges"]
        flagged = [r for r in judged if kind in flags[(r["corpus"], r["path"], r["start"], r["end"])]]
        own = [r for r in flagged if reasons & set(r["reasons"])]
        anyway = [r for r in flagged if r["bad"]]
        wanted = [r for r in judged if reasons & set(r["reasons"])]
        caught = [r for r in wanted if kind in flags[(r["corpus"], r["path"], r["start"], r["end"])]]
        out[kind] = {"flagged": len(flagged), "precision": _ratio(len(own), len(flagged)),
                     "precision_any": _ratio(len(anyway), len(flagged)), "bad_for_reason": len(wanted),
                     "recall": _ratio(len(caught), len(wanted))}
    return out


def evaluations(labels: Sequence[dict[str, Any]], scored: Iterable[Scored]) -> dict[str, Any]:
    every = {s.key: s.kinds() for s in scored}
    medium = {s.key: s.kinds(medium=True) for s in scored}
    return {"any severity": {name: evaluate(labels, every, splits) for name, splits in SPLITS.items()},
            "medium+": {name: evaluate(labels, medium, splits) for name, splits in SPLITS.items()}}


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def print_tables(result: dict[str, Any], before: dict[str, Any] | None) -> None:
    for corpus, counts in result["counts"].items():
        old = before["counts"].get(corpus) if before else None
        print(f"\n{corpus}: {counts['chunks']} chunks, {counts['flagged']} flagged"
              + (f" (before: {old['flagged']} of {old['chunks']})" if old else ""))
        rows = []
        for kind in FLAGS:
            now = counts["flags"].get(kind, {})
            was = old["flags"].get(kind, {}) if old else {}
            fmt = lambda c: f"{c.get('chunks', 0)} ({', '.join(f'{s} {c[s]}' for s in ('high', 'medium', 'low') if c.get(s))})"  # noqa: E731
            rows.append([kind, fmt(was) if old else "", fmt(now)])
        print(markdown_table(["flag", "before", "after"], rows))
    if not result.get("labels"):
        return
    titles = {"report": "report half", "tune": "tune half", "sample": "the whole sample",
              "round2": "round 2 (edges only: poor_boundary alone)",
              "round3": "round 3 (edges only, after the calibration)"}
    for split, title in titles.items():
        now = result["labels"]["any severity"][split]
        was = before["labels"]["any severity"][split] if before and before.get("labels") else None
        if not now["labelled"]:
            continue
        print(f"\nlabels, {title}: {now['labelled']} chunks ({now['bad']} bad)")
        rows = []
        for kind in FLAGS if not split.startswith("round") else ("poor_boundary",):
            n = now[kind]
            w = was[kind] if was else {}
            rows.append([kind, w.get("flagged", ""), _cell(w.get("precision")), _cell(w.get("precision_any")),
                         _cell(w.get("recall")), n["flagged"], _cell(n["precision"]), _cell(n["precision_any"]),
                         _cell(n["recall"]), n["bad_for_reason"]])
        print(markdown_table(["flag", "flagged before", "precision", "(any reason)", "recall", "flagged after",
                              "precision", "(any reason)", "recall", "bad for its reason"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=WORK, help="where the two workspaces are built and kept")
    parser.add_argument("--save", default="chunk_quality", help="results file name under bench/results")
    parser.add_argument("--draw", action="store_true", help=f"draw the sample and write label stubs to {LABELS}")
    parser.add_argument("--draw-cuts", type=int, choices=(2, 3), metavar="ROUND",
                        help="add the label stubs of round 2 or 3: chunks with an edge inside a sentence")
    parser.add_argument("--worksheet", type=Path, help="write the sampled chunks' text here, for labelling")
    parser.add_argument("--quality-from", type=Path, metavar="FILE",
                        help="score with the assess_chunks of this file (the code before issue 26: "
                             "git show 95b40e2:src/ragloom/enrich/quality.py > FILE; then --save chunk_quality_before)")
    args = parser.parse_args()
    global assess_chunks
    if args.quality_from:
        spec = importlib.util.spec_from_file_location("quality_under_test", args.quality_from)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        assess_chunks = module.assess_chunks

    engines = {corpus: workspace(corpus, args.work) for corpus in DRAW}
    started = time.perf_counter()
    scored = {corpus: rescore(engine, corpus) for corpus, engine in engines.items()}
    seconds = time.perf_counter() - started
    labels = load_labels()
    if args.draw:
        if any(r.get("bad") is not None for r in labels):
            sys.exit(f"{LABELS} already holds labels: not overwritten")
        labels = draw(scored)
        LABELS.write_text("".join(json.dumps(r) + "\n" for r in labels), encoding="utf-8")
        print(f"{len(labels)} label stubs written to {LABELS}")
    if args.draw_cuts:
        if any(r["split"] == f"round{args.draw_cuts}" for r in labels):
            sys.exit(f"{LABELS} already holds round-{args.draw_cuts} rows: not drawn again")
        fresh = draw_cuts(scored, {(r["corpus"], r["path"], r["start"], r["end"]) for r in labels}, args.draw_cuts)
        labels = [*labels, *fresh]
        LABELS.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in labels), encoding="utf-8")
        print(f"{len(fresh)} round-{args.draw_cuts} stubs added to {LABELS}")
    if args.worksheet:
        worksheet([r for r in labels if r.get("bad") is None] or labels, engines, args.worksheet)
        print(f"worksheet written to {args.worksheet}")
    everything = [s for c in scored.values() for s in c]
    sample = {(r["corpus"], r["path"], r["start"], r["end"]) for r in labels}
    result: dict[str, Any] = {
        "settings": "defaults (token strategy, 1,024-token chunks, min_chunk_chars 150)",
        "rescore_seconds": round(seconds, 1),
        "counts": {corpus: flag_counts(s) for corpus, s in scored.items()},
        "labels": evaluations(labels, everything) if any(r.get("bad") is not None for r in labels) else None,
        "sample_flags": [{"corpus": s.corpus, "path": s.path, "start": s.start, "end": s.end,
                          "issues": [list(i) for i in s.issues]} for s in everything if s.key in sample],
    }
    before_path = RESULTS / "chunk_quality_before.json"
    before = json.loads(before_path.read_text(encoding="utf-8")) if before_path.is_file() else None
    if before is not None and result["labels"] is not None and args.save != "chunk_quality_before":
        # The code before issue 26, judged by the labels made since: from the flags it gave the sample.
        old = [Scored(f["corpus"], f["path"], f["start"], f["end"], 0, tuple((k, s) for k, s in f["issues"]))
               for f in before["sample_flags"]]
        before["labels"] = evaluations(labels, old)
    print_tables(result, before if args.save != "chunk_quality_before" else None)
    print(f"\nsaved to {save(args.save, result)}")


if __name__ == "__main__":
    main()
