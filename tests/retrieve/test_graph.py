"""The final ranking of graph mode: maximal marginal relevance with a lens-share term."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ragloom.retrieve.graph import edge_strength, mmr
from ragloom.types import ScoredChunk


def result(cid: str, score: float, lens: str = "a") -> ScoredChunk:
    return ScoredChunk(chunk_id=cid, document_id="d", text=cid, score=score, source_path="d.md", lens=lens,
                       tenant="default", title="d", section_path=(), start=0, end=len(cid), token_count=1)


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_the_best_comes_first_and_a_near_duplicate_waits() -> None:
    pool = [result("best", 0.9), result("twin", 0.88), result("other", 0.8)]
    vectors = {"best": unit(1, 0), "twin": unit(1, 0.01), "other": unit(0, 1)}
    ranked = [r.chunk_id for r in mmr(pool, vectors, 3, lam=0.7)]
    assert ranked == ["best", "other", "twin"]
    # With relevance alone (lambda 1) the order is the scores' order.
    assert [r.chunk_id for r in mmr(pool, vectors, 3, lam=1.0)] == ["best", "twin", "other"]


def test_lens_share_spreads_the_lenses() -> None:
    pool = [result("a1", 0.90, "a"), result("a2", 0.89, "a"), result("a3", 0.88, "a"), result("b1", 0.70, "b")]
    vectors = {r.chunk_id: unit(*np.eye(8)[i]) for i, r in enumerate(pool)}  # nothing alike: only lenses differ
    ranked = [r.chunk_id for r in mmr(pool, vectors, 4, lam=0.5)]
    assert ranked[0] == "a1" and ranked.index("b1") < ranked.index("a3")


@given(st.lists(st.tuples(st.floats(0, 1, allow_subnormal=False), st.sampled_from("abc"), st.integers(0, 5)),
                max_size=25),
       st.integers(0, 30), st.floats(0, 1, allow_subnormal=False))
def test_mmr_returns_distinct_candidates_up_to_the_limit(items: list, limit: int, lam: float) -> None:
    pool = [result(f"c{i}", score, lens) for i, (score, lens, _) in enumerate(items)]
    vectors = {f"c{i}": unit(1.0, float(direction), 0.5) for i, (_, _, direction) in enumerate(items)}
    ranked = mmr(pool, vectors, limit, lam)
    ids = [r.chunk_id for r in ranked]
    assert len(ids) == len(set(ids)) == min(limit, len(pool))
    if ranked and lam >= 1e-6:  # with lambda 0 relevance does not count (nor, in floats, with 5e-324)
        assert ranked[0].score == max(r.score for r in pool)


def test_edge_strengths_share_one_scale() -> None:
    assert edge_strength("TOPIC_OVERLAP", 2) == 0.5 and edge_strength("TOPIC_OVERLAP", 9) == 1.0
    assert edge_strength("SIMILAR_TO", 0.83) == 0.83
    assert edge_strength("SAME_LENS", 0.5) == 0.25
    assert edge_strength("SEQUENTIAL", 1.0) == 1.0
