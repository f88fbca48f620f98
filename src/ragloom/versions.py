"""Matching a document's new chunks to its previous version's, so that unchanged chunks keep
their identity and vectors, edited ones become updates of what they were, and vanished ones
leave tombstones.

Matching is linear in the number of chunks: exact matches through a hash index, then each
remaining new chunk is compared with the remaining old chunks of nearby positions only.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragloom.types import Chunk, count_of

CREATE, UPDATE, DELETE = "create", "update", "delete"
#: How far (in chunk positions) an edited chunk is looked for around its old position.
NEIGHBOURHOOD = 3
#: Word-set overlap above which an unmatched new chunk counts as an edit of an old one.
EDIT_SIMILARITY = 0.35

_WORDS = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class ChunkPlan:
    """What to do with one chunk of the new version."""

    chunk: Chunk
    change_type: str  # create | update
    previous: Mapping[str, Any] | None  # the old row it replaces
    summary: str

    @property
    def edited(self) -> bool:
        return self.previous is not None and self.previous["content_hash"] != self.chunk.content_hash


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower()))


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' word sets."""
    wa, wb = _words(a), _words(b)
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def same_record(chunk: Chunk, row: Mapping[str, Any]) -> bool:
    """Whether ``row`` already says everything about ``chunk``: text, place, neighbours, prefix."""
    return (
        row["content_hash"] == chunk.content_hash
        and row["start_char"] == chunk.start
        and row["end_char"] == chunk.end
        and row["chunk_index"] == chunk.chunk_index
        and row["total_chunks"] == chunk.total_chunks
        and (row.get("prefix") or "") == chunk.prefix
        and (row.get("section_path") or "") == chunk.section_path_str
        and row.get("chunk_id") == chunk.chunk_id
        and row.get("prev_id") == chunk.prev_id
        and row.get("next_id") == chunk.next_id
    )


def plan_versions(new: Sequence[Chunk], old: Sequence[Mapping[str, Any]]) -> tuple[list[ChunkPlan], list[Mapping[str, Any]]]:
    """(a plan per new chunk, the old rows that vanished)."""
    by_hash: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in old:
        by_hash[row["content_hash"]].append(row)
    used: set[str] = set()
    plans: list[ChunkPlan | None] = [None] * len(new)

    for i, chunk in enumerate(new):
        candidates = [r for r in by_hash.get(chunk.content_hash, ()) if r["version_id"] not in used]
        if not candidates:
            continue
        row = min(candidates, key=lambda r: abs(r["chunk_index"] - chunk.chunk_index))
        used.add(row["version_id"])
        plans[i] = ChunkPlan(chunk, UPDATE, row, "text unchanged")

    remaining = sorted((r for r in old if r["version_id"] not in used), key=lambda r: r["chunk_index"])
    by_position: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for row in remaining:
        by_position[row["chunk_index"]].append(row)
    pairs: list[tuple[float, int, Mapping[str, Any]]] = []
    for i, chunk in enumerate(new):
        if plans[i] is not None:
            continue
        for pos in range(chunk.chunk_index - NEIGHBOURHOOD, chunk.chunk_index + NEIGHBOURHOOD + 1):
            for row in by_position.get(pos, ()):
                score = similarity(chunk.text, row["text"] or "")
                if score >= EDIT_SIMILARITY:
                    pairs.append((score, i, row))
    for score, i, row in sorted(pairs, key=lambda p: -p[0]):
        if plans[i] is not None or row["version_id"] in used:
            continue
        used.add(row["version_id"])
        plans[i] = ChunkPlan(new[i], UPDATE, row, f"edited ({score:.0%} of words shared)")

    final = [p or ChunkPlan(c, CREATE, None, "new") for p, c in zip(plans, new, strict=True)]
    vanished = [r for r in old if r["version_id"] not in used]
    return final, vanished


def document_summary(plans: Sequence[ChunkPlan], vanished: Sequence[Mapping[str, Any]], *, first: bool) -> str:
    if first:
        return f"created with {count_of(len(plans), 'chunk')}"
    edited = sum(1 for p in plans if p.edited)
    added = sum(1 for p in plans if p.change_type == CREATE)
    unchanged = sum(1 for p in plans if p.previous is not None and not p.edited)
    return f"{count_of(edited, 'chunk')} edited, {added} added, {len(vanished)} removed, {unchanged} unchanged"
