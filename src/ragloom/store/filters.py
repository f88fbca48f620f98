"""SQL filter expressions for LanceDB, built so that no user string can escape its literal."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

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


def scope(tenant: str, *, lenses: Iterable[str] | None = None, as_of: datetime | None = None,
          extra: Iterable[str] = ()) -> str:
    """Rows of ``tenant`` (in ``lenses``) that were current at ``as_of`` (or are current now)."""
    parts = [f"tenant_id = {sql_str(tenant)}"]
    if lenses is not None:
        parts.append(sql_in("lens", lenses))
    if as_of is None:
        parts.append("superseded_at IS NULL")
    else:
        t = sql_time(as_of)
        parts.append(f"as_of <= {t} AND (superseded_at IS NULL OR superseded_at > {t})")
    parts.extend(extra)
    return " AND ".join(f"({p})" for p in parts)
