"""Entity mentions on real text (issue 26): precision, recall and merge accuracy of the entity
list on the Rust Leadership Council's minutes, before and after.

    .venv/bin/python bench/entity_mentions.py [--throughput]
    # the "before" column: the pass of the commit before issue 26, on the same labels
    mkdir -p /tmp/before && git archive 98c3455 src | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/src .venv/bin/python bench/entity_mentions.py --name entity_mentions_before
    # throughput of both, alternating in one run
    .venv/bin/python bench/entity_mentions.py --throughput --before-src /tmp/before/src --rounds 3

Text: ``../shared/data/rust-council``, the rust-lang/leadership-council repository at commit
17848e0 (the Leadership Council's meeting minutes, policies, procedures and guides), licensed
under Apache-2.0 or MIT at your option (its LICENSE-APACHE and LICENSE-MIT). The labels,
bench/labels/entity_mentions.jsonl, store paths, offsets in the text ragloom's loader makes of
each file, and short names only.

What is measured is the list ``ragloom entities`` shows for a workspace of those files with the
default settings and no gazetteer: every document's mentions as ingest extracts them, then
(after issue 26) the workspace's census (:mod:`ragloom.enrich.census`: every known name counted
wherever it is written, variants merged). Dates are left out (a pattern finds them; the issue is
about names).

The labels are of two kinds, drawn with seed 26 once the pass was final:

- ``mention``: a mention the list holds, drawn uniformly from one list's mentions (``stratum``:
  ``before``, the commit before issue 26, or ``after``); judged by reading it in its text:
  ``entities`` are the named entities in or around its span, each with its exact span, its types
  (``types``: what a right type is; a platform may be an organisation or a product) and its
  ``canonical`` name (the person or thing it names: a first name is the full name the minutes'
  attendance makes it; ``Eric`` stays ``Eric`` where two Erics attend). Empty: no entity there.
- ``passage``: a stretch of minutes (20, drawn at random offsets, whole lines) with every named
  entity a reader marks in it: people (full names, first names, handles such as ``TC`` and
  ``oli``), organisations and named bodies (``Rust Foundation``, ``Leadership Council``),
  products, services and platforms (``Rust``, ``crates.io``, ``Zulip``), places and events
  (``RustConf``); not roles, teams named in lower case, headings or issue numbers.

Figures, for each list:

- precision: of its sampled mentions (its own stratum), those whose span is exactly an entity's
  (span), and with a right type (typed);
- recall: of the entities marked in the passages, those the list holds with exactly that span
  (found), and under the right entity (its name folds to the canonical name, see below);
- merge accuracy: of the labelled entities (both kinds) the list holds with the right span, those
  it lists under the right entity: the list's name and the canonical name are equal once case,
  accents and punctuation are folded away;
- variant pairs: pairs of names written in the minutes one letter, an accent or a first name
  apart, labelled the same entity or not: how many the list merges (one entity) or keeps apart.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import ROOT, SHARED, doc_corpus, markdown_table, save
from ragloom.enrich.entities import EntityExtractor, Gazetteer
from ragloom.load import load_document

DATA = SHARED / "rust-council"
LABELS = ROOT / "bench" / "labels" / "entity_mentions.jsonl"
SEED = 26


@dataclass(frozen=True, order=True)
class Found:
    path: str
    start: int
    end: int
    text: str
    name: str  # the entity the list puts it under
    type: str


def fold(name: str) -> str:
    import unicodedata

    return "".join(ch for ch in unicodedata.normalize("NFKD", name) if ch.isalnum()).casefold()


def load_texts(data: Path) -> dict[str, str]:
    return {str(f.relative_to(data)): load_document(f, lens="bench").text for f in sorted(data.rglob("*.md"))}


def entity_list(texts: dict[str, str]) -> tuple[list[Found], str]:
    """The list's mentions (no dates), and which pass made it: ``census`` or ``per document``."""
    extractor = EntityExtractor()
    rows = []
    for path, text in texts.items():
        for m in extractor(text):
            rows.append({"document_id": path, "entity_id": m.entity_id, "canonical": m.canonical, "type": m.type,
                         "text": m.text, "start_char": m.start, "end_char": m.end, "source": m.source})
    try:
        from ragloom.enrich.census import take_census
    except ImportError:  # the pass before issue 26: the stored mentions are the list
        found = [Found(r["document_id"], r["start_char"], r["end_char"], r["text"], r["canonical"], r["type"])
                 for r in rows]
        how = "per document"
    else:
        census = take_census(rows, texts)
        found = []
        for m in census.mentions:
            e = census.entities[m.entity_id]
            found.append(Found(m.document_id, m.start, m.end, m.text, e.name, e.type))
        how = "census"
    return sorted(f for f in found if f.type != "date"), how


