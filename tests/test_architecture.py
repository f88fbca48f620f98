"""docs/architecture.md's examples run, in order, in one namespace: the page stays true."""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path

import pytest

from ragloom.chunk.base import CHUNKERS
from ragloom.retrieve.base import MODES

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def test_the_architecture_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples read examples/materials
    monkeypatch.setitem(os.environ, "RAGLOOM_EMBEDDING__CACHE", "false")
    blocks = BLOCK.findall((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 7
    module = types.ModuleType("architecture_examples")  # dataclasses look their module up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    try:
        for i, block in enumerate(blocks):
            exec(compile(block, f"docs/architecture.md, example {i + 1}", "exec"), module.__dict__)  # noqa: S102
        assert "paragraph" in CHUNKERS and "lens-first" in MODES
    finally:  # what the examples registered is theirs alone
        CHUNKERS._items.pop("paragraph", None)
        MODES._items.pop("lens-first", None)
