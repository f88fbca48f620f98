"""Typed query requests, the post-stages, and what a mode's options accept."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import InvalidParameterError, UnknownNameError
from ragloom.retrieve import get_mode
from ragloom.retrieve.basic import HybridOptions
from ragloom.retrieve.lens import BalancedOptions
from ragloom.retrieve.window import DynamicOptions

from ..conftest import fast_settings, ingest_all


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


def test_every_option_with_a_setting_defaults_to_it_in_every_mode_that_has_it(tmp_path: Path) -> None:
    changed = fast_settings(**{"retrieval.sentence_weight": 0.2, "retrieval.chunks_per_lens": 3, "graph.hops": 2,
                               "graph.follow": ["MENTIONS"], "sentences.threshold": 0.6, "sentences.window": 1})
    engine = Engine(tmp_path / "ws", settings=changed, embedder=HashingEmbedder())
    for mode in ("vector", "hybrid", "balanced", "graph", "window", "dynamic"):
        options = engine.queries.request("x", mode=mode).options
        for name, key in get_mode(mode).options.setting_keys().items():
            section, field = key.split(".")
            expected = getattr(getattr(changed, section), field)
            assert getattr(options, name) == (",".join(expected) if isinstance(expected, tuple) else expected), \
                (mode, name)
    # balanced and graph used the dataclass's sentence weight, not the setting, before
    for mode in ("balanced", "graph"):
        assert engine.queries.request("x", mode=mode).options.sentence_weight == 0.2  # type: ignore[union-attr]


@pytest.mark.parametrize(("mode", "options", "message"), [
    ("dynamic", {"threshold": 2.0}, "dynamic option threshold (2.0): input should be less than or equal to 1, as "
                                    "for the setting sentences.threshold"),
    ("dynamic", {"query_floor": -3}, "dynamic option query_floor (-3.0): input should be greater than or equal to -1"),
    ("graph", {"hops": 9}, "graph option hops (9): input should be less than or equal to 3, as for the setting "
                           "graph.hops"),
    ("balanced", {"chunks_per_lens": 0}, "balanced option chunks_per_lens (0): input should be greater than or "
                                         "equal to 1"),
    ("hybrid", {"sentence_weight": 3}, "hybrid option sentence_weight (3.0): input should be less than or equal to 1"),
    ("window", {"window": -1}, "window option window (-1): input should be greater than or equal to 0"),
])
def test_an_option_outside_its_settings_range_is_refused(engine: Engine, mode: str, options: dict[str, object],
                                                        message: str) -> None:
    with pytest.raises(InvalidParameterError) as error:
        engine.query("x", mode=mode, **options)
    assert message in str(error.value)


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
