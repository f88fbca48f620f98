"""Precision of the capitalised-phrase entity candidates on a hand-labelled sample (issue 16).

    .venv/bin/python bench/entity_precision.py [--corpus bench/data/doc-corpus] [--worksheet FILE]

The sample, in bench/labels/entity_candidates.jsonl, is every candidate that the pass before
issue 16 found (no gazetteer, dates on) in the 18 sample materials, and in 30 corpus files
drawn with seed 16 (15 from python/, 15 from linux/; each half split 8/7 and 7/8 into a
*tuned* and a *held-out* half): every typed candidate, and 200 of the 2,995 untyped ones
drawn with the same seed. Each line is one mention: where it is (``path``, ``start``/``end``
in the text ragloom's loader makes of the file), what the old pass said (``type``, ``rule``)
and the judgement: ``entities``, the named entities in or around the span with their types
(empty: no entity there). Corpus text is not stored, only offsets and short names. Lines with
``round`` 2 were labelled later, for spans the current pass finds that no round-1 line covers;
``round`` 3 (issue 26), the one default mention that the speaker-turn rules added uncovered.

A mention the current pass finds is *judged* when its span lies inside a labelled region (the
labelled span together with its entities). It is right when its span is exactly one of the
entities; its type is right when it is that entity's type (``other`` is right for any
entity: it claims none). Precision here is typed precision: right span and right type.
Before: the labelled mentions themselves. After: the current pass, with the default settings
(what ``entities.candidates = true`` keeps) and with every shape. The default's figures are
over every default mention in the sampled files (the typed mentions were labelled in full);
a shape's figures cover the mentions inside labelled regions.

``--throughput`` also times extraction document by document over the whole corpus (default
settings with the sample gazetteer, as bench/reingest_edits.py; best of two runs).

``--worksheet FILE`` writes the current default mentions that no label covers, with some
context, for labelling (outside the repository: corpus text is not committed).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from common import DEFAULT_CORPUS, MATERIALS, ROOT, doc_corpus, markdown_table, save
from ragloom.enrich.entities import DEFAULT_TYPES, OTHER, EntityExtractor, EntityMention, Gazetteer
from ragloom.load import load_document

LABELS = ROOT / "bench" / "labels" / "entity_candidates.jsonl"
TARGET = 0.8


def load_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def document_text(sample: str, path: str, corpus: Path) -> str:
    file = (MATERIALS if sample == "materials" else corpus / "corpus") / path
    return load_document(file, lens=file.parent.name if sample == "materials" else "docs").text


class Judge:
    """The labels of one document, as regions that a found span can be judged inside."""

    def __init__(self, labels: Iterable[dict[str, Any]]) -> None:
        self.regions = []
        for label in labels:
            spans = [(label["start"], label["end"])] + [(e["start"], e["end"]) for e in label["entities"]]
            gold = {(e["start"], e["end"]): e["type"] for e in label["entities"]}
            self.regions.append((min(a for a, _ in spans), max(b for _, b in spans), gold, label.get("weight", 1.0)))

    def __call__(self, start: int, end: int, kind: str) -> tuple[str, float]:
        """``right``, ``wrong type``, ``not an entity`` or ``unlabelled``, and the weight of the
        region that judged it (how many mentions of the files its label stands for)."""
        inside = [(gold, weight) for a, b, gold, weight in self.regions if a <= start and end <= b]
        if not inside:
            return "unlabelled", 0.0
        for gold, weight in inside:
            if (start, end) in gold:
                return ("right" if kind in (gold[(start, end)], OTHER) else "wrong type"), weight
        return "not an entity", inside[0][1]


def half_of(label: dict[str, Any]) -> str:
    return "materials" if label["sample"] == "materials" else label["half"]


def halves(half: str) -> list[str]:
    """The half itself, and "tuned" for the materials and the tune half of the corpus files."""
    return [half, "tuned"] if half != "held-out" else [half]


def tally() -> dict[str, list[float]]:
    return defaultdict(lambda: [0.0, 0.0, 0, 0, 0])  # right and judged weighted, unlabelled, right, judged


def add(table: dict[str, list[float]], keys: Iterable[str], verdict: tuple[str, float]) -> None:
    outcome, weight = verdict
    for key in keys:
        row = table[key]
        if outcome == "unlabelled":
            row[2] += 1
        else:
            row[1] += weight
            row[0] += weight * (outcome == "right")
            row[4] += 1
            row[3] += outcome == "right"


def rows(table: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Precision weighted by what each judged mention stands for (the untyped corpus mentions
    were sampled, 200 of 2,995), with the plain counts."""
    return {key: {"precision": round(rw / nw, 3) if nw else None, "right": int(r), "judged": int(n), "unlabelled": int(u)}
            for key, (rw, nw, u, r, n) in sorted(table.items())}


def census(verdict: tuple[str, float]) -> tuple[str, float]:
    """Every default mention of the sampled files is labelled: each counts once."""
    return verdict[0], 1.0


