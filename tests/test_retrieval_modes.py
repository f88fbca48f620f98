"""balanced and graph retrieval through the engine."""

from __future__ import annotations

from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import InvalidParameterError
from ragloom.retrieve.base import get_mode, mode_names

from .conftest import fast_settings, sample_engine


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Engine:
    return sample_engine(tmp_path_factory.mktemp("modes") / "ws", materials)


def test_balanced_returns_every_lens(loaded: Engine, materials: Path) -> None:
    lenses = {p.name for p in materials.iterdir() if p.is_dir()}
    result = loaded.query("roadmap priorities and timeline", mode="balanced", k=len(lenses) * 8)
    counts = Counter(r.lens for r in result)
    assert set(counts) == lenses
    assert all(n <= 8 for n in counts.values())
    assert all(r.retriever == "balanced" for r in result)
    relevance = [r.relevance for r in result]
    assert relevance == sorted(relevance, reverse=True) and relevance[0] == 1.0  # shown best first
    short = loaded.query("roadmap priorities and timeline", mode="balanced", k=len(lenses))
    assert {r.lens for r in short} == lenses  # taken in turn: a short list is balanced too


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic"])
def test_every_mode_returns_retrieval_k_results_unless_k_is_given(loaded: Engine, mode: str) -> None:
    assert set(mode_names()) >= {"vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic"}
    text = "roadmap priorities, the catalog integration and the event bus"
    k = loaded.settings.retrieval.k
    default = loaded.query(text, mode=mode)
    assert 0 < len(default) <= k == 5, len(default)  # balanced and graph once gave 48 and 50
    assert loaded.queries.request(text, mode=mode).k == k
    assert [r.chunk_id for r in default] == [r.chunk_id for r in loaded.query(text, mode=mode, k=k)]
    more = loaded.query(text, mode=mode, k=12)
    assert len(default) <= len(more) <= 12
    if mode in ("balanced", "graph", "vector", "bm25", "hybrid"):
        assert len(more) == 12
    assert len(loaded.query(text, mode=mode, budget=3000)) <= loaded.settings.context_optimization.candidates


