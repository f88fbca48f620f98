from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragloom.synthesise import Source
from ragloom.synthesise.extract import candidates, select, stem, terms
from tests.synthesise.materials import corpus


def test_stem_meets_inflections() -> None:
    assert {stem(w) for w in ("ship", "ships", "shipped", "shipping")} == {"ship"}
    assert stem("integrations") == stem("integration")
    assert stem("Q3") == "q3" and stem("2025") == "2025"
    assert terms("When does the catalog ship?") == {"catalog", "ship"}


def test_candidates_are_prose_sentences_with_exact_offsets() -> None:
    text = ("# Heading line here with words\n\n| a | b | c | d | e |\n|---|---|---|---|---|\n\n"
            "- A list item that says something useful.\n> A quoted line that also says something.\n\n"
            "Short one. A normal sentence with enough words [3] has a footnote mark.\n")
    source = Source(1, "c", "d", "/x.md", "X", "", "engineering", 50, 50 + len(text), text)
    found = candidates([source])
    assert [c.text for c in found] == ["A list item that says something useful.",
                                       "A quoted line that also says something."]
    for c in found:
        assert source.text[c.start : c.end] == c.text
        q = c.quote()
        assert (q.start, q.end) == (source.start + c.start, source.start + c.end)


@given(st.integers(0, 10_000))
def test_candidate_offsets_are_exact_on_real_sources(seed: int) -> None:
    c = corpus()
    source = c.sources[seed % len(c.sources)]
    for cand in candidates([source]):
        q = cand.quote()
        assert c.text_of(q.document_id)[q.start : q.end] == q.text == cand.text


def test_greedy_selection_covers_the_question_across_lenses_without_repeats() -> None:
    text_a = "The catalog integration ships in June. The catalog integration ships in June, really."
    text_b = "QuickBooks sync needs the event bus first. Unrelated words about pricing tiers here."
    a = Source(1, "a", "da", "/a.md", "A", "", "team-structured", 0, len(text_a), text_a)
    b = Source(2, "b", "db", "/b.md", "B", "", "engineering", 0, len(text_b), text_b)
    picks = select(candidates([a, b]), terms("When does the catalog integration with QuickBooks ship?"), limit=5,
                   sources=2)
    assert [p.text for p in picks] == ["The catalog integration ships in June.",
                                       "QuickBooks sync needs the event bus first."]
