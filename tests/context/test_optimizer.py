from __future__ import annotations

import json
import random
import time
from datetime import date

import pytest

from ragloom.config import ContextSettings
from ragloom.context import (
    ContextOptimizer,
    OptimizedContext,
    optimize_context,
    parse_source_numbers,
)
from ragloom.context._text import word_set, words
from ragloom.errors import InvalidParameterError, UnknownNameError
from ragloom.tokens import get_tokenizer

from .factory import chunk, paragraph, realistic_candidates

TOK = get_tokenizer("cl100k_base")
DOC = " ".join(f"Step {i} of the catalog rollout is described here." for i in range(30))


def test_end_to_end_on_crafted_candidates() -> None:
    rng = random.Random(4)
    dup = paragraph(rng, 5)
    copy = dup.replace("the", "a", 1)
    candidates = [
        chunk("a1", DOC[0:200], 12.0, doc="rollout", start=0, entities=("e:cat",), title="Rollout"),
        chunk("a2", DOC[150:420], 9.0, doc="rollout", start=150, entities=("e:cat",), title="Rollout"),
        chunk("p", dup, 10.0, doc="notes", entities=("e:x",)),
        chunk("p-copy", copy, 7.0, doc="copy", entities=("e:x",)),
        chunk("noise", paragraph(rng, 2), 1.0, doc="noise"),
        chunk("other", paragraph(rng, 4), 6.0, doc="other", entities=("e:cat",)),
    ]
    result = optimize_context(candidates, "catalog rollout steps")
    removed = dict(result.removed)
    assert removed["noise"] == "low relevance"
    assert removed["a2"] == "merged into a1"
    assert removed["p-copy"] == "duplicate of p"
    merged = next(c for c in result.chunks if c.chunk_id == "a1")
    assert merged.text == DOC[0:420] and (merged.start, merged.end) == (0, 420)
    assert result.merged == {"a1": ("a1", "a2")}
    assert result.deduplication_stats == {"original_count": 5, "unique_count": 3, "removed_count": 1,
                                          "merged_count": 1, "groups": 2,
                                          "duplicate_characters": 50 + len(copy)}
    assert {c.chunk_id for c in result.chunks} == {"a1", "p", "other"}
    assert all(0.0 <= c.score <= 1.0 for c in result.chunks)
    assert [(r.source_id, r.target_id, r.type) for r in result.relationships] == [("a1", "other", "strong_overlap")]
    assert result.total_tokens == TOK.count(result.formatted) <= result.budget == 3500
    assert result.priorities.keys() == {c.chunk_id for c in result.chunks}


def test_to_dict_is_json() -> None:
    result = optimize_context(realistic_candidates(30, seed=3), "catalog integration")
    data = json.loads(json.dumps(result.to_dict()))
    assert data["strategy"] == result.strategy and data["total_tokens"] == result.total_tokens
    assert len(data["chunks"]) == len(result.chunks) and "vector" not in data["chunks"][0]
    assert isinstance(result, OptimizedContext)


def test_auto_strategy_on_data_built_for_each() -> None:
    rng = random.Random(8)

    def plain(i: int, **kw: object):
        return chunk(f"c{i}", paragraph(rng, 2), 0.5 + i / 100, doc=f"d{i}", **kw)

    dated = [plain(i, document_date=date(2024, 1 + i, 1)) for i in range(6)]
    assert optimize_context(dated, "q").strategy == "temporal"
    dense = [plain(i, entities=("e:1", "e:2")) for i in range(5)]
    result = optimize_context(dense, "q")
    assert result.strategy == "topical" and "dense" in result.strategy_reason
    long = [plain(i) for i in range(14)]
    result = optimize_context(long, "q", max_tokens=20_000)
    assert result.strategy == "edges" and "long context" in result.strategy_reason
    few = [plain(i) for i in range(4)]
    assert optimize_context(few, "q").strategy == "relevance"
    assert optimize_context(few, "q", organize="hierarchical").strategy_reason == "requested"


