"""Runs a Markdown page's ```python examples, in order, in one namespace, so the page stays true
(README.md and docs/architecture.md). Tracebacks name the page and its line."""

from __future__ import annotations

import ast
import re
import sys
import types
from collections.abc import Mapping, Sized
from pathlib import Path
from typing import Any

import pytest

BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_CHECK = "__example_result__"


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """(first line in the page, code) of every ```python block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in BLOCK.finditer(text)]


class _Results(ast.NodeTransformer):
    """Routes what each top-level statement produces (an expression's value, an assignment's
    value, a loop's iterable) through ``__example_result__``, which refuses an empty one."""

    def _wrap(self, node: ast.expr) -> ast.expr:
        call = ast.Call(ast.Name(_CHECK, ast.Load()), [node, ast.Constant(node.lineno)], [])
        return ast.copy_location(call, node)

    def visit_Module(self, node: ast.Module) -> ast.Module:
        for stmt in node.body:
            if isinstance(stmt, ast.Expr) and not _is_print(stmt.value):
                stmt.value = self._wrap(stmt.value)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
                stmt.value = self._wrap(stmt.value)
            elif isinstance(stmt, ast.For):
                stmt.iter = self._wrap(stmt.iter)
        return node


def _is_print(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"


def run_examples(page: Path, name: str, monkeypatch: pytest.MonkeyPatch, *, skip: Mapping[str, str] | None = None,
                 require_results: bool = False) -> dict[str, Any]:
    """Run every example of ``page`` (shown as ``name`` in tracebacks) in one module namespace.

    ``skip`` maps a line of an example, exactly as written (without its comment), to why it is
    left out; a line it names that the page no longer has fails the run, so the list stays
    current. With ``require_results``, a top-level statement that produces an empty sized value
    (no results, no versions, no contradictions) fails: every example must show something.
    """
    skip = dict(skip or {})
    used: set[str] = set()
    module = types.ModuleType(re.sub(r"\W", "_", name))  # dataclasses look their module up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    lines = page.read_text(encoding="utf-8").splitlines()

    def check(value: Any, line: int) -> Any:  # noqa: ANN401 - whatever the example produced
        if isinstance(value, Sized) and not isinstance(value, str | bytes) and len(value) == 0:
            raise AssertionError(f"{name}, line {line}: the example gives nothing: {lines[line - 1].strip()}")
        return value

    module.__dict__[_CHECK] = check
    for first, code in python_blocks(page):
        kept = []
        for line in code.splitlines():
            statement = line.split("  #", 1)[0].strip()
            if statement in skip:
                used.add(statement)
                line = ""  # keeps the line numbers of the rest
            kept.append(line)
        tree = ast.increment_lineno(ast.parse("\n".join(kept), filename=str(page)), first - 1)
        if require_results:
            tree = _Results().visit(tree)
        exec(compile(ast.fix_missing_locations(tree), str(page), "exec"), module.__dict__)  # noqa: S102
    stale = set(skip) - used
    assert not stale, f"{name} no longer has the skipped line(s) {sorted(stale)}: remove them from the skip list"
    return module.__dict__
