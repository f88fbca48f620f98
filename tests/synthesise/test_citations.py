from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ragloom.synthesise import Source, check_citations, cited_numbers, locate_quote, parse_numbers
from ragloom.synthesise.citations import claim_sentences, located_quotes
from tests.synthesise.materials import corpus


def make_sources(n: int, text: str = "The catalog integration ships in Q3 2025, probably August.") -> list[Source]:
    return [Source(i, f"c{i}", f"d{i}", f"/m/doc{i}.md", f"Doc {i}", "A > B", "engineering", 100, 100 + len(text),
                   text) for i in range(1, n + 1)]


def render(numbers: list[int], form: str) -> str:
    """``numbers`` cited in one of the supported forms, inside prose."""
    if form == "separate":
        return " ".join(f"Claim {i} holds [{n}]." for i, n in enumerate(numbers))
    if form == "grouped":
        return "A claim holds [" + ", ".join(map(str, numbers)) + "]."
    if form == "adjacent":
        return "A claim holds " + "".join(f"[{n}]" for n in numbers) + "."
    raise AssertionError(form)


def runs(numbers: list[int]) -> str:
    """Consecutive ascending runs written as ranges: [3, 4, 5, 9] -> "3-5, 9"."""
    parts: list[str] = []
    i = 0
    while i < len(numbers):
        j = i
        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:
            j += 1
        parts.append(str(numbers[i]) if i == j else f"{numbers[i]}-{numbers[j]}")
        i = j + 1
    return ", ".join(parts)


numbers_lists = st.lists(st.integers(min_value=0, max_value=500), min_size=1, max_size=12)


@given(numbers_lists, st.sampled_from(["separate", "grouped", "adjacent"]))
def test_any_rendered_numbers_parse_back(numbers: list[int], form: str) -> None:
    assert cited_numbers(render(numbers, form)) == list(dict.fromkeys(numbers))


@given(st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=15, unique=True))
def test_ranges_parse_back(numbers: list[int]) -> None:
    ordered = sorted(numbers)
    assert cited_numbers(f"Several sources agree [{runs(ordered)}].") == ordered


@given(st.integers(min_value=1, max_value=12), numbers_lists, st.sampled_from(["separate", "grouped", "adjacent"]))
def test_inside_the_sources_is_valid_outside_invalid(n: int, numbers: list[int], form: str) -> None:
    result = check_citations(render(numbers, form), make_sources(n))
    distinct = list(dict.fromkeys(numbers))
    assert result.valid == [x for x in distinct if 1 <= x <= n]
    assert result.invalid == [x for x in distinct if not 1 <= x <= n]
    assert set(result.valid).isdisjoint(result.invalid)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ships in Q3 [3].", [3]),
        ("Ships in Q3 [1, 2].", [1, 2]),
        ("Ships in Q3 [1][2].", [1, 2]),
        ("Ships in Q3 [2-4].", [2, 3, 4]),
        ("Ships in Q3 [2–4].", [2, 3, 4]),
        ("Ships in Q3 [ 1 ; 3-5 ].", [1, 3, 4, 5]),
        ("Ships [2] and slips [1] and ships again [2].", [2, 1]),
        ("See [the docs](http://x) and [1](http://y).", []),  # Markdown links
        ("Code `a[1]` and\n```\nb[2]\n```\nthen [3].", [3]),  # code is not read
        ("A reversed range [5-3].", [5, 3]),
        ("A typo [1-100000] is not a hundred thousand sources.", [1, 100000]),
        ("Footnote [^1] and [Source 2] are not our form.", []),
    ],
)
def test_hand_cases(text: str, expected: list[int]) -> None:
    assert parse_numbers("1, 3-5") == [1, 3, 4, 5]
    assert cited_numbers(text) == expected


def test_invalid_number_is_reported() -> None:
    result = check_citations("The catalog ships in Q3 [2]. It may slip to August [7].", make_sources(4))
    assert result.valid == [2]
    assert result.invalid == [7]
    assert not result.ok
    assert "invalid [7]" in result.summary()


