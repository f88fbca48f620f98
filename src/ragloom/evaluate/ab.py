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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragloom.config import Settings
from ragloom.engine import Engine
from ragloom.evaluate.context import EvalContext
from ragloom.evaluate.datasets import SectionQuery, load_ab
from ragloom.evaluate.metrics import set_precision_recall
from ragloom.evaluate.report import SuiteResult, bar_chart
from ragloom.types import ScoredChunk

K = 5
CATEGORIES = ("cross-section", "document-specific", "single-section")
ROOT = Path(__file__).resolve().parents[3]


def matches(result: ScoredChunk, expected: tuple[str, str]) -> bool:
    name, section = expected
    return result.source_name == name and (not section or (bool(result.section_path)
                                                          and result.section_path[-1] == section))


def score(query: SectionQuery, results: Sequence[ScoredChunk]) -> tuple[float, float]:
    hits = [next((e for e in query.expected if matches(r, e)), None) for r in results]
    precision = sum(h is not None for h in hits) / len(results) if results else 0.0
    _, recall = set_precision_recall(set(query.expected), [h for h in hits if h is not None])
    return precision, recall


@dataclass(frozen=True)
class Means:
    """One variant's mean precision and recall over a category's queries, in percent (None: no queries)."""

    precision: float | None
    recall: float | None


def mean_scores(values: Sequence[tuple[float, float]]) -> Means:
    if not values:
        return Means(None, None)
    return Means(100 * float(np.mean([p for p, _ in values])), 100 * float(np.mean([r for _, r in values])))


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
    rows: list[dict[str, object]] = []
    by_category: dict[str, dict[str, Means]] = {}  # category -> variant -> means
    for category in (*CATEGORIES, "all"):
        row: dict[str, object] = {"category": category}
        by_variant: dict[str, Means] = {}
        by_category[category] = by_variant
        values: list[tuple[float, float]] = []
        for variant, scores in per_variant.items():
            values = [v for c in CATEGORIES for v in scores[c]] if category == "all" else scores[category]
            m = by_variant[variant] = mean_scores(values)
            row[f"{variant} precision"] = m.precision
            row[f"{variant} recall"] = m.recall
        naked, contextual = _recall(by_variant, "naked"), _recall(by_variant, "contextual")
        if naked is not None and contextual is not None:
            row["recall change"] = f"{contextual - naked:+.1f} points"
        row["queries"] = len(values)
        rows.append(row)
    columns = ["category", "queries", "naked precision", "contextual precision", "naked recall", "contextual recall",
               "recall change"]
    result = SuiteResult("ab", columns, rows, details={v: {c: s for c, s in sc.items()} for v, sc in per_variant.items()},
                         seconds=time.perf_counter() - started)
    worse = [category for category in CATEGORIES if _worse(by_category[category])]
    result.notes.append("Contextual no worse than naked in every category: "
                        + ("yes." if not worse else "no, worse in " + ", ".join(worse) + "."))
    labels = list(by_category)
    result.plots.append(bar_chart(ctx.out / "ab.png", labels,
                                  {"naked recall": [_recall(by_category[c], "naked") or 0 for c in labels],
                                   "contextual recall": [_recall(by_category[c], "contextual") or 0 for c in labels]},
                                  title="Contextual vs naked embeddings (sample materials, k = 5)", ylabel="recall %"))
    return result


def _recall(by_variant: dict[str, Means], variant: str) -> float | None:
    m = by_variant.get(variant)
    return m.recall if m else None


#: Differences in points smaller than this are float noise, not a result.
TIE = 1e-6


def _worse(by_variant: dict[str, Means]) -> bool:
    """Contextual below naked in recall or precision (False where the category has no queries).

    Means of the same numbers summed in another order differ in the last bits (24.000000000000004
    against 24.0); below ``TIE`` points they are equal.
    """
    naked, contextual = by_variant["naked"], by_variant["contextual"]
    if naked.recall is None or naked.precision is None or contextual.recall is None or contextual.precision is None:
        return False
    return contextual.recall < naked.recall - TIE or contextual.precision < naked.precision - TIE
