"""The decisions log on real minutes: labelled decisions are found, look-alikes are not, and
every entry is the exact sentence, dated by its meeting."""

from __future__ import annotations

import json
from datetime import date

from hypothesis import given
from hypothesis import strategies as st

from ragloom.analyse.decisions import decision_kind, find_decisions, is_decision

from ..conftest import ROOT, shared_data
from .rows import rows_of

LABELS = ROOT / "bench" / "labels" / "rust_council_decisions.jsonl"


def labels() -> list[dict[str, str]]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_log_finds_most_labelled_decisions_and_no_look_alike() -> None:
    data = shared_data() / "rust-council"
    found: dict[str, list[str]] = {}
    for label in labels():
        if label["file"] not in found:
            found[label["file"]] = [" ".join(d.text.split()) for d in find_decisions(rows_of(data / label["file"]))]
    def hit(label: dict[str, str]) -> bool:
        return any(label["text"] in entry or entry in label["text"] for entry in found[label["file"]])
    positives = [x for x in labels() if not x.get("negative")]
    negatives = [x for x in labels() if x.get("negative")]
    assert sum(map(hit, positives)) / len(positives) >= 0.6
    assert sum(map(hit, negatives)) <= 1


def test_entries_are_exact_spans_dated_by_the_meeting() -> None:
    path = shared_data() / "rust-council" / "minutes" / "sync-meeting" / "2023-06-22.md"
    text = path.read_text(encoding="utf-8")
    found = find_decisions(rows_of(path))
    assert found
    for d in found:
        assert text[d.start : d.end] == d.text and d.date == date(2023, 6, 22)
        assert d.kind in ("decision", "vote", "approval", "commitment") and "\n" not in d.flat
    assert find_decisions(rows_of(path), since=date(2024, 1, 1)) == []


def test_proposals_questions_and_procedure_are_not_decisions() -> None:
    assert is_decision("Decision: documents into a github team repo, with hackmd for ephemeral docs.")
    assert is_decision("TC: Hearing support and no objections, the plan for order of the meeting is adopted.")
    for text in ("Should we decide on this today?", "I propose we adopt the new policy.",
                 "We have not decided whether to approve it.", "The agenda is approved."):
        assert not is_decision(text), text
    assert decision_kind("The motion passed and we voted to keep it.") == "vote"


@given(st.text(max_size=300))
def test_any_text_is_read_without_error(text: str) -> None:
    assert isinstance(is_decision(text), bool)
