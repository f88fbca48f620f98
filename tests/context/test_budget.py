from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.config import ContextSettings
from ragloom.context import STRATEGIES, Prioritized, fit_budget, optimize_context, trim_to_sentences
from ragloom.errors import InvalidParameterError
from ragloom.parse import sentence_spans
from ragloom.tokens import get_tokenizer

from .factory import WORDS, chunk

TOK = get_tokenizer("cl100k_base")
DOC = ("# Notes\n\nThe catalog integration ships in Q2. Partners get the API first! Does pricing change? "
       "Not yet: the billing team reviews it in May.\n\n  The search rewrite follows. It needs the new cluster. "
       "Latency must stay under 200 ms.\n")


def item(c) -> Prioritized:
    return Prioritized(c, c.score, c.score, 0.0, 0.0, 0.0)


def test_trim_keeps_whole_sentences_with_exact_offsets() -> None:
    c = chunk("a", DOC[8:], 0.9, start=8)
    full = TOK.count(c.text)
    for limit in range(1, full):
        cut = trim_to_sentences(c, limit, TOK)
        if cut is None:
            assert TOK.count(c.text[: sentence_spans(c.text)[0][1]]) > limit
            continue
        trimmed, n, tokens = cut
        ends = [e for _, e in sentence_spans(c.text)]
        k = len(trimmed.text)
        assert k in ends and ends.index(k) + 1 == n
        assert trimmed.text == c.text[:k] == DOC[trimmed.start : trimmed.end]
        assert trimmed.start == c.start and trimmed.end == c.start + k
        assert tokens == TOK.count(trimmed.text) <= limit
        # The next sentence would not have fitted.
        if n < len(ends):
            assert TOK.count(c.text[: ends[n]]) > limit


def test_greedy_fit_trims_and_drops() -> None:
    small = chunk("small", "The search rewrite follows.", 0.9)
    big = chunk("big", DOC[8:] * 3, 0.5, start=8)
    tail = chunk("tail", "Latency must stay under 200 ms.", 0.1)
    items = [item(small), item(big), item(tail)]
    need = fit_budget(items, 10_000, tokenizer=TOK, strategies=STRATEGIES).estimated_tokens
    # Room for the small chunk and part of the big one; the greedy pass fills it in order.
    result = fit_budget(items, need - 60, tokenizer=TOK, strategies=STRATEGIES)
    chosen = {p.chunk_id: p.chunk for p in result.selected}
    assert list(chosen) == ["small", "big"]
    assert chosen["big"].text == big.text[: len(chosen["big"].text)] and len(chosen["big"].text) < len(big.text)
    assert dict(result.removed)["big"].startswith("trimmed to ") and dict(result.removed)["big"].endswith(" sentences")
    assert dict(result.removed)["tail"] == "over budget"
    assert result.estimated_tokens <= need - 60
    assert chosen["small"].token_count == TOK.count(small.text)

    no_trim = fit_budget(items, need - 60, tokenizer=TOK, trim=False, strategies=STRATEGIES)
    assert [p.chunk_id for p in no_trim.selected] == ["small", "tail"]
    assert no_trim.removed == (("big", "over budget"),)


def test_budget_bound_is_checked() -> None:
    with pytest.raises(InvalidParameterError, match=r"budget \(-1\) must be at least 0"):
        fit_budget([], -1, tokenizer=TOK)


text_st = st.lists(
    st.one_of(
        st.sampled_from(WORDS),
        st.sampled_from([".", "!", "?", "\n", "\n\n", "  ", "é", "🙂", "- ", "# ", "1,000", "Q2 2025"]),
        st.text(min_size=1, max_size=8),
    ), min_size=0, max_size=120).map(lambda parts: " ".join(parts))


@st.composite
def candidate_sets(draw):
    """Chunks that are spans of a few documents (overlapping, touching, pasted into others)."""
    docs = {f"d{i}": draw(text_st) for i in range(draw(st.integers(1, 4)))}
    out = []
    for i in range(draw(st.integers(0, 12))):
        doc = draw(st.sampled_from(sorted(docs)))
        text = docs[doc]
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, len(text)))
        out.append(chunk(f"c{i}", text[start:end], draw(st.floats(0, 1)), doc=doc, start=start,
                         entities=tuple(draw(st.lists(st.sampled_from(["e1", "e2", "e3", "e4"]), max_size=3))),
                         title=draw(st.text(max_size=20)), section=tuple(draw(st.lists(st.text(max_size=10), max_size=3))),
                         time_refs=tuple(draw(st.lists(st.sampled_from(["Q2 2025", "2024-03", "H1 (unresolved)"]),
                                                       max_size=2)))))
    return out, docs


@given(candidate_sets(), st.integers(1, 1500), st.integers(0, 200), st.sampled_from([*STRATEGIES, "auto"]),
       st.booleans(), st.text(max_size=400))
def test_budget_is_never_exceeded(data, budget, reserve, organize, trim, query) -> None:
    candidates, docs = data
    settings = ContextSettings(max_tokens=budget + reserve, reserve_tokens=reserve, trim_to_sentences=trim,
                               min_relevance=0.0)
    result = optimize_context(candidates, query, settings, organize=organize)
    assert result.budget == budget
    assert TOK.count(result.formatted) == result.total_tokens <= budget
    for c in result.chunks:  # merged and trimmed chunks keep exact offsets
        assert docs[c.document_id][c.start : c.end] == c.text
        assert c.token_count == TOK.count(c.text)


def test_trim_uses_the_retrievers_sentence_bounds() -> None:
    text = "One two three. Four five six seven. Eight nine."
    start = 100
    bounds = ((100, 114), (115, 135), (136, 147))
    c = replace(chunk("w", text, 0.9, start=start), sentences=bounds)
    trimmed, n, _ = trim_to_sentences(c, TOK.count(text[:35]), TOK)
    assert trimmed.text == text[:35] and trimmed.end == 135 and n == 2
    assert trimmed.sentences == bounds[:2]
