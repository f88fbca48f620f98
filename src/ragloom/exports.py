"""A package's public names, imported when first used (PEP 562).

``import ragloom`` used to load the engine, the store, networkx and pydantic (0.56 s) before the
command line could print ``--help`` or hand a question to a running server. A package lists its
names by the module that defines them; ``from ragloom import Engine`` imports the engine then,
and a type checker reads the same names from the package's ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy(namespace: dict[str, Any], modules: Mapping[str, Sequence[str]]) -> tuple[
        Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the package whose globals are ``namespace``:
    ``modules`` maps a module to the names it gives the package. A name is imported once, on
    first use, and kept in the package like an ordinary import."""
    where = {name: module for module, names in modules.items() for name in names}
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:  # noqa: ANN401 - whatever the module defines
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
