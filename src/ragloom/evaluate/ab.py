"""``ragloom eval ab``: seed 001's A/B test of contextual embeddings on the sample materials.

Twenty queries written for the sample corpus (examples/ab_queries.toml), each with the
sections it should find: ten cross-section, five document-specific, five single-section. The
materials are ingested twice, with naked and with contextual embeddings, and each query's
top five chunks by vector search are compared with its expected sections.

- precision: the share of the five chunks that lie in an expected section;
- recall: the share of expected sections that at least one of the five chunks lies in.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from ragloom.config import Settings
from ragloom.engine import Engine
from ragloom.evaluate.context import EvalContext
from ragloom.evaluate.datasets import SectionQuery, load_ab
from ragloom.evaluate.metrics import set_precision_recall
from ragloom.evaluate.report import SuiteResult, bar_chart

K = 5
CATEGORIES = ("cross-section", "document-specific", "single-section")
ROOT = Path(__file__).resolve().parents[3]


def matches(result: object, expected: tuple[str, str]) -> bool:
    name, section = expected
    return result.source_name == name and (not section or (result.section_path and result.section_path[-1] == section))  # type: ignore[attr-defined]


def score(query: SectionQuery, results: list) -> tuple[float, float]:
    hits = [next((e for e in query.expected if matches(r, e)), None) for r in results]
    precision = sum(h is not None for h in hits) / len(results) if results else 0.0
    _, recall = set_precision_recall(set(query.expected), [h for h in hits if h is not None])
    return precision, recall


def run(ctx: EvalContext, *, materials: Path | None = None, queries: Path | None = None) -> SuiteResult:
    started = time.perf_counter()
    materials = materials or ROOT / "examples" / "materials"
    ab = load_ab(queries or ROOT / "examples" / "ab_queries.toml")
    items = ab.queries[: ctx.limit] if ctx.limit else ab.queries
    per_variant: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for embed_text in ("naked", "contextual"):
            ctx.progress(f"ingesting ({embed_text})")
            settings = Settings.load(environ={}, overrides={"embedding.embed_text": embed_text, "embedding.cache": False,
                                                            "sentences.enabled": False, "graph.enabled": False})
            engine = Engine(Path(tmp) / embed_text, settings=settings, embedder=ctx.embedder)
            for lens in sorted(p for p in materials.iterdir() if p.is_dir()):
                engine.ingest(lens, lens=lens.name)
            scores: dict[str, list[tuple[float, float]]] = {c: [] for c in CATEGORIES}
            for q in items:
                scores[q.category].append(score(q, engine.query(q.query, k=K, mode="vector").results))
            per_variant[embed_text] = scores
    rows = []
    for category in (*CATEGORIES, "all"):
        row: dict[str, object] = {"category": category}
        for variant, scores in per_variant.items():
            values = [v for c in CATEGORIES for v in scores[c]] if category == "all" else scores[category]
            row[f"{variant} precision"] = 100 * float(np.mean([p for p, _ in values])) if values else None
            row[f"{variant} recall"] = 100 * float(np.mean([r for _, r in values])) if values else None
        naked, contextual = row.get("naked recall"), row.get("contextual recall")
        if naked is not None and contextual is not None:
            row["recall change"] = f"{contextual - naked:+.1f} points"  # type: ignore[operator]
        row["queries"] = len(values)
        rows.append(row)
    columns = ["category", "queries", "naked precision", "contextual precision", "naked recall", "contextual recall",
               "recall change"]
    result = SuiteResult("ab", columns, rows, details={v: {c: s for c, s in sc.items()} for v, sc in per_variant.items()},
                         seconds=time.perf_counter() - started)
    worse = [r["category"] for r in rows[:3] if r.get("naked recall") is not None
             and (r["contextual recall"] < r["naked recall"] or r["contextual precision"] < r["naked precision"])]
    result.notes.append("Contextual no worse than naked in every category: "
                        + ("yes." if not worse else "no, worse in " + ", ".join(worse) + "."))
    labels = [r["category"] for r in rows]
    result.plots.append(bar_chart(ctx.out / "ab.png", labels,
                                  {"naked recall": [r["naked recall"] or 0 for r in rows],
                                   "contextual recall": [r["contextual recall"] or 0 for r in rows]},
                                  title="Contextual vs naked embeddings (sample materials, k = 5)", ylabel="recall %"))
    return result
