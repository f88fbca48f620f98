"""The ingest pipeline: files (or documents built in code) through the ordered stages, under
the workspace's write lock; and the other writes that change documents: re-index, sync,
delete."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ragloom.chunk import chunker_from_settings
from ragloom.chunk.preset import PresetSpan
from ragloom.enrich.entities import EntityMention
from ragloom.errors import (
    DiskFullError,
    InvalidParameterError,
    LoadError,
    NothingToIngestError,
    ProcessingTimeoutError,
    RagloomError,
)
from ragloom.ingest.report import IngestReport, Progress, skipped_sentence
from ragloom.ingest.stages import Chunk as ChunkStage
from ragloom.ingest.stages import Enrich, Parse, Stage, default_stages
from ragloom.ingest.work import IngestRun, Work
from ragloom.load import scan, validate_name
from ragloom.load.scan import real_path
from ragloom.parse.doctype import infer_doc_type
from ragloom.store.faults import disk_full, is_disk_full
from ragloom.store.lance import GRAPH_STALE
from ragloom.store.plan import CHUNKS, SENTENCES
from ragloom.store.schema import document_from_row, document_metadata, document_tombstone, new_id, tombstone
from ragloom.types import Chunk, Document, Section
from ragloom.versions import DELETE

if TYPE_CHECKING:
    from ragloom.components import Components


class Runner(Protocol):
    """Runs a pipeline's stages over the items of one run, the write lock held; the default is
    :meth:`IngestPipeline._run` in this process (see :mod:`ragloom.ingest.distributed` for Ray)."""

    def execute(self, pipeline: IngestPipeline, items: Iterable[Work], run: IngestRun, limit: int,
                total: int | None) -> None: ...


class Phases(NamedTuple):
    """A pipeline's stages by when they run (see :mod:`ragloom.ingest.stages`)."""

    document: list[Stage]
    batch: list[Stage]
    run: list[Stage]

    def away_from_writer(self) -> tuple[list[Stage], list[Stage]]:
        """The batch stages split where the first one that writes the store begins (a stage
        with ``writes = True``): those before it may run in other processes (a distributed
        runner's embedding workers), the rest run where the write lock is held."""
        cut = next((i for i, s in enumerate(self.batch) if getattr(s, "writes", False)), len(self.batch))
        return self.batch[:cut], self.batch[cut:]


