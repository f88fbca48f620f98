"""Retrieval metrics, each as its dataset defines it.

Span metrics (Chroma's chunking evaluation, ../shared/data/README.md), all in characters: with
E the union of the reference spans and R the retrieved spans,

- recall = |E ∩ R| / |E|
- precision = |E ∩ R| / Σ|r|   (overlapping retrieved spans count twice)
- IoU = |E ∩ R| / (Σ|r| + |E \\ R|)

Pass@k (Anthropic's contextual retrieval): the share of a query's golden chunks found in the
top k.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

Span = tuple[int, int]


def union(spans: Iterable[Span]) -> list[Span]:
    """Disjoint, sorted spans covering the same characters."""
    merged: list[list[int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in spans if b > a):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def length(spans: Iterable[Span]) -> int:
    return sum(b - a for a, b in spans)


def intersection(xs: Sequence[Span], ys: Sequence[Span]) -> int:
    """Characters in both span sets (each already disjoint and sorted)."""
    total, i, j = 0, 0, 0
    while i < len(xs) and j < len(ys):
        lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if hi > lo:
            total += hi - lo
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


def span_scores(reference: Iterable[Span], retrieved: Sequence[Span]) -> dict[str, float]:
    """Recall, precision and IoU (each in [0, 1]) of ``retrieved`` against ``reference``."""
    e = union(reference)
    r = union(retrieved)
    found = intersection(e, r)
    total = sum(b - a for a, b in retrieved)  # overlapping retrieved spans count twice
    missed = length(e) - found
    return {
        "recall": found / length(e) if length(e) else 0.0,
        "precision": found / total if total else 0.0,
        "iou": found / (total + missed) if total + missed else 0.0,
    }


def pass_at_k(golden: Sequence[object], ranked: Sequence[object], k: int) -> float:
    """Share of ``golden`` items among the first ``k`` of ``ranked``."""
    if not golden:
        return 0.0
    top = set(ranked[:k])
    return sum(1 for g in golden if g in top) / len(golden)


def set_precision_recall(expected: set[object], retrieved: Sequence[object]) -> tuple[float, float]:
    """(precision, recall) of retrieved items against expected ones (duplicates count once)."""
    got = set(retrieved)
    hits = len(got & expected)
    return (hits / len(got) if got else 0.0, hits / len(expected) if expected else 0.0)


def normalized_entropy(labels: Sequence[str], universe: Sequence[str] | None = None) -> float:
    """Shannon entropy of the label distribution over log of the number of possible labels:
    1 when every label is equally represented, 0 when one label takes everything."""
    counts = Counter(labels)
    n = len(universe) if universe is not None else len(counts)
    if n <= 1 or not labels:
        return 1.0 if labels else 0.0
    total = len(labels)
    h = -sum((c / total) * math.log(c / total) for c in counts.values())
    return h / math.log(n)


_TOKEN = re.compile(r"\w+")


def answer_f1(prediction: str, reference: str) -> float:
    """Token-overlap F1 of an answer against a reference answer (SQuAD style)."""
    p = _TOKEN.findall(prediction.lower())
    r = _TOKEN.findall(reference.lower())
    common = sum((Counter(p) & Counter(r)).values())
    if not p or not r or not common:
        return 0.0
    precision, recall = common / len(p), common / len(r)
    return 2 * precision * recall / (precision + recall)


def mean_pairwise_cosine(vectors: np.ndarray) -> float:
    """Mean cosine of all distinct pairs of rows (1.0 for fewer than two rows)."""
    if len(vectors) < 2:
        return 1.0
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-12)
    sims = unit @ unit.T
    n = len(vectors)
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


def boundary_coherence(spans: Sequence[Span], sentences: Sequence[Span]) -> dict[str, float]:
    """How well context spans follow sentence boundaries.

    ``starts_and_ends``: share of spans that start on a sentence start and end on a sentence
    end; ``complete_sentences``: share of the sentences the spans touch that they contain whole.
    """
    starts = {a for a, _ in sentences}
    ends = {b for _, b in sentences}
    clean = sum(1 for a, b in spans if a in starts and b in ends)
    touched = whole = 0
    for a, b in union(spans):
        for s, e in sentences:
            if e > a and s < b:
                touched += 1
                whole += a <= s and e <= b
    return {
        "starts_and_ends": clean / len(spans) if spans else 0.0,
        "complete_sentences": whole / touched if touched else 0.0,
    }
