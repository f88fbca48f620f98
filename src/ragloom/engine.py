"""The facade: one workspace, one set of settings, one embedder, and every operation on them.

The CLI and the UI call this and nothing else. It wires the shared components once and
delegates each job to the service that does it:

- :class:`~ragloom.ingest.IngestPipeline`: ingest, add_documents, reindex (the stages);
- :class:`~ragloom.query.QueryService`: query and optimise (modes, typed options, post-stages);
- :class:`~ragloom.graph.maintain.GraphMaintainer`: build, update and load the context graph;
- :class:`~ragloom.insights.Insights`: contradictions, back-references, entities, quality;
- :class:`~ragloom.writing.Writing`: cited answers (ask) and the synthesis report (generate).
"""

from __future__ import annotations

import warnings as _warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragloom.analyse.contradictions import Contradiction
from ragloom.analyse.decisions import Decision
from ragloom.chunk.preset import PresetSpan
from ragloom.components import Components, one_commit
from ragloom.config import Settings
from ragloom.context import OptimizedContext
from ragloom.embed import Embedder
from ragloom.enrich.backrefs import BackReference
from ragloom.enrich.entities import EntityExtractor, EntityMention
from ragloom.errors import InvalidParameterError, WorkspaceMismatchWarning, caller_level
from ragloom.graph.maintain import GraphMaintainer
from ragloom.ingest import IngestPipeline, IngestReport, Progress
from ragloom.insights import Insights
from ragloom.load import document_id
from ragloom.query import Query, QueryResult, QueryService, parse_time
from ragloom.store.lance import LanceStore
from ragloom.synthesise import Report, Writer
from ragloom.types import Chunk, Document, ScoredChunk, Section
from ragloom.workspace import Workspace
from ragloom.writing import DEFAULT_TITLE, AskResult, Writing

if TYPE_CHECKING:
    from ragloom.graph.view import ContextGraph  # networkx, loaded by the queries that walk the graph

__all__ = ["Engine", "IngestReport", "Progress", "QueryResult", "parse_time"]

