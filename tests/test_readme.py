"""README.md's Python examples run as written, in order, in one namespace, and each shows a real
result: from a folder holding what a user has after ``make demo`` (``examples/`` and the
``ragloom-data`` demo workspace), so the text keeps ``Engine("ragloom-data")`` and its paths."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragloom.cli import app

from .doc_examples import python_blocks, run_examples

ROOT = Path(__file__).resolve().parents[1]

# Lines of the README left out of the run, each with why.
SKIP: dict[str, str] = {}


@pytest.fixture
def demo_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Path:
    for name in [n for n in os.environ if n.startswith("RAGLOOM_")]:  # the user's settings are not the README's
        monkeypatch.delenv(name)
    monkeypatch.setenv("RAGLOOM_EMBEDDING__CACHE", "false")
    if request.param == "hashing":
        monkeypatch.setenv("RAGLOOM_EMBEDDING__MODEL", "hashing")
    shutil.copytree(ROOT / "examples" / "materials", tmp_path / "examples" / "materials")
    for name in ("entities.toml", "ragloom.toml"):  # the sample materials' gazetteer and settings
        shutil.copy(ROOT / "examples" / name, tmp_path / "examples" / name)
    monkeypatch.chdir(tmp_path)
    demo = CliRunner().invoke(app, ["demo"])  # ./ragloom-data, as after `make demo`
    assert demo.exit_code == 0, demo.output
    return tmp_path


@pytest.mark.parametrize("demo_folder", [
    # Every setting as shipped but the embedder: the examples' text and flow, in a few seconds.
    "hashing",
    # The default embedder (all-MiniLM-L6-v2 on ONNX int8): the README exactly as a user runs it.
    pytest.param("default", marks=pytest.mark.slow),
], indirect=True)
def test_the_readme_examples_run_and_show_results(demo_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = ROOT / "README.md"
    assert len(python_blocks(page)) >= 6
    names = run_examples(page, "README.md", monkeypatch, skip=SKIP, require_results=True)
    assert (demo_folder / "roadmap.md").is_file()  # engine.generate(out="roadmap.md")
    assert names["chain"].invoke("What blocks the catalog integration?")  # the LangChain chain, again
    assert "since" in names["recent"].timings
