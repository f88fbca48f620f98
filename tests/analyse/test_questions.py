"""Open questions and unowned action items: what nothing later answers, and what nobody owns."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np

from ragloom.analyse.questions import PER_DOCUMENT, is_question, open_items, unowned_action

from .rows import minutes, rows_of


def test_routine_and_addressed_questions_are_not_open_questions() -> None:
    assert is_question("How is the funding team thinking about this going into 2027?")
    for text in ("Any objections?", "Do we have consensus to move forward with this agenda?",
                 "Rémy, would you like to start us off?", "Short one?"):
        assert not is_question(text), text


def test_an_action_item_is_unowned_only_when_it_names_nobody() -> None:
    assert unowned_action("- [ ] Write blog post") == "Write blog post"
    for owned in ("- [ ] Jack to update the PR", "- Action item: ehuss will follow up offline.",
                  "- [ ] Write blog post (Mara)", "- [ ] @mara writes the post", "TODO: owner: Eric"):
        assert unowned_action(owned) is None, owned
    assert unowned_action("An ordinary sentence.") is None


def _vectors(rows: list[dict[str, object]]) -> np.ndarray:
    """Bag-of-words unit vectors: the same sentence is close to itself, others are not."""
    vocab: dict[str, int] = {}
    for r in rows:
        for w in str(r["text"]).lower().split():
            vocab.setdefault(w, len(vocab))
    out = np.zeros((len(rows), max(1, len(vocab))), dtype=np.float32)
    for i, r in enumerate(rows):
        for w in str(r["text"]).lower().split():
            out[i, vocab[w]] += 1
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def test_a_later_statement_answers_a_question() -> None:
    asked = rows_of(Path("a.md"), "Where will the council hold the summit next year?\n", day=date(2025, 1, 1))
    said = rows_of(Path("b.md"), "The council will hold the summit next year in Utrecht.\n", day=date(2025, 3, 1))
    assert [i.kind for i in open_items(asked, _vectors(asked))] == ["unanswered"]
    both = asked + said
    vectors = _vectors(both)
    close = float(vectors[0] @ vectors[1])
    from ragloom.analyse import questions
    old = questions.ANSWERED_COSINE
    questions.ANSWERED_COSINE = close - 1e-3  # the bag-of-words stand-in for meaning
    try:
        assert open_items(both, vectors) == []
    finally:
        questions.ANSWERED_COSINE = old


def test_the_minutes_open_items_are_exact_newest_first_and_spread_over_meetings() -> None:
    rows = [r for path in minutes() for r in rows_of(path)]
    items = open_items(rows, _vectors(rows), limit=10)
    texts = {str(p): p.read_text(encoding="utf-8") for p in minutes()}
    asked = [i for i in items if i.kind == "unanswered"]
    assert len(asked) == 10 and {i.kind for i in items} == {"unanswered", "unowned_action"}
    for i in items:
        assert texts[i.source_path][i.start : i.end] == i.text
    days = [i.date for i in asked]
    assert days == sorted(days, reverse=True)
    assert max(sum(1 for i in asked if i.document_id == d) for d in {i.document_id for i in asked}) <= PER_DOCUMENT