def test_uncited_sentences_are_found_but_not_headings_labels_or_no_answer() -> None:
    text = (
        "## What ships when\n\n"
        "*Extractive answer (no language model configured).*\n\n"
        "The roadmap says the catalog ships in June [1]. Engineering expects Q3 2025 instead.\n\n"
        "Key points:\n\n"
        "- \n"
        "- Short line\n"
        "- The event bus lands mid-July, which delays the integration. [2]\n"
        "**Engineering**\n\n"
        "| Risk | Owner |\n|------|-------|\n"
        "The sources do not say whether hiring will catch up.\n"
    )
    result = check_citations(text, make_sources(3))
    assert result.uncited_sentences == ["Engineering expects Q3 2025 instead."]
    assert result.cited_sentences == 2  # the citation after the full stop belongs to its sentence
    assert not result.ok
    assert check_citations(text, make_sources(3), require_citations=False).uncited_sentences == []


@pytest.mark.parametrize(
    ("sentence", "exempt"),
    [
        ("The sources do not say when hiring catches up.", True),
        ("The documents don't indicate a date for the portal.", True),
        ("No source mentions the price of the Starter plan.", True),
        ("Pricing after April is not covered in the sources.", True),
        ("The documents show no slip in the portal schedule.", False),  # a claim about the plan
        ("The teams do not agree on the catalog date at all.", False),
    ],
)
def test_saying_the_sources_do_not_answer_needs_no_citation(sentence: str, exempt: bool) -> None:
    assert (check_citations(sentence, make_sources(1)).uncited_sentences == []) is exempt


def test_citation_after_the_full_stop_belongs_to_the_sentence_before() -> None:
    claims = claim_sentences("The catalog ships in June 2025. [1] Engineering expects the third quarter. [2]")
    assert claims == [("The catalog ships in June 2025.", [1]), ("Engineering expects the third quarter.", [2])]
    assert claim_sentences("Two sources agree on this [1][3]. [4]")[0][1] == [1, 3, 4]
    only_invalid = check_citations("The catalog ships in June 2025 [9].", make_sources(2))
    assert only_invalid.uncited_sentences == [] and only_invalid.cited_sentences == 0 and only_invalid.invalid == [9]


def test_quotes_are_checked_against_the_cited_source() -> None:
    sources = make_sources(2)
    plan = "We will ship **the catalog**\n  in Q2."
    sources[1] = Source(2, "c2", "d2", "/m/b.md", "B", "", "team-structured", 0, len(plan), plan)
    text = (
        'Engineering: "The catalog integration ships in Q3 2025" [1]. '  # exact
        "The plan: “we will ship the catalog in Q2.” [2] "  # whitespace, emphasis and first-letter case differ
        '"the catalog ... probably August" [1] '  # an omission
        '"ships in Q2 2026" [1]. '  # not in [1]
        '"invented words entirely" [9].'  # [9] does not exist: an invalid number, not a bad quote
    )
    result = check_citations(text, sources)
    assert [q["quote"] for q in result.bad_quotes] == ["ships in Q2 2026"]
    assert result.bad_quotes[0]["cited"] == [1]
    assert result.invalid == [9]
    found = located_quotes(text, sources)
    assert [q.number for q in found] == [1, 2, 1]
    for q in found:
        source = sources[q.number - 1]
        assert source.text[q.start - source.start : q.end - source.start] == q.text


@given(st.data())
def test_any_word_span_of_a_real_source_is_located_exactly(data: st.DataObject) -> None:
    sources = corpus().sources
    source = data.draw(st.sampled_from(sources))
    words = list(re.finditer(r"\S+", source.text))
    assume(len(words) >= 3)
    i = data.draw(st.integers(0, len(words) - 3))
    j = data.draw(st.integers(i + 2, min(len(words) - 1, i + 25)))
    span = source.text[words[i].start() : words[j].end()]
    assume('"' not in span and "“" not in span and "”" not in span)
    written = " ".join(span.split())  # a writer flattens line breaks
    quote = locate_quote(source, written)
    assert quote is not None
    document = corpus().text_of(source.document_id)
    assert document[quote.start : quote.end] == quote.text
    assert source.start <= quote.start < quote.end <= source.end
    # the quote, written in the answer, passes the check
    assert check_citations(f"It says “{written}” [{source.number}].", [source]).bad_quotes == []


def test_a_line_in_italics_holds_no_claims_however_many_sentences() -> None:
    from ragloom.synthesise.citations import claim_sentences

    text = ("*Q4 2025 vs Q3 2025. Team discussions may reveal concerns not in formal docs.*\n"
            "The catalog ships in Q3 2025 for every customer [1].\n"
            "This sentence states a fact with no citation at all.")
    assert [body for body, _ in claim_sentences(text)] == [
        "The catalog ships in Q3 2025 for every customer [1].", "This sentence states a fact with no citation at all."]