def before(labels: list[dict[str, Any]]) -> dict[str, Any]:
    """The pass before issue 16, judged on its own (labelled) mentions."""
    default, shapes, types = tally(), tally(), tally()
    for label in labels:
        if label.get("round", 1) != 1:
            continue
        verdict = Judge([label])(label["start"], label["end"], label["type"])
        if label["type"] != OTHER:  # the default types leave ``other`` out
            add(default, ["all", *halves(half_of(label))], census(verdict))
        add(shapes, [label["rule"]], verdict)
        add(types, [label["type"]], verdict)
    return {"default": rows(default), "rules": rows(shapes), "types": rows(types)}


def after(labels: list[dict[str, Any]], corpus: Path, worksheet: Path | None) -> dict[str, Any]:
    by_document: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for label in labels:
        by_document[(label["sample"], label["path"])].append(label)
    default_extractor = EntityExtractor()
    every_extractor = EntityExtractor(types=[*DEFAULT_TYPES, OTHER], candidates=["all"])
    default, shapes, types = tally(), tally(), tally()
    unlabelled: list[dict[str, Any]] = []
    for (sample, path), group in sorted(by_document.items()):
        text = document_text(sample, path, corpus)
        judge, half = Judge(group), half_of(group[0])
        for m, shape in default_extractor.explain(text):
            if m.source != "candidate":
                continue
            verdict = census(judge(m.start, m.end, m.type))
            add(default, ["all", *halves(half), f"shape {shape}", f"type {m.type}"], verdict)
            if verdict[0] == "unlabelled":
                unlabelled.append(context(sample, path, text, m, shape))
        for m, shape in every_extractor.explain(text):
            if m.source == "candidate":
                verdict = judge(m.start, m.end, m.type)
                tuned = [f"{shape} (tuned: materials and tune)"] if half != "held-out" else []
                add(shapes, [shape, f"{shape} ({half})", *tuned], verdict)
                add(types, [m.type], verdict)
    if worksheet is not None:
        worksheet.write_text("".join(json.dumps(u, ensure_ascii=False) + "\n" for u in unlabelled), encoding="utf-8")
    return {"default": rows(default), "shapes": rows(shapes), "types": rows(types)}


def context(sample: str, path: str, text: str, m: EntityMention, shape: str) -> dict[str, Any]:
    around = text[max(0, m.start - 80) : m.start] + "[[" + m.text + "]]" + text[m.end : m.end + 60]
    return {"sample": sample, "path": path, "start": m.start, "end": m.end, "text": m.text, "type": m.type,
            "rule": shape, "context": around.replace("\n", "⏎")}


def throughput(corpus: Path) -> dict[str, float]:
    texts = [f.read_text(encoding="utf-8") for f in doc_corpus(corpus)]
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    extractor = EntityExtractor(Gazetteer.load(ROOT / "examples" / "entities.toml"))
    best, mentions = float("inf"), 0
    for _ in range(2):
        t0 = time.perf_counter()
        mentions = sum(len(extractor(t)) for t in texts)
        best = min(best, time.perf_counter() - t0)
    print(f"\nextraction, document by document: {megabytes:.1f} MB, {mentions} mentions, {megabytes / best:.2f} MB/s")
    return {"megabytes": megabytes, "documents": len(texts), "mentions": mentions, "mb_per_s": megabytes / best}


def precision_table(table: dict[str, dict[str, Any]], keys: Iterable[str]) -> str:
    lines = []
    for key in keys:
        row = table.get(key)
        if row and row["judged"]:
            lines.append([key, f"{row['precision']:.2f}", f"{row['right']}/{row['judged']}", str(row["unlabelled"])])
    return markdown_table(["", "precision", "right/judged", "unlabelled"], lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--worksheet", type=Path, help="write the unlabelled default mentions here, for labelling")
    parser.add_argument("--throughput", action="store_true", help="also time extraction over the whole corpus")
    args = parser.parse_args()
    labels = load_labels(args.labels)
    old = before(labels)
    new = after(labels, args.corpus, args.worksheet)
    order = ["all", "tuned", "materials", "tune", "held-out"]
    print("default candidates, before:")
    print(precision_table(old["default"], order))
    print("\ndefault candidates, after:")
    print(precision_table(new["default"], order + sorted(k for k in new["default"] if k not in order)))
    print("\nbefore, by rule:")
    print(precision_table(old["rules"], sorted(old["rules"])))
    print("\nafter, every shape:")
    print(precision_table(new["shapes"], sorted(new["shapes"])))
    print("\nafter, every shape, by type:")
    print(precision_table(new["types"], sorted(new["types"])))
    met = (new["default"]["all"]["precision"] or 0) >= TARGET
    print(f"\ntarget {TARGET}: {'met' if met else 'NOT met'}; unlabelled default mentions: {new['default']['all']['unlabelled']}")
    speed = throughput(args.corpus) if args.throughput else None
    path = save("entity_precision", {
        "labels": str(args.labels.relative_to(ROOT)) if args.labels.is_relative_to(ROOT) else str(args.labels),
        "mentions_labelled": len(labels), "target": TARGET, "before": old, "after": new, "throughput": speed})
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
