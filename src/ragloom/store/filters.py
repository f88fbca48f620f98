"""SQL filter expressions for LanceDB, built so that no user string can escape its literal."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime

from ragloom.errors import InvalidParameterError


def sql_str(value: str) -> str:
    """A SQL string literal. Quotes are doubled; NUL, which could end the string early in C
    code below the SQL parser, is refused."""
    if not isinstance(value, str):
        raise InvalidParameterError(f"filter value {value!r} must be a string")
    if "\x00" in value:
        raise InvalidParameterError("filter values may not contain NUL characters")
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    items = sorted(set(values))
    if not items:
        return "FALSE"
    return f"{column} IN ({', '.join(sql_str(v) for v in items)})"


def sql_time(moment: datetime) -> str:
    """A timestamp literal from a datetime (naive datetimes are taken as UTC)."""
    if not isinstance(moment, datetime):
        raise InvalidParameterError(f"as_of {moment!r} must be a datetime")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        utc = moment.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidParameterError(f"as_of {moment.isoformat()} is outside the calendar in UTC; give an earlier "
                                    "time") from None
    # The year always in four digits: strftime writes year 999 as "999", which SQL cannot parse.
    return f"timestamp '{utc.year:04d}-{utc:%m-%dT%H:%M:%S.%f}'"


@dataclass(frozen=True, slots=True)
class DateRange:
    """Documents dated (``document_date``: front matter, or a date in the file name) from
    ``start`` to ``end``, both included; either end may be open. Undated documents are outside
    every range."""

    start: date | None = None
    end: date | None = None

    def sql(self) -> str:
        parts = ["document_date IS NOT NULL"]
        if self.start is not None:
            parts.append(f"document_date >= {_sql_date(self.start)}")
        if self.end is not None:
            parts.append(f"document_date <= {_sql_date(self.end)}")
        return " AND ".join(parts)

    def __str__(self) -> str:
        return f"{self.start.isoformat() if self.start else '…'} to {self.end.isoformat() if self.end else '…'}"


def _sql_date(day: date) -> str:
    if not isinstance(day, date):
        raise InvalidParameterError(f"a date filter needs a date, not {day!r}")
    return f"date '{day.year:04d}-{day.month:02d}-{day.day:02d}'"


def scope(tenant: str, *, lenses: Iterable[str] | None = None, as_of: datetime | None = None,
          dated: DateRange | None = None, extra: Iterable[str] = ()) -> str:
    """Rows of ``tenant`` (in ``lenses``, of documents ``dated`` in a range) that were current at
    ``as_of`` (or are current now)."""
    parts = [f"tenant_id = {sql_str(tenant)}"]
    if lenses is not None:
        parts.append(sql_in("lens", lenses))
    if dated is not None:
        parts.append(dated.sql())
    if as_of is None:
        parts.append("superseded_at IS NULL")
    else:
        t = sql_time(as_of)
        parts.append(f"as_of <= {t} AND (superseded_at IS NULL OR superseded_at > {t})")
    parts.extend(extra)
    return " AND ".join(f"({p})" for p in parts)
