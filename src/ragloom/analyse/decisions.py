"""The decisions log: statements that record a decision, a vote's outcome, an approval or a
commitment, each with its date, source and lens, newest first.

A sentence is a decision when it says one was taken, in the words minutes and memos use:

- a label: "**Decision:** Mara will help coordinate.", "Decided: …", "Resolved: …", "Outcome: …";
- a verb of deciding in the past or present perfect: "we decided not to …", "was approved",
  "the date is approved", "agreed to try …", "voted to …", "motion passes", "the ayes have it";
- the chair's formula: "hearing no objections, we'll adopt …", "no objections to …",
  "seeing support and no objections, …", "you have our approval";
- an adoption: "we adopt as our resolution …", "we're accepting this as the position …",
  "we're resolving to …".

and when nothing in it says that it was not (yet): a question, a proposal ("I propose",
"this RFC proposes"), a future or conditional vote ("let's start an FCP", "approve async",
"if both are approved"), or a denial ("we haven't decided", "no decision yet", "there's no
ask for a decision here"). A decision's date is its document's date (a meeting's, from its
file name or front matter); in an undated document, a date the sentence itself names.

The rules were written on half of a labelled set of decisions and look-alikes from a real
organisation's meeting minutes (``bench/labels/rust_council_decisions.jsonl``), and measured
on the other half (docs/benchmarks.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from ragloom.analyse.sentence import Found, place
from ragloom.parse.timeref import extract_time_refs

_DECIDED = tuple(re.compile(alternatives, re.IGNORECASE) for alternatives in (
    # a label with what was decided after it
    r"(?:^|[\s*_>(-])(?:decision|decided|resolved|resolution|outcome|conclusion|agreed)(?:\s+made)?[\s*_]*:[\s*_]*\w",
    r"\bdecision\s+(?:made|taken)\b",
    # the chair's formula, and the ways minutes close an item
    r"\b(?:hearing|seeing)\s+(?:\w+\s+){0,4}(?:support|no\s+objections?|\+1s?|affirmations)\b[^.;]*?,",
    r"\bwith\s+no\s+objections\b|\bno\s+objections?\s+(?:raised|heard)\b|\bmotion\s+(?:passe[sd]|carrie[sd])\b",
    r"\bno\s+objections?\s+to\s+\w+(?:ing|ion)\b|\bno\s+objections?(?:,\s*agreed)?[\s.)]*$",
    # an approval or adoption stated as done
    r"\b(?:is|was|were|has\s+been|have\s+been)\s+(?:\w+\s+)?(?:approved|adopted|ratified)\b",
    r"\b(?:was|were|has\s+been|have\s+been)\s+(?:\w+\s+)?(?:accepted|merged|granted|chosen|selected|elected)\b",
    r"\b(?:hearing|seeing)\s+none\b|\bnone\s+(?:heard|raised)\b|\blet's\s+(?:do\s+(?:that|it|this)|go\s+(?:with|ahead))\b",
    r"\bwe(?:'ll|\s+will)\s+go\s+(?:with|ahead)\b|\bgo(?:ing)?\s+ahead\s+with\b",
    r"\b(?:you|they|he|she)\s+have\s+(?:our|the\s+council's)\s+approval\b",
    r"\bwe(?:'re|\s+are|'ll|\s+will)?\s+(?:adopt(?:ing)?|accept(?:ing)?\s+this|negat(?:e|ing))\b",
    r"\b(?:we|the\s+council|the\s+committee|the\s+team|everyone|all\s+of\s+us)\s+(?:\w+\s+)?"
        r"(?:decided|voted|resolved|agreed)\s+(?:not\s+)?(?:to|that|on)\b",
    r"\bwe\s+(?:approved|adopted|accepted)\s+(?:a|an|the|this|that|our)\b",
    # a vote: several names answering at once, a vote's result
    r"^[\w.'-][\w .'-]*(?:,\s*[\w.'-][\w .'-]*){2,}:\s*(?:yes|agreed|\+1)\b",
    r"\bvoted\s+(?:to|for|against)\b|\bthe\s+ayes\s+have\s+it\b|\bunanimous(?:ly)?\b",
    r"\b(?:our|the)\s+(?:resolution|decision|consensus|selection)\s+(?:is|was)\b|\bconsensus\s+(?:is|was)\s+to\b",
    r"\bagreed\s+to\s+(?!be\b)\w+|(?:^|:\s*)decided\s+(?:not\s+)?to\b|\bwe(?:'re|\s+are)\s+resolving\s+(?:to|that)\b",
))
#: What makes a sentence not a decision taken, whatever else it says.
_NOT_YET = tuple(re.compile(alternatives, re.IGNORECASE) for alternatives in (
    r"\?[)\"'”’\]]*\s*$|\bwho\s+voted\b|\b(?:may|might)\s+be\s+better\b|\b(?:document|record|list)\s+(?:the\s+)?"
        r"(?:[\"“]?on\s+the\s+fly[\"”]?\s+)?decisions\b",
    r"\b(?:i|we)\s+(?:would\s+)?(?:propose|suggest|recommend)\b|\bpropos(?:es|ing|al\s+(?:is|to|for))\b",
    r"\bproposed\s+(?:here|that|to)\b|\bshould\s+we\b|\bdo\s+we\s+(?:want|have|need)\b",
    r"\b(?:haven't|have\s+not|hasn't|has\s+not|hadn't|didn't|did\s+not|don't|do\s+not|not)\s+(?:\w+\s+){0,2}"
        r"(?:decided|made\s+(?:a|any)\s+decision|finali[sz]ed|agreed|approved|allocated|seen|noticed|known|realized)\b",
    r"\bno\s+(?:goal|ask|decision|need)\b|\bnot\s+(?:a\s+)?decision\b|\b(?:before|until|once|when|if|unless|after)\W+"
        r"(?:\w+\W+){0,10}(?:approved|decided|agreed|accepted)\b",
    r"\b(?:to|for|pending|awaiting|needs?|requires?|goal)\W+(?:\w+\s+){0,3}(?:approv(?:e|al)|decide|decision|vote)\b",
    r"\bapprove\s+async\b|\basync(?:hronous(?:ly)?)?\s+(?:for\s+)?(?:approval|decid)|\bstart\s+(?:an?\s+)?FCP\b",
    r"\bpropose\s+FCP\b|\bto\s+FCP\b|\b(?:will|would|could|might|may)\s+(?:\w+\s+)?(?:vote|decide)\b",
    r"\bif\s+(?:both|we|it|they|there|no)\b|\b(?:but|however)\s+we\s+should\b|\bno\s+objections?,\s+but\b",
    # An earlier decision recalled, or one that a rule requires: not one taken here.
    r"\bhad\s+(?:\w+\s+){0,2}(?:decided|agreed|approved|voted|accepted|adopted)\b|\bas\s+we\s+(?:\w+\s+)?decided\b",
    r"\blast\s+time\b|\b(?:would|could|should|must|might|may|can|can't|cannot)\s+(?:\w+\s+){0,2}(?:be\s+)?"
        r"(?:approved|accepted|adopted|agreed|decided|voted|chosen|selected|elected|ratified)\b",
    r"\b(?:have|has|had|need|needs|needed)\s+to\s+(?:\w+\s+){0,2}(?:approve|agree|decide|vote|accept|be\s+approved)\b",
    r"\brequir(?:es|ed|ing)\s+(?:\w+\s+){0,4}to\s+(?:agree|approve|decide|vote)\b|\bto\s+be\s+approved\b",
    r"\b(?:maybe|perhaps|probably|whether|wondering|unclear|not\s+(?:sure|clear)|pretty\s+sure|would\s+be\s+nice)\b",
    r"\b(?:i|we)\s+(?:thought|think|believe|guess|assume|suppose)\b|\balready\s+(?:decided|agreed|approved)\b",
    r"\bpassed\s+(?:to|on|along|over|through)\b|\b(?:what|whatever)(?:'s|\s+is|\s+has)?\s+(?:been\s+)?approved\b",
    r"\b(?:will|'ll)\s+have\s+(?:an?\s+)?(?:agreed|approved|decided)|\bdecision\s+(?:is|was)\s+up\s+to\b",
    r"\bthe\s+decision\s+to\b|\baccepting\s+(?:nominations|applications|submissions|proposals|questions|candidates)\b",
    r"\b(?:where|when|how|why|what)\s+(?:\w+\s+){0,2}(?:decided|agreed|approved)\b",
    r"\b(?:has|have|had)\s+no\s+objections?\s+to\b|\b(?:stuff|things|ones|goal|plan|anything)\s+(?:that\s+)?we\s+"
        r"(?:have\s+)?(?:approved|accepted|decided|agreed)\b|\bwe(?:'re|\s+are)\s+approving\s+them\b",
))
#: A sentence without one of these (case aside) records no decision: what the store is asked for.
DECISION_WORDS = ("(?i)decid|decision|resolv|resolution|outcome|conclusion|agree|approv|vote|objection|adopt|accept|"
                  "ratif|chosen|select|elect|merged|passed|granted|motion|ayes|unanim|consensus|support|commit|"
                  "negat")
KINDS = (("vote", re.compile(r"\bvot(?:e|ed|ing)\b|\bayes\b|\bmotion\b", re.IGNORECASE)),
         ("approval", re.compile(r"\bapprov(?:ed|al)\b|\baccept(?:ed|ing)\b", re.IGNORECASE)),
         ("commitment", re.compile(r"\bwe(?:'ll|\s+will)\b|\bcommit", re.IGNORECASE)))


@dataclass(frozen=True, slots=True)
class Decision(Found):
    """One recorded decision: the sentence, where it is, and when."""

    date: date | None
    kind: str  # decision | vote | approval | commitment
    section: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.flat, "date": self.date.isoformat() if self.date else None, "kind": self.kind,
                "section": self.section, **self.where()}


#: The meeting's own business: consent to its agenda, its minutes, its next date.
_PROCEDURAL = re.compile(r"\b(?:agenda|minutes\s+(?:are|is|were)\s+approved|consent\s+to|meeting\s+roles?)\b",
                         re.IGNORECASE)


def is_decision(text: str) -> bool:
    """Whether ``text`` (one sentence) records a decision taken (see the module's docstring);
    the meeting's own procedure ("the agenda is approved") is not one."""
    flat = " ".join(text.split())
    return (any(p.search(flat) for p in _DECIDED) and not any(p.search(flat) for p in _NOT_YET)
            and not _PROCEDURAL.search(flat))


def decision_kind(text: str) -> str:
    for kind, pattern in KINDS:
        if pattern.search(text):
            return kind
    return "decision"


def find_decisions(sentences: Iterable[Mapping[str, Any]], *, since: date | None = None) -> list[Decision]:
    """The decisions among ``sentences`` (rows of the sentence index: ``text``, ``document_id``,
    ``source_path``, ``lens``, ``start_char``, ``end_char``, ``document_date``,
    ``section_path``), newest first, undated last; at or after ``since`` when given."""
    found = []
    for row in sentences:
        text = row["text"]
        if len(text) > 600 or not is_decision(text):
            continue
        day = row.get("document_date")
        if not isinstance(day, date):
            named = [r.period_start for r in extract_time_refs(text) if r.kind == "date" and r.period_start]
            day = named[0] if named else None
        if since is not None and (day is None or day < since):
            continue
        section = row.get("section_path") or ""
        found.append(Decision(*place(row), day, decision_kind(text), " > ".join(section) if isinstance(section, list | tuple) else str(section)))
    return sorted(found, key=lambda d: (d.date is None, -(d.date.toordinal() if d.date else 0), d.source_path,
                                        d.start))