class Engine:
    """One workspace, one set of settings, one embedder.

    ``embedder`` defaults to the one the settings name (the local all-MiniLM-L6-v2), loaded on
    first use; pass any object with ``name``, ``dim``, ``embed(texts)`` and
    ``embed_query(text)`` to use it instead (long texts are windowed when it declares
    ``max_tokens``). ``settings``: see :meth:`Settings.given <ragloom.config.Settings.given>`.
    """

    def __init__(self, workspace: str | Path | Workspace | None = None, *, settings: Settings | Mapping[str, Any]
                 | None = None, embedder: Embedder | None = None, config_file: str | Path | None = None) -> None:
        space = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self.components = Components(space, Settings.given(settings, space.path, config_file=config_file),
                                     embedder=embedder)
        #: The ingest stages, in order: insert your own with ``engine.pipeline.insert(stage, after="parse")``.
        self.pipeline = IngestPipeline(self.components)
        #: Queries; ``engine.queries.post_stages`` is the list run after retrieval.
        self.queries = QueryService(self.components)
        self.graphs = GraphMaintainer(self.components)
        self.insights = Insights(self.components, self.queries)
        self.writing = Writing(self.components, self.queries, self.insights, self.graphs.view)
        self._warned: set[str] = set()

    # -- components ----------------------------------------------------------------------------

    @property
    def workspace(self) -> Workspace:
        return self.components.workspace

    @property
    def settings(self) -> Settings:
        return self.components.settings

    @property
    def embedder(self) -> Embedder:
        return self.components.embedder

    @property
    def store(self) -> LanceStore:
        """The workspace's store, reading the newest commit."""
        return self.components.store

    @property
    def extractor(self) -> EntityExtractor:
        return self.components.extractor

    @property
    def warnings(self) -> list[str]:
        """Why the index does not match the current settings, if it does not."""
        return self.components.warnings()

    def _warn(self) -> list[str]:
        """The current warnings, each raised once per engine as a Python warning (the CLI prints them)."""
        found = self.warnings
        for w in found:
            if w not in self._warned:
                self._warned.add(w)
                _warnings.warn(w, WorkspaceMismatchWarning, stacklevel=caller_level())
        return found

    # -- documents to chunks, without the store --------------------------------------------------

    def load(self, path: str | Path, *, lens: str = "default", tenant: str | None = None,
             data: bytes | None = None) -> Document:
        """One file as a :class:`~ragloom.types.Document` (raises a :class:`~ragloom.errors.LoadError`)."""
        return self.components.load(path, lens=lens, tenant=tenant, data=data)

    def mentions(self, document: Document) -> list[EntityMention]:
        """The entity mentions of a document (none when entity extraction is off)."""
        return self.extractor(document.text) if self.settings.entities.enabled else []

    def chunk_document(self, document: Document, *, strategy: str | None = None,
                       mentions: Sequence[EntityMention] | None = None, spans: Sequence[PresetSpan] | None = None,
                       sections: Sequence[Section] | None = None) -> list[Chunk]:
        """Sections, chunks and enrichment (prefix, hash, ids) for one document: the parse,
        chunk and enrich stages of ingest. ``spans`` replace the chunker with chunks decided
        elsewhere; ``mentions`` and ``sections``, when given, are not computed again."""
        return self.pipeline.chunk_document(document, strategy=strategy, mentions=mentions, spans=spans,
                                            sections=sections)

    def chunk_file(self, path: str | Path, *, strategy: str | None = None,
                   lens: str = "default") -> tuple[Document, list[Chunk]]:
        """Load and chunk one file without touching the store."""
        return (document := self.load(path, lens=lens)), self.chunk_document(document, strategy=strategy)

    # -- writes ----------------------------------------------------------------------------------

    def ingest(self, paths: str | Path | Iterable[str | Path], *, lens: str, tenant: str | None = None,
               sync: bool = False, progress: Progress | None = None, runner: str = "local",
               address: str | None = None, workers: int | None = None, within: Sequence[str | Path] | None = None
               ) -> IngestReport:
        """Read every supported file under ``paths`` into the store under ``lens``.

        Unchanged files (same bytes, same lens, every chunk present) are skipped before
        parsing. Changed files get a new version whose unchanged chunks keep their vectors. A
        file that fails is reported and skipped; the others land. With ``sync``, documents of
        this lens under the given folders whose files are gone are marked deleted. Another
        writer of the workspace is waited for (``workspace.lock_timeout``).

        ``runner="ray"`` runs the same stages on Ray (``pip install 'ragloom[distributed]'``):
        on the cluster at ``address``, else on a local Ray started for the call, with
        ``workers`` embedding actors (:mod:`ragloom.ingest.distributed`). ``within``: files whose
        real paths lie outside those folders are reported, never read."""
        from ragloom.ingest.distributed import runner as runner_named

        self._warn()
        return self.pipeline.ingest(paths, lens=lens, tenant=tenant, sync=sync, progress=progress, within=within,
                                    runner=runner_named(runner, address=address, workers=workers))

    def add_documents(self, documents: Sequence[Document], *, spans: Mapping[str, Sequence[PresetSpan]] | None = None,
                      progress: Progress | None = None) -> IngestReport:
        """Ingest documents built in code rather than read from files (each carries its lens and
        tenant). ``spans`` maps a document id to the chunk spans to use instead of the chunker.
        A document whose text and lens are unchanged is skipped."""
        return self.pipeline.add_documents(documents, spans=spans, progress=progress)

    def reindex(self, *, progress: Progress | None = None) -> IngestReport:
        """Rebuild every chunk, sentence and mention of every tenant from the stored document
        versions with the current settings. History is kept: each version is replayed over its
        own interval, so as-of queries see what they saw before, chunked the new way."""
        return self.pipeline.reindex(progress=progress)

    def delete(self, documents: str | Path | Iterable[str | Path], *, tenant: str | None = None) -> int:
        """Mark documents deleted (file paths, folders: all under them, or ids); history is kept."""
        items = [documents] if isinstance(documents, str | Path) else list(documents)
        return self.pipeline.delete([str(d) for d in items], tenant=tenant)

    def clear(self, *, lens: str | None = None, tenant: str | None = None) -> int:
        """Delete the tenant's documents (of one lens, if given) with all their versions."""
        return self.pipeline.clear(lens=lens, tenant=tenant)

    def build_graph(self, *, tenant: str | None = None) -> int:
        """Rebuild the tenant's context graph from its current chunks; returns the edge count."""
        return self.graphs.build(self.components.tenant(tenant))

    # -- reads -----------------------------------------------------------------------------------

    @one_commit
    def query(self, query: Query | str, /, **given: Any) -> QueryResult:  # noqa: ANN401
        """Retrieve the best chunks for a :class:`~ragloom.query.request.Query`, or for its text
        with the request's fields and the mode's options as keywords
        (``engine.query("When does it ship?", k=5, mode="dynamic", threshold=0.7)``).

        ``k``: ``retrieval.k`` when not given, whatever the mode (``context_optimization.candidates``
        to choose from when the query optimises a context). Two times, two meanings: ``as_of`` is
        a moment of the workspace's own history (what had been ingested by then, each document in
        the version it had then); ``dated_from`` and ``dated_to`` keep the documents whose own date
        (front matter ``date:``, or a date in the file name) lies in that range, both ends included.
        A keyword that is not a field is the mode's own option (an option the mode does not have
        is an error naming the valid ones). With ``budget`` (tokens), ``organize`` or ``optimize``,
        the result also carries the optimised context window (:attr:`QueryResult.context`).
        """
        request = self.queries.request(query, **given)
        result = self.queries.run(request)
        self._warn()
        return result

    @one_commit
    def optimize(self, results: Sequence[ScoredChunk], query: str, *, budget: int | None = None,
                 organize: str | None = None, tenant: str | None = None) -> OptimizedContext:
        """The optimised context window for retrieved ``results`` (see :mod:`ragloom.context`)."""
        return self.queries.optimize(results, query, budget=budget, organize=organize, tenant=tenant)

    @one_commit
    def graph(self, *, tenant: str | None = None) -> ContextGraph:
        """The tenant's context graph as a networkx view (read once per commit); read-only."""
        return self.graphs.view(self.components.tenant(tenant))

    @one_commit
    def contradictions(self, *, topic: str | None = None, tenant: str | None = None, limit: int | None = 20,
                       lenses: Sequence[str] | None = None) -> list[Contradiction]:
        """Concrete conflicts between lenses: the whole workspace, or the chunks about ``topic``."""
        return self.insights.contradictions(topic=topic, tenant=tenant, limit=limit, lenses=lenses)

    @one_commit
    def lenses(self, *, tenant: str | None = None) -> list[str]:
        """The workspace's lenses, by authority (``graph.authority``, then the order first ingested)."""
        return self.components.lens_order(self.components.tenant(tenant))

    @one_commit
    def decisions(self, *, since: date | str | None = None, tenant: str | None = None,
                  lenses: Sequence[str] | None = None, limit: int | None = None) -> list[Decision]:
        """Decisions, votes, approvals and commitments the documents record, newest first."""
        return self.insights.decisions(since=since, tenant=tenant, lenses=lenses, limit=limit)

    @one_commit
    def back_references(self, chunk_id: str, *, tenant: str | None = None, as_of: datetime | str | None = None,
                        limit: int | None = None) -> list[BackReference]:
        """For each entity the chunk mentions, up to ``limit`` other chunks that mention it."""
        return self.insights.back_references(chunk_id, tenant=tenant, as_of=as_of, limit=limit)

    @one_commit
    def entities(self, *, tenant: str | None = None, lens: str | None = None, type: str | None = None,  # noqa: A002
                 as_of: datetime | None = None) -> list[dict[str, Any]]:
        """Every entity mentioned in the tenant's current documents, most mentioned first."""
        return self.insights.entities(tenant=tenant, lens=lens, type=type, as_of=as_of)

    @one_commit
    def quality(self, *, tenant: str | None = None, lens: str | None = None, worst: int = 10) -> dict[str, Any]:
        """The distribution of chunk quality scores and the worst chunks with their issues."""
        return self.insights.quality(tenant=tenant, lens=lens, worst=worst)

    # -- writing -------------------------------------------------------------------------------

    @one_commit
    def ask(self, question: Query | str, /, *, writer: Writer | None = None,
            on_text: Callable[[str], None] | None = None, **given: Any) -> AskResult:  # noqa: ANN401
        """An answer citing its sources as [n], citations checked; ``on_text`` receives it as
        written. ``question`` and ``given`` are a request as :meth:`query` takes it."""
        return self.writing.ask(Query.build(question, **given), writer=writer, on_text=on_text)

    @one_commit
    def generate(self, *, context: str | None = "", queries: Sequence[str] | None = None, title: str | None = None,
                 tenant: str | None = None, lenses: Sequence[str] | None = None, as_of: datetime | str | None = None,
                 budget: int | None = None, writer: Writer | None = None, out: str | Path | None = None,
                 progress: Callable[[str, int, int], None] | None = None,
                 on_text: Callable[[str], None] | None = None) -> Report:
        """The synthesis report, saved under ``reports/`` and at ``out``; see :mod:`ragloom.writing`."""
        return self.writing.generate(context=context, queries=queries, title=title or DEFAULT_TITLE, tenant=tenant,
                                     lenses=lenses, as_of=as_of, budget=budget, writer=writer, out=out,
                                     progress=progress, on_text=on_text)

    # -- administration --------------------------------------------------------------------------

    @one_commit
    def stats(self, *, tenant: str | None = None) -> dict[str, Any]:
        tenant = self.components.tenant(tenant)
        manifest = self.workspace.manifest() or {}
        signature = manifest.get("signature") or {}
        return {"workspace": str(self.workspace), "tenant": tenant, **self.store.stats(tenant),
                "embedder": manifest.get("embedder"), "embedded_text": signature.get("embedding", {}).get("embed_text"),
                "chunking": signature.get("chunking"), "warnings": self._warn()}

    @one_commit
    def history(self, path: str | Path, *, tenant: str | None = None) -> list[dict[str, Any]]:
        """Every version of the document at ``path``, oldest first."""
        tenant = self.components.tenant(tenant)
        try:
            source = Path(path).resolve().as_posix()
        except (OSError, ValueError, RuntimeError, TypeError) as exc:  # a NUL in the path, a symlink loop, None
            raise InvalidParameterError(f"history: the path {str(path)[:200]!r} cannot be resolved ({exc}); "
                                        "give the path of an ingested file") from None
        return self.store.history(tenant, document_id(tenant, source))
