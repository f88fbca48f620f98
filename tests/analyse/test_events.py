"""Timeline events from real minutes: dated by the meeting that says them, never a URL's
date, a defined name or the meeting's own date restated."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ragloom.analyse.events import find_events

from .rows import minutes, rows_of


def test_events_of_the_minutes_are_exact_spans_in_the_order_of_their_days() -> None:
    rows = [r for path in minutes() for r in rows_of(path)]
    events = find_events(rows, limit=40)
    assert len(events) == 40
    texts = {str(p): p.read_text(encoding="utf-8") for p in minutes()}
    for e in events:
        assert texts[e.source_path][e.start : e.end] == e.text
        assert e.begins <= e.ends and e.period != e.said.isoformat()
        assert "http" not in e.mention and not e.text.lstrip().startswith("#")
    assert [(e.begins, e.ends) for e in events] == sorted((e.begins, e.ends) for e in events)
    assert len({e.flat.lower() for e in events}) == len(events)  # a sentence said twice is one event


def test_a_date_is_resolved_against_the_meeting_and_names_do_not_date() -> None:
    text = ("# Council meeting 2025-09-12\n\nThe election is October 3rd.\n\n"
            "We use HackerOne (H1) for reports; H1 found three issues.\n\n"
            "See https://example.org/2025/10/01/post for details.\n")
    events = find_events(rows_of(Path("2025-09-12.md"), text), texts={})
    found = {e.flat: e for e in events}
    assert found["The election is October 3rd."].begins == date(2025, 10, 3)
    assert all("H1" not in e.text and "example.org" not in e.text for e in events)


@given(st.text(max_size=200), st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 1, 1)))
def test_any_sentence_is_read_without_error(text: str, day: date) -> None:
    for e in find_events(rows_of(Path("x.md"), text, day=day)):
        assert e.begins <= e.ends
