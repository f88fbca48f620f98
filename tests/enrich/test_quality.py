from __future__ import annotations

import numpy as np
import pytest

from ragloom.enrich.quality import (
    SizeModel,
    assess,
    boundary_respect,
    coherence,
    density_score,
    length_score,
    overlap_quality,
)
from ragloom.types import Chunk

CHARS = SizeModel("chars", 800, 500, 1200)


@pytest.mark.parametrize("size,expected", [(800, 1.0), (500, 0.7), (1200, 0.7), (250, 0.5), (0, 0.3), (2400, 0.3)])
def test_length_score(size: int, expected: float) -> None:
    assert length_score(size, CHARS) == pytest.approx(expected)


def test_density_band() -> None:
    assert density_score(0, 100) == 0 and density_score(1, 100) == 0.5
    assert density_score(5, 100) == 1.0 and density_score(30, 100) < 1.0


def test_coherence_is_mean_consecutive_similarity() -> None:
    same = np.array([[1, 0], [1, 0], [1, 0]], dtype=np.float32)
    mixed = np.array([[1, 0], [0, 1], [1, 0]], dtype=np.float32)
    assert coherence(same) == 1.0 and coherence(mixed) == 0.0 and coherence(same[:1]) == 1.0


def chunk(start: int, end: int, section: int = 0, text: str = "x") -> Chunk:
    return Chunk(text, start, end, 1, section_index=section)


def test_boundary_and_overlap() -> None:
    starts, ends = [0, 50, 100], [40, 90, 140]
    assert boundary_respect(chunk(0, 90), starts, ends) == 1.0
    assert boundary_respect(chunk(10, 90), starts, ends) == 0.5
    previous = chunk(0, 140)
    assert overlap_quality(chunk(100, 200), previous, 40, starts) == 1.0  # 40 shared, on a sentence start
    assert overlap_quality(chunk(105, 200), previous, 40, starts) < 1.0  # starts mid-sentence
    assert overlap_quality(chunk(140, 200), previous, 40, starts) == 0.4  # nothing shared
    assert overlap_quality(chunk(100, 200, section=1), previous, 40, starts) == 1.0  # a new section


def test_assess_issues_and_weights() -> None:
    text = "Short text here."
    c = Chunk(text, 0, len(text), 4)
    vectors = np.array([[1, 0], [0, 1]], dtype=np.float32)
    q = assess(c, text_size=len(text), model=CHARS, entities=0, entity_splits=1, vectors=vectors, previous=None,
               configured_overlap=100, sentence_starts=[5], sentence_ends=[99])
    kinds = {i.kind: i.severity for i in q.issues}
    assert kinds == {"length_violation": "medium", "entity_split": "high", "poor_boundary": "medium",
                     "low_coherence": "medium"}
    expected = 0.2 * q.metrics["length_score"] + 0.2 * 0 + 0.3 * 0 + 0.15 * 0 + 0.15 * 1.0
    assert q.score == pytest.approx(expected)
    assert 0.1 <= q.confidence <= 1.0
    whole = assess(c, text_size=len(text), model=CHARS, entities=0, entity_splits=0, vectors=vectors[:1],
                   previous=None, configured_overlap=100, sentence_starts=[0], sentence_ends=[len(text)],
                   whole_section=True)
    assert [(i.kind, i.severity) for i in whole.issues] == [("length_violation", "low")]
