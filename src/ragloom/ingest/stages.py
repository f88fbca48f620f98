"""The ingest stages: each a small object with one method, ``stage(items, run) -> items``.

=========  ========  ===============================================================
stage      scope     does
=========  ========  ===============================================================
load       document  reads the file, skips it if unchanged (and whole), converts it
parse      document  sections, and entity mentions (protected from chunk cuts)
chunk      document  chunks by the configured strategy; sentences for the index
enrich     document  prefixes, hashes and ids; entities, key terms, time references
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

import time
from typing import ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from ragloom.chunk import Chunker
from ragloom.chunk.preset import PresetChunker
from ragloom.embed import HashingEmbedder
from ragloom.enrich import content_hash, enrich_chunks
from ragloom.enrich.entities import entities_per_chunk
from ragloom.enrich.keyterms import extract_key_terms
from ragloom.enrich.quality import assess_chunks
from ragloom.enrich.search_text import search_text
from ragloom.enrich.timeref import extract_time_refs, time_labels
from ragloom.ingest.work import IngestRun, Work
from ragloom.load import document_id, file_hash
from ragloom.parse.sections import parse_sections
from ragloom.store.plan import CHUNKS, SENTENCES, Track, plan_track, summary_of, track_rows
from ragloom.store.schema import document_row, mention_rows

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
    """Files become documents; unchanged ones (same bytes, same lens, every chunk present)
    leave the run before they are parsed."""

    name = "load"
    scope: ClassVar[Scope] = "document"

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        c = run.components
        for item in items:
            if item.document is None:
                assert item.path is not None, "a work item has a path or a document"
                source = item.path.resolve().as_posix()
                item.previous = run.current(item.tenant, document_id(item.tenant, source))
                data = item.path.read_bytes() if item.path.is_file() else None
                if data is None or not self._unchanged(item, run, "file_hash", file_hash(data)):
                    item.document = c.load(item.path, lens=item.lens, tenant=item.tenant, data=data)
            elif not item.doc_row_exists:  # reindex gives each replayed version its predecessor
                item.previous = run.current(item.tenant, item.document.document_id)
                self._unchanged(item, run, "content_hash", content_hash(item.document.text))
        return items

    @staticmethod
    def _unchanged(item: Work, run: IngestRun, column: str, digest: str) -> bool:
        row = item.previous
        if row is None or row[column] != digest or row["lens"] != item.lens or not run.whole(item.tenant, row):
            return False
        item.skip = "unchanged"
        return True


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
            names = {m.entity_id: m.canonical for m in item.mentions if m.type != "date"}
            item.key_terms = [extract_key_terms(ch.text, domain_terms=g.domain_terms, top_n=g.key_terms,
                                                entities=dict.fromkeys(names[e] for e in ents if e in names))
                              for ch, ents in zip(item.chunks, item.entities, strict=True)]
            item.time_refs = [time_labels(extract_time_refs(ch.text, reference=doc.document_date)) for ch in item.chunks]
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
                item.tracks[kind] = plan_track(kind, doc.document_id, item.version, chunks, old, embedded)
        return items


class Embed(_Timed):
    """Vectors for every planned row that has none, in sub-batches so that progress moves."""

    name = "embed"
    scope: ClassVar[Scope] = "batch"
    #: Texts per call to the embedder: small enough for the bar to move, large enough to batch.
    step = 256

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
        jobs = [(track, i) for item in items for track in item.tracks.values() for i in track.needs_vector()]
        run.report.chunks_reused += sum(len(t.vectors) for item in items for t in item.tracks.values())
        if not jobs:
            return items
        embedder = run.components.embedder
        run.progress.stage("Embedding", len(jobs))
        for lo in range(0, len(jobs), self.step):
            part = jobs[lo : lo + self.step]
            vectors = embedder.embed([track.embedded[i] for track, i in part])
            for (track, i), vector in zip(part, vectors, strict=True):
                track.vectors[i] = vector
            run.progress.advance("Embedding", len(part))
        run.report.chunks_embedded += sum(1 for track, _ in jobs if track.kind == CHUNKS)
        return items


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

    def run(self, items: list[Work], run: IngestRun) -> list[Work]:
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
            self._note_changes(item, run)
        return items

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
    return [Load(), Parse(), Chunk(), Enrich(), Version(), Embed(), Quality(), Store(), Graph()]
