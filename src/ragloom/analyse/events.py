"""The timeline's events: what the dated documents say happens, or happened, on a given day or
in a given month, quarter or half.

A sentence of a dated document (a meeting's minutes, a memo with a date) is an event when it
names a period that resolves against the document's date ("The election is October 3rd." in the
minutes of 2025-09-12 is 2025-10-03), that period is not just the document's own date restated
(the heading "Council meeting 2025-09-12"), and it states rather than asks. A bare year places
nothing on a timeline; neither does a date inside a URL or code, nor a token the document
defines as a name ("HackerOne (H1)"). Events are ranked by how precisely they are dated and
whether they say something is scheduled (a deadline, an election, a release, a meeting), the
best kept, and shown in the order of the days they name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from ragloom.analyse.sentence import Found, place
from ragloom.parse.timeref import TimeRef, defined_names, extract_time_refs

#: Kinds of reference precise enough for a timeline, most precise first.
PRECISION = {"date": 3, "month": 2, "quarter": 1, "half": 1}
#: Words that say a sentence schedules or records an event.
_EVENT = re.compile(
    r"\b(?:schedul\w*|deadline|due|election\w*|vote|release[sd]?|launch\w*|ship\w*|start\w*|begin\w*|end\w*|"
    r"clos\w*|open\w*|held|takes?\s+place|happen\w*|meet\w*|conference|summit|all[ -]hands|workshop|"
    r"deliver\w*|publish\w*|announce\w*|expir\w*|renew\w*|hire[ds]?|join\w*|move[sd]?|postpon\w*|cancel\w*|"
    r"will|planned|target\w*|by|until|before|after)\b", re.IGNORECASE)
_LINK_DEFINITION = re.compile(r"\[[^\[\]\n]+\]:\s*\S")
#: The rows a timeline reads from the store need one of these (a cheap filter in the query).
EVENT_WORDS = ("(?i)january|february|march|april|may|june|july|august|september|october|november|december|"
               r"\b(?:jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b|\bq[1-4]\b|\bh[12]\b|\d{4}-\d{2}|"
               r"quarter|half|next\s+(?:month|year)|from\s+now")


@dataclass(frozen=True, slots=True)
class Event(Found):
    """A dated statement: the sentence, where it is, the period it names and when it was said."""

    period: str  # canonical: "2025-10-03", "2025-10", "Q3 2025"
    begins: date
    ends: date
    said: date  # the document's date
    mention: str  # as written: "October 3rd"
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.flat, "period": self.period, "begins": self.begins.isoformat(),
                "ends": self.ends.isoformat(), "said": self.said.isoformat(), "mention": self.mention,
                "score": self.score, **self.where()}


def _best(refs: Iterable[TimeRef], said: date) -> TimeRef | None:
    """The most precise period named, leaving out the document's own date."""
    usable = [r for r in refs if r.resolved and r.kind in PRECISION and r.period_start and r.period_end
              and not (r.kind == "date" and r.period_start == said)]
    return max(usable, key=lambda r: (PRECISION[r.kind], -r.start), default=None)


def find_events(sentences: Iterable[Mapping[str, Any]], *, texts: Mapping[str, str] | None = None,
                limit: int | None = 40) -> list[Event]:
    """The events among ``sentences`` (rows of the sentence index of dated documents), the best
    ``limit`` of them in the order of the periods they name. ``texts`` (document id to text)
    lets a document's own definitions ("HackerOne (H1)") hold in every sentence of it."""
    names = {doc: defined_names(text) for doc, text in (texts or {}).items()}
    found = []
    seen: set[str] = set()
    for row in sentences:
        flat = " ".join(row["text"].split()).lower()
        if flat in seen or _LINK_DEFINITION.match(flat):
            continue  # one sentence said twice is one event; a link's definition is not one
        seen.add(flat)
        said = row.get("document_date")
        text = row["text"]
        if not isinstance(said, date) or len(text) > 600 or text.rstrip("*_)\"'” ").endswith("?"):
            continue
        if text.lstrip().startswith(("#", "|")):
            continue  # a heading names its subject's date, a table row is no sentence: neither reports an event
        ref = _best(extract_time_refs(text, reference=said, names=names.get(row["document_id"])), said)
        if ref is None or ref.period_start is None or ref.period_end is None:
            continue
        score = PRECISION[ref.kind] + (1.0 if _EVENT.search(text) else 0.0) + (0.5 if ref.period_start >= said else 0.0)
        found.append(Event(*place(row), ref.canonical, ref.period_start, ref.period_end, said,
                           " ".join(ref.text.split()), score))
    found.sort(key=lambda e: (-e.score, -e.said.toordinal(), e.source_path, e.start))
    kept = found if limit is None else found[:limit]
    return sorted(kept, key=lambda e: (e.begins, e.ends, e.said, e.source_path, e.start))
