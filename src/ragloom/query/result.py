"""What a query returns."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from ragloom.checks import shown as shown  # re-exported: the query layer's messages use it
from ragloom.context import OptimizedContext
from ragloom.errors import InvalidParameterError
from ragloom.store.filters import DateRange
from ragloom.types import ScoredChunk


def parse_time(value: str) -> datetime:
    """An ISO 8601 time (``2026-03-01``, ``2026-03-01T00:00:00Z``); naive times are UTC."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidParameterError(
            f"as_of {value!r} is not an ISO 8601 time; write it like 2026-03-01T00:00:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def as_of_moment(as_of: datetime | str | None) -> datetime | None:
    """A checked as-of time: an ISO 8601 string or a datetime (naive ones are UTC), inside the
    calendar once converted to UTC; a time before year 1000 means "before anything", and
    becomes year 1000 (SQL cannot spell earlier years)."""
    if as_of is None:
        return None
    if isinstance(as_of, str):
        if len(as_of) > 64:
            raise InvalidParameterError(f"as_of {shown(as_of)} is not an ISO 8601 time; write it like "
                                        "2026-03-01T00:00:00Z")
        moment = parse_time(as_of)
    elif isinstance(as_of, datetime):
        moment = as_of
    else:
        raise InvalidParameterError(f"as_of must be a datetime or an ISO 8601 string, not {shown(as_of)}")
    try:  # filters compare in UTC: a time at the very end of the calendar may not convert
        utc = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidParameterError(f"as_of {shown(as_of)} is outside the calendar once converted to UTC; "
                                    "give an earlier time") from None
    return datetime(1000, 1, 1, tzinfo=UTC) if utc.year < 1000 else moment


def parse_day(value: date | str | None, name: str) -> date | None:
    """A calendar date from ``2025-03-01`` (or a date, or a datetime's date); None stays None."""
    if value is None or isinstance(value, date) and not isinstance(value, datetime):
        return value
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, str) and len(value) <= 64:
        for parse in (date.fromisoformat, lambda text: datetime.fromisoformat(text).date()):
            try:
                return parse(value.strip())
            except ValueError:
                continue
    raise InvalidParameterError(f"{name} {shown(value)} is not a date; write it like 2025-03-01")


def date_range(start: date | str | None, end: date | str | None) -> DateRange | None:
    """The documents dated from ``start`` to ``end`` (both included, either open), checked."""
    first, last = parse_day(start, "dated_from"), parse_day(end, "dated_to")
    if first is None and last is None:
        return None
    if first is not None and last is not None and first > last:
        raise InvalidParameterError(f"dated_from ({first}) is after dated_to ({last}); give the earlier date first")
    return DateRange(first, last)


@dataclass(frozen=True, slots=True)
class Preference:
    """A period named in the question ("the 2026 summit", "in March 2025"): documents dated in it
    rank first, by :data:`PERIOD_BOOST`; the others still follow (``dated_from``/``dated_to`` limit)."""

    range: DateRange
    named: str  # as the question wrote it: "2026", "March 2025"

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.range.start, "to": self.range.end, "named": self.named, "boost": PERIOD_BOOST}


#: How much a result from a document dated in the period a question names gains: relevance
#: times this, at most 1.
PERIOD_BOOST = 1.3
#: Kinds of time reference in a question that name a period to prefer (a bare "March" does not).
_PREFERRED_KINDS = frozenset({"year", "half", "quarter", "month", "date"})


def preferred_period(text: str, *, today: date | None = None) -> Preference | None:
    """The period a question names (every year, quarter, month or day it names, spanned), or
    None. Relative phrases ("last year") count from ``today``."""
    from ragloom.parse.timeref import extract_time_refs

    refs = [r for r in extract_time_refs(text, reference=today or date.today())
            if r.resolved and r.kind in _PREFERRED_KINDS and r.period_start and r.period_end]
    if not refs:
        return None
    start = min(r.period_start for r in refs if r.period_start)
    end = max(r.period_end for r in refs if r.period_end)
    return Preference(DateRange(start, end), ", ".join(dict.fromkeys(" ".join(r.text.split()) for r in refs)))


@dataclass
class QueryResult:
    query: str
    mode: str
    results: list[ScoredChunk]
    tenant: str
    as_of: datetime | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: The optimised context window, when the query asked for one (a budget or an organisation).
    context: OptimizedContext | None = None
    #: Seconds per stage of the query ("embed query", "vector search", "expand", "optimise", ...).
    timings: dict[str, float] = field(default_factory=dict)
    #: The documents' date range the query was limited to, if any.
    dated: DateRange | None = None
    #: The period the question names, whose documents were ranked first (not a filter), if any.
    preferred: Preference | None = None

    def __iter__(self) -> Iterator[ScoredChunk]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> ScoredChunk:
        return self.results[index]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "tenant": self.tenant,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "dated": {"from": self.dated.start, "to": self.dated.end} if self.dated else None,
            "inferred": {"preferred_dates": self.preferred.to_dict()} if self.preferred else {},
            "results": [r.to_dict() for r in self.results],
            "notes": self.notes,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 4),
            "timings": {stage: round(t, 4) for stage, t in self.timings.items()},
            "context": self.context.to_dict() if self.context is not None else None,
        }
