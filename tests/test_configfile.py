"""The commented ragloom.toml of a new workspace, and the effective settings with their sources."""

from __future__ import annotations

import re
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from ragloom.config import Settings
from ragloom.configfile import SECTIONS, commented_toml, effective_settings, init_workspace, setting_rows, settings_toml
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


# -- 'ragloom config show': every setting as TOML that reads back ----------------------------------


def _values(annotation: Any) -> st.SearchStrategy[Any]:  # noqa: ANN401 - any setting's type
    """Values of a setting's type (its bounds are checked by the model, not here)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*[_values(a) for a in args])
    if annotation is type(None):
        return st.none()
    if origin is typing.Literal:
        return st.sampled_from(args)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(-5, 10**9)
    if annotation is float:
        return st.floats(allow_nan=False)  # inf is TOML; nan never equals itself
    if annotation is str:
        return st.text(max_size=30)  # quotes, backslashes, newlines, DEL, any script
    if origin is tuple and args and args[-1] is Ellipsis:
        return st.lists(_values(args[0]), max_size=3).map(tuple)
    if origin is dict:
        return st.dictionaries(st.text(max_size=8), st.dictionaries(
            st.text(max_size=8), st.integers() | st.text(max_size=8) | st.booleans(), max_size=2), max_size=2)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return st.fixed_dictionaries({name: _values(f.annotation) for name, f in annotation.model_fields.items()
                                      if f.is_required()},
                                     optional={name: _values(f.annotation) for name, f in annotation.model_fields.items()
                                               if not f.is_required()})
    raise AssertionError(f"no strategy for {annotation}")


@st.composite
def any_settings(draw: st.DrawFn) -> Settings:
    """Settings with any of their values changed, in every section ([llm] and [server] too), each
    change kept when its section accepts it on its own."""
    sections: dict[str, Any] = {}
    for section, field in Settings.model_fields.items():
        model = field.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            sections[section] = draw(_values(model))
            continue
        values = getattr(Settings(), section).model_dump()
        for name, f in model.model_fields.items():
            if draw(st.integers(0, 3)) == 0:  # about a quarter of the settings changed
                candidate = {**values, name: draw(_values(f.annotation))}
                try:
                    model.model_validate(candidate)
                except ValidationError:
                    continue
                values = candidate
        sections[section] = values
    try:
        return Settings.model_validate(sections)
    except ValidationError:  # the chunk sizes checked together
        assume(False)
        raise


def test_settings_of_every_section_are_generated() -> None:
    sections = {name for name, f in Settings.model_fields.items() if isinstance(f.annotation, type)
                and issubclass(f.annotation, BaseModel)}
    assert {"llm", "server", "prefix", "sentences", "entities"} <= sections


@given(any_settings())
def test_settings_toml_reads_back_to_the_same_settings(settings: Settings) -> None:
    sources = {row.key: f"RAGLOOM_{row.key.upper()}\n#=[x]" for row in setting_rows(settings)[::3]}
    text = settings_toml(setting_rows(settings, sources), heading=["settings of\nsomewhere", "[chunking]"])
    assert Settings.model_validate(tomllib.loads(text)) == settings
    for row in setting_rows(settings):
        if row.value is None:  # TOML has no null: the setting is commented out, and says so
            name = row.key.split(".", 1)[1]
            assert re.search(rf"^# {re.escape(name)} = \(not set\)", text, re.MULTILINE), row.key


def test_settings_toml_of_every_section_comments_out_what_is_not_set() -> None:
    settings = Settings()
    rows = setting_rows(settings, {"llm.model": "RAGLOOM_LLM__MODEL", "server.max_k": "/x/ragloom.toml"})
    text = settings_toml(rows)
    assert Settings.model_validate(tomllib.loads(text)) == settings
    for section in Settings.model_fields:
        if isinstance(getattr(settings, section), BaseModel):
            assert f"\n[{section}]\n" in text, section
    for key in ("llm.model", "llm.base_url", "llm.temperature", "prefix.llm_context_model", "sentences.query_floor",
                "entities.gazetteer"):
        assert f"# {key.split('.')[1]} = (not set)" in text, key
    assert re.search(r"^# model = \(not set\) +# from RAGLOOM_LLM__MODEL$", text, re.MULTILINE)
    assert re.search(r"^max_k = 500 +# from /x/ragloom.toml$", text, re.MULTILINE)
    assert settings_toml(rows[:0]).startswith("#") and tomllib.loads(settings_toml(rows[:0])) == {}
