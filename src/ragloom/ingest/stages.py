"""The ingest stages: each a small object with one method, ``stage(items, run) -> items``.

=========  ========  ===============================================================
stage      scope     does
=========  ========  ===============================================================
load       document  reads the file, skips it if unchanged (and whole), converts it
parse      document  sections, and entity mentions (protected from chunk cuts)
chunk      document  chunks by the configured strategy; sentences for the index
enrich     document  prefixes, hashes and ids; entities, key terms, time references
context    document  with prefix.llm_context: a context from the [llm] model in each prefix
version    document  matches the previous version's rows: kept, reused, to embed
embed      batch     vectors for what needs them, in sub-batches with progress
quality    batch     chunk quality (needs the sentence vectors)
store      batch     rows written as one commit; what changed noted for the graph
graph      run       the context graph updated for what changed (rebuilt if stale)
=========  ========  ===============================================================

A *document* stage runs as each file is read (a failure there fails that file alone); a
*batch* stage runs on documents grouped to about ``ingest.batch_chunks`` rows (a failure is
retried one document at a time, so the culprit fails alone); a *run* stage runs once at the
end. Stages never call each other; :class:`~ragloom.ingest.pipeline.IngestPipeline` runs them
in order, and a user can insert their own.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from ragloom.chunk import Chunker
from ragloom.chunk.preset import PresetChunker, PresetSpan
from ragloom.embed import HashingEmbedder
from ragloom.enrich import content_hash, enrich_chunks
from ragloom.enrich.entities import entities_per_chunk, named_by_place
from ragloom.enrich.keyterms import extract_key_terms
from ragloom.enrich.quality import assess_chunks
from ragloom.enrich.search_text import search_text
from ragloom.errors import TooManyRowsError
from ragloom.ingest import llm_context
from ragloom.ingest.llm_context import ChunkContextWriter
from ragloom.ingest.work import IngestRun, Work
from ragloom.load import (
    ConverterProcess,
    Limits,
    changed_since,
    display_path,
    document_id,
    file_hash,
    load_file,
    read_checked,
)
from ragloom.load.scan import real_path
from ragloom.parse.sections import _headings, parse_sections
from ragloom.parse.sentences import sentence_spans
from ragloom.parse.timeref import defined_names, extract_time_refs, time_labels
from ragloom.store.plan import CHUNKS, SENTENCES, Track, plan_track, summary_of, track_rows
from ragloom.store.schema import document_row, mention_rows
from ragloom.versions import DELETE

if TYPE_CHECKING:
    from ragloom.components import Components

Scope = Literal["document", "batch", "run"]


@runtime_checkable
class Stage(Protocol):
    """One step of ingest. ``scope`` says when it runs (see the module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def scope(self) -> Scope: ...

    def __call__(self, items: list[Work], run: IngestRun) -> list[Work]:
        """The items, advanced by this stage; an item left out has left the run (it is
        either reported as failed or marked ``skip``)."""
        ...


class _Timed:
    """Stages time themselves into the report under their name."""

    name: ClassVar[str]
    scope: ClassVar[Scope]

    def __call__(self, items: list[Work], run: IngestRun) -> list[Work]:
        started = time.perf_counter()
        try:
            return self.run(items, run)
        finally:
            run.report.add_time(self.name, time.perf_counter() - started)

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        raise NotImplementedError  # pragma: no cover - every stage defines it


class Load(_Timed):
    """Files become documents within the ``[ingest]`` bounds (size on disk, converted text,
    unpacked parts, nesting, rows, conversion time; see :mod:`ragloom.load.limits`).

    Unchanged files (same bytes, same lens, every chunk present) leave the run before they are
    parsed. A file whose document was deleted continues that document's history (its next
    version reads "restored"). A document of headings only becomes chunks of its headings,
    so that it can be found. What was done to read a file (a fallback encoding, NULs removed,
    headings indexed) is noted on its line of the report.
    """

    name = "load"
    scope: ClassVar[Scope] = "document"
    #: Characters of headings per chunk of a document that has nothing but headings.
    heading_chunk_chars = 1000

    def __init__(self) -> None:
        self._converter: ConverterProcess | None = None

    def close(self) -> None:
        """Stop the converter process, if one was started (the next file starts another)."""
        if self._converter is not None:
            self._converter.close()

    def __getstate__(self) -> dict[str, Any]:
        # A copy sent to another process (a Ray worker) starts its own converter there.
        return {**self.__dict__, "_converter": None}

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        c = run.components
        limits = Limits.from_settings(c.settings.ingest)
        for item in items:
            notes: tuple[str, ...] = ()
            if item.document is None:
                assert item.path is not None, "a work item has a path or a document"
                item.previous = self._previous(item, run, document_id(item.tenant, real_path(item.path)))
                data, item.read_stat = read_checked(item.path, limits)
                if not self._unchanged(item, run, "file_hash", file_hash(data)):
                    loaded = load_file(item.path, lens=item.lens, tenant=c.tenant(item.tenant), limits=limits,
                                       doc_type_rules=c.doc_rules, default_doc_type=c.settings.doc_types.default,
                                       data=data, converter=self._converter_for(limits))
                    item.document, notes = loaded.document, loaded.notes
            elif not item.doc_row_exists:  # reindex gives each replayed version its predecessor
                item.previous = self._previous(item, run, item.document.document_id)
                self._unchanged(item, run, "content_hash", content_hash(item.document.text))
            if item.document is None or item.skip is not None:
                continue
            self._check_rows(item, run, limits)
            if item.spans is None:
                notes += self._headings_only(item)
            if notes and item.path is not None:
                line = f"{display_path(item.path)}: {'; '.join(notes)}; ingested"
                run.report.note(item.source, "note", message=line)
                run.progress.note(line)
        return items

    def _converter_for(self, limits: Limits) -> ConverterProcess | None:
        """The child process that converts PDF, DOCX and HTML under the time limit (none without one)."""
        if limits.max_seconds is None:
            return None
        if self._converter is None:
            self._converter = ConverterProcess()
        return self._converter

    @staticmethod
    def _previous(item: Work, run: IngestRun, doc_id: str) -> Mapping[str, Any] | None:
        """The document's current row; else, if its last version is a deletion, that tombstone,
        so that a file ingested again continues its history instead of starting a new one."""
        row = run.current(item.tenant, doc_id)
        return row if row is not None else run.tombstone(item.tenant, doc_id)

    @staticmethod
    def _unchanged(item: Work, run: IngestRun, column: str, digest: str) -> bool:
        row = item.previous
        if (row is None or row["change_type"] == DELETE or row[column] != digest or row["lens"] != item.lens
                or not row.get("chunk_count") or not run.whole(item.tenant, row)):
            return False
        item.skip = "unchanged"
        return True

    @staticmethod
    def _check_rows(item: Work, run: IngestRun, limits: Limits) -> None:
        """Refuse a document that would make more sentence and chunk rows than
        ``ingest.max_rows_per_file``: a cheap upper bound first, the sentence splitter if needed."""
        if limits.max_rows is None:
            return
        s = run.components.settings
        text = item.doc.text
        size = run.components.chunker.size_model()
        chunks = len(text) // max(1, size.target * (4 if size.unit == "tokens" else 1)) + 1
        if not s.sentences.enabled:
            sentences = 0
        else:
            bound = (text.count("\n") + text.count(".") + text.count("!") + text.count("?") + text.count("\u2026")
                     + len(text) // s.chunking.max_sentence_chars + 1)
            sentences = bound if bound + chunks <= limits.max_rows else len(
                sentence_spans(text, 0, len(text), max_chars=s.chunking.max_sentence_chars))
        if sentences + chunks > limits.max_rows:
            raise TooManyRowsError(
                display_path(item.path) if item.path is not None else item.source,
                f"about {sentences:,} sentences and {chunks:,} chunks, above ingest.max_rows_per_file = "
                f"{limits.max_rows}", fix="raise ingest.max_rows_per_file or split the file")

    def _headings_only(self, item: Work) -> tuple[str, ...]:
        """Chunk spans for a document with headings and nothing under them (the chunkers skip
        sections without text): its headings, grouped, are what it says."""
        text = item.doc.text
        if parse_sections(text):
            return ()
        spans = self.heading_spans(text, self.heading_chunk_chars)
        if not spans:
            return ()
        item.spans = spans
        return (f"only headings, no text under them: indexed as {len(spans)} chunk{'s' if len(spans) > 1 else ''} "
                "of headings",)

    @staticmethod
    def heading_spans(text: str, max_chars: int) -> list[PresetSpan]:
        """Spans of consecutive heading lines, each under ``max_chars`` when a line allows, with
        the heading path of its first heading."""
        spans: list[PresetSpan] = []
        path: tuple[str, ...] = ()
        levels: tuple[int, ...] = ()
        start = end = -1
        first: tuple[str, ...] = ()
        for line_start, body, level, title in _headings(text):
            keep = sum(1 for lv in levels if lv < level)
            path, levels = path[:keep] + (title,), levels[:keep] + (level,)
            line_end = min(body, len(text))
            while line_end > line_start and text[line_end - 1].isspace():
                line_end -= 1
            if line_end <= line_start:
                continue
            if start < 0 or line_end - start > max_chars:
                if start >= 0:
                    spans.append((start, end, first))
                start, first = line_start, tuple(t for t in path if t)
            end = line_end
        if start >= 0:
            spans.append((start, end, first))
        return spans


class Parse(_Timed):
    """Sections (heading paths, exact spans) and entity mentions."""

    name = "parse"
    scope: ClassVar[Scope] = "document"

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        c = run.components
        for item in items:
            item.sections = parse_sections(item.doc.text)
            item.mentions = c.extractor(item.doc.text) if c.settings.entities.enabled else []
        return items


class Chunk(_Timed):
    """Chunks by the configured strategy, or ``chunker`` (mentions are protected spans), and
    the sentence nodes of the sentence index (unless ``sentences`` is False)."""

    name = "chunk"
    scope: ClassVar[Scope] = "document"

    def __init__(self, chunker: Chunker | None = None, *, sentences: bool = True) -> None:
        self.chunker = chunker
        self.sentences = sentences

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        c = run.components
        s = c.settings
        for item in items:
            chunker = self.chunker or c.chunker
            if item.spans is not None:
                chunker = PresetChunker(item.spans, tokenizer=s.chunking.tokenizer)
            protected = [(m.start, m.end) for m in item.mentions] if s.entities.protect_mentions else []
            item.chunks = chunker.chunk(item.doc.text, item.sections, protected=protected)
            if s.sentences.enabled and self.sentences:
                item.sentences = c.sentencer.chunk(item.doc.text, item.sections,
                                                   protected=[(m.start, m.end) for m in item.mentions])
        return items


class Enrich(_Timed):
    """Contextual prefixes, content hashes and stable ids; per chunk the entities it
    mentions, its key terms and its time references."""

    name = "enrich"
    scope: ClassVar[Scope] = "document"

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        c = run.components
        g = c.settings.graph
        for item in items:
            doc = item.doc
            item.chunks = enrich_chunks(doc, item.chunks, c.prefix)
            if item.sentences is not None:
                item.sentences = enrich_chunks(doc, item.sentences, None)  # a sentence is embedded as it stands
            item.entities = entities_per_chunk(item.chunks, item.mentions)
            # A chunk's key terms are what it is about: the people a document names by place, as
            # speakers or attendees, are not, wherever it names them ("Jack" for "Jack Huey:"); with
            # them a council's themes were its members' names and its minutes linked by who came.
            present = {m.canonical for m in item.mentions if named_by_place(m)}
            topical = [m for m in item.mentions if m.type != "date" and m.canonical not in present]
            names = {m.entity_id: m.canonical for m in topical}
            item.key_terms = [extract_key_terms(ch.text, domain_terms=g.domain_terms, top_n=g.key_terms,
                                                entities=dict.fromkeys(names[e] for e in ents if e in names),
                                                not_topics=present)
                              for ch, ents in zip(item.chunks, entities_per_chunk(item.chunks, topical) if present
                                                  else item.entities, strict=True)]
            not_periods = defined_names(doc.text)  # "HackerOne (H1)" anywhere makes "H1" a name everywhere
            item.time_refs = [time_labels(extract_time_refs(ch.text, reference=doc.document_date, names=not_periods))
                              for ch in item.chunks]
        return items


class ChunkContext(_Timed):
    """With ``[prefix] llm_context``: each chunk's prefix gets a short context that the ``[llm]``
    model writes from the whole document (:mod:`ragloom.ingest.llm_context`), cached by content
    so that re-ingest calls no model; a call that fails after its retries fails the document."""

    name = "context"
    scope: ClassVar[Scope] = "document"
    #: The time a model takes to write contexts is not the file's (``ingest.max_seconds_per_file``).
    bounded: ClassVar[bool] = False

    def __init__(self) -> None:
        self._writer: tuple[object, ChunkContextWriter] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # A copy sent to another process (a Ray worker) makes its own model client there.
        return {**self.__dict__, "_writer": None}

    def prepare(self, components: Components) -> None:
        """Build the model client before any file is read: no provider or no key stops the
        ingest at once with one message, instead of failing every document with it."""
        if llm_context.wanted(components.settings):
            self._writer_for(components)

    def _writer_for(self, components: Components) -> ChunkContextWriter:
        if self._writer is None or self._writer[0] is not components:
            writer = ChunkContextWriter.from_settings(components.settings, components.workspace.path,
                                                      components.workspace.cache_path)
            self._writer = (components, writer)
        return self._writer[1]

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        c = run.components
        if not llm_context.wanted(c.settings):
            return items
        writer = self._writer_for(c)
        for item in items:
            item.chunks = writer.apply(item.doc, item.chunks, separator=c.settings.prefix.separator,
                                       progress=run.progress)
        return items


class Version(_Timed):
    """Each track matched against the previous version's rows: what stays, whose vector is
    reused, what must be embedded."""

    name = "version"
    scope: ClassVar[Scope] = "document"

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        c = run.components
        store = c.store
        contextual = c.settings.embedding.embed_text == "contextual"
        for item in items:
            doc = item.doc
            tracks = {CHUNKS: item.chunks}
            if item.sentences is not None:
                tracks[SENTENCES] = item.sentences
            for kind, chunks in tracks.items():
                old = store.chunks(doc.tenant, document_ids=[doc.document_id], with_vectors=True,
                                   table=kind) if item.previous is not None else []
                embedded = (lambda ch: ch.contextualized_text) if kind == CHUNKS and contextual else (lambda ch: ch.text)
                item.tracks[kind] = plan_track(kind, doc, item.version, chunks, old, embedded)
        return items


class Embed(_Timed):
    """Vectors for every planned row that has none, in sub-batches so that progress moves.

    With ``sentences.vectors = "derived"`` and an embedder that pools token states (the ONNX
    one), a sentence inside a chunk being embedded takes its vector from that chunk's pass:
    the mean of its tokens' states there, so the sentence index costs no second model call.
    Sentences no such chunk holds are embedded on their own.
    """

    name = "embed"
    scope: ClassVar[Scope] = "batch"
    #: Texts per call to the embedder: small enough for the bar to move, large enough to batch.
    step = 256

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        needs = {id(track): track.needs_vector() for item in items for track in item.tracks.values()}
        # What the report says: of each version's chunks and sentences, how many were embedded
        # and how many kept a vector of the version before (the row kept, or rewritten with it).
        planned = {kind: sum(len(t.plans) for item in items for t in item.tracks.values() if t.kind == kind)
                   for kind in (CHUNKS, SENTENCES)}
        embedded = self._embed(items, run, needs) if any(needs.values()) else {CHUNKS: 0, SENTENCES: 0}
        run.report.chunks_embedded += embedded[CHUNKS]
        run.report.chunks_reused += planned[CHUNKS] - embedded[CHUNKS]
        run.report.sentences_embedded += embedded[SENTENCES]
        run.report.sentences_reused += planned[SENTENCES] - embedded[SENTENCES]
        return items

    def _embed(self, items: list[Work], run: IngestRun, needs: dict[int, list[int]]) -> dict[str, int]:
        """Vectors for the positions in ``needs``; the chunks and sentences embedded."""
        embedder = run.components.embedder
        derive = run.components.settings.sentences.vectors == "derived" and bool(getattr(embedder, "pools", False))
        spans: dict[tuple[int, int], list[tuple[int, int, int]]] = {}  # chunk job -> (sentence, start, end)
        if derive:
            for item in items:
                chunks, sentences = item.tracks[CHUNKS], item.tracks.get(SENTENCES)
                if sentences is not None:
                    needs[id(sentences)] = _assign_sentences(chunks, needs[id(chunks)], sentences,
                                                             needs[id(sentences)], spans)
        jobs = [(track, i) for item in items for track in item.tracks.values() for i in needs[id(track)]]
        run.progress.stage("Embedding", len(jobs) + sum(len(v) for v in spans.values()))
        for lo in range(0, len(jobs), self.step):
            part = jobs[lo : lo + self.step]
            texts = [track.embedded[i] for track, i in part]
            pooled = [spans.get((id(track), i), []) for track, i in part]
            if any(pooled):
                vectors, span_vectors = embedder.pool(texts, [[(a, b) for _, a, b in p] for p in pooled])  # type: ignore[attr-defined]
                for (track, _), found, vecs in zip(part, pooled, span_vectors, strict=True):
                    if found:
                        sentences_track = _sentences_of(items, track)
                        for (position, _, _), vector in zip(found, vecs, strict=True):
                            sentences_track.vectors[position] = vector
            else:
                # A text said twice (a repeated sentence, a boilerplate line) is embedded once.
                unique = list(dict.fromkeys(texts))
                once = dict(zip(unique, embedder.embed(unique), strict=True))
                vectors = np.stack([once[t] for t in texts])
            for (track, i), vector in zip(part, vectors, strict=True):
                track.vectors[i] = vector
            run.progress.advance("Embedding", len(part) + sum(len(p) for p in pooled))
        chunk_jobs = sum(1 for track, _ in jobs if track.kind == CHUNKS)
        return {CHUNKS: chunk_jobs, SENTENCES: len(jobs) - chunk_jobs + sum(len(v) for v in spans.values())}


def _assign_sentences(chunks: Track, embedding: Sequence[int], sentences: Track, wanted: Sequence[int],
                      spans: dict[tuple[int, int], list[tuple[int, int, int]]]) -> list[int]:
    """Give each wanted sentence to the first chunk being embedded that holds it whole (its span
    in that chunk's embedded text recorded in ``spans``); returns the sentences left to embed."""
    # In document order chunk ends rise with chunk starts, so the last chunk starting at or
    # before a sentence is the only one that can hold it whole.
    holders = sorted((chunks.plans[i].chunk.start, chunks.plans[i].chunk.end, i) for i in embedding)
    starts = [h[0] for h in holders]
    alone = []
    for position in wanted:
        s = sentences.plans[position].chunk
        k = bisect.bisect_right(starts, s.start) - 1
        found = holders[k][2] if k >= 0 and s.end <= holders[k][1] else None
        if found is None:
            alone.append(position)
            continue
        chunk = chunks.plans[found].chunk
        offset = len(chunks.embedded[found]) - len(chunk.text)  # the prefix, when contextual
        local = offset + s.start - chunk.start
        spans.setdefault((id(chunks), found), []).append((position, local, local + len(s.text)))
    return alone


def _sentences_of(items: Sequence[Work], chunks: Track) -> Track:
    for item in items:
        if item.tracks.get(CHUNKS) is chunks:
            return item.tracks[SENTENCES]
    raise AssertionError("a chunk track belongs to a work item")  # pragma: no cover


class Quality(_Timed):
    """Chunk quality from the sentence vectors (a lexical stand-in without a sentence index)."""

    name = "quality"
    scope: ClassVar[Scope] = "batch"

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        c = run.components
        chunker = c.chunker
        for item in items:
            chunks = item.tracks[CHUNKS].chunks
            sentences = item.tracks.get(SENTENCES)
            if sentences is not None:
                spans = [(s.start, s.end) for s in sentences.chunks]
                vectors = (np.stack([sentences.vector_of(i) for i in range(len(spans))]) if spans
                           else np.zeros((0, 1), dtype=np.float32))
            else:
                nodes = c.sentencer.chunk(item.doc.text, item.sections)
                spans = [(n.start, n.end) for n in nodes]
                vectors = HashingEmbedder(256).embed([n.text for n in nodes])
            model = PresetChunker(item.spans).size_model() if item.spans else chunker.size_model()
            item.qualities = assess_chunks(chunks, spans, vectors, item.mentions, item.entities, model,
                                           0 if item.spans else chunker.overlap)
        return items


class Store(_Timed):
    """The batch's rows written as one commit: new chunk, sentence and mention versions, the
    closing of what they replace, and the document versions last."""

    name = "store"
    scope: ClassVar[Scope] = "batch"
    #: Runs where the write lock is held (a distributed runner keeps it on the driver).
    writes: ClassVar[bool] = True

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        items = self._unchanged_since_read(items, run)
        if not items:
            return items
        c = run.components
        rows: dict[str, list[dict[str, object]]] = {"documents": [], CHUNKS: [], SENTENCES: [], "mentions": []}
        close: dict[str, list[str]] = {"documents": [], CHUNKS: [], SENTENCES: []}
        close_mentions: list[str] = []
        split = c.settings.retrieval.split_identifiers
        for item in items:
            doc, at = item.doc, item.at or run.at
            chunk_track = item.tracks[CHUNKS]
            added, closes = track_rows(doc, chunk_track, version=item.version, at=at,
                                       embed_kind=c.settings.embedding.embed_text, entities=item.entities,
                                       qualities=item.qualities, key_terms=item.key_terms, time_refs=item.time_refs,
                                       indexed=lambda text: search_text(text, split_identifiers=split))
            rows[CHUNKS].extend(added)
            close[CHUNKS].extend(closes)
            if SENTENCES in item.tracks:
                added, closes = track_rows(doc, item.tracks[SENTENCES], version=item.version, at=at, embed_kind="naked")
                rows[SENTENCES].extend(added)
                close[SENTENCES].extend(closes)
            rows["mentions"].extend(mention_rows(doc, item.version, item.mentions, at))
            if item.previous is not None:
                close_mentions.append(item.previous["version_id"])
            if not item.doc_row_exists:
                summary = summary_of(chunk_track, first=item.previous is None)
                moved_from = item.previous.get("lens") if item.previous is not None else None
                if moved_from not in (None, doc.lens):  # the same file ingested under another lens
                    summary = f"lens {moved_from} -> {doc.lens}; {summary}"
                rows["documents"].append(document_row(doc, item.version, item.previous, at, len(chunk_track.plans),
                                                      summary))
                if item.previous is not None:
                    close["documents"].append(item.previous["version_id"])
        c.store.write(rows=rows, close=close, close_mentions_of=close_mentions,
                      at=max(item.at or run.at for item in items), dim=c.embedder.dim)
        report = run.report
        report.chunks_written += len(rows[CHUNKS])
        report.sentences_written += len(rows[SENTENCES])
        report.mentions_written += len(rows["mentions"])
        for item in items:
            if item.previous is None:
                report.added += 1
            else:
                report.updated += 1
            track = item.tracks[CHUNKS]
            report.note(item.source, "added" if item.previous is None else "updated", chunks=len(track.plans),
                        written=sum(1 for keep in track.keep if not keep))
            self._note_changes(item, run)
        return items

    @staticmethod
    def _unchanged_since_read(items: list[Work], run: IngestRun) -> list[Work]:
        """The items whose files did not change after they were read (checked here, when the
        read is long past for all but the freshest files, so that no file waits on its own)."""
        kept = []
        for item in items:
            changed = changed_since(item.path, item.read_stat) if item.path and item.read_stat else None
            if changed is None:
                kept.append(item)
            else:
                run.report.fail(item.source, str(changed))
                run.progress.message(str(changed))
        return kept

    @staticmethod
    def _note_changes(item: Work, run: IngestRun) -> None:
        track: Track = item.tracks[CHUNKS]
        run.changes.tenants.add(item.doc.tenant)
        for i, p in enumerate(track.plans):
            if not track.keep[i]:
                run.changes.changed.add(p.chunk.chunk_id)
                if p.previous is not None:
                    run.changes.removed.append(p.previous)
        run.changes.removed.extend(track.vanished)


class Graph(_Timed):
    """The context graph brought up to date with what the run changed."""

    name = "graph"
    scope: ClassVar[Scope] = "run"

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        from ragloom.graph.maintain import GraphMaintainer

        c = run.components
        if not c.settings.graph.enabled or not (run.changes or run.rebuild_graph):
            return items
        graph = GraphMaintainer(c)
        tenants = run.changes.tenants | (c.store.tenants() if run.rebuild_graph else set())
        for tenant in sorted(tenants):
            if run.rebuild_graph:
                run.report.relationships += graph.build(tenant)
            else:
                run.report.relationships += graph.update(tenant, run.changes.changed, run.changes.removed)
        return items


def default_stages() -> list[Stage]:
    """The stages of a local ingest, in order."""
    return [Load(), Parse(), Chunk(), Enrich(), ChunkContext(), Version(), Embed(), Quality(), Store(), Graph()]
