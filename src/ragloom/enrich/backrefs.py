"""Entity back-references: for each entity a chunk mentions, the other chunks that mention it.

Candidates come from an entity-to-chunks index (the ``entities`` list column of the chunks
table, queried with ``array_has_any``), never from comparing all pairs of chunks. Each is
scored as seed 002 asks: 0.3 proximity + 0.3 frequency + 0.4 embedding similarity.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragloom.parse.sentences import sentence_spans

WEIGHTS = (0.3, 0.3, 0.4)  # proximity, frequency, similarity
SUMMARY_CHARS = 200


@dataclass(frozen=True, slots=True)
class BackReference:
    entity_id: str
    entity_type: str
    entity_name: str
    chunk_id: str
    document_id: str
    source_path: str
    lens: str
    section_path: str
    relationship: str  # mentions | describes | references | defines
    context_summary: str
    relevance_score: float
    proximity: float
    frequency: float
    similarity: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _names_pattern(names: Sequence[str]) -> re.Pattern[str]:
    alternatives = sorted({re.escape(n) for n in names if n}, key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def relationship(text: str, section_path: str, names: Sequence[str], pattern: re.Pattern[str] | None = None) -> str:
    """How ``text`` treats the entity: defines it, is about it, points to it, or mentions it.

    ``pattern`` is :func:`_names_pattern` of ``names``, for callers that already built it.
    """
    if not names:
        return "mentions"
    name = "(?:" + "|".join(sorted({re.escape(n) for n in names}, key=len, reverse=True)) + ")"
    if re.search(rf"(?<!\w){name}(?!\w)\s*(?:\([^)]*\)\s*)?(?:is|are|means|refers to|stands for)\b|"
                 rf"\b(?:define[sd]?|definition of)\s+(?:the\s+)?{name}(?!\w)|^\s*{name}\s*:", text, re.I | re.M):
        return "defines"
    if pattern is None:
        pattern = _names_pattern(names)
    if pattern.search(section_path) or re.search(
            rf"\b(?:about|regarding|concerning|on)\s+(?:the\s+)?{name}(?!\w)", text, re.I):
        return "describes"
    if re.search(rf"\b(?:see|refer to|cf\.|according to|as described in)\s+(?:the\s+)?{name}(?!\w)", text, re.I):
        return "references"
    return "mentions"


def context_summary(text: str, names: Sequence[str], pattern: re.Pattern[str] | None = None) -> str:
    """The first sentence of ``text`` that names the entity, cut to 200 characters.

    ``pattern`` is :func:`_names_pattern` of ``names``, for callers that already built it.
    """
    if pattern is None and names:
        pattern = _names_pattern(names)
    for a, b in sentence_spans(text):
        sentence = " ".join(text[a:b].split())
        if pattern is None or pattern.search(sentence):
            return sentence if len(sentence) <= SUMMARY_CHARS else sentence[: SUMMARY_CHARS - 1].rstrip() + "…"
    return " ".join(text.split())[:SUMMARY_CHARS]


def proximity(chunk: Mapping[str, Any], other: Mapping[str, Any]) -> float:
    """1 / (1 + distance in chunks) within one document; 0 across documents."""
    if chunk["document_id"] != other["document_id"]:
        return 0.0
    return 1.0 / (1 + abs(int(chunk["chunk_index"]) - int(other["chunk_index"])))


def frequency(entity: str, other: Mapping[str, Any]) -> float:
    """How much of the other chunk is about the entity: its mentions there, saturating at 3."""
    return min(1.0, list(other.get("entities") or ()).count(entity) / 3.0)


def similarity(a: Any, b: Any) -> float:  # noqa: ANN401 - vectors as lists or arrays
    if a is None or b is None:
        return 0.0
    va, vb = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    denom = float(np.linalg.norm(va) * np.linalg.norm(vb)) or 1.0
    return max(0.0, float(va @ vb) / denom)


def back_references(chunk: Mapping[str, Any], candidates: Sequence[Mapping[str, Any]],
                    entities: Mapping[str, tuple[str, str, Sequence[str]]], *, limit: int = 3) -> list[BackReference]:
    """Back-references of ``chunk``: for each of its entities, the best ``limit`` other chunks.

    ``candidates`` are chunk rows (with vectors) that share at least one entity with ``chunk``;
    ``entities`` maps entity id to (type, canonical name, names it appears under).
    """
    out: list[BackReference] = []
    own = [e for e in dict.fromkeys(chunk.get("entities") or ()) if e in entities]
    # Proximity and similarity depend on the pair of chunks only, not on the entity: computed
    # once for each candidate that shares one of the entities scored below.
    wanted = set(own)
    pairs = {i: (proximity(chunk, other), similarity(chunk.get("vector"), other.get("vector")))
             for i, other in enumerate(candidates)
             if other["chunk_id"] != chunk["chunk_id"] and not wanted.isdisjoint(other.get("entities") or ())}
    for entity in own:
        kind, canonical, names = entities[entity]
        pattern = _names_pattern(names) if names else None
        scored = []
        for i, other in enumerate(candidates):
            if other["chunk_id"] == chunk["chunk_id"] or entity not in (other.get("entities") or ()):
                continue
            (p, s), f = pairs[i], frequency(entity, other)
            scored.append((WEIGHTS[0] * p + WEIGHTS[1] * f + WEIGHTS[2] * s, p, f, s, other))
        scored.sort(key=lambda x: -x[0])
        for score, p, f, s, other in scored[:limit]:
            section = other.get("section_path") or ""
            out.append(BackReference(
                entity, kind, canonical, other["chunk_id"], other["document_id"], other["source_path"], other["lens"],
                section, relationship(other["text"], section, names, pattern),
                context_summary(other["text"], names, pattern), round(score, 4), round(p, 4), round(f, 4), round(s, 4),
            ))
    return sorted(out, key=lambda r: -r.relevance_score)
