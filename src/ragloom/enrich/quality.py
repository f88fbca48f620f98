"""Chunk quality: five metrics, a weighted score, issues with suggestions, and a confidence.

The weights are seed 002's: length 0.2, entity density 0.2, semantic coherence 0.3, boundary
respect 0.15, overlap quality 0.15. Two metrics are redefined where the seed's versions cannot
work on real text: entity density is counted per 100 words (the seed's "2 to 5 entities per 100
characters" would need an entity every 20 to 50 characters), and coherence is the mean cosine
similarity of each sentence to the next, from the sentence vectors that the sentence index
computes anyway.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragloom.chunk.base import SizeModel
from ragloom.types import Chunk, QualityIssue

if TYPE_CHECKING:
    from ragloom.enrich.entities import EntityMention

WEIGHTS = {"length_score": 0.2, "entity_density": 0.2, "semantic_coherence": 0.3,
           "boundary_respect": 0.15, "overlap_quality": 0.15}
#: Entities per 100 words that count as well covered.
DENSITY_BAND = (2.0, 8.0)
#: About the 10th percentile of consecutive-sentence similarity inside chunks of the sample
#: corpus with all-MiniLM-L6-v2 (its median is 0.24): the least coherent tenth gets flagged.
LOW_COHERENCE = 0.12
_SPECIAL = re.compile(r"[^\w\s.,;:!?()\-'\"]")


@dataclass(frozen=True, slots=True)
class ChunkQuality:
    score: float
    confidence: float
    metrics: dict[str, float]
    issues: tuple[QualityIssue, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 4),
            "confidence": round(self.confidence, 4),
            "metrics": {k: round(v, 4) for k, v in self.metrics.items()},
            "issues": [{"kind": i.kind, "severity": i.severity, "description": i.description,
                        "suggestion": i.suggestion} for i in self.issues],
        }


def length_score(size: int, model: SizeModel) -> float:
    """1 at the target, at least 0.7 inside ``[minimum, maximum]``, falling away outside it."""
    if model.minimum <= size <= model.maximum:
        return max(0.7, 1 - abs(size - model.target) / model.target)
    if size < model.minimum:
        return 0.3 + 0.4 * size / model.minimum
    return max(0.3, 1.3 - size / model.maximum)


def density_score(entities: int, words: int) -> float:
    density = 100 * entities / max(words, 1)
    low, high = DENSITY_BAND
    if low <= density <= high:
        return 1.0
    if density < low:
        return density / low
    return max(0.3, 1.5 - density / (2 * high))


def coherence(vectors: np.ndarray) -> float:
    """Mean cosine of each sentence vector with the next (1.0 for a single sentence)."""
    if len(vectors) < 2:
        return 1.0
    sims = np.sum(vectors[:-1] * vectors[1:], axis=1)
    return float(np.clip(sims.mean(), 0.0, 1.0))


def _on(points: Sequence[int], x: int) -> bool:
    """Whether ``x`` is one of the sorted ``points``."""
    i = bisect.bisect_left(points, x)
    return i < len(points) and points[i] == x


def boundary_respect(chunk: Chunk, sentence_starts: Sequence[int], sentence_ends: Sequence[int]) -> float:
    """Half for starting where a sentence starts, half for ending where one ends."""
    return 0.5 * _on(sentence_starts, chunk.start) + 0.5 * _on(sentence_ends, chunk.end)


def overlap_quality(chunk: Chunk, previous: Chunk | None, configured: int, sentence_starts: Sequence[int]) -> float:
    """How well the chunk continues its predecessor: the configured overlap, starting on a sentence."""
    if previous is None or previous.section_index != chunk.section_index:
        return 1.0
    shared = max(0, previous.end - chunk.start)
    if configured <= 0:
        return 1.0 if shared == 0 else 0.7
    if shared == 0:
        return 0.4  # continuity lost: nothing shared with the previous chunk
    ratio = shared / configured
    score = 1.0 if 0.5 <= ratio <= 1.5 else max(0.4, 1 - abs(ratio - 1) / 2)
    if not _on(sentence_starts, chunk.start):
        score *= 0.85  # the overlap starts mid-sentence
    return score


def assess(chunk: Chunk, *, text_size: int, model: SizeModel, entities: int, entity_splits: int,
           vectors: np.ndarray, previous: Chunk | None, configured_overlap: int,
           sentence_starts: Sequence[int], sentence_ends: Sequence[int], whole_section: bool = False) -> ChunkQuality:
    """The quality of one chunk; ``text_size`` is its size in ``model.unit``."""
    words = len(chunk.text.split())
    metrics = {
        "length_score": length_score(text_size, model),
        "entity_density": density_score(entities, words),
        "semantic_coherence": coherence(vectors),
        "boundary_respect": boundary_respect(chunk, sentence_starts, sentence_ends),
        "overlap_quality": overlap_quality(chunk, previous, configured_overlap, sentence_starts),
    }
    score = sum(WEIGHTS[k] * v for k, v in metrics.items())
    issues = list(chunk.issues)
    if not any(i.kind == "length_violation" for i in issues) and not model.minimum <= text_size <= model.maximum:
        short = text_size < model.minimum
        # A chunk that is a whole short section could not have been longer: worth knowing, not fixing.
        severity = "low" if (short and whole_section) or metrics["length_score"] >= 0.5 else "medium"
        issues.append(QualityIssue(
            "length_violation", severity,
            f"{text_size} {model.unit}, {'below' if short else 'above'} the range [{model.minimum}, {model.maximum}]"
            + (" (the whole section)" if short and whole_section else ""),
            "merge short sections in the source, or lower min_size" if short else "lower chunk_size or max_size",
        ))
    if entity_splits:
        issues.append(QualityIssue("entity_split", "high", f"{entity_splits} entity mention(s) cut at the chunk edge",
                                   "use the boundary strategy, which never cuts a mention"))
    if metrics["boundary_respect"] < 1.0:
        issues.append(QualityIssue(
            "poor_boundary", "low" if metrics["boundary_respect"] >= 0.5 else "medium",
            "starts or ends inside a sentence", "raise boundary_window or use the boundary strategy",
        ))
    if metrics["semantic_coherence"] < LOW_COHERENCE and len(vectors) > 1:
        issues.append(QualityIssue(
            "low_coherence", "medium", f"its sentences are not about the same thing (coherence "
            f"{metrics['semantic_coherence']:.2f})", "add headings to the source or use smaller chunks",
        ))
    return ChunkQuality(score, _confidence(chunk.text, text_size, model, entities), metrics, tuple(issues))


def _confidence(text: str, size: int, model: SizeModel, entities: int) -> float:
    """Seed 002's confidence: size, entity richness and text quality, clipped to [0.1, 1]."""
    confidence = 1.0
    if size < model.minimum:
        confidence *= 0.8
    elif size > model.maximum:
        confidence *= 0.9
    confidence += min(entities * 0.05, 0.2)
    sentences = max(1, len(re.findall(r"(?<![.!?])[.!?]++(?:\s|$)", text)))
    average = len(text) / sentences
    quality = 1.0
    if average < 20 or average > 200:
        quality = 0.8
    if len(_SPECIAL.findall(text)) / max(len(text), 1) > 0.1:
        quality = 0.7
    return float(min(max(confidence * quality, 0.1), 1.0))


