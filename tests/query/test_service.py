"""Typed query requests, the post-stages, and what a mode's options accept."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.engine import Engine
from ragloom.errors import InvalidParameterError, UnknownNameError
from ragloom.retrieve.basic import HybridOptions
from ragloom.retrieve.lens import BalancedOptions
from ragloom.retrieve.window import DynamicOptions

from ..test_engine import ingest_all


def test_a_mistyped_option_is_an_error_that_names_the_valid_ones(engine: Engine) -> None:
    with pytest.raises(InvalidParameterError) as error:
        engine.query("offline mode", mode="dynamic", treshold=0.5)
    message = str(error.value)
    assert "unknown option 'treshold' for retrieval mode 'dynamic'" in message
    assert "did you mean 'threshold'?" in message
    assert "adaptive, adaptive_quantile, cross_sections, max_expand, merge, query_floor, threshold, top_k" in message


def test_an_option_of_another_mode_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidParameterError, match="unknown option 'chunks_per_lens' for retrieval mode 'hybrid'"):
        engine.query("x", mode="hybrid", chunks_per_lens=3)


@pytest.mark.parametrize(("mode", "options", "needle"), [
    ("dynamic", {"threshold": "high"}, "threshold must be a number"),
    ("balanced", {"chunks_per_lens": 2.5}, "chunks_per_lens must be a whole number"),
    ("window", {"merge": "yes"}, "merge must be true or false"),
    ("hybrid", {"fusion_weights": [1, 2]}, "fusion_weights must be"),
])
def test_option_values_are_checked_by_type(engine: Engine, mode: str, options: dict[str, object],
                                           needle: str) -> None:
    with pytest.raises(InvalidParameterError, match=needle):
        engine.query("x", mode=mode, **options)


def test_defaults_come_from_the_settings_and_options_override_them(engine: Engine) -> None:
    s = engine.settings
    request = engine.queries.request("x", mode="dynamic")
    assert isinstance(request.options, DynamicOptions)
    assert (request.options.threshold, request.options.top_k) == (s.sentences.threshold, s.sentences.top_k)
    request = engine.queries.request("x", mode="dynamic", threshold=0.6, query_floor=None)
    assert request.options.threshold == 0.6 and request.options.query_floor is None
    balanced = engine.queries.request("x", mode="balanced", chunks_per_lens=2).options
    assert isinstance(balanced, BalancedOptions) and isinstance(balanced, HybridOptions)
    assert balanced.chunks_per_lens == 2


def test_unknown_mode_lists_the_registered_ones(engine: Engine) -> None:
    with pytest.raises(UnknownNameError, match="balanced, bm25, dynamic, graph, hybrid, vector, window"):
        engine.queries.request("x", mode="telepathy")


def test_post_stages_run_in_order_and_are_timed(engine: Engine, materials: Path) -> None:
    ingest_all(engine, materials)
    seen: list[str] = []

    class Note:
        def __init__(self, name: str) -> None:
            self.name = name

        def __call__(self, result, request):  # noqa: ANN001, ANN204
            seen.append(self.name)
            result.notes.append(f"{self.name} saw {len(result.results)}")
            return result

    engine.queries.post_stages[:0] = [Note("first")]
    engine.queries.post_stages.append(Note("last"))
    result = engine.query("catalog integration", k=4, budget=1500)
    assert seen == ["first", "last"]
    assert [n for n in result.notes if " saw " in n] == ["first saw 4", "last saw 4"]
    assert result.context is not None and result.context.total_tokens <= 1500
    assert {"first", "age decay", "optimise", "last"} <= set(result.timings)
