"""The facade: ``ingest``, ``chunk_file``, ``query``, ``stats``, ``clear``, ``reindex``, ``history``.

The CLI and the UI call this and nothing else. Everything here composes the pure stages
(load, parse, chunk, enrich, embed, store, retrieve); only this module decides when to write.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ragloom import ingest as plan
from ragloom.analyse.contradictions import (
    Contradiction,
    detect_contradictions,
    sentences_with_claims,
)
from ragloom.chunk import Chunker, SentenceChunker, chunker_from_settings
from ragloom.chunk.preset import PresetChunker, PresetSpan
from ragloom.config import Settings
from ragloom.context import OptimizedContext, optimize_context
from ragloom.context.relate import SKIPPED_GRAPH_TYPES
from ragloom.embed import Embedder, HashingEmbedder, embedder_from_settings
from ragloom.enrich import PrefixBuilder, content_hash, enrich_chunks
from ragloom.enrich.backrefs import BackReference, back_references
from ragloom.enrich.entities import EntityExtractor, EntityMention, load_gazetteer
from ragloom.enrich.keyterms import extract_key_terms
from ragloom.enrich.quality import SizeModel
from ragloom.enrich.search_text import search_text
from ragloom.enrich.timeref import UNRESOLVED, extract_time_refs, time_labels
from ragloom.errors import (
    InvalidParameterError,
    LoadError,
    RagloomError,
    StoreError,
    UnknownChunkError,
    WorkspaceMismatchWarning,
)
from ragloom.graph import (
    ContextGraph,
    GraphNode,
    build_edges,
    edge_rows,
    edges_from_rows,
    term_counts,
    update_edges,
)
from ragloom.load import document_id, file_hash, iter_files, load_document, validate_name
from ragloom.parse.doctype import DocTypeRule, infer_doc_type
from ragloom.parse.sections import parse_sections
from ragloom.retrieve import SearchRequest, get_mode
from ragloom.retrieve.base import age_decay
from ragloom.store.lance import LanceStore
from ragloom.types import Chunk, Document, ScoredChunk, Section
from ragloom.versions import DELETE
from ragloom.workspace import Workspace


class Progress:
    """Receives progress from long operations; the CLI draws bars, the default ignores it."""

    def stage(self, name: str, total: int | None) -> None:
        """A stage starts (``total`` units of work, if known)."""

    def advance(self, name: str, amount: int = 1) -> None:
        """``amount`` units of ``name`` are done."""

    def message(self, text: str) -> None:
        """Something worth a line of its own (a skipped file, for example)."""


@dataclass
class IngestReport:
    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    sentences_written: int = 0
    mentions_written: int = 0
    relationships: int = 0  # context-graph edges added or recomputed
    timings: dict[str, float] = field(default_factory=lambda: {"load": 0.0, "chunk": 0.0, "embed": 0.0, "store": 0.0})
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__} | {"ok": self.ok}


@dataclass
class QueryResult:
    query: str
    mode: str
    results: list[ScoredChunk]
    tenant: str
    as_of: datetime | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: The optimised context window, when the query asked for one (a budget or an organisation).
    context: OptimizedContext | None = None
    #: Seconds per stage of the query ("embed query", "vector search", "expand", "optimise", ...).
    timings: dict[str, float] = field(default_factory=dict)

    def __iter__(self):  # noqa: ANN204
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> ScoredChunk:
        return self.results[index]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "tenant": self.tenant,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "results": [r.to_dict() for r in self.results],
            "notes": self.notes,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 4),
            "timings": {stage: round(t, 4) for stage, t in self.timings.items()},
            "context": self.context.to_dict() if self.context is not None else None,
        }


class Engine:
    """One workspace, one set of settings, one embedder.

    ``embedder`` defaults to the one the settings name (the local all-MiniLM-L6-v2), loaded on
    first use; pass another :class:`~ragloom.embed.Embedder` to use it instead.
    """

    def __init__(self, workspace: str | Path | None = None, *, settings: Settings | None = None,
                 embedder: Embedder | None = None, config_file: str | Path | None = None) -> None:
        self.workspace = Workspace(workspace)
        self.settings = settings or Settings.load(self.workspace.path, config_file=config_file)
        self._embedder = embedder
        self._store: LanceStore | None = None
        self._reindexing = False
        self._extractor: EntityExtractor | None = None
        self._prefix = PrefixBuilder(self.settings.prefix)
        self._chunker = chunker_from_settings(self.settings.chunking)
        self._sentencer = SentenceChunker(self.settings.chunking.max_sentence_chars,
                                          tokenizer=self.settings.chunking.tokenizer)
        rules = self.settings.doc_types.rules
        self._doc_rules = tuple(DocTypeRule(r.type, r.filename, r.content, r.lens) for r in rules)

    # -- components ----------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = embedder_from_settings(self.settings.embedding, self.workspace.cache_path)
        return self._embedder

    @property
    def store(self) -> LanceStore:
        if self._store is None:
            if self.workspace.outdated() and not self._reindexing:
                raise StoreError(
                    f"the workspace {self.workspace.path} was written by an older ragloom (format "
                    f"{self.workspace.manifest().get('format', 1)}); run 'ragloom reindex' to rebuild it"  # type: ignore[union-attr]
                )
            self._store = LanceStore(self.workspace.store_path)
            self._store.repair()
        return self._store

    @property
    def extractor(self) -> EntityExtractor:
        """Entity extraction with the workspace's gazetteer (``entities.toml`` or ``.yaml``)."""
        if self._extractor is None:
            s = self.settings.entities
            self._extractor = EntityExtractor(load_gazetteer(self.workspace.path, s.gazetteer),
                                              types=s.types, candidates=s.candidates)
        return self._extractor

    def _embedder_name(self) -> str:
        return self._embedder.name if self._embedder is not None else embedder_from_settings(
            self.settings.embedding.model_copy(update={"cache": False})
        ).name

    @property
    def warnings(self) -> list[str]:
        """Why the index does not match the current settings, if it does not."""
        warning = self.workspace.mismatch_warning(self.settings, embedder=self._embedder_name())
        return [warning] if warning else []

    def _warn(self) -> list[str]:
        found = self.warnings
        for w in found:
            warnings.warn(w, WorkspaceMismatchWarning, stacklevel=3)
        return found

    def _tenant(self, tenant: str | None) -> str:
        return validate_name("tenant", tenant or self.settings.tenant)

    # -- documents to chunks -------------------------------------------------------------------

    def load(self, path: str | Path, *, lens: str = "default", tenant: str | None = None,
             data: bytes | None = None) -> Document:
        """One file as a :class:`~ragloom.types.Document` (raises a :class:`~ragloom.errors.LoadError`)."""
        return load_document(
            path, lens=lens, tenant=self._tenant(tenant), data=data,
            max_bytes=int(self.settings.ingest.max_file_mb * 1024 * 1024),
            doc_type_rules=self._doc_rules, default_doc_type=self.settings.doc_types.default,
        )

    def mentions(self, document: Document) -> list[EntityMention]:
        """The entity mentions of a document (none when entity extraction is off)."""
        return self.extractor(document.text) if self.settings.entities.enabled else []

    def chunk_document(self, document: Document, *, strategy: str | None = None,
                       mentions: Sequence[EntityMention] | None = None,
                       spans: Sequence[PresetSpan] | None = None,
                       sections: Sequence[Section] | None = None) -> list[Chunk]:
        """Sections, chunks and enrichment (prefix, hash, ids) for one document.

        Entity mentions are protected spans: the ``boundary`` strategy never cuts through one.
        ``spans`` (start, end, section path) replace the chunker with chunks decided elsewhere;
        ``sections``, when the caller has parsed them already, save parsing again.
        """
        if spans is not None:
            chunker: Chunker = PresetChunker(spans, tokenizer=self.settings.chunking.tokenizer)
        else:
            chunker = self._chunker if strategy is None else chunker_from_settings(self.settings.chunking, strategy)
        if mentions is None:
            mentions = self.mentions(document)
        protected = [(m.start, m.end) for m in mentions] if self.settings.entities.protect_mentions else []
        if sections is None:
            sections = parse_sections(document.text)
        chunks = chunker.chunk(document.text, sections, protected=protected)
        return enrich_chunks(document, chunks, self._prefix)

    def sentences(self, document: Document, mentions: Sequence[EntityMention] = (),
                  sections: Sequence[Section] | None = None) -> list[Chunk]:
        """The sentence nodes of a document (no prefix: a sentence is embedded as it stands)."""
        protected = [(m.start, m.end) for m in mentions]
        if sections is None:
            sections = parse_sections(document.text)
        nodes = self._sentencer.chunk(document.text, sections, protected=protected)
        return enrich_chunks(document, nodes, None)

    def chunk_file(self, path: str | Path, *, strategy: str | None = None, lens: str = "default") -> tuple[Document, list[Chunk]]:
        """Load and chunk one file without touching the store."""
        document = self.load(path, lens=lens)
        return document, self.chunk_document(document, strategy=strategy)

    def embedded_text(self, chunk: Chunk) -> str:
        return chunk.contextualized_text if self.settings.embedding.embed_text == "contextual" else chunk.text

    def _size_model(self) -> SizeModel:
        c = self.settings.chunking
        if self._chunker.name == "token":
            return SizeModel("tokens", c.chunk_size, max(1, c.chunk_size // 4), c.chunk_size)
        if self._chunker.name == "boundary":
            return SizeModel("chars", c.target_size, c.min_size, c.max_size)
        return SizeModel("chars", 120, 20, c.max_sentence_chars)

    def _overlap(self) -> int:
        c = self.settings.chunking
        return {"token": c.chunk_overlap, "boundary": c.overlap_chars}.get(self._chunker.name, 0)

    # -- ingest --------------------------------------------------------------------------------

    def ingest(self, paths: str | Path | Iterable[str | Path], *, lens: str, tenant: str | None = None,
               sync: bool = False, progress: Progress | None = None) -> IngestReport:
        """Read every supported file under ``paths`` into the store under ``lens``.

        Unchanged files (same bytes, same lens) are skipped before parsing. Changed files get a
        new version whose unchanged chunks keep their vectors. A file that fails is reported
        and skipped; the others land. With ``sync``, documents of this lens under the given
        folders whose files are gone are marked deleted.
        """
        started = time.perf_counter()
        progress = progress or Progress()
        lens = validate_name("lens", lens)
        tenant = self._tenant(tenant)
        paths = [paths] if isinstance(paths, str | Path) else list(paths)
        report = IngestReport()
        self._warn()
        store = self.store
        current = {row["document_id"]: row for row in store.documents(tenant)}
        files = list(iter_files(paths, extensions=self.settings.ingest.extensions,
                                include_hidden=self.settings.ingest.include_hidden))
        report.files = len(files)
        at = datetime.now(UTC)  # one moment for the whole run: its versions appear together
        progress.stage("Reading", len(files))
        pending = self._pending(report, progress)
        for path in files:
            t0 = time.perf_counter()
            try:
                source = path.resolve().as_posix()
                previous = current.get(document_id(tenant, source))
                data = path.read_bytes() if path.is_file() else None
                if previous is not None and data is not None and previous["file_hash"] == file_hash(data) \
                        and previous["lens"] == lens:
                    report.unchanged += 1
                    continue
                document = self.load(path, lens=lens, tenant=tenant, data=data)
                report.timings["load"] += time.perf_counter() - t0
                t1 = time.perf_counter()
                prepared = self._prepare(document, previous, at)
                report.timings["chunk"] += time.perf_counter() - t1
                pending.add(prepared)
            except (LoadError, OSError) as exc:
                message = str(exc) if isinstance(exc, LoadError) else f"{path}: {exc}"
                report.failed.append((str(path), message))
                progress.message(message)
            except RagloomError as exc:
                report.failed.append((str(path), f"{path}: {exc}"))
                progress.message(f"{path}: {exc}")
            finally:
                progress.advance("Reading")
        changes = pending.drain()
        if sync:
            report.deleted = self._sync(paths, files, lens, tenant, current, at, changes)
        if changes and self.settings.graph.enabled:
            t0 = time.perf_counter()
            report.relationships = self._update_graph(tenant, changes)
            report.timings["graph"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        if report.added or report.updated or report.deleted:
            store.optimize()
        report.timings["store"] += time.perf_counter() - t0
        if store.has_table("chunks"):
            self.workspace.record(self.settings, embedder=self.embedder.name, dim=self.embedder.dim)
        report.seconds = time.perf_counter() - started
        return report

    def add_documents(self, documents: Sequence[Document], *, spans: Mapping[str, Sequence[PresetSpan]] | None = None,
                      progress: Progress | None = None) -> IngestReport:
        """Ingest documents built in code rather than read from files (each carries its lens and
        tenant). ``spans`` maps a document id to the chunk spans to use instead of the chunker.
        A document whose text and lens are unchanged is skipped."""
        started = time.perf_counter()
        progress = progress or Progress()
        report = IngestReport(files=len(documents))
        at = datetime.now(UTC)
        by_tenant: dict[str, dict[str, Mapping[str, Any]]] = {}
        pending = self._pending(report, progress)
        progress.stage("Reading", len(documents))
        for document in documents:
            validate_name("lens", document.lens)
            tenant = self._tenant(document.tenant)
            if tenant not in by_tenant:
                by_tenant[tenant] = {r["document_id"]: r for r in self.store.documents(tenant)}
            previous = by_tenant[tenant].get(document.document_id)
            if previous is not None and previous["content_hash"] == content_hash(document.text) \
                    and previous["lens"] == document.lens:
                report.unchanged += 1
            else:
                pending.add(self._prepare(document, previous, at, spans=(spans or {}).get(document.document_id)))
            progress.advance("Reading")
        changes = pending.drain()
        if changes and self.settings.graph.enabled:
            for tenant in by_tenant:
                report.relationships += self._update_graph(tenant, changes)
        if self.store.has_table("chunks"):
            self.store.optimize()
            self.workspace.record(self.settings, embedder=self.embedder.name, dim=self.embedder.dim)
        report.seconds = time.perf_counter() - started
        return report

    def _prepare(self, document: Document, previous: Mapping[str, Any] | None, at: datetime,
                 version: str | None = None, spans: Sequence[PresetSpan] | None = None) -> plan.Prepared:
        """Chunk, sentence-split and find the entities of a document, then plan its rows."""
        version = version or plan.new_id()
        mentions = self.mentions(document)
        sections = parse_sections(document.text)
        tracks = {plan.CHUNKS: self.chunk_document(document, mentions=mentions, spans=spans, sections=sections)}
        if self.settings.sentences.enabled:
            tracks[plan.SENTENCES] = self.sentences(document, mentions, sections)
        planned = {}
        for kind, chunks in tracks.items():
            old = self.store.chunks(document.tenant, document_ids=[document.document_id], with_vectors=True,
                                    table=kind) if previous is not None else []
            embed = self.embedded_text if kind == plan.CHUNKS else (lambda c: c.text)
            planned[kind] = plan.plan_track(kind, document.document_id, version, chunks, old, embed)
        return plan.Prepared(document, previous, at, version, planned, mentions)

    def _pending(self, report: IngestReport, progress: Progress) -> _Pending:
        return _Pending(lambda batch: self._flush(batch, report, progress), self.settings.ingest.batch_chunks)

    def _flush(self, pending: Sequence[plan.Prepared], report: IngestReport, progress: Progress) -> _GraphChanges:
        """Embed what needs embedding for ``pending`` documents, then write them in one go;
        returns the chunks that changed, for the graph."""
        changes = _GraphChanges()
        if not pending:
            return changes
        t0 = time.perf_counter()
        jobs = [(p, track, i) for p in pending for track in p.tracks.values() for i in track.needs_vector()]
        reused = sum(len(t.vectors) for p in pending for t in p.tracks.values())
        if jobs:
            progress.stage("Embedding", len(jobs))
            try:
                vectors = self.embedder.embed([t.embedded[i] for _, t, i in jobs],
                                              progress=lambda n: progress.advance("Embedding", n))
            except RagloomError as exc:
                for p in pending:
                    report.failed.append((p.document.source_path, f"{p.document.source_path}: {exc}"))
                return changes
            for (_, track, i), vector in zip(jobs, vectors, strict=True):
                track.vectors[i] = vector
        report.timings["embed"] += time.perf_counter() - t0
        report.chunks_embedded += sum(1 for _, t, _ in jobs if t.kind == plan.CHUNKS)
        report.chunks_reused += reused
        t1 = time.perf_counter()
        rows: dict[str, list[dict[str, Any]]] = {"documents": [], plan.CHUNKS: [], plan.SENTENCES: [], "mentions": []}
        close: dict[str, list[str]] = {"documents": [], plan.CHUNKS: [], plan.SENTENCES: []}
        close_mentions: list[str] = []
        for prepared in pending:
            self._add_rows(prepared, rows, close)
            if prepared.previous is not None:
                close_mentions.append(prepared.previous["version_id"])
            if prepared.previous is None:
                report.added += 1
            else:
                report.updated += 1
        self.store.write(rows=rows, close=close, close_mentions_of=close_mentions,
                         at=max(p.at for p in pending), dim=self.embedder.dim)
        report.chunks_written += len(rows[plan.CHUNKS])
        report.sentences_written += len(rows[plan.SENTENCES])
        report.mentions_written += len(rows["mentions"])
        report.timings["store"] += time.perf_counter() - t1
        for prepared in pending:
            track = prepared.tracks[plan.CHUNKS]
            for i, p in enumerate(track.plans):
                if not track.keep[i]:
                    changes.changed.add(p.chunk.chunk_id)
                    if p.previous is not None:
                        changes.removed.append(p.previous)
            changes.removed.extend(track.vanished)
        return changes

    def _add_rows(self, prepared: plan.Prepared, rows: dict[str, list[dict[str, Any]]],
                  close: dict[str, list[str]]) -> None:
        doc = prepared.document
        chunks_track = prepared.tracks[plan.CHUNKS]
        chunks = chunks_track.chunks
        entities = plan.chunk_entities(chunks, prepared.mentions)
        sentences = prepared.tracks.get(plan.SENTENCES)
        if sentences is not None:
            spans = [(c.start, c.end) for c in sentences.chunks]
            sentence_vectors = np.stack([sentences.vectors[i] if i in sentences.vectors else _row_vector(p.previous)
                                         for i, p in enumerate(sentences.plans)]) if spans else np.zeros((0, 1))
        else:  # no sentence index: a lexical stand-in for coherence, cheap and offline
            nodes = self._sentencer.chunk(doc.text, parse_sections(doc.text))
            spans = [(c.start, c.end) for c in nodes]
            sentence_vectors = HashingEmbedder(256).embed([c.text for c in nodes])
        qualities = plan.chunk_qualities(chunks, spans, sentence_vectors, prepared.mentions, entities,
                                         self._size_model(), self._overlap())
        embed_kind = self.settings.embedding.embed_text
        names = {m.entity_id: m.canonical for m in prepared.mentions if m.type != "date"}
        g = self.settings.graph
        key_terms = [extract_key_terms(c.text, domain_terms=g.domain_terms, top_n=g.key_terms,
                                       entities=dict.fromkeys(names[e] for e in ents if e in names))
                     for c, ents in zip(chunks, entities, strict=True)]
        time_refs = [time_labels(extract_time_refs(c.text, reference=doc.document_date)) for c in chunks]
        split = self.settings.retrieval.split_identifiers
        chunk_rows, chunk_closes = plan.track_rows(prepared, plan.CHUNKS, embed_kind=embed_kind, entities=entities,
                                                   qualities=qualities, key_terms=key_terms, time_refs=time_refs,
                                                   indexed=lambda text: search_text(text, split_identifiers=split))
        rows[plan.CHUNKS].extend(chunk_rows)
        close[plan.CHUNKS].extend(chunk_closes)
        if sentences is not None:
            sentence_rows, sentence_closes = plan.track_rows(prepared, plan.SENTENCES, embed_kind="naked")
            rows[plan.SENTENCES].extend(sentence_rows)
            close[plan.SENTENCES].extend(sentence_closes)
        rows["mentions"].extend(plan.mention_rows(doc, prepared.version, prepared.mentions, prepared.at))
        if not prepared.doc_row_exists:
            rows["documents"].append(plan.document_row(doc, prepared.version, prepared.previous, prepared.at,
                                                       len(chunks), plan.summary_of(prepared)))
            if prepared.previous is not None:
                close["documents"].append(prepared.previous["version_id"])

    def _sync(self, paths: Sequence[str | Path], files: Sequence[Path], lens: str, tenant: str,
              current: Mapping[str, Mapping[str, Any]], at: datetime, changes: _GraphChanges) -> int:
        """Tombstone documents of ``lens`` under the folders in ``paths`` whose files are gone."""
        folders = [Path(p).resolve().as_posix().rstrip("/") + "/" for p in paths if Path(p).is_dir()]
        seen = {f.resolve().as_posix() for f in files}
        gone = [row for row in current.values()
                if row["lens"] == lens and row["source_path"] not in seen
                and any(row["source_path"].startswith(f) for f in folders) and not Path(row["source_path"]).exists()]
        for row in gone:
            changes.removed.extend(self._delete_document(row, at))
        return len(gone)

    def _delete_document(self, row: Mapping[str, Any], at: datetime, *, version: str | None = None) -> list[dict[str, Any]]:
        """Close every current row of a document and record tombstones (a new document version
        unless ``version`` names an existing tombstone row, as when reindex replays one);
        returns the chunk rows it closed."""
        tenant, doc_id = row["tenant_id"], row["document_id"]
        tomb = version or plan.new_id()
        rows: dict[str, list[dict[str, Any]]] = {plan.CHUNKS: [], plan.SENTENCES: []}
        close: dict[str, list[str]] = {plan.CHUNKS: [], plan.SENTENCES: []}
        for kind in (plan.CHUNKS, plan.SENTENCES):
            for old in self.store.chunks(tenant, document_ids=[doc_id], with_vectors=True, table=kind):
                close[kind].append(old["version_id"])
                rows[kind].append(plan.tombstone(old, tomb, at))
        if version is None:
            rows["documents"] = [{**row, "version_id": tomb, "version_sequence": row["version_sequence"] + 1,
                                  "previous_version_id": row["version_id"], "change_type": DELETE,
                                  "change_summary": "file removed", "as_of": at, "superseded_at": at,
                                  "updated_at": at, "text": "", "chunk_count": 0}]
            close["documents"] = [row["version_id"]]
        previous = row["previous_version_id"] if version is not None else row["version_id"]
        self.store.write(rows=rows, close=close, close_mentions_of=[previous] if previous else [], at=at,
                         dim=self.embedder.dim)
        return [{**r, "change_type": "closed"} for r in rows[plan.CHUNKS]]

    # -- queries -------------------------------------------------------------------------------

    def query(self, text: str, *, k: int | None = None, mode: str | None = None,
              lenses: Sequence[str] | str | None = None, tenant: str | None = None,
              as_of: datetime | str | None = None, budget: int | None = None, organize: str | None = None,
              optimize: bool = False, **options: Any) -> QueryResult:
        """Retrieve the ``k`` best chunks for ``text`` with the named retrieval ``mode``.

        With ``budget`` (tokens), ``organize`` or ``optimize``, the result also carries the
        optimised context window (:attr:`QueryResult.context`): ``context_optimization.candidates``
        results are filtered, de-duplicated, related, prioritised, fitted to the budget,
        organised and formatted for the model.
        """
        optimize = optimize or budget is not None or organize is not None
        if optimize and k is None:
            k = self.settings.context_optimization.candidates
        started = time.perf_counter()
        mode = mode or self.settings.retrieval.mode
        retriever = get_mode(mode)
        tenant = self._tenant(tenant)
        if isinstance(as_of, str):
            as_of = parse_time(as_of)
        if isinstance(lenses, str):
            lenses = [lenses]
        request = SearchRequest(
            text=text, store=self.store, embedder=self.embedder, tenant=tenant,
            k=k, default_k=self.settings.retrieval.k, lenses=list(lenses) if lenses else None, as_of=as_of,
            candidates=self.settings.retrieval.candidates, rrf_k=self.settings.retrieval.rrf_k,
            options={**options, "settings": self.settings, "graph": lambda: self.graph(tenant=tenant)},
        )
        results = retriever(request) if text.strip() else []
        decay = self.settings.retrieval
        if decay.age_decay:
            results = age_decay(results, as_of or datetime.now(UTC), per_year=decay.age_decay_per_year,
                                floor=decay.age_decay_floor)
        context = None
        if optimize:
            with request.timed("optimise"):
                context = self.optimize(results, text, budget=budget, organize=organize, tenant=tenant)
        return QueryResult(text, mode, results, tenant, as_of, request.notes, self._warn(),
                           time.perf_counter() - started, context, request.timings)

    def optimize(self, results: Sequence[ScoredChunk], query: str, *, budget: int | None = None,
                 organize: str | None = None, tenant: str | None = None) -> OptimizedContext:
        """The optimised context window for retrieved ``results`` (see :mod:`ragloom.context`).

        Context-graph edges between the results count as relationships when the graph is on.
        """
        edges = None
        if self.settings.graph.enabled and results:
            edges = self.store.edges_among(self._tenant(tenant), {r.chunk_id for r in results},
                                           skip_types=SKIPPED_GRAPH_TYPES)
        return optimize_context(results, query, self.settings.context_optimization,
                                tokenizer=self.settings.chunking.tokenizer, organize=organize, max_tokens=budget,
                                graph_edges=edges)

    # -- the context graph ---------------------------------------------------------------------

    def _graph_nodes(self, tenant: str) -> tuple[list[GraphNode], dict[str, dict[str, Any]]]:
        rows = self.store.chunks(tenant, columns=["chunk_id", "document_id", "lens", "chunk_index", "key_terms",
                                                  "time_refs", "vector"])
        nodes = [_graph_node(r) for r in rows]
        return nodes, {r["chunk_id"]: r for r in rows}

    def build_graph(self, *, tenant: str | None = None) -> int:
        """Rebuild the tenant's context graph from its current chunks; returns the edge count."""
        tenant = self._tenant(tenant)
        return self._rebuild_edges(tenant, *self._graph_nodes(tenant))

    def _rebuild_edges(self, tenant: str, nodes: list[GraphNode], rows: dict[str, dict[str, Any]]) -> int:
        edges = build_edges(nodes, self.settings.graph)
        self.store.replace_edges(tenant, edge_rows(tenant, edges, rows, datetime.now(UTC)))
        return len(edges)

    def _update_graph(self, tenant: str, changes: _GraphChanges) -> int:
        """Recompute the edges of the chunks that changed; a full build when most did."""
        nodes, rows = self._graph_nodes(tenant)
        if not self.store.has_edges(tenant) or len(changes.changed) > 0.3 * max(len(nodes), 1):
            return self._rebuild_edges(tenant, nodes, rows)
        removed = [_graph_node(r) for r in changes.removed]
        previous = term_counts(nodes)
        for node in nodes:
            if node.chunk_id in changes.changed:
                for term in set(node.key_terms):
                    previous[f"key_terms:{term}"] -= 1
                for period in set(node.periods):
                    previous[f"periods:{period}"] -= 1
        for term, count in term_counts(removed).items():
            previous[term] = previous.get(term, 0) + count
        update = update_edges(nodes, self.settings.graph, changed=changes.changed, removed=removed,
                              previous_terms=previous)
        self.store.update_edges(tenant, chunks=update.remove_touching, documents=update.remove_documents,
                                lenses=update.remove_lenses, rows=edge_rows(tenant, update.add, rows, datetime.now(UTC)))
        return len(update.add)

    def graph(self, *, tenant: str | None = None) -> ContextGraph:
        """The tenant's context graph as a networkx view (loaded from the workspace once, and
        again after the next write); treat it as read-only."""
        tenant = self._tenant(tenant)

        def load() -> ContextGraph:
            rows = self.store.chunks(tenant, columns=["chunk_id", "document_id", "lens", "source_path", "chunk_index",
                                                      "total_chunks", "token_count", "section_path", "text",
                                                      "key_terms", "time_refs", "created_at"])
            return ContextGraph.from_rows(rows, edges_from_rows(self.store.edges(tenant)), self.settings.graph)

        return self.store.memo(("graph", tenant), load)

    def contradictions(self, *, topic: str | None = None, tenant: str | None = None, limit: int | None = 20,
                       lenses: Sequence[str] | None = None) -> list[Contradiction]:
        """Concrete conflicts between lenses: the whole workspace, or the chunks about ``topic``."""
        tenant = self._tenant(tenant)
        columns = ["chunk_id", "document_id", "lens", "start_char", "end_char", "key_terms"]
        if topic:
            hits = self.query(topic, mode="hybrid", k=60, tenant=tenant, lenses=lenses)
            chunks = self.store.chunks(tenant, chunk_ids=[h.chunk_id for h in hits], columns=columns)
        else:
            chunks = self.store.chunks(tenant, lenses=lenses, columns=columns)
        documents = {c["document_id"] for c in chunks}
        sentences = self.store.chunks(tenant, table="sentences", document_ids=documents, with_vectors=True,
                                      columns=["document_id", "lens", "source_path", "section_path", "start_char",
                                               "end_char", "text", "document_date", "vector"])
        aliases = {m["text"].lower(): m["canonical"].lower()
                   for m in self.store.mentions(tenant, document_ids=documents) if m["text"].lower() != m["canonical"].lower()}
        claims = sentences_with_claims(sentences, chunks, generic=set(self.settings.graph.domain_terms), aliases=aliases)
        return detect_contradictions(claims, authority=self.settings.graph.authority, limit=limit,
                                     topic=topic.lower() if topic and len(topic.split()) <= 3 else None)

    # -- entities and quality -------------------------------------------------------------------

    def back_references(self, chunk_id: str, *, tenant: str | None = None, as_of: datetime | str | None = None,
                        limit: int | None = None) -> list[BackReference]:
        """For each entity the chunk mentions, up to ``limit`` other chunks that mention it."""
        tenant = self._tenant(tenant)
        as_of = parse_time(as_of) if isinstance(as_of, str) else as_of
        found = self.store.chunks(tenant, chunk_ids=[chunk_id], with_vectors=True, as_of=as_of)
        if not found:
            raise UnknownChunkError(chunk_id, f"tenant {tenant!r}")
        chunk = found[0]
        ids = set(chunk.get("entities") or ())
        if not ids:
            return []
        candidates = self.store.chunks(tenant, entity_ids=ids, with_vectors=True, as_of=as_of)
        names: dict[str, tuple[str, str, set[str]]] = {}
        for m in self.store.mentions(tenant, entity_ids=ids, as_of=as_of):
            entry = names.setdefault(m["entity_id"], (m["type"], m["canonical"], {m["canonical"]}))
            entry[2].add(m["text"])
        entities = {k: (t, c, sorted(n)) for k, (t, c, n) in names.items()}
        return back_references(chunk, candidates, entities,
                               limit=self.settings.entities.back_references if limit is None else limit)

    def entities(self, *, tenant: str | None = None, lens: str | None = None, type: str | None = None,  # noqa: A002
                 as_of: datetime | None = None) -> list[dict[str, Any]]:
        """Every entity mentioned in the tenant's current documents, most mentioned first."""
        tenant = self._tenant(tenant)
        table: dict[str, dict[str, Any]] = {}
        for m in self.store.mentions(tenant, lenses=[lens] if lens else None, as_of=as_of):
            if type is not None and m["type"] != type:
                continue
            entry = table.setdefault(m["entity_id"], {"entity_id": m["entity_id"], "name": m["canonical"],
                                                       "type": m["type"], "mentions": 0, "documents": set(),
                                                       "aliases": set(), "lenses": set()})
            entry["mentions"] += 1
            entry["documents"].add(m["source_path"])
            entry["lenses"].add(m["lens"])
            if m["text"] != m["canonical"]:
                entry["aliases"].add(m["text"])
        rows = [{**e, "documents": len(e["documents"]), "aliases": sorted(e["aliases"]), "lenses": sorted(e["lenses"])}
                for e in table.values()]
        return sorted(rows, key=lambda e: (-e["mentions"], e["name"]))

    def quality(self, *, tenant: str | None = None, lens: str | None = None, worst: int = 10) -> dict[str, Any]:
        """The distribution of chunk quality scores and the worst chunks with their issues."""
        tenant = self._tenant(tenant)
        rows = self.store.chunks(tenant, lenses=[lens] if lens else None,
                                 columns=["chunk_id", "lens", "source_path", "section_path", "start_char", "end_char",
                                          "text", "quality_score", "quality_json"])
        scored = [r for r in rows if r["quality_score"] is not None]
        scores = np.array([r["quality_score"] for r in scored], dtype=np.float64)
        buckets = {f"{lo / 10:.1f}-{(lo + 1) / 10:.1f}": 0 for lo in range(10)}
        issues: dict[str, dict[str, int]] = {}
        for r in scored:
            bucket = min(int(r["quality_score"] * 10), 9)
            buckets[f"{bucket / 10:.1f}-{(bucket + 1) / 10:.1f}"] += 1
            for issue in json.loads(r["quality_json"] or "{}").get("issues", []):
                issues.setdefault(issue["kind"], {}).setdefault(issue["severity"], 0)
                issues[issue["kind"]][issue["severity"]] += 1
        worst_rows = sorted(scored, key=lambda r: r["quality_score"])[:worst]
        return {
            "chunks": len(rows),
            "scored": len(scored),
            "mean": float(scores.mean()) if len(scores) else None,
            "median": float(np.median(scores)) if len(scores) else None,
            "p10": float(np.percentile(scores, 10)) if len(scores) else None,
            "histogram": buckets,
            "issues": issues,
            "worst": [{"chunk_id": r["chunk_id"], "lens": r["lens"], "source_path": r["source_path"],
                       "section_path": r["section_path"], "start": r["start_char"], "end": r["end_char"],
                       "preview": " ".join(r["text"].split())[:160], **json.loads(r["quality_json"] or "{}")}
                      for r in worst_rows],
        }

    # -- maintenance ---------------------------------------------------------------------------

    def stats(self, *, tenant: str | None = None) -> dict[str, Any]:
        tenant = self._tenant(tenant)
        stats = self.store.stats(tenant)
        manifest = self.workspace.manifest() or {}
        return {
            "workspace": str(self.workspace.path),
            "tenant": tenant,
            **stats,
            "embedder": manifest.get("embedder"),
            "embedded_text": (manifest.get("signature") or {}).get("embedding", {}).get("embed_text"),
            "chunking": (manifest.get("signature") or {}).get("chunking"),
            "warnings": self._warn(),
        }

    def clear(self, *, lens: str | None = None, tenant: str | None = None) -> int:
        """Delete the tenant's documents (of one lens, if given) with all their versions."""
        tenant = self._tenant(tenant)
        removed = self.store.clear(tenant, lens=lens)
        if lens is None and not self.store.documents_any():
            self.workspace.forget()
        return removed

    def history(self, path: str | Path, *, tenant: str | None = None) -> list[dict[str, Any]]:
        """Every version of the document at ``path``, oldest first."""
        tenant = self._tenant(tenant)
        source = Path(path).resolve().as_posix()
        return self.store.history(tenant, document_id(tenant, source))

    def reindex(self, *, progress: Progress | None = None) -> IngestReport:
        """Rebuild every chunk, sentence and mention of every tenant from the stored document
        versions with the current settings. History is kept: each version is replayed over its
        own interval, so as-of queries see what they saw before, chunked the new way."""
        started = time.perf_counter()
        progress = progress or Progress()
        report = IngestReport()
        self._reindexing = True  # an outdated workspace may be opened to be rebuilt
        store = self.store
        versions = store.all_document_versions()
        store.drop_derived()
        self._extractor = None  # the gazetteer may have changed too
        chains: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in versions:
            chains.setdefault((row["tenant_id"], row["document_id"]), []).append(row)
        for chain in chains.values():
            chain.sort(key=lambda r: r["version_sequence"])
        report.files = len(chains)
        progress.stage("Reindexing", sum(len(c) for c in chains.values()))
        depth = max((len(c) for c in chains.values()), default=0)
        for generation in range(depth):
            batch = self._pending(report, progress)
            for chain in chains.values():
                if generation >= len(chain):
                    continue
                row = chain[generation]
                previous = chain[generation - 1] if generation else None
                progress.advance("Reindexing")
                if row["change_type"] == DELETE:
                    self._delete_document(row, row["as_of"], version=row["version_id"])
                    continue
                prepared = self._prepare(self._document_from_row(row), previous, row["as_of"], row["version_id"])
                prepared.doc_row_exists = True
                if generation == 0:
                    batch.add(prepared)
                else:  # closing the previous versions needs this version's own time
                    self._flush([prepared], report, progress)
            batch.drain()
        report.added, report.updated = len(chains), 0
        if self.settings.graph.enabled:
            for tenant in sorted({t for t, _ in chains}):
                report.relationships += self.build_graph(tenant=tenant)
        if store.has_table("chunks"):
            store.optimize(force=True)
            self.workspace.record(self.settings, embedder=self.embedder.name, dim=self.embedder.dim)
        report.seconds = time.perf_counter() - started
        return report

    def _document_from_row(self, row: Mapping[str, Any]) -> Document:
        """A stored document version, with its type inferred again under the current rules."""
        meta = json.loads(row.get("metadata_json") or "{}")
        doc_type = meta.get("type") or infer_doc_type(
            row["source_path"].rsplit("/", 1)[-1], row["text"] or "", row["lens"],
            rules=self._doc_rules, default=self.settings.doc_types.default,
        )
        doc_date = row.get("document_date")
        return Document(
            text=row["text"] or "", source_path=row["source_path"], title=row.get("title") or "",
            lens=row["lens"], tenant=row["tenant_id"], media_type=row.get("media_type") or "",
            modified_at=row.get("modified_at") or row["as_of"], document_id=row["document_id"],
            file_hash=row.get("file_hash") or "", doc_type=doc_type,
            document_date=doc_date if isinstance(doc_date, date) else None, metadata=meta,
        )


def parse_time(value: str) -> datetime:
    """An ISO 8601 time (``2026-03-01``, ``2026-03-01T00:00:00Z``); naive times are UTC."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidParameterError(
            f"as_of {value!r} is not an ISO 8601 time; write it like 2026-03-01T00:00:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class _GraphChanges:
    """What an ingest changed: chunk ids added or edited, and the rows that stopped being current."""

    changed: set[str] = field(default_factory=set)
    removed: list[Mapping[str, Any]] = field(default_factory=list)

    def add(self, other: _GraphChanges) -> None:
        self.changed |= other.changed
        self.removed.extend(other.removed)

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed)


@dataclass
class _Pending:
    """Prepared documents waiting to be embedded and written together, ``limit`` chunks at a time."""

    flush: Callable[[list[plan.Prepared]], _GraphChanges]
    limit: int
    items: list[plan.Prepared] = field(default_factory=list)
    size: int = 0
    changes: _GraphChanges = field(default_factory=_GraphChanges)

    def add(self, prepared: plan.Prepared) -> None:
        self.items.append(prepared)
        self.size += prepared.size()
        if self.size >= self.limit:
            self.drain()

    def drain(self) -> _GraphChanges:
        """Flush what waits; returns everything the flushes changed so far."""
        self.changes.add(self.flush(self.items))
        self.items, self.size = [], 0
        return self.changes


def _graph_node(row: Mapping[str, Any]) -> GraphNode:
    periods = tuple(t for t in (row.get("time_refs") or ()) if not t.endswith(UNRESOLVED))
    return GraphNode(row["chunk_id"], row["document_id"], row["lens"], int(row["chunk_index"]),
                     tuple(row.get("key_terms") or ()), periods, row.get("vector"))


def _row_vector(row: Mapping[str, Any] | None) -> np.ndarray:
    return np.asarray(row["vector"], dtype=np.float32)  # type: ignore[index]
