"""What is still open: questions the documents ask that no later document answers, and action
items that nobody owns.

- A **question** is a sentence that ends in a question mark, says something (six words or more)
  and is not the meeting's routine ("Any objections?", "Do we have consensus to move forward
  with this agenda?"). It is **answered** when a statement of a later document (by date) is close
  to it in meaning (its vector in the sentence index; :data:`ANSWERED_COSINE`), or a decision
  that follows it in its own document is. The open ones are listed newest first.
- An **action item** is an unticked checkbox ("- [ ] …") or a line labelled "Action item:",
  "AI:" or "TODO:"; it is **unowned** when it names nobody (no capitalised name, no @handle).

Lens silence is not a question: a report notes it apart, for the lenses the workspace has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from ragloom.analyse.sentence import Found, place

#: A later statement at least this close in meaning (cosine) answers a question.
ANSWERED_COSINE = 0.7
#: A decision after the question in its own document answers it at this closeness.
DECIDED_COSINE = 0.55
MIN_WORDS = 6
_ROUTINE = re.compile(r"\b(?:agenda|objections?|any\s+(?:other|more|further)|anything\s+else|thoughts|questions|"
                      r"comments|concerns|consensus\s+to\s+move|who\s+(?:is|will\s+be)\s+taking\s+(?:notes|minutes)|"
                      r"can\s+you\s+hear|is\s+everyone\s+here|ready\s+to\s+start|"
                      # talk addressed to someone in the room, not a question of substance
                      r"(?:would|could|can|do|did)\s+you|how\s+can\s+we\s+help|curious\s+to\s+hear|"
                      r"you\s+mean|correct\s*\?)\b", re.IGNORECASE)
_ACTION = re.compile(r"^\s*(?:[-*+]\s+)?(?:\[\s\]\s+|(?:\*\*)?(?:action\s+items?|ai|todo)(?:\*\*)?\s*[:-]\s*(?:\*\*)?\s*)"
                     r"(?P<what>\S.*)$", re.IGNORECASE | re.DOTALL)
_OWNER = re.compile(r"@\w|\b(?!(?:Someone|Somebody|Anyone|We|They|It|This|That|You|Need|Needs|Still)\b)[A-Z][a-z]+"
                    r"(?:\s+[A-Z][a-z]+)?\b(?=\s+(?:to|will|can|should|owns?|is)\b)"
                    r"|\((?:[A-Z][a-z]+|@\w+)[^()]*\)|^[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s*:|\b(?:owner|assignee)\s*:",
                    re.MULTILINE)
#: A handle that opens the item and then acts ("ehuss will follow up"): an owner written in lower case.
_HANDLE = re.compile(r"(?!(?:we|they|someone|somebody|anyone|it|this|that|i|you|need|needs|still|the|a|an)\b)"
                     r"[a-z][\w.-]*\s+(?:will|to|owns?)\s", re.IGNORECASE)
#: At most this many open questions from one document: the newest meeting's are not all that is open.
PER_DOCUMENT = 2


@dataclass(frozen=True, slots=True)
class OpenItem(Found):
    """A question nothing later answers, or an action item nobody owns."""

    kind: str  # unanswered | unowned_action
    date: date | None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.flat, "date": self.date.isoformat() if self.date else None,
                **self.where()}


def is_question(text: str) -> bool:
    """A question worth listing: it asks, says something, and is not the meeting's routine."""
    flat = " ".join(text.split()).rstrip("*_)\"'” ")
    return flat.endswith("?") and len(flat.split()) >= MIN_WORDS and not _ROUTINE.search(flat)


def unowned_action(text: str) -> str | None:
    """The action item ``text`` holds when it names no owner, else None."""
    m = _ACTION.match(text)
    if m is None:
        return None
    what = m.group("what").lstrip("*_ ")
    return None if _OWNER.search(what) or _HANDLE.match(what) else " ".join(what.split())


def _item(kind: str, row: Mapping[str, Any]) -> OpenItem:
    day = row.get("document_date")
    return OpenItem(*place(row), kind, day if isinstance(day, date) else None)


def open_items(sentences: Sequence[Mapping[str, Any]], vectors: np.ndarray, *,
               decided: Iterable[tuple[str, int]] = (), limit: int = 10) -> list[OpenItem]:
    """Unanswered questions and unowned action items among ``sentences`` (rows of the sentence
    index, each with ``document_date``), ``vectors`` their unit vectors in the same order;
    ``decided`` is (document id, start) of the sentences the decisions log holds. Newest first,
    at most ``limit`` of each kind."""
    decided = set(decided)
    days = np.array([(r.get("document_date") or date.min).toordinal() for r in sentences], dtype=np.int64)
    statement = np.array([not " ".join(r["text"].split()).rstrip("*_)\"'” ").endswith("?") for r in sentences])
    docs = np.array([r["document_id"] for r in sentences], dtype=object)
    starts = np.array([int(r["start_char"]) for r in sentences], dtype=np.int64)
    decision = np.array([(r["document_id"], int(r["start_char"])) in decided for r in sentences], dtype=bool)
    questions: list[OpenItem] = []
    actions: list[OpenItem] = []
    seen: set[str] = set()
    per_document: dict[str, int] = {}
    order = sorted(range(len(sentences)), key=lambda i: (-days[i], sentences[i]["source_path"],
                                                         int(sentences[i]["start_char"])))
    for i in order:
        row = sentences[i]
        text = " ".join(row["text"].split())
        if text.lower() in seen:
            continue
        seen.add(text.lower())
        action = unowned_action(row["text"])
        if action is not None and len(actions) < limit:
            actions.append(_item("unowned_action", row))
            continue
        if len(questions) >= limit or not is_question(text) or row.get("document_date") is None \
                or per_document.get(row["document_id"], 0) >= PER_DOCUMENT:
            continue
        close = vectors @ vectors[i]
        later = statement & (days > days[i]) & (close >= ANSWERED_COSINE)
        same = decision & (docs == row["document_id"]) & (starts > starts[i]) & (close >= DECIDED_COSINE)
        if later.any() or same.any():
            continue
        questions.append(_item("unanswered", row))
        per_document[row["document_id"]] = per_document.get(row["document_id"], 0) + 1
    return questions + actions
