from __future__ import annotations

import pytest
from hypothesis import given

from ragloom.chunk import chunk_text, chunker_from_settings, chunker_names, get_chunker
from ragloom.config import ChunkingSettings
from ragloom.errors import UnknownNameError

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
