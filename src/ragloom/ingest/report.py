"""What an ingest reports: counts, failures, timings; and how it reports progress as it goes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragloom.types import count_of

#: The progress stage that counts the chunk contexts a language model writes ([prefix] llm_context).
CONTEXT_STAGE = "Writing context"


class Progress:
    """Receives progress from long operations; the CLI draws bars, the default ignores it."""

    def stage(self, name: str, total: int | None) -> None:
        """A stage starts (``total`` units of work, if known)."""

    def advance(self, name: str, amount: int = 1) -> None:
        """``amount`` units of ``name`` are done."""

    def message(self, text: str) -> None:
        """Something worth a line of its own (a skipped file, for example)."""

    def note(self, text: str) -> None:
        """A file that landed with something worth saying (read as Windows-1252, say)."""
        self.message(text)


def skipped_sentence(skipped: dict[str, int]) -> str:
    """``Skipped 3 files of types ragloom does not read (.csv 2, no extension 1).``"""
    total = sum(skipped.values())
    kinds = ", ".join(f"{ext or 'no extension'} {n}" for ext, n in sorted(skipped.items(), key=lambda kv: -kv[1]))
    return f"Skipped {total} file{'s' if total != 1 else ''} of types ragloom does not read ({kinds})."


@dataclass
class IngestReport:
    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    #: Chunks whose vectors were computed, and those that kept the vector of an earlier version.
    chunks_embedded: int = 0
    chunks_reused: int = 0
    sentences_written: int = 0
    sentences_embedded: int = 0
    sentences_reused: int = 0
    mentions_written: int = 0
    relationships: int = 0  # context-graph edges added or recomputed
    timings: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    #: Files in the folders given that are of types ragloom does not read, by extension.
    skipped: dict[str, int] = field(default_factory=dict)
    #: One line per file: ``{"source", "status" (added | updated | unchanged | failed),
    #: "chunks" (the version's chunks), "written" (chunk rows written), "message"}``.
    documents: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    def note(self, source: str, status: str, *, chunks: int = 0, written: int = 0, message: str = "") -> None:
        self.documents.append({"source": source, "status": status, "chunks": chunks, "written": written,
                               "message": message})

    def fail(self, source: str, message: str) -> None:
        self.failed.append((source, message))
        self.note(source, "failed", message=message)

    def forget_failures_since(self, failed: int, documents: int) -> None:
        """Take back failures recorded after these counts (a batch retried one by one)."""
        del self.failed[failed:]
        self.documents[documents:] = [d for d in self.documents[documents:] if d["status"] != "failed"]

    def add_time(self, stage: str, seconds: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + seconds

    def summary(self) -> str:
        """What was done, in sentences that say what each count counts."""
        failed = len(self.failed)
        text = (f"{count_of(self.files, 'file')}: {self.added} added, {self.updated} updated, "
                f"{self.unchanged} unchanged, {self.deleted} deleted, {failed} failed. "
                f"{count_of(self.chunks_embedded, 'chunk')} embedded, {self.chunks_reused:,} reused; "
                f"{count_of(self.sentences_embedded, 'sentence')} embedded, {self.sentences_reused:,} reused; "
                f"{count_of(self.relationships, 'relationship')} found; {self.seconds:.1f}s.")
        if self.skipped:
            text += f" {skipped_sentence(self.skipped)}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__} | {"ok": self.ok}