def load_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def check_labels(labels: list[dict[str, Any]], texts: dict[str, str]) -> None:
    for label in labels:
        if label["kind"] == "pair":
            continue
        text = texts[label["path"]]
        if label.get("text") is not None:
            assert text[label["start"] : label["end"]] == label["text"], label
        for e in label["entities"]:
            assert text[e["start"] : e["end"]] == e["text"], (label["path"], e)


def precision(labels: list[dict[str, Any]], found: list[Found], stratum: str) -> dict[str, Any]:
    spans = {(f.path, f.start, f.end): f for f in found}
    right = typed = judged = gone = 0
    for label in labels:
        if label["kind"] != "mention" or label["stratum"] != stratum:
            continue
        f = spans.get((label["path"], label["start"], label["end"]))
        if f is None:
            gone += 1  # the list no longer holds it (the labels were drawn from the final pass)
            continue
        judged += 1
        gold = {(e["start"], e["end"]): e for e in label["entities"]}
        e = gold.get((f.start, f.end))
        right += e is not None
        typed += e is not None and f.type in e["types"]
    return {"judged": judged, "span": ratio(right, judged), "typed": ratio(typed, judged), "right": right,
            "right_typed": typed, "not_held": gone}


def recall(labels: list[dict[str, Any]], found: list[Found]) -> dict[str, Any]:
    spans = {(f.path, f.start, f.end): f for f in found}
    total = held = entity = 0
    by_type: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missed = []
    for label in labels:
        if label["kind"] != "passage":
            continue
        for e in label["entities"]:
            total += 1
            f = spans.get((label["path"], e["start"], e["end"]))
            by_type[e["types"][0]][1] += 1
            if f is None:
                missed.append(e["text"])
                continue
            held += 1
            by_type[e["types"][0]][0] += 1
            entity += fold(f.name) == fold(e["canonical"])
    return {"entities": total, "found": ratio(held, total), "right_entity": ratio(entity, total), "held": held,
            "held_right_entity": entity, "by_type": {k: f"{a}/{b}" for k, (a, b) in sorted(by_type.items())},
            "missed": sorted(set(missed))}


def in_passages(labels: list[dict[str, Any]], found: list[Found]) -> dict[str, Any]:
    """Precision inside the passages, where every entity is marked: each mention there is judged."""
    right = typed = judged = 0
    for label in labels:
        if label["kind"] != "passage":
            continue
        gold = {(e["start"], e["end"]): e for e in label["entities"]}
        for f in found:
            if f.path == label["path"] and label["start"] <= f.start and f.end <= label["end"]:
                judged += 1
                e = gold.get((f.start, f.end))
                right += e is not None
                typed += e is not None and f.type in e["types"]
    return {"judged": judged, "span": ratio(right, judged), "typed": ratio(typed, judged)}


def merge_accuracy(labels: list[dict[str, Any]], found: list[Found]) -> dict[str, Any]:
    spans = {(f.path, f.start, f.end): f for f in found}
    right = judged = 0
    wrong: dict[str, int] = defaultdict(int)
    seen = set()
    for label in labels:
        for e in label["entities"]:
            key = (label["path"], e["start"], e["end"])
            f = spans.get(key)
            if f is None or key in seen:
                continue
            seen.add(key)
            judged += 1
            if fold(f.name) == fold(e["canonical"]):
                right += 1
            else:
                wrong[f"{e['text']} -> {f.name} (is {e['canonical']})"] += 1
    return {"judged": judged, "accuracy": ratio(right, judged), "right": right,
            "wrong": dict(sorted(wrong.items(), key=lambda kv: -kv[1])[:15])}


