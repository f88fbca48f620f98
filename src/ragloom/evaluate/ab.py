"""``ragloom eval ab``: seed 001's A/B test of contextual embeddings on the sample materials.

Twenty queries written for the sample corpus (examples/ab_queries.toml), each with the
sections it should find: ten cross-section, five document-specific, five single-section. The
materials are ingested twice, with naked and with contextual embeddings, and each query's
top five chunks by vector search are compared with its expected sections.

- recall: the share of expected sections that at least one of the five chunks reaches (its
  span overlaps the section's text, below the heading line);
- precision: the share of the five chunks' characters that lie in an expected section.

Both are measured on character spans, so chunks of any size and of several sections at once
(small sections merged, see :func:`~ragloom.parse.sections.merge_sections`) are scored by what
they hold, and a larger chunk buys recall only at the price of precision.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragloom.config import Settings
from ragloom.demo import sample_settings_file
from ragloom.engine import Engine
from ragloom.evaluate.context import EvalContext
from ragloom.evaluate.datasets import SectionQuery, load_ab
from ragloom.evaluate.report import SuiteResult, bar_chart
from ragloom.parse.sections import parse_sections
from ragloom.types import Document, ScoredChunk

K = 5
CATEGORIES = ("cross-section", "document-specific", "single-section")
ROOT = Path(__file__).resolve().parents[3]


#: (start, end) spans of section text (below the heading line) by (file name, section title);
#: the title "" names the whole document.
SectionSpans = dict[tuple[str, str], list[tuple[int, int]]]


def section_spans(documents: Sequence[Document]) -> SectionSpans:
    spans: SectionSpans = {}
    for doc in documents:
        spans[(doc.source_name, "")] = [(0, len(doc.text))]
        for section in parse_sections(doc.text):
            spans.setdefault((doc.source_name, section.title), []).append((section.body_start, section.end))
    return spans


def score(query: SectionQuery, results: Sequence[ScoredChunk], spans: SectionSpans) -> tuple[float, float]:
    """(character precision, recall of expected sections) of one query's results."""
    reached = set()
    inside = retrieved = 0
    for r in results:
        retrieved += r.end - r.start
        covered: list[tuple[int, int]] = []
        for expected in query.expected:
            for a, b in spans.get(expected, []) if expected[0] == r.source_name else []:
                lo, hi = max(a, r.start), min(b, r.end)
                if lo < hi:
                    reached.add(expected)
                    covered.append((lo, hi))
        inside += union_length(covered)
    precision = inside / retrieved if retrieved else 0.0
    return precision, len(reached) / len(set(query.expected)) if query.expected else 0.0


def union_length(spans: Sequence[tuple[int, int]]) -> int:
    total, reach = 0, -1
    for a, b in sorted(spans):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


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
        for embed_text in ctx.steps(["naked", "contextual"]):
            settings = Settings.load(environ={}, config_file=sample_settings_file(materials),
                                     overrides={"embedding.embed_text": embed_text, "embedding.cache": False,
                                                            "sentences.enabled": False, "graph.enabled": False,
                                                            **ctx.overrides})
            engine = Engine(Path(tmp) / embed_text, settings=settings, embedder=ctx.embedder)
            documents = []
            for lens in sorted(p for p in materials.iterdir() if p.is_dir()):
                engine.ingest(lens, lens=lens.name, progress=ctx.tracker)
                documents += [engine.load(f, lens=lens.name) for f in sorted(lens.iterdir()) if f.is_file()]
            spans = section_spans(documents)
            scores: dict[str, list[tuple[float, float]]] = {c: [] for c in CATEGORIES}
            for q in items:
                scores[q.category].append(score(q, engine.query(q.query, k=K, mode="vector").results, spans))
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
