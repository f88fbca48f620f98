"""Themes: communities of the context graph named by their own distinctive terms."""

from __future__ import annotations

from pathlib import Path

from ragloom.engine import Engine
from ragloom.graph.themes import MIN_SIZE, find_themes

from ..conftest import ingest_all


def test_the_sample_workspace_has_themes_named_by_its_own_words(engine: Engine, materials: Path) -> None:
    ingest_all(engine, materials)
    graph = engine.graph()
    themes = find_themes(graph, limit=6)
    assert 2 <= len(themes) <= 6
    seen: set[str] = set()
    for theme in themes:
        assert len(theme.chunk_ids) >= MIN_SIZE and not seen & set(theme.chunk_ids)
        seen |= set(theme.chunk_ids)
        members = [graph.graph.nodes[n] for n in theme.chunk_ids]
        for term in theme.terms:  # each term of its name is in at least three of its chunks
            assert sum(term in m["key_terms"] for m in members) >= 3
        assert theme.label == ", ".join(theme.terms) and theme.documents >= 1
    assert [len(t.chunk_ids) for t in themes] == sorted((len(t.chunk_ids) for t in themes), reverse=True)
    assert find_themes(graph, limit=6) == themes  # a fixed seed: the same themes every time
