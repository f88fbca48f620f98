"""A chunk scored with its best sentence (retrieval.sentence_weight)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.retrieve.lift import best_sentence_scores, lifted

from ..conftest import fast_settings


@given(st.lists(st.integers(1, 30), min_size=1, max_size=25), st.data())
def test_best_sentence_is_the_best_inside_the_span_or_the_best_it_overlaps(lengths: list[int],
                                                                          data: st.DataObject) -> None:
    starts, ends, at = [], [], 0
    for n in lengths:  # sentences one after the other, a space between them
        starts.append(at)
        ends.append(at + n)
        at += n + 1
    scores = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=len(lengths), max_size=len(lengths))))
    spans = data.draw(st.lists(st.tuples(st.integers(0, at), st.integers(0, at)).map(sorted).map(tuple)
                               .filter(lambda s: s[1] > s[0]), min_size=1, max_size=8))
    got = best_sentence_scores(np.array(starts), np.array(ends), scores, spans)
    for (a, b), value in zip(spans, got, strict=True):
        inside = [s for s, x, y in zip(scores, starts, ends, strict=True) if x >= a and y <= b]
        overlapping = [s for s, x, y in zip(scores, starts, ends, strict=True) if x < b and y > a]
        expected = max(inside) if inside else max(overlapping) if overlapping else -1.0
        assert value == pytest.approx(expected)


def test_the_mix_keeps_a_chunk_without_sentences_as_it_is() -> None:
    chunk, sentence = np.array([0.4, 0.4, 0.2]), np.array([0.8, -1.0, 0.2])
    assert lifted(chunk, sentence, 0.5).tolist() == pytest.approx([0.6, 0.4, 0.2])
    assert lifted(chunk, sentence, 0.0).tolist() == pytest.approx(chunk.tolist())


GARDEN = ("# Garden notes\n\n" + " ".join(f"Tomatoes in bed {i} want sun, compost and deep watering in the evening."
                                          for i in range(5))
          + " The QuickBooks sync token expires after sixty minutes of idle time. "
          + " ".join(f"Mulch keeps bed {i} moist through the dry weeks of July and August." for i in range(5)) + "\n")
OTHER = ("# Accounting\n\nThe QuickBooks sync moves invoices and customers between the two books every night, "
         "and mails its errors to the owner.\n")


@pytest.fixture
def lifted_engine(tmp_path: Path) -> Engine:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "garden.md").write_text(GARDEN, encoding="utf-8")
    (folder / "integrations.md").write_text(OTHER, encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(folder, lens="notes")
    return engine


def test_a_chunk_is_found_by_its_one_sentence_that_answers(lifted_engine: Engine) -> None:
    question = "When does the QuickBooks sync token expire after idle time?"
    plain = lifted_engine.query(question, mode="vector", k=2, sentence_weight=0.0)
    lift = lifted_engine.query(question, mode="vector", k=2)  # retrieval.sentence_weight = 0.5
    assert plain[0].source_name == "integrations.md"  # the chunk about the topic in general
    assert lift[0].source_name == "garden.md"  # the chunk holding the answer
    top = lift[0]
    assert top.scores["sentence"] > top.scores["chunk"]
    assert top.score == pytest.approx(0.5 * top.scores["chunk"] + 0.5 * top.scores["sentence"])
    assert top.relevance == pytest.approx(top.score)
    hybrid = lifted_engine.query(question, mode="hybrid", k=2)
    assert hybrid[0].source_name == "garden.md"


def test_the_lift_keeps_the_filters_and_reads_the_past(lifted_engine: Engine, tmp_path: Path) -> None:
    question = "When does the QuickBooks sync token expire after idle time?"
    moment = lifted_engine.history(tmp_path / "docs" / "garden.md")[0]["as_of"]
    past = lifted_engine.query(question, mode="vector", k=2, as_of=moment)
    assert past[0].source_name == "garden.md" and "sentence" in past[0].scores
    assert lifted_engine.query(question, mode="vector", k=5, dated_from="2020-01-01").results == []  # undated
    without = Engine(tmp_path / "no-sentences", settings=fast_settings(**{"sentences.enabled": False}),
                     embedder=HashingEmbedder())
    without.ingest(tmp_path / "docs", lens="notes")
    assert set(without.query(question, mode="vector", k=2)[0].scores) == {"vector"}  # no sentence index, no lift
