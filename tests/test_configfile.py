"""The commented ragloom.toml of a new workspace, and the effective settings with their sources."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ragloom.config import Settings
from ragloom.configfile import SECTIONS, commented_toml, effective_settings, init_workspace
from ragloom.errors import ConfigError


def test_the_commented_file_changes_nothing_and_every_line_can_be_uncommented(tmp_path: Path) -> None:
    text = commented_toml()
    init_workspace(tmp_path / "ws")
    assert Settings.load(tmp_path / "ws", environ={}) == Settings()  # as written: the defaults
    lines = text.splitlines()
    lines = lines[: next(i for i, line in enumerate(lines) if line.startswith("# Document types"))]  # then an example
    uncommentable = [i for i, line in enumerate(lines) if line.startswith("# ") and " = " in line.split("  #")[0].rstrip()
                     and not line.startswith("# [")]
    for section in SECTIONS:  # every setting of every section is there, under its header
        body = text.split(f"\n[{section}]\n", 1)[1].split("\n\n", 1)[0]
        for name in type(getattr(Settings(), section)).model_fields:
            assert f"# {name} =" in body or f"# [{section}.{name}." in body, (section, name)
    for i in uncommentable:
        candidate = list(lines)
        candidate[i] = candidate[i][2:].split("  #")[0].rstrip()  # the setting at its default
        data = tomllib.loads("\n".join(candidate))
        assert Settings.model_validate(data) == Settings(), lines[i]
    described = [line for line in lines if line.startswith("# ") and "  # " in line]
    assert len(described) >= len(uncommentable) * 0.9  # and says what it does


def test_init_keeps_an_existing_file(tmp_path: Path) -> None:
    path = init_workspace(tmp_path / "ws")
    path.write_text("[chunking]\nchunk_size = 512\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="already exists"):
        init_workspace(tmp_path / "ws")
    assert "512" in path.read_text(encoding="utf-8")
    init_workspace(tmp_path / "ws", force=True)
    assert "# chunk_size = 1024" in path.read_text(encoding="utf-8")


def test_each_setting_says_where_it_came_from(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ragloom.toml").write_text("[chunking]\nchunk_size = 512\n[retrieval]\nk = 7\n", encoding="utf-8")
    extra = tmp_path / "extra.toml"
    extra.write_text("[retrieval]\nk = 8\n", encoding="utf-8")
    rows = {r.key: r for r in effective_settings(ws, config_file=extra,
                                                 environ={"RAGLOOM_SENTENCES__WINDOW": "5", "HOME": "/x"})}
    assert (rows["chunking.chunk_size"].value, rows["chunking.chunk_size"].source) == (512, str(ws / "ragloom.toml"))
    assert (rows["retrieval.k"].value, rows["retrieval.k"].source) == (8, str(extra))  # the later file wins
    assert (rows["sentences.window"].value, rows["sentences.window"].source) == (5, "RAGLOOM_SENTENCES__WINDOW")
    assert rows["graph.hops"].source == "default" and rows["doc_types.rules"].source == "default"
    assert all(r.source == "default" for k, r in rows.items()
               if k not in ("chunking.chunk_size", "retrieval.k", "sentences.window"))