def test_balanced_uses_the_workspaces_lenses_unless_settings_name_them(tmp_path: Path, materials: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(materials / "engineering", lens="engineering")
    engine.ingest(materials / "your-voice", lens="notes")
    result = engine.query("catalog", mode="balanced", k=4)
    assert {r.lens for r in result} == {"engineering", "notes"} and result.notes == []


def test_balanced_reports_a_named_lens_without_chunks(tmp_path: Path, materials: Path) -> None:
    settings = fast_settings(**{"retrieval.lenses": ["your-voice", "engineering"]})
    engine = Engine(tmp_path / "ws", settings=settings, embedder=HashingEmbedder())
    engine.ingest(materials / "engineering", lens="engineering")
    result = engine.query("catalog", mode="balanced", k=4)
    assert {r.lens for r in result} == {"engineering"} and len(result) == 4
    assert any("your-voice" in note and "no chunks" in note for note in result.notes)


def test_graph_mode_says_how_expanded_results_came_in(loaded: Engine) -> None:
    result = loaded.query("When will the QuickBooks catalog integration ship?", mode="graph", k=30)
    assert 0 < len(result) <= 30
    expanded = [r for r in result if r.via]
    assert expanded, "graph expansion added nothing"
    ids = {r.chunk_id for r in result}
    for r in expanded:
        assert r.via["edge"] in {"SIMILAR_TO", "SAME_SOURCE", "SAME_LENS", "TOPIC_OVERLAP", "TEMPORAL_OVERLAP",
                                 "SEQUENTIAL"}
        assert r.via["hops"] == 1 and r.via["seed"]
    assert len(ids) == len(result)  # no duplicates
    diverse = Counter(r.lens for r in result.results[:12])
    assert len(diverse) >= 4  # the final ranking spreads over lenses


def test_graph_mode_respects_lens_filter(loaded: Engine) -> None:
    result = loaded.query("catalog integration", mode="graph", lenses=["engineering"], k=20)
    assert result.results and {r.lens for r in result} == {"engineering"}


def test_query_with_a_budget_returns_the_optimised_context(loaded: Engine) -> None:
    from ragloom.context import parse_source_numbers
    from ragloom.tokens import get_tokenizer

    result = loaded.query("When will the catalog integration ship and what blocks it?", budget=1200)
    c = result.context
    assert c is not None and len(result) == 20  # context_optimization.candidates
    assert 0 < len(c.chunks) < len(result)
    assert get_tokenizer("cl100k_base").count(c.formatted) == c.total_tokens <= 1200 - 500
    assert set(parse_source_numbers(c.formatted)) == set(range(1, len(c.chunks) + 1))
    assert c.strategy in {"relevance", "temporal", "topical", "hierarchical", "edges"} and c.strategy_reason
    for chunk in c.chunks:
        text = loaded.store.document("default", chunk.document_id)["text"]
        assert text[chunk.start : chunk.end] == chunk.text
    as_dict = result.to_dict()["context"]
    assert as_dict["total_tokens"] == c.total_tokens and as_dict["strategy"] == c.strategy


def test_organize_without_budget_uses_the_default_budget(loaded: Engine) -> None:
    c = loaded.query("roadmap priorities", organize="edges").context
    assert c is not None and c.strategy == "edges" and c.budget == 3500


def test_graph_mode_from_memory_equals_reading_rows(loaded: Engine) -> None:
    # Current queries score neighbours from in-memory vectors; an as-of query reads their rows.
    from datetime import UTC, datetime, timedelta

    text = "When will the QuickBooks catalog integration ship?"
    now = loaded.query(text, mode="graph", k=30)
    later = loaded.query(text, mode="graph", k=30, as_of=datetime.now(UTC) + timedelta(seconds=1))
    assert [(r.chunk_id, round(r.score, 6), r.via) for r in now] == \
        [(r.chunk_id, round(r.score, 6), r.via) for r in later]
    assert [(r.text, r.start, r.end) for r in now] == [(r.text, r.start, r.end) for r in later]
    assert {"expand", "score neighbours", "rank"} <= set(now.timings)


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic"])
def test_every_mode_shows_a_relevance_from_0_to_1_in_its_order(loaded: Engine, mode: str) -> None:
    result = loaded.query("When will the QuickBooks catalog integration ship?", mode=mode, k=12)
    relevance = [r.relevance for r in result]
    assert result.results and all(0.0 <= v <= 1.0 for v in relevance)
    assert relevance == sorted(relevance, reverse=True)  # the order of the number shown
    if get_mode(mode).scale == "cosine":
        assert all(abs(r.relevance - max(0.0, min(1.0, r.score))) < 1e-9 for r in result)  # the cosine itself
    else:
        assert relevance[0] == 1.0  # a share of the best score
        assert all(abs(r.relevance - r.score / result[0].score) < 1e-9 for r in result)


def test_document_dates_filter_apart_from_the_workspace_history(loaded: Engine) -> None:
    march = loaded.query("catalog integration", k=20, dated_from="2025-03-01", dated_to="2025-03-31")
    assert march.results and all(r.document_date and date(2025, 3, 1) <= r.document_date <= date(2025, 3, 31)
                                 for r in march)
    assert march.to_dict()["dated"] == {"from": date(2025, 3, 1), "to": date(2025, 3, 31)}
    for mode in ("vector", "bm25", "balanced", "graph", "window"):
        found = loaded.query("catalog integration", mode=mode, k=20, dated_to="2025-01-31")
        assert found.results and all(r.document_date and r.document_date <= date(2025, 1, 31) for r in found), mode
    nothing = loaded.query("catalog integration", dated_from="2031-01-01")
    assert nothing.results == []
    with pytest.raises(InvalidParameterError, match="dated_from .2025-03-01. is after dated_to .2025-01-01."):
        loaded.query("x", dated_from="2025-03-01", dated_to="2025-01-01")
