from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from ragloom.context import (
    STRATEGIES,
    Prioritized,
    Relationship,
    choose_strategy,
    organize,
    strategy_names,
)
from ragloom.errors import UnknownNameError

from .factory import chunk


def item(cid: str, priority: float, **kw: object) -> Prioritized:
    return Prioritized(chunk(cid, "text", min(priority, 1.0), **kw), priority, min(priority, 1.0), 0.0, 0.0, 0.0)


def ids(items) -> list[str]:
    return [p.chunk_id for p in items]


def test_relevance_orders_by_priority() -> None:
    items = [item("b", 0.5), item("a", 0.9), item("c", 0.1)]
    assert ids(organize(items, [], "relevance")[0]) == ["a", "b", "c"]


def test_temporal_puts_oldest_first_and_undated_last() -> None:
    items = [
        item("undated-high", 0.99),
        item("2025", 0.5, document_date=date(2025, 3, 1)),
        item("q1-2024", 0.4, time_refs=("Q1 2024", "2026")),  # earliest resolved period counts
        item("ingested", 0.3, as_of=datetime(2024, 6, 1, tzinfo=UTC)),
        item("undated-low", 0.1, time_refs=("Q3 (unresolved)",)),
        item("2023", 0.2, document_date=date(2023, 12, 31)),
    ]
    ordered, strategy, reason = organize(items, [], "temporal")
    assert (strategy, reason) == ("temporal", "requested")
    assert ids(ordered) == ["2023", "q1-2024", "ingested", "2025", "undated-high", "undated-low"]


def test_topical_groups_connected_chunks() -> None:
    items = [item("a", 0.9), item("b", 0.2), item("c", 0.8), item("d", 0.7), item("e", 0.75)]
    rels = [Relationship("a", "b", "strong_overlap", 0.9, ""), Relationship("c", "d", "same_document", 0.4, ""),
            Relationship("a", "e", "weak_overlap", 0.1, "")]  # too weak to join a topic
    # Clusters: {a, b} mean 0.55, {c, d} mean 0.75, {e} 0.75 (ties go to the better best chunk).
    assert ids(organize(items, rels, "topical")[0]) == ["c", "d", "e", "a", "b"]


def test_hierarchical_puts_overviews_first() -> None:
    items = [item("deep", 0.9, section=("A", "B", "C"), chunk_index=5), item("intro", 0.2, chunk_index=0),
             item("top", 0.5, section=("A",), chunk_index=3), item("mid", 0.8, section=("A", "B"), chunk_index=4)]
    assert ids(organize(items, [], "hierarchical")[0]) == ["intro", "top", "mid", "deep"]


def test_edges_puts_the_best_at_both_ends() -> None:
    items = [item(str(i), 1 - i / 10) for i in range(1, 8)]  # priorities in order 1..7
    assert ids(organize(items, [], "edges")[0]) == ["1", "3", "5", "7", "6", "4", "2"]


def test_auto_picks_temporal_for_dated_chunks() -> None:
    items = [item(str(i), 0.5, document_date=date(2024, i, 1)) for i in range(1, 5)] + [item("x", 0.9)]
    strategy, reason = choose_strategy(items, [])
    assert strategy == "temporal" and "4/5" in reason and "temporal" in reason


def test_auto_picks_topical_for_dense_relationships() -> None:
    items = [item(c, 0.5) for c in "abcd"]
    rels = [Relationship("a", "b", "same_document", 0.4, ""), Relationship("b", "c", "strong_overlap", 0.6, ""),
            Relationship("a", "b", "strong_overlap", 0.6, "")]  # 2 of 6 pairs related
    strategy, reason = choose_strategy(items, rels)
    assert strategy == "topical" and "33%" in reason


def test_auto_picks_edges_for_long_contexts_and_relevance_otherwise() -> None:
    many = [item(str(i), 0.5) for i in range(12)]
    assert choose_strategy(many, [])[0] == "edges"
    assert "12 chunks" in choose_strategy(many, [])[1]
    few = [item(str(i), 0.5) for i in range(4)]
    assert choose_strategy(few, []) == ("relevance", "no dominant signal → relevance")
    # One date is no timeline.
    same_day = [item(str(i), 0.5, document_date=date(2024, 1, 1)) for i in range(3)]
    assert choose_strategy(same_day, [])[0] == "relevance"


def test_every_strategy_keeps_every_chunk() -> None:
    items = [item(str(i), i / 10, document_date=date(2024, 1, i + 1) if i % 2 else None) for i in range(9)]
    for name in strategy_names():
        assert sorted(ids(organize(items, [], name)[0])) == sorted(ids(items))


def test_unknown_strategy_lists_the_registry() -> None:
    with pytest.raises(UnknownNameError) as err:
        organize([], [], "chronological")
    message = str(err.value)
    for name in [*STRATEGIES, "auto"]:
        assert name in message


def test_lens_groups_by_the_given_lens_order_and_priority_inside() -> None:
    from ragloom.context.organize import by_lens

    items = [item(f"c{i}", priority, lens=lens) for i, (lens, priority) in enumerate(
        [("engineering", 0.9), ("your-voice", 0.2), ("zeta", 0.99), ("engineering", 0.95), ("your-voice", 0.5)])]
    ordered = by_lens(items, (), ["your-voice", "engineering"])
    assert [(p.chunk.lens, p.priority) for p in ordered] == [
        ("your-voice", 0.5), ("your-voice", 0.2), ("engineering", 0.95), ("engineering", 0.9), ("zeta", 0.99)]
    again, strategy, reason = organize(items, (), "lens", lens_order=["engineering"])
    assert strategy == "lens" and reason == "requested"
    assert [p.chunk.lens for p in again][:2] == ["engineering", "engineering"]
