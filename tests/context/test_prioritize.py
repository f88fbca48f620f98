from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from ragloom.context import Relationship, prioritize, query_terms
from ragloom.context.prioritize import recency_scores
from ragloom.errors import InvalidParameterError

from .factory import chunk


def test_query_terms_drop_stop_words_and_case() -> None:
    assert query_terms("When does the Catalog integration ship in March?") == {
        "catalog", "integration", "ship", "march"}


def test_priority_formula() -> None:
    a = chunk("a", "The catalog integration ships.", 0.5, document_date=date(2025, 1, 1))
    b = chunk("b", "Nothing relevant here.", 0.9, document_date=date(2024, 1, 1))
    c = chunk("c", "Catalog again.", 0.2)
    rels = [Relationship("a", "c", "strong_overlap", 0.8, ""), Relationship("a", "b", "same_document", 0.4, "")]
    out = {p.chunk_id: p for p in prioritize([a, b, c], rels, "catalog integration")}
    assert out["a"].relationship == 1.0  # 1.2 capped
    assert out["a"].query_overlap == 1.0 and out["c"].query_overlap == 0.5 and out["b"].query_overlap == 0.0
    assert out["a"].recency == 1.0 and out["b"].recency == 0.0 and out["c"].recency == 0.0
    assert out["a"].priority == pytest.approx(0.5 + 0.2 * 1.0 + 0.3 * 1.0 + 0.1 * 1.0)
    assert out["b"].priority == pytest.approx(0.9 + 0.2 * 0.4)
    assert out["c"].priority == pytest.approx(0.2 + 0.2 * 0.8 + 0.3 * 0.5)
    assert [p.chunk_id for p in prioritize([a, b, c], rels, "catalog integration")] == ["a", "b", "c"]


def test_weights_come_from_the_arguments() -> None:
    a, b = chunk("a", "catalog", 0.5), chunk("b", "other", 0.6)
    assert prioritize([a, b], [], "catalog")[0].chunk_id == "a"
    assert prioritize([a, b], [], "catalog", query_overlap_weight=0.0)[0].chunk_id == "b"
    with pytest.raises(InvalidParameterError, match=r"recency_weight \(-1\) must be at least 0"):
        prioritize([a], [], "q", recency_weight=-1)


def test_recency_scales_across_candidates_and_falls_back_to_ingest_date() -> None:
    chunks = [chunk("old", "x", document_date=date(2024, 1, 1)), chunk("new", "x", document_date=date(2024, 1, 11)),
              chunk("mid", "x", as_of=datetime(2024, 1, 6, 12, tzinfo=UTC)), chunk("none", "x")]
    assert recency_scores(chunks) == [0.0, 1.0, 0.5, 0.0]
    assert recency_scores([chunk("one", "x", document_date=date(2024, 1, 1))]) == [1.0]
