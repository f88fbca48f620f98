"""The facade: ``ingest``, ``chunk_file``, ``query``, ``stats``, ``clear``, ``reindex``, ``history``.

The CLI and the UI call this and nothing else. Everything here composes the pure stages
(load, parse, chunk, enrich, embed, store, retrieve); only this module decides when to write.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.chunk import chunker_from_settings
from ragloom.config import Settings
from ragloom.embed import Embedder, embedder_from_settings
from ragloom.enrich import PrefixBuilder, enrich_chunks
from ragloom.errors import LoadError, RagloomError, WorkspaceMismatchWarning
from ragloom.load import document_id, iter_files, load_document, validate_name
from ragloom.parse.doctype import DocTypeRule, infer_doc_type
from ragloom.parse.sections import parse_sections
from ragloom.retrieve import SearchRequest, get_mode
from ragloom.store.lance import LanceStore, dumps
from ragloom.types import Chunk, Document, ScoredChunk
from ragloom.versions import CREATE, DELETE, UPDATE, ChunkPlan, document_summary, plan_versions
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
        }


@dataclass
class _Prepared:
    """A document read and chunked, waiting for its vectors and its write."""

    document: Document
    plans: list[ChunkPlan]
    vanished: list[Mapping[str, Any]]
    previous: Mapping[str, Any] | None  # the current document row, if any
    at: datetime
    doc_row_exists: bool = False  # reindex replays versions whose document rows already exist
    version_id: str = ""


def _new_id() -> str:
    return uuid.uuid4().hex[:20]


def _file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
        self._prefix = PrefixBuilder(self.settings.prefix)
        self._chunker = chunker_from_settings(self.settings.chunking)
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
            fts = "contextualized_text" if self.settings.embedding.embed_text == "contextual" else "text"
            self._store = LanceStore(self.workspace.store_path, fts_column=fts)
            self._store.repair()
        return self._store

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

    def chunk_document(self, document: Document, *, strategy: str | None = None) -> list[Chunk]:
        """Sections, chunks and enrichment (prefix, hash, ids) for one document."""
        chunker = self._chunker if strategy is None else chunker_from_settings(self.settings.chunking, strategy)
        chunks = chunker.chunk(document.text, parse_sections(document.text))
        return enrich_chunks(document, chunks, self._prefix)

    def chunk_file(self, path: str | Path, *, strategy: str | None = None, lens: str = "default") -> tuple[Document, list[Chunk]]:
        """Load and chunk one file without touching the store."""
        document = self.load(path, lens=lens)
        return document, self.chunk_document(document, strategy=strategy)

    def embedded_text(self, chunk: Chunk) -> str:
        return chunk.contextualized_text if self.settings.embedding.embed_text == "contextual" else chunk.text

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
        pending: list[_Prepared] = []
        for path in files:
            t0 = time.perf_counter()
            try:
                source = path.resolve().as_posix()
                previous = current.get(document_id(tenant, source))
                data = path.read_bytes() if path.is_file() else None
                if previous is not None and data is not None and previous["file_hash"] == _file_hash(data) \
                        and previous["lens"] == lens:
                    report.unchanged += 1
                    continue
                document = self.load(path, lens=lens, tenant=tenant, data=data)
                report.timings["load"] += time.perf_counter() - t0
                t1 = time.perf_counter()
                pending.append(self._prepare(document, previous, at))
                report.timings["chunk"] += time.perf_counter() - t1
            except (LoadError, OSError) as exc:
                message = str(exc) if isinstance(exc, LoadError) else f"{path}: {exc}"
                report.failed.append((str(path), message))
                progress.message(message)
            except RagloomError as exc:
                report.failed.append((str(path), f"{path}: {exc}"))
                progress.message(f"{path}: {exc}")
            finally:
                progress.advance("Reading")
            if sum(len(p.plans) for p in pending) >= self.settings.ingest.batch_chunks:
                self._flush(pending, report, progress)
                pending = []
        self._flush(pending, report, progress)
        if sync:
            report.deleted = self._sync(paths, files, lens, tenant, current, at)
        t0 = time.perf_counter()
        if report.added or report.updated or report.deleted:
            store.optimize()
        report.timings["store"] += time.perf_counter() - t0
        if store.has_chunks():
            self.workspace.record(self.settings, embedder=self.embedder.name, dim=self.embedder.dim)
        report.seconds = time.perf_counter() - started
        return report

    def _prepare(self, document: Document, previous: Mapping[str, Any] | None, at: datetime) -> _Prepared:
        chunks = self.chunk_document(document)
        old = self.store.chunks(document.tenant, document_ids=[document.document_id], with_vectors=True) \
            if previous is not None else []
        plans, vanished = plan_versions(chunks, old)
        return _Prepared(document, plans, vanished, previous, at)

    def _flush(self, pending: Sequence[_Prepared], report: IngestReport, progress: Progress) -> None:
        """Embed what needs embedding for ``pending`` documents, then write them in one go."""
        if not pending:
            return
        t0 = time.perf_counter()
        texts: list[str] = []
        slots: list[tuple[int, int]] = []
        reused: dict[tuple[int, int], np.ndarray] = {}
        for d, prepared in enumerate(pending):
            for c, plan in enumerate(prepared.plans):
                if plan.keep:
                    continue
                wanted = self.embedded_text(plan.chunk)
                prev = plan.previous
                if prev is not None and prev.get("vector") is not None and _row_embedded_text(prev) == wanted:
                    reused[(d, c)] = np.asarray(prev["vector"], dtype=np.float32)
                else:
                    texts.append(wanted)
                    slots.append((d, c))
        vectors: dict[tuple[int, int], np.ndarray] = dict(reused)
        if texts:
            progress.stage("Embedding", len(texts))
            try:
                embedded = self.embedder.embed(texts, progress=lambda n: progress.advance("Embedding", n))
            except RagloomError as exc:
                for prepared in pending:
                    report.failed.append((prepared.document.source_path, f"{prepared.document.source_path}: {exc}"))
                return
            vectors.update(zip(slots, embedded, strict=True))
        report.timings["embed"] += time.perf_counter() - t0
        report.chunks_embedded += len(texts)
        report.chunks_reused += len(reused)
        t1 = time.perf_counter()
        docs, rows, close_chunks, close_docs = [], [], [], []
        for d, prepared in enumerate(pending):
            doc_row, chunk_rows, closes = self._rows(prepared, {c: v for (dd, c), v in vectors.items() if dd == d})
            if doc_row is not None:
                docs.append(doc_row)
            if prepared.previous is not None and not prepared.doc_row_exists:
                close_docs.append(prepared.previous["version_id"])
            rows.extend(chunk_rows)
            close_chunks.extend(closes)
            if prepared.previous is None:
                report.added += 1
            else:
                report.updated += 1
        at = max(p.at for p in pending)
        self.store.write(documents=docs, chunks=rows, close_chunks=close_chunks, close_documents=close_docs,
                         at=at, dim=self.embedder.dim)
        report.chunks_written += len(rows)
        report.timings["store"] += time.perf_counter() - t1

    def _rows(self, prepared: _Prepared, vectors: Mapping[int, np.ndarray]) -> tuple[dict | None, list[dict], list[str]]:
        """The document row (unless it exists), the chunk rows and the chunk versions they close."""
        doc, prev, at = prepared.document, prepared.previous, prepared.at
        doc_version = prepared.version_id or _new_id()
        embed_kind = self.settings.embedding.embed_text
        strategy = self._chunker.name
        rows: list[dict] = []
        closes: list[str] = []
        taken: set[str] = set()
        for c, plan in enumerate(prepared.plans):
            if plan.keep:
                taken.add(plan.previous["chunk_id"])  # type: ignore[index]
                continue
            old = plan.previous
            chunk_id = old["chunk_id"] if old is not None else plan.chunk.chunk_id
            if chunk_id in taken:  # a new chunk whose content id an edited chunk already carries
                chunk_id = hashlib.blake2b(f"{chunk_id}:{doc_version}:{c}".encode(), digest_size=10).hexdigest()
            taken.add(chunk_id)
            if old is not None:
                closes.append(old["version_id"])
            rows.append(self._chunk_row(doc, plan.chunk, vectors[c], chunk_id=chunk_id, doc_version=doc_version,
                                        previous=old, change_type=CREATE if old is None else UPDATE,
                                        summary=plan.summary, at=at, strategy=strategy, embed_kind=embed_kind))
        for old in prepared.vanished:
            closes.append(old["version_id"])
            rows.append(_tombstone(old, doc_version, at))
        doc_row = None
        if not prepared.doc_row_exists:
            doc_row = _document_row(doc, doc_version, prev, at, len(prepared.plans),
                                    document_summary(prepared.plans, prepared.vanished, first=prev is None))
        return doc_row, rows, closes

    def _chunk_row(self, doc: Document, chunk: Chunk, vector: np.ndarray, *, chunk_id: str, doc_version: str,
                   previous: Mapping[str, Any] | None, change_type: str, summary: str, at: datetime, strategy: str,
                   embed_kind: str) -> dict[str, Any]:
        return {
            "tenant_id": doc.tenant,
            "document_id": doc.document_id,
            "version_id": _new_id(),
            "version_sequence": (previous["version_sequence"] + 1) if previous else 1,
            "previous_version_id": previous["version_id"] if previous else None,
            "change_type": change_type,
            "change_summary": summary,
            "as_of": at,
            "superseded_at": None,
            "created_at": previous["created_at"] if previous else at,
            "updated_at": at,
            "content_hash": chunk.content_hash,
            "lens": doc.lens,
            "source_path": doc.source_path,
            "title": doc.title,
            "doc_type": doc.doc_type,
            "document_date": doc.document_date,
            "chunk_id": chunk_id,
            "doc_version_id": doc_version,
            "text": chunk.text,
            "prefix": chunk.prefix,
            "contextualized_text": chunk.contextualized_text,
            "start_char": chunk.start,
            "end_char": chunk.end,
            "token_count": chunk.token_count,
            "chunk_index": chunk.chunk_index,
            "total_chunks": chunk.total_chunks,
            "section_path": chunk.section_path_str,
            "section_index": chunk.section_index,
            "chunk_index_in_section": chunk.chunk_index_in_section,
            "strategy": strategy,
            "embedded_text": embed_kind,
            "key_terms": [],
            "time_refs": [],
            "entities": [],
            "quality_score": None,
            "quality_json": dumps([{"kind": i.kind, "severity": i.severity, "description": i.description}
                                   for i in chunk.issues]) if chunk.issues else None,
            "vector": np.asarray(vector, dtype=np.float32),
        }

    def _sync(self, paths: Sequence[str | Path], files: Sequence[Path], lens: str, tenant: str,
              current: Mapping[str, Mapping[str, Any]], at: datetime) -> int:
        """Tombstone documents of ``lens`` under the folders in ``paths`` whose files are gone."""
        folders = [Path(p).resolve().as_posix().rstrip("/") + "/" for p in paths if Path(p).is_dir()]
        seen = {f.resolve().as_posix() for f in files}
        gone = [row for row in current.values()
                if row["lens"] == lens and row["source_path"] not in seen
                and any(row["source_path"].startswith(f) for f in folders) and not Path(row["source_path"]).exists()]
        if gone:
            self._tombstone_documents(tenant, gone, at)
        return len(gone)

    def _tombstone_documents(self, tenant: str, rows: Sequence[Mapping[str, Any]], at: datetime) -> None:
        doc_rows, chunk_rows, closes = [], [], []
        for row in rows:
            version = _new_id()
            doc_rows.append({**row, "version_id": version, "version_sequence": row["version_sequence"] + 1,
                             "previous_version_id": row["version_id"], "change_type": DELETE,
                             "change_summary": "file removed", "as_of": at, "superseded_at": at, "updated_at": at,
                             "text": "", "chunk_count": 0})
            for old in self.store.chunks(tenant, document_ids=[row["document_id"]], with_vectors=True):
                closes.append(old["version_id"])
                chunk_rows.append(_tombstone(old, version, at))
        self.store.write(documents=doc_rows, chunks=chunk_rows, close_chunks=closes,
                         close_documents=[r["version_id"] for r in rows], at=at, dim=self.embedder.dim)

    # -- queries -------------------------------------------------------------------------------

    def query(self, text: str, *, k: int | None = None, mode: str | None = None,
              lenses: Sequence[str] | str | None = None, tenant: str | None = None,
              as_of: datetime | str | None = None, **options: Any) -> QueryResult:
        """Retrieve the ``k`` best chunks for ``text`` with the named retrieval ``mode``."""
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
            k=k or self.settings.retrieval.k, lenses=list(lenses) if lenses else None, as_of=as_of,
            candidates=self.settings.retrieval.candidates, rrf_k=self.settings.retrieval.rrf_k,
            options={**options, "settings": self.settings},
        )
        results = retriever(request) if text.strip() else []
        return QueryResult(text, mode, results, tenant, as_of, request.notes, self._warn(),
                           time.perf_counter() - started)

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
        """Rebuild every chunk of every tenant from the stored document versions with the
        current settings. History is kept: each version is re-chunked over its own interval."""
        started = time.perf_counter()
        progress = progress or Progress()
        report = IngestReport()
        store = self.store
        versions = store.all_document_versions()
        store.drop_chunks()
        store.fts_column = "contextualized_text" if self.settings.embedding.embed_text == "contextual" else "text"
        chains: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in versions:
            chains.setdefault((row["tenant_id"], row["document_id"]), []).append(row)
        for chain in chains.values():
            chain.sort(key=lambda r: r["version_sequence"])
        report.files = len(chains)
        progress.stage("Reindexing", sum(len(c) for c in chains.values()))
        depth = max((len(c) for c in chains.values()), default=0)
        for generation in range(depth):
            batch: list[_Prepared] = []
            for chain in chains.values():
                if generation >= len(chain):
                    continue
                row = chain[generation]
                previous = chain[generation - 1] if generation else None
                progress.advance("Reindexing")
                if row["change_type"] == DELETE:
                    self._tombstone_replay(row)
                    continue
                prepared = self._prepare(self._document_from_row(row), previous, row["as_of"])
                prepared.doc_row_exists = True
                prepared.version_id = row["version_id"]
                if generation == 0:
                    batch.append(prepared)
                else:  # closing the previous versions needs this version's own time
                    self._flush([prepared], report, progress)
                if sum(len(p.plans) for p in batch) >= self.settings.ingest.batch_chunks:
                    self._flush(batch, report, progress)
                    batch = []
            self._flush(batch, report, progress)
        report.added, report.updated = len(chains), 0
        if store.has_chunks():
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
        return _document_from_row_with(row, doc_type)

    def _tombstone_replay(self, row: Mapping[str, Any]) -> None:
        closes, rows = [], []
        for old in self.store.chunks(row["tenant_id"], document_ids=[row["document_id"]], with_vectors=True):
            closes.append(old["version_id"])
            rows.append(_tombstone(old, row["version_id"], row["as_of"]))
        self.store.write(documents=[], chunks=rows, close_chunks=closes, at=row["as_of"], dim=self.embedder.dim)


def parse_time(value: str) -> datetime:
    """An ISO 8601 time (``2026-03-01``, ``2026-03-01T00:00:00Z``); naive times are UTC."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        from ragloom.errors import InvalidParameterError

        raise InvalidParameterError(
            f"as_of {value!r} is not an ISO 8601 time; write it like 2026-03-01T00:00:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _row_embedded_text(row: Mapping[str, Any]) -> str:
    if row.get("embedded_text") == "naked":
        return row.get("text") or ""
    return (row.get("prefix") or "") + (row.get("text") or "")


def _tombstone(old: Mapping[str, Any], doc_version: str, at: datetime) -> dict[str, Any]:
    """A chunk row recording that ``old`` vanished at ``at``; valid for no time at all."""
    return {**old, "version_id": _new_id(), "version_sequence": old["version_sequence"] + 1,
            "previous_version_id": old["version_id"], "change_type": DELETE, "change_summary": "removed",
            "as_of": at, "superseded_at": at, "updated_at": at, "doc_version_id": doc_version}


def _document_row(doc: Document, version: str, previous: Mapping[str, Any] | None, at: datetime, chunks: int,
                  summary: str) -> dict[str, Any]:
    return {
        "tenant_id": doc.tenant,
        "document_id": doc.document_id,
        "version_id": version,
        "version_sequence": (previous["version_sequence"] + 1) if previous else 1,
        "previous_version_id": previous["version_id"] if previous else None,
        "change_type": CREATE if previous is None else UPDATE,
        "change_summary": summary,
        "as_of": at,
        "superseded_at": None,
        "created_at": previous["created_at"] if previous else at,
        "updated_at": at,
        "content_hash": hashlib.blake2b(doc.text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest(),
        "lens": doc.lens,
        "source_path": doc.source_path,
        "title": doc.title,
        "doc_type": doc.doc_type,
        "document_date": doc.document_date,
        "media_type": doc.media_type,
        "modified_at": doc.modified_at,
        "file_hash": doc.file_hash,
        "size_chars": len(doc.text),
        "chunk_count": chunks,
        "text": doc.text,
        "metadata_json": dumps(dict(doc.metadata)),
    }


def _document_from_row_with(row: Mapping[str, Any], doc_type: str) -> Document:
    doc_date = row.get("document_date")
    return Document(
        text=row["text"] or "",
        source_path=row["source_path"],
        title=row.get("title") or "",
        lens=row["lens"],
        tenant=row["tenant_id"],
        media_type=row.get("media_type") or "",
        modified_at=row.get("modified_at") or row["as_of"],
        document_id=row["document_id"],
        file_hash=row.get("file_hash") or "",
        doc_type=doc_type,
        document_date=doc_date if isinstance(doc_date, date) else None,
        metadata=json.loads(row.get("metadata_json") or "{}"),
    )
