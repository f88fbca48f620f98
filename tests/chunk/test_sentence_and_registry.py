from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.chunk import chunk_text, chunker_from_settings, chunker_names, get_chunker
from ragloom.config import ChunkingSettings
from ragloom.errors import ConfigError, InvalidParameterError, UnknownNameError

from .strategies import documents


@given(documents)
def test_sentence_nodes_are_exact(text: str) -> None:
    nodes = chunk_text(text, "sentence")
    for i, n in enumerate(nodes):
        assert text[n.start : n.end] == n.text
        assert n.chunk_index == i
    assert all(a.end <= b.start for a, b in zip(nodes, nodes[1:], strict=False))


def test_sentence_nodes_real_text(real_corpus) -> None:
    for _, text in real_corpus[:5]:
        nodes = get_chunker("sentence").chunk(text)
        assert nodes and all(text[n.start : n.end] == n.text for n in nodes)


def test_protected_span_keeps_sentences_together() -> None:
    text = "We met Acme Inc. Ltd. yesterday. Then we left."
    start = text.index("Acme")
    nodes = chunk_text(text, "sentence", protected=[(start, start + len("Acme Inc. Ltd."))])
    assert any("Acme Inc. Ltd." in n.text for n in nodes)


def test_registry_lists_and_rejects_names() -> None:
    assert chunker_names() == ["boundary", "sentence", "token"]
    with pytest.raises(UnknownNameError, match="boundary, sentence, token"):
        get_chunker("semantic")


def test_settings_build_each_strategy() -> None:
    settings = ChunkingSettings(chunk_size=300, chunk_overlap=30, target_size=700)
    assert chunker_from_settings(settings).params()["chunk_size"] == 300
    assert chunker_from_settings(settings, "boundary").params()["target_size"] == 700
    assert chunker_from_settings(settings, "sentence").name == "sentence"


@pytest.mark.parametrize("strategy", ["token", "boundary", "sentence"])
def test_options_for_a_built_in_strategy_are_an_error_not_ignored(strategy: str) -> None:
    settings = ChunkingSettings(options={strategy: {"overlap": 100}})
    with pytest.raises(ConfigError, match=rf"\[chunking.options.{strategy}\] is for plugin strategies; the "
                                          rf"built-in '{strategy}' reads \[chunking\] itself"):
        chunker_from_settings(settings)


@pytest.mark.parametrize("strategy", ["token", "boundary", "sentence"])
@given(text=documents, spans=st.lists(st.tuples(st.integers(-50, 5000), st.integers(0, 400)), max_size=6))
def test_protected_spans_past_the_text_are_clipped_never_a_crash(strategy: str, text: str,
                                                                  spans: list[tuple[int, int]]) -> None:
    protected = [(a, a + n) for a, n in spans]  # some start before 0, some end past the text
    chunks = chunk_text(text, strategy, protected=protected)
    assert all(text[c.start : c.end] == c.text for c in chunks)


def test_a_protected_span_that_ends_before_it_starts_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match=r"protected span \(50, 10\) ends before it starts"):
        chunk_text("hello world " * 50, "boundary", protected=[(50, 10)])


@pytest.mark.parametrize(("strategy", "params", "message"), [
    ("token", {"chunk_sise": 10}, "unknown parameter 'chunk_sise' for chunking strategy 'token' (did you mean "
                                  "'chunk_size'?); valid parameters: boundary_window, chunk_overlap, chunk_size,"),
    ("boundary", {"target": 10}, "unknown parameter 'target' for chunking strategy 'boundary' (did you mean "
                                 "'target_size'?)"),
    ("sentence", {"colour": 1}, "unknown parameter 'colour' for chunking strategy 'sentence'; valid parameters: "),
])
def test_a_parameter_the_strategy_does_not_take_is_named_with_those_it_does(strategy: str, params: dict[str, int],
                                                                           message: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        get_chunker(strategy, **params)
    assert message in str(info.value)
