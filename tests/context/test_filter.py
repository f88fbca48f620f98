from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.context import drop_repeated_ids, filter_relevance, normalize_scores
from ragloom.errors import InvalidParameterError

from .factory import chunk


def test_min_max_normalisation_to_unit_interval() -> None:
    out = normalize_scores([chunk("a", "x", 0.2), chunk("b", "y", 0.6), chunk("c", "z", 0.4)])
    assert [c.score for c in out] == pytest.approx([0.0, 1.0, 0.5])
    assert [c.scores["raw"] for c in out] == [0.2, 0.6, 0.4]


def test_all_equal_scores_become_one() -> None:
    out = normalize_scores([chunk("a", "x", 3.0), chunk("b", "y", 3.0)])
    assert [c.score for c in out] == [1.0, 1.0]
    assert [c.score for c in normalize_scores([chunk("a", "x", -2.0)])] == [1.0]


def test_non_finite_scores_rank_lowest() -> None:
    out = normalize_scores([chunk("a", "x", math.nan), chunk("b", "y", 2.0), chunk("c", "z", 4.0)])
    assert [c.score for c in out] == [0.0, 0.0, 1.0]


def test_modes_on_different_scales_become_comparable() -> None:
    # The same ranking as cosine similarities, BM25 scores and RRF scores.
    modes = {
        "vector": [0.81, 0.62, 0.55, 0.31],
        "bm25": [17.2, 11.9, 10.1, 2.4],
        "hybrid": [0.0328, 0.0312, 0.0307, 0.0289],
    }
    normalised = {}
    for mode, scores in modes.items():
        out = normalize_scores([chunk(f"{mode}{i}", "t", s) for i, s in enumerate(scores)])
        normalised[mode] = [c.score for c in out]
        assert normalised[mode][0] == 1.0 and normalised[mode][-1] == 0.0
    # One threshold now keeps the same chunks whatever the mode.
    for mode, values in normalised.items():
        kept, _ = filter_relevance([chunk(str(i), "t", v) for i, v in enumerate(values)], 0.05)
        assert len(kept) == 3, mode


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=30))
def test_normalised_scores_keep_order_and_bounds(scores: list[float]) -> None:
    out = [c.score for c in normalize_scores([chunk(str(i), "t", s) for i, s in enumerate(scores)])]
    assert all(0.0 <= s <= 1.0 for s in out)
    for (a, na), (b, nb) in zip(zip(scores, out), zip(scores[1:], out[1:]), strict=False):
        if a < b:
            assert na <= nb


def test_filter_records_low_relevance() -> None:
    kept, removed = filter_relevance([chunk("a", "x", 0.9), chunk("b", "y", 0.1), chunk("c", "z", 0.3)], 0.3)
    assert [c.chunk_id for c in kept] == ["a", "c"]
    assert removed == [("b", "low relevance")]


def test_filter_names_its_bound() -> None:
    with pytest.raises(InvalidParameterError, match=r"min_relevance \(1.5\) must be between 0 and 1"):
        filter_relevance([], 1.5)


def test_repeated_ids_keep_the_best_score() -> None:
    kept, removed = drop_repeated_ids([chunk("a", "x", 0.2), chunk("b", "y", 0.5), chunk("a", "x", 0.7)])
    assert [(c.chunk_id, c.score) for c in kept] == [("a", 0.7), ("b", 0.5)]
    assert removed == [("a", "repeated candidate")]
