from __future__ import annotations

import math

import numpy as np
import pytest

from ragloom.evaluate.metrics import (
    answer_f1,
    boundary_coherence,
    mean_pairwise_cosine,
    normalized_entropy,
    pass_at_k,
    set_precision_recall,
    span_scores,
    union,
)


def test_span_scores_by_hand() -> None:
    # Reference: 10..20 and 30..40 (20 chars). Retrieved: 15..35 (20 chars) and 15..25 (10 chars).
    s = span_scores([(10, 20), (30, 40)], [(15, 35), (15, 25)])
    found = 5 + 5  # 15..20 and 30..35
    assert s["recall"] == pytest.approx(found / 20)
    assert s["precision"] == pytest.approx(found / 30)  # overlapping retrieved spans count twice
    assert s["iou"] == pytest.approx(found / (30 + 10))


def test_span_scores_edge_cases() -> None:
    assert span_scores([(0, 10)], []) == {"recall": 0.0, "precision": 0.0, "iou": 0.0}
    assert span_scores([(0, 10)], [(0, 10)]) == {"recall": 1.0, "precision": 1.0, "iou": 1.0}
    assert union([(5, 8), (0, 3), (2, 6), (10, 10)]) == [(0, 8)]


def test_pass_at_k_and_set_scores() -> None:
    assert pass_at_k(["a", "b"], ["x", "a", "y", "b"], 2) == 0.5
    assert pass_at_k(["a", "b"], ["x", "a", "y", "b"], 4) == 1.0
    assert pass_at_k([], ["a"], 1) == 0.0
    assert set_precision_recall({"a", "b", "c"}, ["a", "a", "d"]) == (0.5, pytest.approx(1 / 3))


def test_normalized_entropy() -> None:
    assert normalized_entropy(["a", "b", "c"] * 4) == pytest.approx(1.0)
    assert normalized_entropy(["a"] * 5, universe=["a", "b"]) == 0.0
    two = normalized_entropy(["a", "a", "a", "b"])
    assert two == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)) / math.log(2))


def test_answer_f1() -> None:
    assert answer_f1("the catalog ships in Q3", "The catalog ships in Q3") == 1.0
    assert answer_f1("", "x") == 0.0
    assert answer_f1("ships in Q3", "catalog ships in Q4") == pytest.approx(2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4))


def test_pairwise_cosine_and_boundaries() -> None:
    same = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    assert mean_pairwise_cosine(same) == pytest.approx(1.0)
    assert mean_pairwise_cosine(np.array([[1.0, 0.0], [0.0, 1.0]])) == pytest.approx(0.0)
    sentences = [(0, 10), (11, 20), (21, 30)]
    coherence = boundary_coherence([(0, 20), (15, 30)], sentences)
    assert coherence["starts_and_ends"] == 0.5
    assert coherence["complete_sentences"] == 1.0  # 0..30 together holds all three whole
    assert boundary_coherence([(5, 15)], sentences)["complete_sentences"] == 0.0


def test_ab_verdict_treats_float_noise_as_a_tie() -> None:
    from ragloom.evaluate.ab import Means, _worse

    same = {"naked": Means(recall=32.5, precision=24.0), "contextual": Means(recall=32.5, precision=24.000000000000004)}
    assert not _worse(same) and not _worse({"naked": same["contextual"], "contextual": same["naked"]})
    assert _worse({"naked": Means(recall=33.0, precision=24.0), "contextual": Means(recall=32.5, precision=24.0)})
