"""Graph mode: entity bridges, the subjects a query names, and the final ranking (maximal
marginal relevance with a lens-share term, when asked for)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.engine import Engine
from ragloom.errors import UnknownNameError
from ragloom.graph import EDGE_TYPES, MENTIONS
from ragloom.retrieve.graph import edge_strength, followed_kinds, mmr
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


# -- entity bridges (issue 17) ------------------------------------------------------------------

TWO_HOP = {
    "kiss.md": "# Kiss and Tell (1945 film)\n\nKiss and Tell is a 1945 American comedy film in which a teenage "
               "Shirley Temple plays Corliss Archer.",
    "temple.md": "# Shirley Temple\n\nShirley Temple Black was an actress and singer who was named United States "
                 "Ambassador to Ghana and Chief of Protocol.",
    "archer.md": "# Corliss Archer\n\nCorliss Archer is a fictional teenage girl from radio plays; the woman who "
                 "portrayed her on radio was Janet Waldo.",
    "meet.md": "# Meet Corliss Archer\n\nMeet Corliss Archer is a television series; the woman who portrayed Corliss "
               "Archer there held no position in government.",
    "govt.md": "# Government position\n\nA government position is held by a person appointed to a public office, such "
               "as a woman portrayed in a film.",
    "held.md": "# Position held\n\nThe position held by the woman who portrayed the lead in the film was a government "
               "post.",
}
QUESTION = "Which government position did the star of the 1945 comedy film Kiss and Tell hold?"


@pytest.fixture
def two_hop(engine: Engine, tmp_path: Path) -> Engine:
    folder = tmp_path / "pages"
    folder.mkdir()
    for name, text in TWO_HOP.items():
        (folder / name).write_text(text, encoding="utf-8")
    assert engine.ingest(folder, lens="wiki").ok
    return engine


def test_graph_mode_follows_the_film_to_the_actress_it_names(two_hop: Engine) -> None:
    # The answer is in the page about Shirley Temple, which the question never names: the film's
    # page names her. Plain retrieval misses her page; graph mode reaches it over MENTIONS from
    # the film's page (three seeds, as in a workspace where her page is not among the seeds).
    assert "Shirley Temple" not in [r.title for r in two_hop.query(QUESTION, k=4, mode="hybrid")]
    results = two_hop.query(QUESTION, k=4, mode="graph", initial_limit=3).results
    titles = [r.title for r in results]
    assert titles[0] == "Kiss and Tell (1945 film)" and "Shirley Temple" in titles
    bridged = results[titles.index("Shirley Temple")]
    assert bridged.via is not None and bridged.via["edge"] == MENTIONS and bridged.via["seed"] == results[0].chunk_id
    # Without following any edge, nothing brings her in.
    assert "Shirley Temple" not in [r.title for r in two_hop.query(QUESTION, k=4, mode="graph", initial_limit=3,
                                                                    follow="none")]


def test_the_subjects_a_query_names_join_the_ranking(two_hop: Engine) -> None:
    graph = two_hop.graph()
    named = graph.named_in("Did Corliss Archer appear in Kiss and Tell? (not in kiss and tell)")
    assert sorted(named) == ["Corliss Archer", "Kiss and Tell"]  # the film's bare title; case matters
    question = "Who voiced Corliss Archer on the radio?"
    top = two_hop.query(question, k=1, mode="graph").results[0]
    assert top.title == "Corliss Archer"
    off = two_hop.query(question, k=6, mode="graph", query_entities=False, follow="none").results
    assert [r.chunk_id for r in off] == [r.chunk_id for r in two_hop.query(question, k=6, mode="hybrid")][: len(off)]


def test_mentions_are_followed_from_the_mention_to_the_subject_only(two_hop: Engine) -> None:
    graph = two_hop.graph()
    film = next(n for n, d in graph.graph.nodes(data=True) if d["title"].startswith("Kiss and Tell"))
    actress = next(n for n, d in graph.graph.nodes(data=True) if d["title"] == "Shirley Temple")
    assert (actress, MENTIONS) in {(n, kind) for n, kind, _ in graph.follow(film, [MENTIONS])}
    assert film not in {n for n, _, _ in graph.follow(actress, [MENTIONS])}


def test_unknown_edge_kinds_are_named_with_the_valid_ones(two_hop: Engine) -> None:
    with pytest.raises(UnknownNameError, match="MENTIONS"):
        two_hop.query(QUESTION, mode="graph", follow="MENTIONS,FRIENDS")
    assert followed_kinds("mentions, similar_to") == (MENTIONS, "SIMILAR_TO")
    assert followed_kinds("all") == EDGE_TYPES and followed_kinds("none") == ()
