"""docs/architecture.md's examples run, in order, in one namespace: the page stays true."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragloom.chunk.base import CHUNKERS
from ragloom.retrieve.base import MODES

from .doc_examples import python_blocks, run_examples

ROOT = Path(__file__).resolve().parents[1]


def test_the_architecture_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples read examples/materials
    monkeypatch.setitem(os.environ, "RAGLOOM_EMBEDDING__CACHE", "false")
    page = ROOT / "docs" / "architecture.md"
    assert len(python_blocks(page)) >= 7
    try:
        run_examples(page, "docs/architecture.md", monkeypatch)
        assert "paragraph" in CHUNKERS and "lens-first" in MODES
    finally:  # what the examples registered is theirs alone
        CHUNKERS._items.pop("paragraph", None)
        MODES._items.pop("lens-first", None)


def test_the_facade_stays_under_300_lines() -> None:
    """README and docs/architecture.md promise it: a feature that needs more belongs in a service."""
    lines = (ROOT / "src" / "ragloom" / "engine.py").read_text(encoding="utf-8").count("\n")
    assert lines < 300, f"src/ragloom/engine.py has {lines} lines; move the new logic into the service it belongs to"
