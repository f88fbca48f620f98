from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.context import drop_repeated_ids, filter_relevance, normalize_scores
from ragloom.errors import InvalidParameterError
from ragloom.types import ScoredChunk

from .factory import chunk


def test_scores_become_shares_of_the_best() -> None:
    out = normalize_scores([chunk("a", "x", 0.2), chunk("b", "y", 0.8), chunk("c", "z", 0.4)])
    assert [c.score for c in out] == pytest.approx([0.25, 1.0, 0.5])
    assert [c.scores["raw"] for c in out] == [0.2, 0.8, 0.4]


def test_the_last_candidate_is_not_zero_by_construction() -> None:
    # Min-max scaling would send 0.74 to 0 and let a 0.3 threshold drop it.
    out = normalize_scores([chunk("a", "x", 0.81), chunk("b", "y", 0.78), chunk("c", "z", 0.74)])
    kept, _ = filter_relevance(out, 0.3)
    assert len(kept) == 3


def test_equal_and_non_positive_scores() -> None:
    out = normalize_scores([chunk("a", "x", 3.0), chunk("b", "y", 3.0)])
    assert [c.score for c in out] == [1.0, 1.0]
    assert [c.score for c in normalize_scores([chunk("a", "x", -2.0)])] == [1.0]
    assert [c.score for c in normalize_scores([chunk("a", "x", -0.1), chunk("b", "y", -0.5)])] == [1.0, 0.0]
    assert [c.score for c in normalize_scores([chunk("a", "x", 0.5), chunk("b", "y", -0.5)])] == [1.0, 0.0]


def test_non_finite_scores_count_zero() -> None:
    out = normalize_scores([chunk("a", "x", math.nan), chunk("b", "y", 2.0), chunk("c", "z", 4.0)])
    assert [c.score for c in out] == [0.0, 0.5, 1.0]


def hybrid(cid: str, rrf: float, **parts: float) -> ScoredChunk:
    return chunk(cid, "t", rrf, retriever="hybrid", scores={**parts, "rrf": rrf})


def test_hybrid_relevance_comes_from_the_fused_lists_not_the_rank() -> None:
    out = normalize_scores([
        hybrid("a", 0.033, vector=0.8, bm25=12.0),
        hybrid("b", 0.032, vector=0.4, bm25=6.0),
        hybrid("c", 0.016, bm25=3.0),   # BM25 only: its vector share is the lowest returned (0.4 / 0.8)
        hybrid("d", 0.016, vector=0.6),  # vector only: its BM25 share is 3 / 12
    ])
    assert [c.score for c in out] == pytest.approx([1.0, 0.5, (0.5 + 0.25) / 2, (0.75 + 0.25) / 2])
    assert [c.scores["raw"] for c in out] == [0.033, 0.032, 0.016, 0.016]


def test_age_decay_carries_into_hybrid_relevance() -> None:
    out = normalize_scores([hybrid("a", 0.03, vector=0.8, bm25=10.0, age_factor=0.7),
                            hybrid("b", 0.02, vector=0.8, bm25=10.0)])
    assert [c.score for c in out] == pytest.approx([0.7, 1.0])


def test_modes_on_different_scales_become_comparable() -> None:
    # One ranking of four chunks as cosine similarities, BM25 scores and fused results; in
    # each, the last chunk is a weak match (under a third of the best).
    runs = {
        "vector": [chunk(f"v{i}", "t", s) for i, s in enumerate([0.81, 0.62, 0.55, 0.21])],
        "bm25": [chunk(f"b{i}", "t", s) for i, s in enumerate([17.2, 11.9, 10.1, 2.4])],
        "hybrid": [hybrid(f"h{i}", r, vector=v, bm25=b) for i, (r, v, b) in
                   enumerate([(0.0328, 0.81, 17.2), (0.0312, 0.62, 11.9), (0.0307, 0.55, 10.1), (0.0289, 0.21, 2.4)])],
    }
    for mode, candidates in runs.items():
        kept, removed = filter_relevance(normalize_scores(candidates), 0.3)
        assert len(kept) == 3 and len(removed) == 1, mode


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=30))
def test_normalised_scores_keep_order_and_bounds(scores: list[float]) -> None:
    out = [c.score for c in normalize_scores([chunk(str(i), "t", s) for i, s in enumerate(scores)])]
    assert all(0.0 <= s <= 1.0 for s in out)
    assert max(out) == 1.0
    for (a, na), (b, nb) in zip(zip(scores, out, strict=True), zip(scores[1:], out[1:], strict=True), strict=False):
        if a < b:
            assert na <= nb


@given(st.lists(st.tuples(st.floats(-1, 1), st.floats(0, 50)), min_size=1, max_size=30))
def test_hybrid_relevance_is_bounded(parts: list[tuple[float, float]]) -> None:
    out = normalize_scores([hybrid(str(i), 1 / (60 + i), vector=v, bm25=b) for i, (v, b) in enumerate(parts)])
    assert all(0.0 <= c.score <= 1.0 for c in out)


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
