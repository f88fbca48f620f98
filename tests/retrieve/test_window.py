from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.retrieve.sentences import Sentences
from ragloom.retrieve.window import Expansion, expand, grow, merge_spans

from ..conftest import fast_settings, sample_engine


def doc(sims_to_next: list[float], sections: list[int] | None = None, name: str = "d", positions=None) -> Sentences:
    """Unit vectors whose consecutive cosines are exactly ``sims_to_next``."""
    n = len(sims_to_next) + 1
    angles = np.concatenate([[0.0], np.cumsum(np.arccos(np.clip(sims_to_next, -1, 1)))])
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    starts = np.arange(n) * 10
    return Sentences(name, np.asarray(positions if positions is not None else np.arange(n)), starts, starts + 9,
                     np.asarray(sections or [0] * n), vectors)


def test_expansion_stops_at_the_threshold() -> None:
    d = doc([0.5, 0.9, 0.9, 0.6, 0.95])  # sentences 0..5
    span = grow(d, 2, 1.0, Expansion(threshold=0.75, max_expand=5))
    assert (span.first, span.last) == (1, 3)  # 1-2 (0.9) and 2-3 (0.9) pass; 0-1 (0.5) and 3-4 (0.6) stop


def test_expansion_stops_at_max_expand() -> None:
    d = doc([0.99] * 10)
    span = grow(d, 5, 1.0, Expansion(threshold=0.5, max_expand=2))
    assert (span.first, span.last) == (3, 7)


def test_expansion_never_leaves_the_document_or_a_gap() -> None:
    d = doc([0.99] * 4)
    assert (grow(d, 0, 1.0, Expansion(0.5, 10)).first, grow(d, 4, 1.0, Expansion(0.5, 10)).last) == (0, 4)
    windows = doc([0.99] * 5, positions=[0, 1, 2, 10, 11, 12])  # two windows of a longer document
    span = grow(windows, 1, 1.0, Expansion(0.5, 10))
    assert (span.first, span.last) == (0, 2)


def test_expansion_respects_sections_unless_told() -> None:
    d = doc([0.99] * 5, sections=[0, 0, 1, 1, 1, 2])
    assert (grow(d, 3, 1.0, Expansion(0.5, 5)).first, grow(d, 3, 1.0, Expansion(0.5, 5)).last) == (2, 4)
    crossing = grow(d, 3, 1.0, Expansion(0.5, 5, cross_sections=True))
    assert (crossing.first, crossing.last) == (0, 5)


def test_query_floor_and_adaptive_threshold() -> None:
    d = doc([0.99, 0.99, 0.99])
    query = d.vectors[0]
    floor = grow(d, 0, 1.0, Expansion(0.5, 5, query_floor=float(query @ d.vectors[1]) + 1e-4), query)
    assert (floor.first, floor.last) == (0, 0)  # the neighbour drifts from the query
    varied = doc([0.2, 0.3, 0.9, 0.35, 0.4])
    adaptive = Expansion(threshold=0.95, max_expand=5, adaptive_quantile=0.5)
    assert adaptive.threshold_for(varied) == pytest.approx(0.35, abs=1e-4)
    span = grow(varied, 2, 1.0, adaptive)
    assert (span.first, span.last) == (2, 5)  # 0.3 < 0.35 stops on the left; 0.9, 0.35 and 0.4 pass


def test_fixed_window() -> None:
    d = doc([0.0] * 9, sections=[0] * 5 + [1] * 5)
    span = grow(d, 4, 1.0, Expansion(fixed=3, cross_sections=True))
    assert (span.first, span.last) == (1, 7)
    assert (grow(d, 4, 1.0, Expansion(fixed=3)).last) == 4  # not across the section


def test_overlapping_and_adjacent_spans_merge_keeping_the_best_score() -> None:
    d = doc([0.99] * 9)
    spans = expand([("d", 2, 0.5), ("d", 4, 0.9), ("d", 8, 0.7)], {"d": d}, Expansion(0.5, 1))
    assert [(s.first, s.last, s.score) for s in spans] == [(1, 5, 0.9), (7, 9, 0.7)]
    touching = merge_spans([s for s in expand([("d", 1, 0.4), ("d", 4, 0.6)], {"d": d}, Expansion(0.5, 1), merge=False)],
                           {"d": d})
    assert [(s.first, s.last) for s in touching] == [(0, 5)]  # 0-2 and 3-5 touch