class IngestPipeline:
    """An ordered list of stages (:func:`~ragloom.ingest.stages.default_stages` unless given).

    >>> pipeline = IngestPipeline(components)                       # doctest: +SKIP
    >>> pipeline.insert(RedactEmails(), after="parse")               # doctest: +SKIP
    >>> pipeline.ingest(["notes/"], lens="team-structured")          # doctest: +SKIP
    """

    def __init__(self, components: Components, stages: Sequence[Stage] | None = None) -> None:
        self.c = components
        self.stages: list[Stage] = list(stages) if stages is not None else default_stages()

    # -- the list of stages -------------------------------------------------------------------

    def _position(self, name: str) -> int:
        for i, stage in enumerate(self.stages):
            if stage.name == name:
                return i
        raise InvalidParameterError(f"no ingest stage named {name!r}; the stages are: "
                                    + ", ".join(s.name for s in self.stages))

    def insert(self, stage: Stage, *, before: str | None = None, after: str | None = None) -> IngestPipeline:
        """Add ``stage`` before or after the stage of that name (at the end if neither)."""
        if before is not None and after is not None:
            raise InvalidParameterError("give before or after, not both")
        if getattr(stage, "scope", None) not in ("document", "batch", "run"):
            raise InvalidParameterError(f"stage {getattr(stage, 'name', stage)!r} has scope "
                                        f"{getattr(stage, 'scope', None)!r}; use 'document', 'batch' or 'run'")
        at = len(self.stages) if before is None and after is None else (
            self._position(before) if before is not None else self._position(after or "") + 1)
        self.stages.insert(at, stage)
        return self

    def remove(self, name: str) -> Stage:
        return self.stages.pop(self._position(name))

    def phases(self) -> Phases:
        """The stages in the three phases a runner runs them in: per document as it is read,
        then per batch of documents, then once per run."""
        first_batch = next((i for i, s in enumerate(self.stages) if s.scope != "document"), len(self.stages))
        return Phases(document=self.stages[:first_batch],
                      batch=[s for s in self.stages[first_batch:] if s.scope != "run"],
                      run=[s for s in self.stages[first_batch:] if s.scope == "run"])

    # -- running ------------------------------------------------------------------------------

    def run(self, items: Iterable[Work], *, progress: Progress | None = None, report: IngestReport | None = None,
            at: datetime | None = None, batch_limit: int | None = None, total: int | None = None,
            rebuild_graph: bool = False, runner: Runner | None = None) -> IngestReport:
        """Every item through every stage, under the write lock (by ``runner``, else here);
        returns the report."""
        started = time.perf_counter()
        progress = progress or Progress()
        report = report or IngestReport()
        for stage in self.stages:
            # A stage may check its configuration (an LLM client) before any file is read.
            prepare = getattr(stage, "prepare", None)
            if callable(prepare):
                prepare(self.c)
        with self.c.store.writer(on_wait=progress.message):
            store = self.c.store
            run = IngestRun(self.c, report, progress, at or datetime.now(UTC),
                            rebuild_graph=rebuild_graph or bool(store.commit_info().get(GRAPH_STALE)))
            limit = batch_limit or self.c.settings.ingest.batch_chunks
            try:
                if runner is None:
                    self._run(items, run, limit, total)
                else:
                    runner.execute(self, items, run, limit, total)
            except DiskFullError as exc:
                raise self._stopped(exc, report) from exc
            # Housekeeping after the documents landed: a failure here loses nothing, and the
            # next ingest does it again, so it is a line of the report, not an error.
            if report.added or report.updated or report.deleted:
                t0 = time.perf_counter()
                self._housekeeping("optimising the tables", store.optimize, run)
                report.add_time("store", time.perf_counter() - t0)
            if store.has_table(CHUNKS):
                self._housekeeping("recording the index settings", self.c.record, run)
        report.seconds = time.perf_counter() - started
        return report

    @staticmethod
    def _housekeeping(what: str, step: Any, run: IngestRun) -> None:  # noqa: ANN401 - a callable
        try:
            step()
        except (RagloomError, OSError, RuntimeError) as exc:
            why = "no space left on the disk" if is_disk_full(exc) else f"{type(exc).__name__}: {exc}"
            message = f"{what} failed after the documents were stored ({why}); the next ingest tries again"
            run.report.fail(f"<{what}>", message)
            run.progress.message(message)

    @staticmethod
    def _stopped(exc: DiskFullError, report: IngestReport) -> DiskFullError:
        """The error that stops a run on a full disk, saying what was stored before it."""
        stored = report.added + report.updated
        error = DiskFullError(
            f"no space left on the disk of the workspace {exc.workspace or 'being written'}: "
            f"{stored} of {report.files} documents were stored before it filled, and the write that met it was "
            "undone; free some space and run the same command again (it stores only what is missing)")
        error.report, error.workspace = report, exc.workspace
        return error

    def _run(self, items: Iterable[Work], run: IngestRun, limit: int, total: int | None) -> None:
        per_batch = self.phases().batch
        run.progress.stage("Reading", total)
        pending: list[Work] = []
        size = 0
        done: list[Work] = []
        for item in items:
            advanced = self.run_document(item, run)
            run.progress.advance("Reading")
            for ready in advanced:
                pending.append(ready)
                size += ready.size()
            if size >= limit:
                done.extend(self.run_batch(per_batch, pending, run))
                pending, size = [], 0
        done.extend(self.run_batch(per_batch, pending, run))
        self.finish(done, run)

    def finish(self, done: list[Work], run: IngestRun) -> None:
        """The run stages, once, on every document that landed."""
        for stage in self.phases().run:  # run stages run even when no document changed (a stale graph)
            try:
                done = stage(done, run)
            except Exception as exc:  # noqa: BLE001 - the documents landed; say what did not
                message = (f"{stage.name}: {disk_full(exc, str(self.c.workspace))}" if is_disk_full(exc)
                           else f"{stage.name}: {type(exc).__name__}: {exc}")
                run.report.fail(f"<{stage.name}>", message)
                run.progress.message(message)

    def _apply(self, stages: Sequence[Stage], items: list[Work], run: IngestRun) -> list[Work]:
        """Items through ``stages``; a failure fails the items given (one, for document stages).

        A document's stages share one time bound (``ingest.max_seconds_per_file``): past it, the
        document fails with a line saying so. Python cannot stop a stage half way, so the bound is
        checked after each; every regular expression being linear (``tests/test_regexes.py``),
        no single stage runs far past it. A stage that waits on a model (``bounded = False``)
        does not count."""
        limit = self.c.settings.ingest.max_seconds_per_file
        spent = 0.0
        for stage in stages:
            if not items:
                break
            started = time.perf_counter()
            try:
                items = stage(items, run)
            except DiskFullError:
                raise  # no later document can be written either: the run stops (see run)
            except Exception as exc:  # noqa: BLE001 - whatever a stage raises fails its documents, not the run
                for item in items:
                    self._fail(item, exc, run)
                return []
            if stage.scope == "document" and getattr(stage, "bounded", True):
                spent += time.perf_counter() - started
                if limit and spent > limit and items:
                    for item in items:
                        self._fail(item, ProcessingTimeoutError(
                            item.source, f"{spent:.0f} s by the end of the {stage.name} stage, above "
                            f"ingest.max_seconds_per_file = {limit:g}",
                            fix="raise ingest.max_seconds_per_file or split the file"), run)
                    return []
            for item in items:
                if item.skip == "unchanged":
                    run.report.unchanged += 1
                    run.report.note(item.source, "unchanged",
                                    chunks=int(item.previous["chunk_count"]) if item.previous else 0)
            items = [i for i in items if i.skip is None]
        return items

    def run_document(self, item: Work, run: IngestRun) -> list[Work]:
        """One document through the document stages (empty if it failed or was skipped)."""
        return self._apply(self.phases().document, [item], run)

    def run_batch(self, stages: Sequence[Stage], items: list[Work], run: IngestRun) -> list[Work]:
        """A batch through ``stages`` (batch stages); if it fails, each document alone, so that only the
        one that cannot be embedded or written fails."""
        if not items:
            return []
        if len(items) == 1:
            return self._apply(stages, items, run)
        saved, noted = len(run.report.failed), len(run.report.documents)
        done = self._apply(stages, items, run)
        if done or len(run.report.failed) == saved:
            return done
        run.report.forget_failures_since(saved, noted)
        return [ok for item in items for ok in self._apply(stages, [item], run)]

    @staticmethod
    def _fail(item: Work, exc: Exception, run: IngestRun) -> None:
        if isinstance(exc, LoadError):
            message = str(exc)
        elif isinstance(exc, RagloomError | OSError):
            message = f"{item.source}: {exc}"
        else:  # not an error ragloom expects: name its kind, so that it can be reported
            message = f"{item.source}: {type(exc).__name__}: {exc}"
        run.report.fail(item.source, message)
        run.progress.message(message)

    def chunk_document(self, document: Document, *, strategy: str | None = None,
                       mentions: Sequence[EntityMention] | None = None, spans: Sequence[PresetSpan] | None = None,
                       sections: Sequence[Section] | None = None) -> list[Chunk]:
        """The parse, chunk and enrich stages for one document, without the store (see
        :meth:`Engine.chunk_document <ragloom.engine.Engine.chunk_document>`)."""
        item = Work(document.source_path, document=document, lens=document.lens, tenant=document.tenant, spans=spans)
        run = IngestRun(self.c, IngestReport(), Progress(), datetime.now(UTC))
        if mentions is None or sections is None:
            Parse()([item], run)
        item.mentions = list(mentions) if mentions is not None else item.mentions
        item.sections = list(sections) if sections is not None else item.sections
        chunker = chunker_from_settings(self.c.settings.chunking, strategy) if strategy is not None else None
        for stage in (ChunkStage(chunker, sentences=False), Enrich()):
            stage([item], run)
        return item.chunks

    # -- what to run --------------------------------------------------------------------------

    def ingest(self, paths: str | Path | Iterable[str | Path], *, lens: str, tenant: str | None = None,
               sync: bool = False, progress: Progress | None = None, runner: Runner | None = None,
               within: Sequence[str | Path] | None = None) -> IngestReport:
        """Every supported file under ``paths`` under ``lens`` (see :meth:`Engine.ingest`).

        Each file is read once however it is reached (links, a path given twice, folders that
        overlap); an entry that is not a document (a symlink loop, a FIFO, an unreadable file,
        a name that is not UTF-8) gets one line in the report and the rest of the batch lands.
        """
        lens = validate_name("lens", lens)
        tenant = self.c.tenant(tenant)
        paths = [paths] if isinstance(paths, str | Path) else list(paths)
        if not paths:
            raise NothingToIngestError("nothing to ingest: no paths were given; pass one or more files or folders")
        s = self.c.settings.ingest
        skipped: Counter[str] = Counter()
        found = scan(paths, extensions=s.extensions, include_hidden=s.include_hidden, skipped=skipped, within=within)
        if not found and not sync:
            shown = ", ".join(str(p) for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            why = (skipped_sentence(dict(skipped)).rstrip(".").replace("Skipped", "only") if skipped
                   else "no files (an empty folder?)")
            raise NothingToIngestError(
                f"nothing to ingest in {shown}: {why}; ragloom reads {', '.join(sorted(s.extensions))} "
                "(ingest.extensions)")
        report = IngestReport(files=len(found), skipped=dict(skipped))
        progress = progress or Progress()
        for entry in found:
            if entry.problem is not None:
                report.fail(entry.display, str(entry.problem))
                progress.message(str(entry.problem))
        files = [f for f in found if f.problem is None]
        items = (Work(f.display, path=f.path, lens=lens, tenant=tenant) for f in files)
        try:
            if not sync:
                self.run(items, progress=progress, report=report, total=len(files), runner=runner)
            else:
                at = datetime.now(UTC)
                with self.c.store.writer(on_wait=progress.message):
                    self.run(items, progress=progress, report=report, total=len(files), at=at, runner=runner)
                    report.deleted = self._sync(paths, [f.real for f in found], lens, tenant, at)
        finally:
            for stage in self.stages:
                close = getattr(stage, "close", None)
                if callable(close):
                    close()
        # What was done to read a file (a "note" line) joins that file's own line of the report.
        notes = {d["source"]: d["message"] for d in report.documents if d["status"] == "note"}
        if notes:
            report.documents = [d for d in report.documents if d["status"] != "note"]
            for d in report.documents:
                if d["source"] in notes and not d["message"]:
                    d["message"] = notes[d["source"]]
        return report

    def add_documents(self, documents: Sequence[Document], *, spans: Mapping[str, Sequence[PresetSpan]] | None = None,
                      progress: Progress | None = None) -> IngestReport:
        """Documents built in code (see :meth:`Engine.add_documents`)."""
        items = []
        for d in documents:
            validate_name("lens", d.lens)
            items.append(Work(d.source_path, document=d, lens=d.lens, tenant=self.c.tenant(d.tenant),
                              spans=(spans or {}).get(d.document_id)))
        return self.run(items, progress=progress, report=IngestReport(files=len(documents)), total=len(items))

    def reindex(self, *, progress: Progress | None = None) -> IngestReport:
        """Every chunk, sentence and mention rebuilt from the stored document versions with the
        current settings, each version replayed over its own interval (see :meth:`Engine.reindex`)."""
        started = time.perf_counter()
        progress = progress or Progress()
        report = IngestReport()
        c = self.c
        c.reindexing = True  # an outdated workspace may be opened to be rebuilt
        try:
            # One transaction: readers keep the old index until the new one is whole, and a
            # crash half way leaves the old one.
            with c.store.writer(on_wait=progress.message), c.store.transaction():
                store = c.store
                chains: dict[tuple[str, str], list[dict[str, Any]]] = {}
                for row in store.all_document_versions():
                    chains.setdefault((row["tenant_id"], row["document_id"]), []).append(row)
                for chain in chains.values():
                    chain.sort(key=lambda r: r["version_sequence"])
                store.drop_derived(c.embedder.dim)
                c.reload_extractor()  # the gazetteer may have changed too
                report.files = len(chains)
                depth = max((len(ch) for ch in chains.values()), default=0)
                replay = IngestPipeline(c, [s for s in self.stages if s.scope != "run"])
                for generation in range(depth):
                    # Closing the previous versions needs each version's own time: after the
                    # first generation, one document per batch.
                    replay.run(self._replay(chains, generation), progress=progress, report=report,
                               batch_limit=None if generation == 0 else 1,
                               total=sum(1 for ch in chains.values() if generation < len(ch)))
                report.added, report.updated = len(chains), 0
                self.run([], progress=progress, report=report, rebuild_graph=True)  # the graph, and run stages
                if store.has_table(CHUNKS):
                    store.optimize(force=True)
        finally:
            c.reindexing = False
        report.seconds = time.perf_counter() - started
        return report

    def _replay(self, chains: Mapping[tuple[str, str], list[dict[str, Any]]], generation: int) -> Iterator[Work]:
        for chain in chains.values():
            if generation >= len(chain):
                continue
            row = chain[generation]
            previous = chain[generation - 1] if generation else None
            if row["change_type"] == DELETE:
                self._delete(row, row["as_of"], version=row["version_id"])
                continue
            doc = document_from_row(row, doc_type=self._doc_type(row))
            yield Work(doc.source_path, document=doc, lens=doc.lens, tenant=doc.tenant, previous=previous,
                       version=row["version_id"], at=row["as_of"], doc_row_exists=True)

    def _doc_type(self, row: Mapping[str, Any]) -> str:
        """A stored version's type, inferred again under the current rules unless its front
        matter set one."""
        return document_metadata(row).get("type") or infer_doc_type(
            row["source_path"].rsplit("/", 1)[-1], row["text"] or "", row["lens"],
            rules=self.c.doc_rules, default=self.c.settings.doc_types.default)

    def _sync(self, paths: Sequence[str | Path], seen: Iterable[str], lens: str, tenant: str, at: datetime) -> int:
        """Tombstone documents of ``lens`` under the folders in ``paths`` whose files are gone
        (``seen``: the real paths found by this run)."""
        folders = [real_path(Path(p)).rstrip("/") + "/" for p in paths if Path(p).is_dir()]
        present = set(seen)
        gone = [row for row in self.c.store.documents(tenant)
                if row["lens"] == lens and row["source_path"] not in present
                and any(row["source_path"].startswith(f) for f in folders) and not os.path.exists(row["source_path"])]
        return self._remove(gone, tenant, at)

    def clear(self, *, lens: str | None = None, tenant: str | None = None) -> int:
        """Delete the tenant's documents (of one lens, if given) with all their versions; a lens
        that removed nothing is checked against the workspace's (a misspelling is named)."""
        tenant = self.c.tenant(tenant)
        removed = self.c.store.clear(tenant, lens=lens)
        if lens is not None and not removed:
            self.c.check_lenses(tenant, [lens])
        if lens is None and not self.c.store.documents_any():
            self.c.workspace.forget()
        return removed

    def delete(self, documents: Iterable[str], *, tenant: str | None = None) -> int:
        """Mark documents deleted (by source path, as given or resolved, or document id; a folder
        names every document under it, whether or not it is still on disk): their history
        stays, as-of queries still see them before now. Returns how many were current."""
        tenant = self.c.tenant(tenant)
        wanted = {str(d) for d in documents}
        wanted |= {real_path(Path(w)) for w in list(wanted)}
        folders = tuple(w.rstrip("/") + "/" for w in wanted if w.rstrip("/"))
        with self.c.store.writer():
            rows = [r for r in self.c.store.documents(tenant)
                    if r["document_id"] in wanted or r["source_path"] in wanted
                    or r["source_path"].startswith(folders)]
            return self._remove(rows, tenant, datetime.now(UTC), summary="deleted")

    def _remove(self, rows: Sequence[Mapping[str, Any]], tenant: str, at: datetime, *,
                summary: str = "file removed") -> int:
        """Tombstone every document of ``rows``, then take their chunks out of the graph."""
        removed: list[Mapping[str, Any]] = []
        for row in rows:
            removed.extend(self._delete(row, at, summary=summary))
        if removed and self.c.settings.graph.enabled:
            from ragloom.graph.maintain import GraphMaintainer

            GraphMaintainer(self.c).update(tenant, set(), removed)
        return len(rows)

    def _delete(self, row: Mapping[str, Any], at: datetime, *, version: str | None = None,
                summary: str = "file removed") -> list[dict[str, Any]]:
        """Close every current row of a document and record tombstones (a new document version
        unless ``version`` names an existing tombstone row, as when reindex replays one);
        returns the chunk rows it closed."""
        tenant, doc_id = row["tenant_id"], row["document_id"]
        tomb = version or new_id()
        store = self.c.store
        rows: dict[str, list[dict[str, Any]]] = {CHUNKS: [], SENTENCES: []}
        close: dict[str, list[str]] = {CHUNKS: [], SENTENCES: []}
        for kind in (CHUNKS, SENTENCES):
            for old in store.chunks(tenant, document_ids=[doc_id], with_vectors=True, table=kind):
                close[kind].append(old["version_id"])
                rows[kind].append(tombstone(old, tomb, at))
        if version is None:
            rows["documents"] = [document_tombstone(row, tomb, at, summary=summary)]
            close["documents"] = [row["version_id"]]
        previous = row["previous_version_id"] if version is not None else row["version_id"]
        store.write(rows=rows, close=close, close_mentions_of=[previous] if previous else [], at=at,
                    dim=self.c.embedder.dim)
        return [{**r, "change_type": "closed"} for r in rows[CHUNKS]]

