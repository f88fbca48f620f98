from __future__ import annotations

import itertools
import random
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.context import find_duplicates, merge_spans, remove_redundancy
from ragloom.context.dedup import (
    jaccard_sorted,
    lsh_candidates,
    lsh_rows,
    minhash_signatures,
    shingle_sets,
)
from ragloom.errors import InvalidParameterError, UnknownNameError

from .factory import chunk, paragraph

RNG = random.Random(3)
BASE = paragraph(RNG, 8)
OTHER = paragraph(RNG, 8)


def edit(text: str, n: int, seed: int = 0) -> str:
    """``text`` with ``n`` words replaced."""
    rng = random.Random(seed)
    words = text.split()
    for i in rng.sample(range(len(words)), n):
        words[i] = "changed"
    return " ".join(words)


def test_small_edits_are_duplicates_and_the_most_relevant_stays() -> None:
    chunks = [chunk("low", edit(BASE, 2), 0.4), chunk("high", BASE, 0.9), chunk("other", OTHER, 0.5),
              chunk("mid", edit(BASE, 1, seed=5), 0.6)]
    result = remove_redundancy(chunks)
    assert [c.chunk_id for c in result.chunks] == ["high", "other"]
    assert set(result.removed) == {("low", "duplicate of high"), ("mid", "duplicate of high")}
    stats = result.stats
    assert stats["original_count"] == 4 and stats["unique_count"] == 2
    assert stats["removed_count"] == 2 and stats["merged_count"] == 0 and stats["groups"] == 1
    assert stats["duplicate_characters"] == len(edit(BASE, 2)) + len(edit(BASE, 1, seed=5))


def test_different_texts_are_kept() -> None:
    rng = random.Random(11)
    chunks = [chunk(str(i), paragraph(rng, 5), 0.5) for i in range(30)]
    result = remove_redundancy(chunks)
    assert len(result.chunks) == 30 and result.removed == ()


def test_entities_weigh_in() -> None:
    # A third of each text differs: content alone is below 0.7, identical entities lift it above.
    a, b = BASE + " " + paragraph(random.Random(1), 3), BASE + " " + paragraph(random.Random(2), 3)
    content = jaccard_sorted(*shingle_sets([a, b]))
    assert 0.7 * content + 0.3 >= 0.7 > content
    same = [chunk("a", a, 0.9, entities=("e:1", "e:2")), chunk("b", b, 0.5, entities=("e:1", "e:2"))]
    differ = [chunk("a", a, 0.9, entities=("e:1", "e:2")), chunk("b", b, 0.5, entities=("e:3",))]
    none = [chunk("a", a, 0.9), chunk("b", b, 0.5)]
    assert [c.chunk_id for c in remove_redundancy(same).chunks] == ["a"]
    assert len(remove_redundancy(differ).chunks) == 2
    assert len(remove_redundancy(none).chunks) == 2


def test_identical_entity_less_texts_are_duplicates() -> None:
    # Without entities the entity term would cap similarity at content_weight (0.7).
    pairs = find_duplicates([chunk("a", edit(BASE, 1), 0.5), chunk("b", BASE, 0.4)])
    assert list(pairs) == [(0, 1)]


def test_a_chain_only_removes_duplicates_of_kept_chunks() -> None:
    words = BASE.split()
    step = len(words) // 6
    a = " ".join(words)
    b = " ".join(["x"] * step + words[step:])
    c = " ".join(["y"] * (2 * step) + words[2 * step :])
    sh = shingle_sets([a, b, c])
    assert jaccard_sorted(sh[0], sh[1]) >= 0.7 and jaccard_sorted(sh[1], sh[2]) >= 0.7
    assert jaccard_sorted(sh[0], sh[2]) < 0.7
    result = remove_redundancy([chunk("a", a, 0.9), chunk("b", b, 0.5), chunk("c", c, 0.4)])
    # c resembles only b, which went as a duplicate of a: c stays.
    assert [x.chunk_id for x in result.chunks] == ["a", "c"]
    assert result.removed == (("b", "duplicate of a"),)


DOC = " ".join(f"Sentence number {i} talks about the catalog." for i in range(40))


def span(cid: str, start: int, end: int, score: float = 0.5, doc: str = "d1", **kw: object):
    return chunk(cid, DOC[start:end], score, doc=doc, start=start, **kw)


def test_overlapping_spans_of_one_document_merge_exactly() -> None:
    chunks = [span("b", 100, 260, 0.9, entities=("e:2",)), span("a", 40, 150, 0.4, entities=("e:1",)),
              span("z", 400, 500, 0.3), span("c", 260, 300, 0.2)]
    merged, removed, ids, dup = merge_spans(chunks)
    by_id = {c.chunk_id: c for c in merged}
    m = by_id["a"]
    assert (m.start, m.end) == (40, 300) and m.text == DOC[40:300]
    assert m.score == 0.9 and set(m.entities) == {"e:1", "e:2"}
    assert ids == {"a": ("a", "b", "c")}
    assert set(removed) == {("b", "merged into a"), ("c", "merged into a")}
    assert dup == 150 - 100  # the overlap; touching spans share nothing
    assert by_id["z"].text == DOC[400:500]
    assert [c.chunk_id for c in merged] == ["a", "z"]  # each at its first member's place


