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


def test_the_readme_says_how_to_install_into_a_project_in_plain_words() -> None:
    import re
    import tomllib

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "\nmake demo " in text and "\nmake test " in text  # the setup stays two commands
    section = text.split("\n## Install into your own project\n", 1)[1].split("\n## ", 1)[0]
    torch = re.search(r"^TORCH\s*:=\s*(\S+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert torch is not None
    assert re.findall(r"^pip install .*$", section, re.MULTILINE) == [f"pip install {torch.group(1)}",
                                                                       "pip install 'ragloom[local]'"]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extra in sorted(set(extras) - {"bench", "dev"}):  # what each extra a user may want gives
        assert re.search(rf"^\| `{extra}` \| \S", section, re.MULTILINE), extra
    # The project's own history means nothing to a newcomer: "seed 000's six queries", "issue 17".
    assert not re.search(r"\bseed 0\d\d|\bissues? \d+|\bseed's\b", text, re.IGNORECASE)