def variant_pairs(labels: list[dict[str, Any]], found: list[Found]) -> dict[str, Any]:
    """For each labelled pair of names, whether the list merges them (both written forms under one
    entity), keeps them apart, or does not list one of them."""
    entity_of: dict[str, set[str]] = defaultdict(set)
    for f in found:
        entity_of[" ".join(f.text.split())].add(f.name)
    out: dict[str, list[str]] = {"merged, same": [], "apart, same": [], "merged, different": [], "apart, different": [],
                                 "not listed": []}
    for label in labels:
        if label["kind"] != "pair":
            continue
        a, b = entity_of.get(label["a"], set()), entity_of.get(label["b"], set())
        pair = f"{label['a']} / {label['b']}"
        if not a or not b:
            out["not listed"].append(pair)
            continue
        together = bool(a & b)
        out[("merged" if together else "apart") + (", same" if label["same"] else ", different")].append(pair)
    return out


def ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


# -- drawing the sample --------------------------------------------------------------------------


def draw(found: list[Found], texts: dict[str, str], n: int, stratum: str, passages: int) -> list[dict[str, Any]]:
    """What to label: ``n`` mentions of the list, and ``passages`` stretches of minutes."""
    rng = random.Random(SEED)
    out = [{"kind": "mention", "stratum": stratum, "path": f.path, "start": f.start, "end": f.end, "text": f.text,
            "listed_as": f.name, "type": f.type, "context": context(texts[f.path], f.start, f.end)}
           for f in rng.sample(found, min(n, len(found)))]
    minutes = sorted(p for p in texts if p.startswith("minutes/"))
    rng = random.Random(SEED)
    weights = [len(texts[p]) for p in minutes]
    for _ in range(passages):
        path = rng.choices(minutes, weights)[0]
        text = texts[path]
        start = text.find("\n", rng.randrange(len(text))) + 1
        end = start
        while end < len(text) and end - start < 600:
            nxt = text.find("\n", end + 1)
            end = len(text) if nxt < 0 else nxt
        out.append({"kind": "passage", "path": path, "start": start, "end": end, "text": None,
                    "passage": text[start:end]})
    return out


def context(text: str, start: int, end: int) -> str:
    return (text[max(0, start - 100) : start] + "[[" + text[start:end] + "]]" + text[end : end + 80]).replace("\n", "⏎")


# -- throughput ---------------------------------------------------------------------------------


def throughput(corpus: Path | None = None) -> dict[str, float]:
    """Extraction document by document over the documentation corpus (as bench/entity_precision.py
    times it, best of two), then the census over all its documents."""
    texts = {str(f): f.read_text(encoding="utf-8") for f in doc_corpus(corpus)}
    megabytes = sum(len(t.encode("utf-8")) for t in texts.values()) / 1e6
    extractor = EntityExtractor(Gazetteer.load(ROOT / "examples" / "entities.toml"))
    best, rows = float("inf"), []
    for _ in range(2):
        t0 = time.perf_counter()
        rows = [{"document_id": p, "entity_id": m.entity_id, "canonical": m.canonical, "type": m.type, "text": m.text,
                 "start_char": m.start, "end_char": m.end, "source": m.source}
                for p, t in texts.items() for m in extractor(t)]
        best = min(best, time.perf_counter() - t0)
    out = {"megabytes": megabytes, "documents": len(texts), "mentions": len(rows), "extract_s": best,
           "mb_per_s": megabytes / best}
    try:
        from ragloom.enrich.census import take_census
    except ImportError:
        return out
    t0 = time.perf_counter()
    census = take_census(rows, texts)
    out.update(census_s=time.perf_counter() - t0, census_mentions=len(census.mentions))
    return out


def compare_throughput(before_src: Path, rounds: int = 2) -> dict[str, Any]:
    """This pass and the one in ``before_src``, alternating in fresh processes on the same machine."""
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(rounds):
        for name, path in (("before", str(before_src)), ("after", str(ROOT / "src"))):
            env = {**os.environ, "PYTHONPATH": path}
            code = "import json, sys; sys.path.insert(0, 'bench'); import entity_mentions as b; print(json.dumps(b.throughput()))"
            done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    best = {name: max(r, key=lambda r: r["mb_per_s"]) for name, r in runs.items()}
    return {"runs": runs, "best": best, "ratio": best["after"]["mb_per_s"] / best["before"]["mb_per_s"]}