def test_graph_edges_reach_merged_chunks() -> None:
    candidates = [chunk("a1", DOC[0:200], 0.9, doc="r", start=0), chunk("a2", DOC[100:300], 0.8, doc="r", start=100),
                  chunk("b", paragraph(random.Random(1), 3), 0.85, doc="s"), chunk("low", "x", 0.1)]
    result = optimize_context(candidates, "q", graph_edges={("a2", "b"): [("SIMILAR_TO", 0.6)]})
    assert [(r.source_id, r.target_id, r.type) for r in result.relationships] == [("a1", "b", "similar_to")]
    assert parse_source_numbers(result.formatted)


def test_a_budget_too_small_for_the_header_sends_nothing() -> None:
    settings = ContextSettings(max_tokens=6, reserve_tokens=0)
    result = optimize_context([chunk("a", "Some text.", 0.9)], "a question", settings)
    assert result.formatted == "" and result.total_tokens == 0 and result.chunks == ()
    assert dict(result.removed)["a"] == "over budget"


def test_disabled_only_budgets() -> None:
    rng = random.Random(2)
    text = paragraph(rng, 3)
    candidates = [chunk("a", text, 0.9), chunk("b", text, 0.1), chunk("c", paragraph(rng, 3), 0.5)]
    result = optimize_context(candidates, "q", ContextSettings(enabled=False))
    assert [c.chunk_id for c in result.chunks] == ["a", "c", "b"]
    assert result.strategy == "relevance" and "disabled" in result.strategy_reason


def test_arguments_are_checked_and_named() -> None:
    with pytest.raises(UnknownNameError, match="edges, hierarchical, lens, relevance, temporal, topical"):
        optimize_context([], "q", organize="magic")
    with pytest.raises(InvalidParameterError, match=r"max_tokens \(400\) must be larger than reserve_tokens \(500\)"):
        optimize_context([], "q", max_tokens=400)
    with pytest.raises(UnknownNameError, match="tokenizer"):
        ContextOptimizer(tokenizer="no-such-tokenizer")
    with pytest.raises(UnknownNameError, match="organisation strategy"):
        ContextOptimizer(ContextSettings(organize="magic"))


def test_optimizer_class_matches_the_function() -> None:
    candidates = realistic_candidates(40, seed=5)
    opt = ContextOptimizer(ContextSettings(max_tokens=2000), tokenizer="cl100k_base")
    assert opt.optimize(candidates, "pricing") == optimize_context(candidates, "pricing", ContextSettings(max_tokens=2000))


def test_200_candidates_are_optimised_quickly() -> None:
    TOK.count("warm up")  # the tokenizer's first load is not the optimiser's time
    timings = []
    for seed in range(5):
        candidates = realistic_candidates(200, seed=100 + seed)
        words.cache_clear()  # texts a query has never seen
        word_set.cache_clear()
        start = time.perf_counter()
        result = optimize_context(candidates, "when does the catalog integration ship to customers?")
        timings.append(time.perf_counter() - start)
        assert result.total_tokens <= result.budget
    # The target is 50 ms; the bound leaves room for a loaded test machine.
    assert sorted(timings)[len(timings) // 2] < 0.25, timings


def test_a_tight_budget_trims_to_whole_sentences_with_exact_offsets() -> None:
    document = "Preamble.\n\n" + " ".join(f"Sentence {i} explains part {i} of the catalog plan." for i in range(60))
    start = 11
    long = chunk("long", document[start:], 0.9, doc="plan", start=start)
    short = chunk("short", "The catalog plan ships in May.", 0.8, doc="other")
    result = optimize_context([long, short], "catalog plan", ContextSettings(max_tokens=300, reserve_tokens=50))
    assert result.total_tokens <= 250
    cut = next(c for c in result.chunks if c.chunk_id == "long")
    assert cut.text == document[cut.start : cut.end] and cut.start == start
    assert cut.text.endswith("plan.") and len(cut.text) < len(long.text)
    reason = dict(result.removed)["long"]
    n = int(reason.removeprefix("trimmed to ").removesuffix(" sentences"))
    assert cut.text.count("Sentence ") == n
    assert cut.token_count == TOK.count(cut.text)
