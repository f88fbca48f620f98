"""Imports run one way: no module imports a module of a layer above its own.

The layers are those of docs/architecture.md ("Layers"). Every import counts: at the top of a
module, inside a function, and under ``TYPE_CHECKING`` alike, since a type named from a layer
above is the same knot as a call into it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"

#: Lowest first. A name is a package or module under ``ragloom``; the longest match decides.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("errors", "exports", "types", "ids", "tokens", "checks", "plugins", "versions", "access", "httpguard",
                    "demo", "parse", "graph.model")),
    ("settings", ("config", "configfile")),
    ("text", ("load", "chunk", "embed", "context")),
    ("enrichment", ("enrich", "analyse")),
    ("store", ("store", "workspace")),
    ("graph", ("graph",)),
    ("retrieval and writers", ("retrieve", "synthesise")),
    ("wiring", ("components",)),
    ("services", ("query", "ingest", "insights", "writing")),
    ("facade", ("engine",)),
    ("surfaces", ("", "attach", "cli", "server", "mcpserver", "ui", "integrations", "evaluate")),
]


def layer_of(module: str) -> int:
    """The layer of ``ragloom.a.b`` (by its longest listed prefix ``a.b`` or ``a``)."""
    name = module.removeprefix("ragloom").removeprefix(".")
    best, found = -1, -1
    for index, (_, names) in enumerate(LAYERS):
        for prefix in names:
            if (name == prefix or name.startswith(prefix + ".") or prefix == "") and len(prefix) > best:
                best, found = len(prefix), index
    assert found >= 0, f"{module} is in no layer: add it to LAYERS and to docs/architecture.md"
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every ``ragloom`` import in the file, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "ragloom":  # from ragloom import engine: the module, else the package
                names = [f"ragloom.{a.name}" if (SRC / "ragloom" / a.name).exists()
                         or (SRC / "ragloom" / f"{a.name}.py").exists() else "ragloom" for a in node.names]
            found.extend((node.lineno, n) for n in names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
    return [(line, name) for line, name in found if name == "ragloom" or name.startswith("ragloom.")]


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = []
    for path in sorted((SRC / "ragloom").rglob("*.py")):
        here = module_name(path)
        for line, target in imports(path):
            if layer_of(target) > layer_of(here):
                upward.append(f"{path.relative_to(SRC)}:{line} ({LAYERS[layer_of(here)][0]}) imports {target} "
                              f"({LAYERS[layer_of(target)][0]})")
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def test_every_module_has_a_layer() -> None:
    for path in (SRC / "ragloom").rglob("*.py"):
        layer_of(module_name(path))


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_the_architecture_page_names_each_layer(layer: str) -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text[text.index("## Layers"):]
    assert re.search(rf"\*\*{re.escape(layer)}\*\*", section, re.IGNORECASE), layer


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    # The test above is only as good as its reading of imports: every form is seen.
    source = tmp_path / "probe.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ragloom.engine import Engine\n"
                      "def f():\n    import ragloom.cli\n    from ragloom import server\n", encoding="utf-8")
    assert [name for _, name in imports(source)] == ["ragloom.engine", "ragloom.cli", "ragloom.server"]
    assert layer_of("ragloom.graph.model") < layer_of("ragloom.config") < layer_of("ragloom.graph.build")
