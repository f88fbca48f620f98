"""Chunk quality: five metrics, a weighted score, issues with suggestions, and a confidence.

The weights are seed 002's: length 0.2, entity density 0.2, semantic coherence 0.3, boundary
respect 0.15, overlap quality 0.15. Two metrics are redefined where the seed's versions cannot
work on real text: entity density is counted per 100 words (the seed's "2 to 5 entities per 100
characters" would need an entity every 20 to 50 characters), and coherence is the mean cosine
similarity of each sentence to the next, from the sentence vectors that the sentence index
computes anyway.

The issues are flags a person should agree with, calibrated on hand-labelled chunks of two
real corpora (issue 26; bench/chunk_quality.py, docs/benchmarks.md):

``length_violation``
    above the strategy's maximum, or fewer than ``MIN_WORDS`` words outside its headings (a
    bare heading, a stray line). A whole section that is merely shorter than the strategy's
    minimum is not one: most sections of real documents are, and read fine.
``poor_boundary``
    an edge cuts a prose sentence and leaves the chunk a broken piece of it: ``CUT_WORDS``
    words or more inside, ``CUT_MISSING_CHARS`` characters or more outside besides a speaker's
    name. A tail of a few words ("slot (see below)."), a lost "By " or "TC: ", a cut between
    list items and a cut inside code or a table read fine.
``entity_split``
    an edge cuts through an entity mention (mentions are protected from cuts by default).

Coherence is a metric only: no threshold on it told a chunk that mixes topics from one that
does not (every chunk it flagged read fine), so it raises no issue.
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
#: A chunk with fewer words than this outside its heading lines says nothing on its own.
MIN_WORDS = 5
#: A cut leaves a broken sentence when at least this many of its words are inside the chunk
#: and at least ``CUT_MISSING_CHARS`` characters of it (less a list marker and a speaker's
#: name) outside. Calibrated on hand labels: a tail of up to four words ("slot (see below).")
#: and a lost "By " or "TC: " read fine.
CUT_WORDS = 5
CUT_MISSING_CHARS = 10
#: The piece of a cut sentence is prose when this share of its first 40 words are plain words
#: (code, tables and program output score 0.6 or less, cut prose 0.75 or more).
PROSE_SHARE = 0.7
_SPECIAL = re.compile(r"[^\w\s.,;:!?()\-'\"]")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t][^\n]*)?$", re.MULTILINE)
_WORD = re.compile(r"[^\W\d_]{2,}")
# A plain word, with the punctuation, quotes, brackets and emphasis prose puts around one.
_PLAIN = re.compile(r"""[("'“‘*_]*[A-Za-z][a-z'’-]*+[)"'”’*_.,;:!?]*""")
# What opens a line of minutes before the words: a list marker, a speaker ("Eric Holk: ").
_SPEAKER = re.compile(r"[ \t\n]*(?:[-*+•][ \t]+)?(?:[A-Z][\w.'’+-]*(?: [A-Z][\w.'’+-]*){0,3}:[ \t]+)?")


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


def _containing(x: int, starts: Sequence[int], ends: Sequence[int]) -> tuple[int, int] | None:
    """The sentence ``(start, end)`` with ``start < x < end``, if any (``starts`` and ``ends`` are
    the sorted edges of non-overlapping sentences, so the i-th start and the i-th end pair up)."""
    i = bisect.bisect_right(starts, x) - 1
    if i >= 0 and i < len(ends) and starts[i] < x < ends[i]:
        return starts[i], ends[i]
    return None


def _prose(piece: str) -> bool:
    words = piece.split()[:40]
    return sum(1 for w in words if _PLAIN.fullmatch(w)) >= PROSE_SHARE * len(words)


def _unlabelled(text: str) -> str:
    """``text`` without the list marker and speaker's name that open it."""
    found = _SPEAKER.match(text)
    return text[found.end() if found else 0 :].strip()


def broken_cuts(chunk: Chunk, sentence_starts: Sequence[int], sentence_ends: Sequence[int],
                previous: Chunk | None = None) -> list[str]:
    """The chunk's edges that leave a reader a broken prose sentence, described ("starts
    mid-sentence: 'do, on my own terms.'"): the piece of the sentence inside the chunk has at
    least ``CUT_WORDS`` words, is prose, and lacks at least ``CUT_MISSING_CHARS`` characters
    of the sentence (measured without a list marker and a speaker's name when ``previous``,
    the chunk before, holds them). A cut between list items, table rows or headings is no cut
    (each starts a sentence); nor is one just before the stop that ends a sentence."""
    out = []
    found = _containing(chunk.start, sentence_starts, sentence_ends)
    if found is not None:
        piece = chunk.text[: min(found[1], chunk.end) - chunk.start].strip()
        lost = chunk.start - found[0]
        if previous is not None and previous.start <= found[0] and chunk.start <= previous.end:
            lost = len(_unlabelled(previous.text[found[0] - previous.start : chunk.start - previous.start]))
        # A piece that opens with a stop is the tail of a whole sentence ("question|. ~7 people").
        if (len(piece.split()) >= CUT_WORDS and lost >= CUT_MISSING_CHARS and piece[:1] not in ".!?…"
                and _prose(piece)):
            out.append(f"starts mid-sentence: '{_clip(piece, head=True)}'")
    found = _containing(chunk.end, sentence_starts, sentence_ends)
    if found is not None:
        piece = chunk.text[max(found[0], chunk.start) - chunk.start :].strip()
        if len(piece.split()) >= CUT_WORDS and found[1] - chunk.end >= CUT_MISSING_CHARS and _prose(piece):
            out.append(f"ends mid-sentence: '{_clip(piece, head=False)}'")
    return out


def _clip(text: str, *, head: bool, width: int = 40) -> str:
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    return flat[:width] + "…" if head else "…" + flat[-width:]


def content_words(text: str) -> int:
    """Words of two letters or more outside heading lines."""
    return len(_WORD.findall(_HEADING_LINE.sub("", text)))


def assess(chunk: Chunk, *, text_size: int, model: SizeModel, entities: int, entity_splits: int,
           vectors: np.ndarray, previous: Chunk | None, configured_overlap: int,
           sentence_starts: Sequence[int], sentence_ends: Sequence[int], whole_section: bool = False) -> ChunkQuality:
    """The quality of one chunk; ``text_size`` is its size in ``model.unit``; ``whole_section``:
    the chunk is all of its section."""
    words = len(chunk.text.split())
    metrics = {
        "length_score": length_score(text_size, model),
        "entity_density": density_score(entities, words),
        "semantic_coherence": coherence(vectors),
        "boundary_respect": boundary_respect(chunk, sentence_starts, sentence_ends),
        "overlap_quality": overlap_quality(chunk, previous, configured_overlap, sentence_starts),
    }
    score = sum(WEIGHTS[k] * v for k, v in metrics.items())
    issues = list(chunk.issues)  # what the chunker said (a protected span that left no cut in range)
    if not any(i.kind == "length_violation" for i in issues):
        said = content_words(chunk.text)
        if text_size > model.maximum:
            issues.append(QualityIssue("length_violation", "medium",
                                       f"{text_size} {model.unit}, above the maximum ({model.maximum})",
                                       "lower chunk_size or max_size"))
        elif said < MIN_WORDS:
            # Below the strategy's minimum alone is no fault: a whole short section reads fine.
            issues.append(QualityIssue(
                "length_violation", "medium",
                f"{said} word{'' if said == 1 else 's'} outside its headings: too little to say anything on its own"
                + (" (the whole section)" if whole_section else ""),
                "raise min_chunk_chars so that it joins its neighbour, or merge it in the source",
            ))
    if entity_splits:
        issues.append(QualityIssue("entity_split", "high", f"{entity_splits} entity mention(s) cut at the chunk edge",
                                   "use the boundary strategy, which never cuts a mention"))
    cuts = broken_cuts(chunk, sentence_starts, sentence_ends, previous)
    if cuts:
        issues.append(QualityIssue("poor_boundary", "medium", "; ".join(cuts),
                                   "raise boundary_window or use the boundary strategy"))
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
