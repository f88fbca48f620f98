from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.parse.timeref import extract_time_refs

DOC_DATE = date(2025, 2, 11)

PHRASINGS = [
    # text, canonical without a document date, canonical with DOC_DATE
    ("Q2 2024", "Q2 2024", "Q2 2024"),
    ("q2-2024", "Q2 2024", "Q2 2024"),
    ("2nd quarter of 2024", "Q2 2024", "Q2 2024"),
    ("the second quarter of the year 2024", "Q2 2024", "Q2 2024"),
    ("2024Q2", "Q2 2024", "Q2 2024"),
    ("2024-Q2", "Q2 2024", "Q2 2024"),
    ("Q2'24", "Q2 2024", "Q2 2024"),
    ("FY2024 Q2", "Q2 2024", "Q2 2024"),
    ("Q2", "Q2", "Q2 2025"),
    ("next quarter", "next quarter", "Q2 2025"),
    ("last quarter", "last quarter", "Q4 2024"),
    ("this year", "this year", "2025"),
    ("next year", "next year", "2026"),
    ("next month", "next month", "2025-03"),
    ("in March", "March", "2025-03"),
    ("mid-July 2025", "2025-07", "2025-07"),
    ("end of March 2025", "2025-03", "2025-03"),
    ("August 2025", "2025-08", "2025-08"),
    ("March 3, 2025", "2025-03-03", "2025-03-03"),
    ("3 March 2025", "2025-03-03", "2025-03-03"),
    ("Sept. 5th, 2025", "2025-09-05", "2025-09-05"),
    ("2025-03-04", "2025-03-04", "2025-03-04"),
    ("2025-03", "2025-03", "2025-03"),
    ("H1 2025", "H1 2025", "H1 2025"),
    ("first half of 2025", "H1 2025", "H1 2025"),
    ("the second half", "H2", "H2 2025"),
    ("in 2026", "2026", "2026"),
]


@pytest.mark.parametrize("text,bare,dated", PHRASINGS)
def test_phrasings_normalise_to_one_period(text: str, bare: str, dated: str) -> None:
    (ref,) = extract_time_refs(text)
    assert ref.canonical == bare and ref.resolved == (bare == dated)
    (ref,) = extract_time_refs(text, reference=DOC_DATE)
    assert ref.canonical == dated and ref.resolved


@pytest.mark.parametrize("text,expected", [("$2025", []), ("2024%", []), ("1,2024", []), ("version 3.2024", []),
                                           ("call 555-2025-1234", []), ("Q5 2025", ["2025"]), ("2025 was good", ["2025"])])
def test_numbers_that_are_not_periods(text: str, expected: list[str]) -> None:
    assert [r.canonical for r in extract_time_refs(text)] == expected


def test_periods_overlap_by_dates() -> None:
    q2, aug, june = (extract_time_refs(t)[0] for t in ("Q2 2025", "August 2025", "June 30, 2025"))
    assert q2.overlaps(june) and not q2.overlaps(aug)
    assert not extract_time_refs("Q2")[0].overlaps(q2)  # unresolved overlaps nothing


def test_several_references_in_order_with_offsets() -> None:
    text = "We ship in Q3 2025, not June 30, 2025; the portal waits until 2026."
    refs = extract_time_refs(text)
    assert [r.canonical for r in refs] == ["Q3 2025", "2025-06-30", "2026"]
    assert all(text[r.start : r.end] == r.text for r in refs)


@given(st.text(max_size=400))
def test_offsets_are_exact_on_any_text(text: str) -> None:
    for ref in extract_time_refs(text, reference=DOC_DATE):
        assert text[ref.start : ref.end] == ref.text
        assert ref.resolved == (ref.period_start is not None)


def test_windowed_scan_equals_a_full_scan(real_corpus) -> None:
    # Long texts are scanned only around anchors; that must not change what is found.
    from ragloom.parse.spans import DisjointSpans
    from ragloom.parse.timeref import _RULES, _build

    for _, text in real_corpus[:8]:
        taken, full = DisjointSpans(), []
        for pattern, kind in _RULES:
            for m in pattern.finditer(text):
                if taken.is_free(*m.span()) and (ref := _build(kind, m, None)) is not None:
                    full.append(ref)
                    taken.add(*m.span())
        assert extract_time_refs(text) == sorted(full, key=lambda r: r.start)
