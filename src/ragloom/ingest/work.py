"""The values that flow through the ingest stages: one :class:`Work` per document, and the
:class:`IngestRun` every stage of one run shares."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragloom.chunk.preset import PresetSpan
from ragloom.enrich.entities import EntityMention
from ragloom.enrich.quality import ChunkQuality
from ragloom.ingest.report import IngestReport, Progress
from ragloom.store.plan import Track
from ragloom.store.schema import new_id
from ragloom.types import Chunk, Document, Section

if TYPE_CHECKING:
    from ragloom.components import Components


@dataclass
class Work:
    """One document on its way from a file (or a :class:`~ragloom.types.Document` built in
    code) to rows in the store. Each stage reads what earlier ones filled and adds its part."""

    #: How messages name it: the file path, or the document's source path.
    source: str
    path: Path | None = None
    lens: str = "default"
    tenant: str = "default"
    document: Document | None = None
    #: The document's current row in the store, if it has one (the version this one replaces).
    previous: Mapping[str, Any] | None = None
    version: str = field(default_factory=new_id)
    #: When this version becomes valid; None: the run's moment.
    at: datetime | None = None
    #: Chunk spans decided elsewhere (start, end, section path), replacing the chunker.
    spans: Sequence[PresetSpan] | None = None
    #: Set by reindex, which replays versions whose document rows already exist.
    doc_row_exists: bool = False
    sections: list[Section] = field(default_factory=list)
    mentions: list[EntityMention] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    sentences: list[Chunk] | None = None  # None: no sentence index
    entities: list[list[str]] = field(default_factory=list)  # entity ids per chunk
    key_terms: list[list[str]] = field(default_factory=list)
    time_refs: list[list[str]] = field(default_factory=list)
    tracks: dict[str, Track] = field(default_factory=dict)
    qualities: list[ChunkQuality] = field(default_factory=list)
    #: Why the document leaves the run early without failing ("unchanged").
    skip: str | None = None
    #: The file's state when it was read (the store checks it did not change since).
    read_stat: os.stat_result | None = None

    @property
    def doc(self) -> Document:
        """The loaded document (stages after ``load`` may rely on it)."""
        assert self.document is not None, f"{self.source}: no document loaded before this stage"
        return self.document

    def size(self) -> int:
        """Rows this document plans to write or keep, for batching."""
        return sum(len(t.plans) for t in self.tracks.values()) or len(self.chunks) + len(self.sentences or ())


@dataclass
class GraphChanges:
    """What a run changed: chunk ids added or edited, and the rows that stopped being current."""

    changed: set[str] = field(default_factory=set)
    removed: list[Mapping[str, Any]] = field(default_factory=list)
    tenants: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed)


@dataclass
class IngestRun:
    """What the stages of one run share: the engine's components, the moment, the report."""

    components: Components
    report: IngestReport
    progress: Progress
    at: datetime
    changes: GraphChanges = field(default_factory=GraphChanges)
    #: Whether the graph must be rebuilt whole at the end (it was stale when the run began).
    rebuild_graph: bool = False
    _current: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=dict)
    _counts: dict[str, dict[str, int]] = field(default_factory=dict)
    _tombstones: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=dict)

    def current(self, tenant: str, document_id: str) -> Mapping[str, Any] | None:
        """The document's current row, read once per tenant per run (under the write lock)."""
        if tenant not in self._current:
            self._current[tenant] = {r["document_id"]: r for r in self.components.store.documents(tenant)}
        return self._current[tenant].get(document_id)

    def tombstone(self, tenant: str, document_id: str) -> Mapping[str, Any] | None:
        """The deletion that ended the document's history, if it was deleted and not restored
        (read once per tenant per run)."""
        if tenant not in self._tombstones:
            self._tombstones[tenant] = self.components.store.tombstones(tenant)
        return self._tombstones[tenant].get(document_id)

    def current_rows(self, tenant: str) -> Mapping[str, Mapping[str, Any]]:
        self.current(tenant, "")
        return self._current[tenant]

    def facts(self, tenant: str, document_id: str) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None, bool]:
        """What the load stage asks the store about one document (its current row, its last
        deletion, whether it is whole), for a run of the same stages elsewhere (a Ray worker)."""
        current = self.current(tenant, document_id)
        return current, self.tombstone(tenant, document_id), current is not None and self.whole(tenant, current)

    def learn(self, tenant: str, document_id: str,
              facts: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None, bool]) -> None:
        """Take :meth:`facts` from the run that read them, so that this run asks the store nothing
        about the tenant's documents (it knows only those it was told about)."""
        current, tomb, whole = facts
        known, tombs, counts = (self._current.setdefault(tenant, {}), self._tombstones.setdefault(tenant, {}),
                                self._counts.setdefault(tenant, {}))
        if current is not None:
            known[document_id] = current
            counts[document_id] = int(current.get("chunk_count") or 0) if whole else -1
        if tomb is not None:
            tombs[document_id] = tomb

    def whole(self, tenant: str, row: Mapping[str, Any]) -> bool:
        """Whether every chunk the document row promises is there (a re-ingest verifies)."""
        if tenant not in self._counts:
            self._counts[tenant] = self.components.store.chunk_counts(tenant)
        return self._counts[tenant].get(row["document_id"], 0) == int(row.get("chunk_count") or 0)
