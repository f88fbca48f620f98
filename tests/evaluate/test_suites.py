"""Every suite end to end on a small slice of its data (hashing embedder, so it takes seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.errors import ConfigError, InvalidParameterError, UnknownNameError
from ragloom.evaluate import SUITES, TAKES_SETTINGS, run_suite
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


@pytest.mark.parametrize("limit", [0, -3, 2.5, True, "4"])
def test_a_limit_below_one_question_is_refused_before_any_work(limit: object, tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match=r"limit \(.*\) must be a whole number, 1 or more"):
        run_suite("chunking", data=shared_data(), out=tmp_path, limit=limit)  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())  # nothing written


def test_settings_are_checked_before_any_work_and_refused_where_they_do_not_apply(tmp_path: Path) -> None:
    assert set(TAKES_SETTINGS) == set(SUITES) - {"chunking"}
    with pytest.raises(InvalidParameterError, match="the chunking suite measures configurations of its own"):
        run_suite("chunking", data=shared_data(), out=tmp_path, overrides={"retrieval.k": 3})
    for overrides, message in (({"chunking.bogus": 1}, "unknown setting 'chunking.bogus' (from --set)"),
                               ({"retrieval.k": 0}, "retrieval.k: Input should be greater than or equal to 1 "
                                                    "(from --set)")):
        with pytest.raises(ConfigError) as info:
            run_suite("windows", data=shared_data(), out=tmp_path, overrides=overrides)
        assert message in str(info.value)
    assert not list(tmp_path.iterdir())


def test_second_run_hits_the_embedding_cache(tmp_path: Path) -> None:
    from ragloom.embed import CachedEmbedder

    inner = HashingEmbedder()
    cached = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    run_suite("ab", data=shared_data(), out=tmp_path / "a", limit=3, embedder=cached)
    first = inner.calls
    run_suite("ab", data=shared_data(), out=tmp_path / "b", limit=3, embedder=cached)
    assert inner.calls == first  # nothing embedded twice