@given(st.lists(st.floats(-1, 1), min_size=1, max_size=30), st.data())
def test_spans_are_contiguous_and_contain_their_seed(sims, data) -> None:
    d = doc(sims, sections=data.draw(st.lists(st.integers(0, 3), min_size=len(sims) + 1, max_size=len(sims) + 1).map(sorted)))
    seed = data.draw(st.integers(0, len(sims)))
    rule = Expansion(threshold=data.draw(st.floats(-1, 1)), max_expand=data.draw(st.integers(0, 6)))
    span = grow(d, seed, 1.0, rule)
    assert span.first <= seed <= span.last
    assert span.last - seed <= rule.max_expand and seed - span.first <= rule.max_expand
    assert len(set(d.sections[span.first : span.last + 1].tolist())) == 1


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Engine:
    return sample_engine(tmp_path_factory.mktemp("w") / "ws", materials)


@pytest.mark.parametrize("mode,options", [("window", {}), ("dynamic", {}), ("dynamic", {"threshold": 0.0}),
                                          ("dynamic", {"adaptive": True}), ("dynamic", {"query_floor": 0.1})])
def test_modes_return_exact_contiguous_spans(loaded: Engine, mode: str, options: dict) -> None:
    result = loaded.query("catalog integration QuickBooks event bus", mode=mode, k=5, **options)
    assert result.results
    for r in result:
        text = loaded.store.document("default", r.document_id)["text"]
        assert text[r.start : r.end] == r.text
        assert r.sentences[0][0] == r.start and r.sentences[-1][1] == r.end
        assert all(a[1] <= b[0] for a, b in zip(r.sentences, r.sentences[1:], strict=False))
    by_doc: dict[str, list] = {}
    for r in result:
        by_doc.setdefault(r.document_id, []).append((r.start, r.end))
    for spans in by_doc.values():  # merged: no two spans of a document overlap
        spans.sort()
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_queries_report_their_stage_timings(loaded: Engine) -> None:
    result = loaded.query("event bus migration", mode="dynamic", k=3)
    assert {"embed query", "sentence search", "load sentences", "expand", "load texts"} <= set(result.timings)
    assert all(t >= 0 for t in result.timings.values())
    assert sum(result.timings.values()) <= result.seconds
    hybrid = loaded.query("event bus migration", budget=1000)
    assert {"embed query", "vector search", "text search", "optimise"} <= set(hybrid.timings)
    assert hybrid.to_dict()["timings"].keys() == hybrid.timings.keys()


def test_lower_threshold_grows_wider_spans(loaded: Engine) -> None:
    strict = loaded.query("event bus migration", mode="dynamic", k=3, threshold=0.99)
    loose = loaded.query("event bus migration", mode="dynamic", k=3, threshold=-1.0)
    assert sum(len(r.sentences) for r in strict) < sum(len(r.sentences) for r in loose)


@pytest.mark.parametrize("mode", ["window", "dynamic"])
def test_in_memory_index_follows_new_versions_and_as_of_reads_old_ones(tmp_path: Path, mode: str) -> None:
    import time
    from datetime import UTC, datetime

    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    folder = tmp_path / "docs"
    folder.mkdir()
    doc = folder / "plan.md"
    doc.write_text("# Plan\nThe warehouse migration starts in May. Budget is set. Staff are ready.\n", encoding="utf-8")
    engine.ingest(folder, lens="x")
    first = engine.query("warehouse migration", mode=mode, k=3)
    moment = datetime.now(UTC)
    time.sleep(0.01)
    new_text = "# Plan\nIntro line here.\n\nThe warehouse migration now starts in July, after audits. Budget is cut.\n"
    doc.write_text(new_text, encoding="utf-8")
    engine.ingest(folder, lens="x")
    now = engine.query("warehouse migration", mode=mode, k=3)
    assert now.results and all(new_text[r.start : r.end] == r.text for r in now)
    assert any("July" in r.text for r in now) and not any("May" in r.text for r in now)
    then = engine.query("warehouse migration", mode=mode, k=3, as_of=moment)
    assert [(r.start, r.end, r.text) for r in then] == [(r.start, r.end, r.text) for r in first]
