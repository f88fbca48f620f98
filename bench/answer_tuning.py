"""Choosing the offline answer's weights on the tuning half only (``bench/roadmap_eval.py``'s corpus).

    .venv/bin/python bench/answer_tuning.py [--split tune] [--workspace DIR]

For every question of the split: the sources ``ask`` reads (the retrieved chunks), every
candidate sentence with the parts of its score (:func:`ragloom.synthesise.answering.rank`),
and whether it is the labelled answer. Then each combination of the weights on a grid is
scored by how many questions get the answering sentence among the quoted ones (ties: among
the first quote). The split's pools are cached in ``bench/data``; the report half is never
read unless asked for, and then only to apply the chosen weights once.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any

from common import ROOT, markdown_table, save
from ragloom.synthesise import answering, number_sources
from roadmap_eval import LABELS, Texts, covers, load_jsonl, workspace

GRID = {
    "W_SEM": [0.5, 1.0, 1.5],
    "W_NEAR": [0.0, 0.2, 0.4, 0.6],
    "W_KIND": [0.0, 0.15, 0.3, 0.5],
    "W_RANK": [0.15, 0.3, 0.5],
    "KEEP_SHARE": [0.7, 0.8, 0.9],
}


def pools(split: str, ws: Path | None) -> list[dict[str, Any]]:
    cache = ROOT / "bench" / "data" / f"answer_pools_{split}.json"
    if cache.exists():
        return list(json.loads(cache.read_text(encoding="utf-8")))
    engine = workspace(ws)
    texts = Texts(engine)
    out = []
    for q in load_jsonl(LABELS / "rust_council_questions.jsonl"):
        if split != "all" and q["split"] != split:
            continue
        label = texts.span(q["file"], q["answer"])
        result = engine.queries.run(engine.queries.request(q["question"], optimize=True))
        sources = number_sources(result.results)
        writer = engine.writing._for(None, None, None, cited_only=True)
        ranked = writer.ranked(q["question"], sources)  # type: ignore[attr-defined]
        rows = []
        for r in ranked:
            c = r.candidate
            span = (c.source.document_id, c.source.start + c.start, c.source.start + c.end)
            rows.append({**r.parts, "gold": covers(span, label), "text": " ".join(c.text.split())[:120],
                         "span": f"{span[0]}:{span[1]}"})
        out.append({"id": q["id"], "question": q["question"], "rows": rows})
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(out), encoding="utf-8")
    return out


def picks(rows: list[dict[str, Any]], w: dict[str, float], limit: int = 3) -> list[dict[str, Any]]:
    scored = sorted(rows, key=lambda r: -(answering.W_LEX * r["lexical"] + w["W_SEM"] * r["meaning"]
                                          + w["W_NEAR"] * r["near"] + w["W_KIND"] * r["kind"]
                                          + w["W_RANK"] * r["rank"] - r["penalty"]))
    if not scored:
        return []

    def score(r: dict[str, Any]) -> float:
        return (answering.W_LEX * r["lexical"] + w["W_SEM"] * r["meaning"] + w["W_NEAR"] * r["near"]
                + w["W_KIND"] * r["kind"] + w["W_RANK"] * r["rank"] - r["penalty"])

    best = score(scored[0])
    out, seen = [], set()
    for r in scored:
        if r["span"] in seen or r["text"] in seen:
            continue
        if out and score(r) < w["KEEP_SHARE"] * best:
            break
        out.append(r)
        seen.update((r["span"], r["text"]))
        if len(out) >= limit:
            break
    return out


def measure(data: list[dict[str, Any]], w: dict[str, float]) -> tuple[int, int, float]:
    quoted = first = 0
    sizes = []
    for q in data:
        chosen = picks(q["rows"], w)
        sizes.append(len(chosen))
        quoted += any(r["gold"] for r in chosen)
        first += bool(chosen) and chosen[0]["gold"]
    return quoted, first, sum(sizes) / max(len(sizes), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="tune")
    parser.add_argument("--workspace", type=Path, default=None)
    args = parser.parse_args()
    data = pools(args.split, args.workspace)
    reachable = sum(any(r["gold"] for r in q["rows"]) for q in data)
    current = {k: getattr(answering, k) for k in GRID}
    results = []
    for values in itertools.product(*GRID.values()):
        w = dict(zip(GRID, values, strict=True))
        results.append((*measure(data, w), w))
    results.sort(key=lambda r: (-r[0], -r[1], r[2]))
    now = measure(data, current)
    rows = [["current", *now[:2], f"{now[2]:.1f}", json.dumps(current)]]
    rows += [[f"#{i + 1}", q, f, f"{s:.1f}", json.dumps(w)] for i, (q, f, s, w) in enumerate(results[:10])]
    print(f"{args.split}: {len(data)} questions, the answering sentence among the candidates for {reachable}")
    print(markdown_table(["", "quoted", "first", "quotes", "weights"], rows))
    save(f"answer_tuning_{args.split}", {"questions": len(data), "reachable": reachable, "current": now[:2],
                                         "best": [{"quoted": q, "first": f, "weights": w}
                                                  for q, f, _, w in results[:10]]})


if __name__ == "__main__":
    main()