# -- report --------------------------------------------------------------------------------------


def summary(labels: list[dict[str, Any]], found: list[Found], stratum: str) -> dict[str, Any]:
    return {"precision": precision(labels, found, stratum), "precision_in_passages": in_passages(labels, found),
            "recall": recall(labels, found), "merge": merge_accuracy(labels, found), "pairs": variant_pairs(labels, found)}


def listing(found: Iterable[Found], top: int = 25) -> list[dict[str, Any]]:
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for f in found:
        row = table.setdefault((f.name, f.type), {"name": f.name, "type": f.type, "mentions": 0, "documents": set(),
                                                  "aliases": set()})
        row["mentions"] += 1
        row["documents"].add(f.path)
        if " ".join(f.text.split()) != f.name:
            row["aliases"].add(" ".join(f.text.split()))
    rows = sorted(table.values(), key=lambda r: (-r["mentions"], r["name"]))
    return [{**r, "documents": len(r["documents"]), "aliases": sorted(r["aliases"])} for r in rows[:top]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--name", default="entity_mentions", help="the result file's name under bench/results")
    parser.add_argument("--throughput", action="store_true", help="also time extraction and the census")
    parser.add_argument("--before-src", type=Path, help="with --throughput: time that source tree too, alternating")
    parser.add_argument("--rounds", type=int, default=2, help="with --before-src: rounds of each, alternating")
    parser.add_argument("--draw", type=Path, help="write a labelling worksheet here (outside the repository)")
    parser.add_argument("--draw-mentions", type=int, default=150)
    parser.add_argument("--draw-passages", type=int, default=20)
    args = parser.parse_args()
    texts = load_texts(args.data)
    found, how = entity_list(texts)
    stratum = "after" if how == "census" else "before"
    print(f"{len(texts)} files, {len(found)} mentions (no dates) in the list ({how}: stratum {stratum})")
    if args.draw:
        sheet = draw(found, texts, args.draw_mentions, stratum, args.draw_passages)
        args.draw.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sheet), encoding="utf-8")
        print(f"wrote {len(sheet)} items to label to {args.draw}")
        return
    labels = load_labels(args.labels)
    check_labels(labels, texts)
    result = summary(labels, found, stratum)
    p, r, m = result["precision"], result["recall"], result["merge"]
    print(markdown_table(["", "value", "of"], [
        ["precision, span", f"{p['span']}", f"{p['right']}/{p['judged']} ({p['not_held']} sampled no longer held)"],
        ["precision, typed", f"{p['typed']}", f"{p['right_typed']}/{p['judged']}"],
        ["precision in the passages, typed", f"{result['precision_in_passages']['typed']}",
         f"{result['precision_in_passages']['judged']} judged"],
        ["recall, span", f"{r['found']}", f"{r['held']}/{r['entities']}"],
        ["recall, right entity", f"{r['right_entity']}", f"{r['held_right_entity']}/{r['entities']}"],
        ["merge accuracy", f"{m['accuracy']}", f"{m['right']}/{m['judged']}"],
    ]))
    print("recall by type:", r["by_type"])
    print("variant pairs:", {k: len(v) for k, v in result["pairs"].items()})
    for k, v in result["pairs"].items():
        if v:
            print(f"  {k}: {', '.join(v)}")
    print("wrong entity:", m["wrong"])
    speed = None
    if args.throughput:
        speed = compare_throughput(args.before_src, args.rounds) if args.before_src else {"after": throughput()}
        print("throughput:", json.dumps(speed.get("best", speed), indent=1))
        if "ratio" in speed:
            print(f"extraction after / before: {speed['ratio']:.2f}")
    path = save(args.name, {"labels": str(args.labels.relative_to(ROOT)) if args.labels.is_relative_to(ROOT)
                            else str(args.labels), "pass": how, "files": len(texts), "mentions": len(found),
                            "labelled": len(labels), **result, "top": listing(found), "throughput": speed})
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
