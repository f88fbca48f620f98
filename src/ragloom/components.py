"""The wiring of one engine: settings, workspace, store, embedder, chunker, entity extractor.

Built once by :class:`~ragloom.engine.Engine` and handed to the services that do the work
(the ingest pipeline, the query service, graph maintenance, insights), so that none of them
constructs its own. Everything heavy (the store, the embedding model, the gazetteer) is made
on first use.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ragloom.checks import shown
from ragloom.chunk import Chunker, SentenceChunker, chunker_from_settings
from ragloom.config import Settings
from ragloom.context import ContextOptimizer
from ragloom.embed import Embedder, embedder_from_settings, windowed
from ragloom.enrich import PrefixBuilder
from ragloom.enrich.entities import EntityExtractor, load_gazetteer
from ragloom.errors import InvalidParameterError, StoreError
from ragloom.load import load_file, validate_name
from ragloom.load.limits import Limits
from ragloom.parse.doctype import DocTypeRule
from ragloom.store.lance import AnnSettings, LanceStore
from ragloom.store.views import files_gone
from ragloom.types import Document
from ragloom.workspace import Workspace

F = TypeVar("F", bound=Callable[..., Any])


class _HasComponents(Protocol):
    components: Components


def one_commit(method: F) -> F:
    """Make ``method`` (of an object with ``components``) a read operation: every read it makes
    sees one commit, whatever is committed meanwhile (see :meth:`LanceStore.reading`). When a
    writer in another process cleaned that commit's files up meanwhile (it keeps the last few
    commits', see :data:`~ragloom.store.lance.KEEP_COMMITS`), the operation runs again, once,
    on the newest commit."""
    @functools.wraps(method)
    def held(self: _HasComponents, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        store = self.components.store
        outermost = not store.holds_view()
        for attempt in range(2 if outermost else 1):
            try:
                with store.reading():
                    return method(self, *args, **kwargs)
            except (ValueError, RuntimeError, OSError) as exc:
                if attempt or not outermost or not files_gone(exc):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover
    return held  # type: ignore[return-value]


class Components:
    """Everything an engine's services share; cheap to make, heavy parts built lazily."""

    def __init__(self, workspace: Workspace, settings: Settings, *, embedder: Embedder | None = None) -> None:
        self.workspace = workspace
        self.settings = settings
        self._embedder = windowed(embedder) if embedder is not None else None
        #: The embedder given to the engine (None: built from the settings where it is needed,
        #: as each worker of a distributed ingest does).
        self.given_embedder = embedder
        self._store: LanceStore | None = None
        self._lock = threading.Lock()
        #: Set while ``reindex`` runs: an outdated workspace may be opened to be rebuilt.
        self.reindexing = False
        self.prefix = PrefixBuilder(settings.prefix)
        self.doc_rules = tuple(DocTypeRule(r.type, r.filename, r.content, r.lens) for r in settings.doc_types.rules)
        self._extractor: EntityExtractor | None = None

    @cached_property
    def chunker(self) -> Chunker:
        """The configured chunker; built on first use, since loading its tokenizer costs half a
        second that a query does not need."""
        return chunker_from_settings(self.settings.chunking)

    @cached_property
    def sentencer(self) -> SentenceChunker:
        """The sentence index's splitter. It keeps a heading line as an entry of its own: joined
        to the first sentence it moved multi-hop window both@5 from 52 to 48 (issue 26); chunks join it."""
        return SentenceChunker(self.settings.chunking.max_sentence_chars, tokenizer=self.settings.chunking.tokenizer,
                               join_bare=False)

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = embedder_from_settings(self.settings.embedding, self.workspace.cache_path)
            return self._embedder

    @cached_property
    def embedder_name(self) -> str:
        """The embedder's name, without loading a model that is not loaded yet."""
        if self._embedder is not None:
            return self._embedder.name
        return embedder_from_settings(self.settings.embedding.model_copy(update={"cache": False})).name

    @property
    def store(self) -> LanceStore:
        """The workspace's store, moved to the newest commit (every operation starts here)."""
        with self._lock:
            if self._store is None:
                if self.workspace.outdated() and not self.reindexing:
                    raise StoreError(
                        f"the workspace {self.workspace} was written by an older ragloom (format "
                        f"{(self.workspace.manifest() or {}).get('format', 1)}); run 'ragloom reindex' to rebuild it"
                    )
                w, r = self.settings.workspace, self.settings.retrieval
                self._store = LanceStore(self.workspace.store_location, lock_timeout=w.lock_timeout,
                                         version_retention=w.version_retention,
                                         ann=AnnSettings(r.ann_min_rows, r.ann_index, r.ann_nprobes, r.ann_refine_factor))
            store = self._store
        store.snapshot()
        return store

    @cached_property
    def optimizer(self) -> ContextOptimizer:
        """The context optimiser, its settings and tokenizer checked once."""
        return ContextOptimizer(self.settings.context_optimization, tokenizer=self.settings.chunking.tokenizer)

    @property
    def extractor(self) -> EntityExtractor:
        """Entity extraction with the workspace's gazetteer (``entities.toml`` or ``.yaml``)."""
        if self._extractor is None:
            s = self.settings.entities
            self._extractor = EntityExtractor(load_gazetteer(self.workspace.path, s.gazetteer),
                                              types=s.types, candidates=s.candidates)
        return self._extractor

    def reload_extractor(self) -> None:
        """Read the gazetteer again on next use (it may have changed)."""
        self._extractor = None

    def tenant(self, tenant: str | None) -> str:
        return validate_name("tenant", tenant or self.settings.tenant)

    def check_lenses(self, tenant: str, lenses: Iterable[str] | None, *, as_of: datetime | None = None) -> None:
        """Raise when a lens asked for has no chunks in the workspace (at ``as_of``), naming the
        lenses it has: a filter on a misspelt lens is a mistake to report, not an empty answer."""
        asked = list(lenses or ())
        if not asked:
            return
        present = self.store.lenses(tenant, as_of=as_of)
        unknown = [lens for lens in asked if lens not in present]
        if not unknown:
            return
        when = f" at {as_of.isoformat()}" if as_of is not None else ""
        names = ", ".join(shown(lens) for lens in unknown)
        if not present:
            raise InvalidParameterError(
                f"lens {names}: the workspace {self.workspace} (tenant {tenant!r}) has no documents{when}; "
                "ingest some with 'ragloom ingest PATH --lens NAME'")
        raise InvalidParameterError(
            f"the workspace {self.workspace} (tenant {tenant!r}) has no lens {names}{when}; "
            f"its lenses are: {', '.join(sorted(present))}")

    def lens_order(self, tenant: str) -> list[str]:
        """The workspace's lenses by authority: those ``graph.authority`` names first, in its
        order, then the others in the order they were first ingested. A lens the workspace does
        not have is never in it."""
        present = self.store.lens_order(tenant)
        named = [lens for lens in self.settings.graph.authority if lens in present]
        return named + [lens for lens in present if lens not in named]

    def load(self, path: str | Path, *, lens: str = "default", tenant: str | None = None,
             data: bytes | None = None) -> Document:
        """One file as a :class:`~ragloom.types.Document` (raises a :class:`~ragloom.errors.LoadError`)."""
        return load_file(path, lens=lens, tenant=self.tenant(tenant), data=data,
                         limits=Limits.from_settings(self.settings.ingest), doc_type_rules=self.doc_rules,
                         default_doc_type=self.settings.doc_types.default).document

    def record(self) -> None:
        """Write how the index was built into the workspace manifest."""
        # An ingest that embedded nothing (every file unchanged) has not loaded the model, and
        # need not load it to learn its dimension: the stored vectors have it.
        dim = self._embedder.dim if self._embedder is not None else self.store.dim
        self.workspace.record(self.settings, embedder=self.embedder_name,
                              dim=dim if dim is not None else self.embedder.dim)

    def warnings(self) -> list[str]:
        """Why the index does not match the current settings, if it does not."""
        warning = self.workspace.mismatch_warning(self.settings, embedder=self.embedder_name)
        return [warning] if warning else []