def test_contained_span_and_gap_and_other_document() -> None:
    merged, _, ids, dup = merge_spans([span("a", 0, 200), span("b", 50, 120), span("c", 201, 250),
                                       span("d", 150, 260, doc="d2")])
    assert ids == {"a": ("a", "b")} and dup == 70
    assert {c.chunk_id for c in merged} == {"a", "c", "d"}  # a gap of one character is not bridged


def test_spans_that_disagree_on_their_overlap_are_not_merged() -> None:
    other = chunk("b", "X" * 100, 0.5, doc="d1", start=100)
    merged, removed, _, _ = merge_spans([span("a", 0, 150), other])
    assert len(merged) == 2 and removed == []


@given(st.lists(st.tuples(st.integers(0, len(DOC) - 1), st.integers(1, 300)), min_size=1, max_size=25),
       st.integers(0, 3))
def test_merged_spans_keep_exact_offsets(spans: list[tuple[int, int]], docs: int) -> None:
    chunks = [span(f"c{i}", s, min(len(DOC), s + n), doc=f"d{i % (docs + 1)}") for i, (s, n) in enumerate(spans)]
    merged, removed, ids, _ = merge_spans(chunks)
    assert len(merged) + len(removed) == len(chunks)
    for c in merged:
        assert c.text == DOC[c.start : c.end]
    # No two spans of one document left overlapping or touching.
    by_doc: dict[str, list] = {}
    for c in merged:
        by_doc.setdefault(c.document_id, []).append(c)
    for cs in by_doc.values():
        cs.sort(key=lambda c: c.start)
        for a, b in itertools.pairwise(cs):
            assert a.end < b.start
    assert sum(len(v) for v in ids.values()) - len(ids) == len(removed)


def test_lsh_finds_similar_pairs_and_skips_unrelated_ones() -> None:
    rng = random.Random(5)
    texts = [paragraph(rng, 6) for _ in range(100)]
    texts += [edit(t, 1, seed=i) for i, t in enumerate(texts[:20])]
    sh = shingle_sets(texts)
    candidates = lsh_candidates(minhash_signatures(sh), lsh_rows(0.57))
    for i in range(20):
        assert (i, 100 + i) in candidates
    assert len(candidates) < 20 + 0.02 * (120 * 119 / 2)  # far from all pairs


def test_minhash_estimate_tracks_jaccard() -> None:
    sh = shingle_sets([BASE, edit(BASE, 3), OTHER])
    sig = minhash_signatures(sh)
    for i, j in [(0, 1), (0, 2)]:
        assert abs(np.mean(sig[i] == sig[j]) - jaccard_sorted(sh[i], sh[j])) < 0.25


def test_vector_similarity() -> None:
    v = np.array([1.0, 0.0, 0.0])
    chunks = [chunk("a", "alpha text", 0.9, vector=v), chunk("b", "beta words", 0.5, vector=v + [0, 0.1, 0]),
              chunk("c", "gamma", 0.5, vector=np.array([0.0, 1.0, 0.0]))]
    assert [c.chunk_id for c in remove_redundancy(chunks, method="vector").chunks] == ["a", "c"]
    # A missing vector falls back to shingles, where the texts differ.
    chunks[2] = chunk("c", "gamma", 0.5)
    assert len(remove_redundancy(chunks, method="vector").chunks) == 3


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(UnknownNameError, match="minhash, vector"):
        find_duplicates([], method="difflib")
    with pytest.raises(InvalidParameterError, match=r"similarity_threshold \(2\)"):
        find_duplicates([], similarity_threshold=2)
    with pytest.raises(InvalidParameterError, match="content_weight"):
        find_duplicates([], content_weight=0, entity_weight=0)


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 4), st.lists(st.sampled_from("abcd"), max_size=3)),
                min_size=2, max_size=25))
def test_lsh_matches_brute_force(specs) -> None:
    """Every reported pair is a true duplicate; every pair clearly above the threshold is found."""
    bases = [paragraph(random.Random(seed), 4) for seed in range(31)]
    chunks = [chunk(f"c{i}", edit(bases[b], n, seed=i) if n else bases[b], 0.5, entities=tuple(e))
              for i, (b, n, e) in enumerate(specs)]
    found = find_duplicates(chunks)
    sets = shingle_sets([c.text for c in chunks])
    for i in range(len(chunks)):
        for j in range(i + 1, len(chunks)):
            content = jaccard_sorted(sets[i], sets[j])
            a, b = frozenset(chunks[i].entities), frozenset(chunks[j].entities)
            ent = len(a & b) / len(a | b) if a and b else 0.0
            score = content if not a and not b else 0.7 * content + 0.3 * ent
            if (i, j) in found:
                assert found[(i, j)] == pytest.approx(score) and score >= 0.7
            else:
                assert score < 0.8


def test_merged_windows_keep_their_sentences() -> None:
    a = replace(span("a", 0, 100), sentences=((0, 45), (46, 100)))
    b = replace(span("b", 46, 150), sentences=((46, 100), (101, 150)))
    merged, _, _, _ = merge_spans([a, b])
    assert merged[0].sentences == ((0, 45), (46, 100), (101, 150))
    merged, _, _, _ = merge_spans([a, replace(b, sentences=())])
    assert merged[0].sentences == ()
