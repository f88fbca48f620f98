"""Registries of named plugins: chunkers, retrieval modes, embedders, writers.

Each registry is filled explicitly: the built-ins by a loader function named when the registry
is made, other packages through an entry-point group, both on first lookup (not as a side
effect of importing a module). A package adds a chunker by declaring, in its pyproject::

    [project.entry-points."ragloom.chunkers"]
    paragraph = "my_package.chunking:ParagraphChunker"

and ``get_chunker("paragraph")`` finds it. Error messages list the valid names from the
registry itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from ragloom.errors import ConfigError, UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Names to plugins of one kind (``kind`` names it in messages: "chunking strategy")."""

    def __init__(self, kind: str, group: str, builtins: Callable[[], Mapping[str, T]]) -> None:
        self.kind = kind
        self.group = group
        self._builtins = builtins
        self._items: dict[str, T] = {}
        self._loaded = False
        self._lock = threading.Lock()

    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            found = dict(self._builtins())
            for ep in entry_points(group=self.group):
                if ep.name in found:
                    continue  # a built-in name is never shadowed by an installed package
                try:
                    found[ep.name] = ep.load()
                except Exception as exc:  # an installed plugin that cannot import: say which
                    raise ConfigError(
                        f"the {self.kind} plugin {ep.name!r} ({ep.value}, entry point group {self.group!r}) "
                        f"failed to load: {type(exc).__name__}: {exc}; fix or uninstall the package that provides it"
                    ) from exc
            found.update(self._items)  # registered in code before the first lookup
            self._items = found
            self._loaded = True

    def register(self, name: str, item: T) -> T:
        """Add (or replace) ``name``; returns ``item`` so it can decorate a class or function."""
        self._load()
        with self._lock:
            self._items[name] = item
        return item

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self._items) from None

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