def entity_splits(chunk: Chunk, mentions: Sequence[EntityMention]) -> int:
    """Mentions that a chunk edge cuts through."""
    return sum(1 for m in mentions if m.start < chunk.start < m.end or m.start < chunk.end < m.end)


def assess_chunks(chunks: Sequence[Chunk], sentence_spans: Sequence[tuple[int, int]], sentence_vectors: np.ndarray,
                  mentions: Sequence[EntityMention], entities: Sequence[Sequence[str]], model: SizeModel,
                  overlap: int) -> list[ChunkQuality]:
    """Quality of every chunk of a document, from its sentences' vectors and its mentions."""
    starts = [s for s, _ in sentence_spans]
    ends = sorted(e for _, e in sentence_spans)
    per_section = Counter(c.section_index for c in chunks)
    out = []
    for i, chunk in enumerate(chunks):
        lo = bisect.bisect_left(starts, chunk.start)
        hi = bisect.bisect_right(starts, chunk.end - 1)
        inside = [j for j in range(lo, hi) if sentence_spans[j][1] <= chunk.end]
        vectors = sentence_vectors[inside] if inside else np.zeros((0, 1), dtype=np.float32)
        size = chunk.token_count if model.unit == "tokens" else len(chunk.text)
        nearby = [m for m in mentions if m.start < chunk.end and m.end > chunk.start]
        out.append(assess(chunk, text_size=size, model=model, entities=len(entities[i]),
                          entity_splits=entity_splits(chunk, nearby), vectors=vectors,
                          previous=chunks[i - 1] if i else None, configured_overlap=overlap,
                          sentence_starts=starts, sentence_ends=ends,
                          whole_section=per_section[chunk.section_index] == 1))
    return out
