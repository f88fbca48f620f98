"""Registries: built-ins on first lookup, other packages through entry points, clear errors."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from ragloom.chunk.base import CHUNKERS, Chunker, _builtin_chunkers, chunker_names, get_chunker
from ragloom.config import ChunkingSettings
from ragloom.errors import ConfigError, UnknownNameError
from ragloom.plugins import Registry


def install_fake_package(root: Path, name: str, group: str, entry: str, module_source: str) -> None:
    """A distribution on sys.path with one entry point, as pip would leave it."""
    (root / f"{name}.py").write_text(textwrap.dedent(module_source), encoding="utf-8")
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n", encoding="utf-8")


PLUGIN = """
from ragloom.chunk import Chunker, SizeModel

class LineChunker(Chunker):
    name = "lines"

    def __init__(self, *, tokenizer="chars", keep_blank=False):
        self.keep_blank = keep_blank

    def split_section(self, text, start, end, protected):
        spans, at = [], start
        for line in text[start:end].split("\\n"):
            if line.strip() or self.keep_blank:
                spans.append((at, at + len(line), len(line), ()))
            at += len(line) + 1
        return spans

    def size_model(self):
        return SizeModel("chars", 80, 1, 400)
"""


def test_a_package_adds_a_chunker_through_an_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_package(tmp_path, "ragloom_lines", "ragloom.chunkers", "lines = ragloom_lines:LineChunker", PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("chunking strategy", "ragloom.chunkers", _builtin_chunkers)
    assert registry.names() == ["boundary", "lines", "sentence", "token"]
    cls = registry.get("lines")
    settings = ChunkingSettings(strategy="lines", options={"lines": {"keep_blank": False}})
    chunker = cls.from_settings(settings)
    assert isinstance(chunker, Chunker) and chunker.keep_blank is False
    text = "# Title\n\nfirst line\nsecond line\n"
    # A heading alone joins the line it heads, whatever the strategy.
    assert [c.text for c in chunker.chunk(text)] == ["# Title\n\nfirst line", "second line"]
    assert all(text[c.start : c.end] == c.text for c in chunker.chunk(text))
    sys.modules.pop("ragloom_lines", None)


def test_a_broken_plugin_is_named_in_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_package(tmp_path, "ragloom_broken", "ragloom.modes", "broken = ragloom_broken:missing", "x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("retrieval mode", "ragloom.modes", dict)
    with pytest.raises(ConfigError, match=r"plugin 'broken' \(ragloom_broken:missing.*failed to load"):
        registry.names()


def test_a_built_in_name_is_never_shadowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_package(tmp_path, "ragloom_shadow", "ragloom.chunkers", "token = ragloom_shadow:X", "X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("chunking strategy", "ragloom.chunkers", _builtin_chunkers)
    assert registry.get("token") is _builtin_chunkers()["token"]


def test_unknown_names_list_the_registry_itself() -> None:
    with pytest.raises(UnknownNameError) as error:
        get_chunker("nope")
    assert str(error.value).endswith(", ".join(chunker_names()))
    assert set(CHUNKERS.names()) >= {"boundary", "sentence", "token"}


def test_chunkers_describe_their_own_sizes_and_overlap() -> None:
    settings = ChunkingSettings(chunk_size=256, chunk_overlap=32, target_size=600, min_size=400, max_size=900,
                                overlap_chars=50)
    token = CHUNKERS.get("token").from_settings(settings)
    boundary = CHUNKERS.get("boundary").from_settings(settings)
    sentence = CHUNKERS.get("sentence").from_settings(settings)
    assert (token.size_model().unit, token.size_model().maximum, token.overlap) == ("tokens", 256, 32)
    assert (boundary.size_model().target, boundary.overlap) == (600, 50)
    assert sentence.size_model().maximum == settings.max_sentence_chars and sentence.overlap == 0


def test_a_chunker_built_twice_with_the_same_parameters_is_reused() -> None:
    assert get_chunker("token", chunk_size=300, chunk_overlap=30) is get_chunker("token", chunk_size=300, chunk_overlap=30)
    assert get_chunker("token", chunk_size=300, chunk_overlap=30) is not get_chunker("token", chunk_size=301,
                                                                                     chunk_overlap=30)
