"""Every suite end to end on a small slice of its data (hashing embedder, so it takes seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.errors import UnknownNameError
from ragloom.evaluate import SUITES, run_suite
from ragloom.evaluate.context import STEPS

from ..conftest import Tally, shared_data


@pytest.mark.parametrize("suite", SUITES)
def test_suite_runs_on_a_slice(suite: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    if suite == "chunking":
        pytest.importorskip("langchain_text_splitters")
    tracker, messages = Tally(), []
    result, paths = run_suite(suite, data=shared_data(), out=tmp_path, limit=4, embedder=HashingEmbedder(),
                              tracker=tracker, progress=messages.append)
    # It shows progress: its steps, named and counted to the end, and what it embeds.
    assert tracker.totals[STEPS] == tracker.done[STEPS] > 1 and len(messages) >= tracker.totals[STEPS]
    assert tracker.totals["Embedding"] == tracker.done["Embedding"] > 0
    assert result.rows and all(result.columns[0] in row for row in result.rows)
    data = json.loads(paths["json"].read_text())
    assert data["suite"] == suite and data["table"].startswith("| ")
    assert paths["markdown"].read_text().startswith(f"# `ragloom eval {suite}`")
    assert result.plots and all(Path(p).stat().st_size > 1000 for p in result.plots)
    numbers = [v for row in result.rows for v in row.values() if isinstance(v, float)]
    assert numbers and all(v >= 0 for v in numbers)


def test_unknown_suite_lists_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match="ab, chunking, contextual, multihop, windows"):
        run_suite("vibes", data=tmp_path, out=tmp_path)


def test_second_run_hits_the_embedding_cache(tmp_path: Path) -> None:
    from ragloom.embed import CachedEmbedder

    inner = HashingEmbedder()
    cached = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    run_suite("ab", data=shared_data(), out=tmp_path / "a", limit=3, embedder=cached)
    first = inner.calls
    run_suite("ab", data=shared_data(), out=tmp_path / "b", limit=3, embedder=cached)
    assert inner.calls == first  # nothing embedded twice
