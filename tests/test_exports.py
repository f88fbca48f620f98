"""Packages import their public names on first use (ragloom.exports): the command line starts
without the engine, and every name a package lists is still there."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

LAZY = ("ragloom", "ragloom.query", "ragloom.ingest", "ragloom.graph")
#: What ``ragloom --help``, and a question a running server answers, must not load.
HEAVY = ("ragloom.engine", "ragloom.store.lance", "ragloom.store.connection", "lancedb", "pyarrow", "networkx", "numpy", "torch", "pydantic",
         "onnxruntime", "sentence_transformers")


@pytest.mark.parametrize("package", LAZY)
def test_every_listed_name_is_there_and_a_typo_is_named(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
        assert name in dir(module)
    with pytest.raises(AttributeError, match=rf"module '{package}' has no attribute 'Engin'"):
        module.Engin  # noqa: B018 - the attribute access is the test


def loaded_by(*modules: str) -> list[str]:
    """The modules a new interpreter holds after importing ``modules``."""
    code = f"import sys, json, {', '.join(modules)}; print(json.dumps(sorted(sys.modules)))"
    names: list[str] = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                 check=True).stdout)
    return names


def heavy(names: list[str], among: tuple[str, ...] = HEAVY) -> list[str]:
    return [name for name in names if name in among or any(name.startswith(h + ".") for h in among)]


def test_the_command_line_starts_without_the_engine() -> None:
    assert not heavy(loaded_by("ragloom.cli", "ragloom.attach", "ragloom.query.request"))


def test_a_question_for_a_running_server_loads_only_the_settings() -> None:
    # What `ragloom query` imports before it asks a running serve or chat (ragloom.attach):
    # the settings (pydantic), to check they are the server's, and nothing of the engine.
    assert not heavy(loaded_by("ragloom.cli", "ragloom.attach", "ragloom.config", "ragloom.workspace"),
                     tuple(h for h in HEAVY if h != "pydantic"))
