"""Time references: quarters, halves, years, months, dates and relative phrases, normalised to
canonical periods.

``Q2 2024``, ``q2-2024``, ``2024Q2``, ``Q2'24`` and ``2nd quarter of 2024`` are all the period
``Q2 2024``. A reference without a year (``Q2``, ``in March``, ``October 3rd``, ``next
quarter``, ``in 2 years``, ``April in 1 year from now``) is resolved against the document's date
when one is known and kept as unresolved otherwise: a day without a year falls in the year that
puts it nearest the document's date ("January 15th" in a December note is next January).

What is not a time reference: anything inside a URL or a code span (``/2024/03/`` in a link),
and a token the text defines as a name ("HackerOne (H1)" makes every "H1" of the text a name,
not a half year); callers that know such names from the whole document pass them (``names``).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from ragloom.parse.spans import DisjointSpans

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_FULL_MONTHS = "|".join(sorted((calendar.month_name[i] for i in range(1, 13)), key=len, reverse=True))
#: "April in 1 year from now", "March in two years".
_MONTH_IN_YEARS = (rf"(?P<month>{_FULL_MONTHS})\s+in\s+(?P<n>\d{{1,2}}|a|an|one|two|three)\s+years?"
                   r"(?:\s+from\s+now|\s+time)?\b")
#: A day of a month without a year: "October 3rd", "Nov 12th", "on March 5" (abbreviations need
#: a day; a bare "May 3" is a day too, "may 3 people" is not: the month must be capitalised).
_MONTH_DAY = (r"(?P<month>(?-i:" + "|".join(sorted({m for name in calendar.month_name[1:] for m in (name, name[:3])},
                                                    key=len, reverse=True)) + r"))\.?\s+(?P<d>[0-3]?\d)(?:st|nd|rd|th)?")
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_YEAR = r"(?P<year>(?:19|20)\d{2})"
_ORDINAL = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": 4}


@dataclass(frozen=True, slots=True)
class TimeRef:
    """One mention of a period in a text."""

    text: str
    start: int
    end: int
    kind: str  # quarter | half | year | month | date
    canonical: str  # "Q2 2024", "H1 2025", "2024", "2024-03", "2024-03-15"; "Q2" when unresolved
    resolved: bool
    period_start: date | None = None
    period_end: date | None = None

    def overlaps(self, other: TimeRef) -> bool:
        """Whether the two periods share at least a day (unresolved ones overlap nothing)."""
        if None in (self.period_start, self.period_end, other.period_start, other.period_end):
            return False
        return self.period_start <= other.period_end and other.period_start <= self.period_end  # type: ignore[operator]


def _quarter(q: int, year: int | None, text: str, start: int, end: int) -> TimeRef:
    if year is None:
        return TimeRef(text, start, end, "quarter", f"Q{q}", False)
    first = date(year, 3 * q - 2, 1)
    last = date(year, 3 * q, calendar.monthrange(year, 3 * q)[1])
    return TimeRef(text, start, end, "quarter", f"Q{q} {year}", True, first, last)


def _half(h: int, year: int | None, text: str, start: int, end: int) -> TimeRef:
    if year is None:
        return TimeRef(text, start, end, "half", f"H{h}", False)
    first = date(year, 1 if h == 1 else 7, 1)
    last = date(year, 6, 30) if h == 1 else date(year, 12, 31)
    return TimeRef(text, start, end, "half", f"H{h} {year}", True, first, last)


def _month(m: int, year: int | None, text: str, start: int, end: int) -> TimeRef:
    name = calendar.month_name[m]
    if year is None:
        return TimeRef(text, start, end, "month", name, False)
    last = date(year, m, calendar.monthrange(year, m)[1])
    return TimeRef(text, start, end, "month", f"{year}-{m:02d}", True, date(year, m, 1), last)


def _day(y: int, m: int, d: int, text: str, start: int, end: int) -> TimeRef | None:
    try:
        day = date(y, m, d)
    except ValueError:
        return None
    return TimeRef(text, start, end, "date", day.isoformat(), True, day, day)


def _year(y: int, text: str, start: int, end: int) -> TimeRef:
    return TimeRef(text, start, end, "year", str(y), True, date(y, 1, 1), date(y, 12, 31))


def _shift(reference: date, unit: str, amount: int) -> tuple[int, int]:
    """(year, index) of the quarter, half, month or year ``amount`` units from ``reference``."""
    if unit == "year":
        return reference.year + amount, 0
    size = {"quarter": 3, "half": 6, "month": 1}[unit]
    index = (reference.month - 1) // size + amount
    return reference.year + index // (12 // size), index % (12 // size) + 1


_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?P<year>(?:19|20)\d{2})-(?P<m>0[1-9]|1[0-2])-(?P<d>0[1-9]|[12]\d|3[01])\b"), "iso_date"),
    (re.compile(rf"\b{_MONTH}\s+(?P<d>[0-3]?\d)(?:st|nd|rd|th)?,?\s+{_YEAR}\b", re.I), "month_day_year"),
    (re.compile(rf"\b{_MONTH_IN_YEARS}", re.I), "month_in_years"),
    (re.compile(rf"\b(?P<d>[0-3]?\d)(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:\s*+,\s++|\s++){_YEAR}\b", re.I), "day_month_year"),
    (re.compile(r"\b(?:FY|CY)?\s?(?P<year>(?:19|20)\d{2})\s?[-/ ]?\s?Q(?P<q>[1-4])\b", re.I), "year_quarter"),
    (re.compile(r"\bQ(?P<q>[1-4])(?:\s?[-/ ]?\s?(?:FY\s?)?(?P<year>(?:19|20)\d{2})|\s?'(?P<yy>\d{2}))?\b", re.I), "quarter"),
    (re.compile(r"\b(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th|last)\s+quarter(?:\s+(?:of|in)\s+(?:the\s+year\s+)?(?P<year>(?:19|20)\d{2}))?", re.I), "quarter_words"),
    (re.compile(r"\bH(?P<h>[12])\s?[-/ ]?\s?(?P<year>(?:19|20)\d{2})?\b", re.I), "half"),
    (re.compile(r"\b(?P<ord>first|second|1st|2nd)\s+half(?:\s+of\s+(?:the\s+year\s+)?(?P<year>(?:19|20)\d{2}))?", re.I), "half_words"),
    (re.compile(rf"\b(?:(?:early|mid|late|end\s+of)[- ]?)?{_MONTH}(?:\s+of)?\s+{_YEAR}\b", re.I), "month_year"),
    (re.compile(r"\b(?P<year>(?:19|20)\d{2})-(?P<m>0[1-9]|1[0-2])\b(?!-\d)"), "iso_month"),
    (re.compile(r"\b(?P<rel>this|next|last|previous|coming|current)\s+(?P<unit>quarter|month|year|half)\b", re.I), "relative"),
    (re.compile(r"\bin\s+(?P<n>\d{1,2}|a|an|one|two|three|four|five|six)\s+(?P<unit>quarter|month|year)s?"
                r"(?:\s+from\s+now|\s+time)?\b|\b(?P<n2>\d{1,2}|a|an|one|two|three)\s+(?P<unit2>quarter|month|year)s?"
                r"\s+from\s+now\b", re.I), "ahead"),
    (re.compile(rf"\b{_MONTH_DAY}\b(?![,\s]*(?:19|20)\d\d)", re.I), "month_day"),
    (re.compile(r"\b(?:in|by|during|until|before|after|since|from|mid-|early|late|end\s+of)\s*[- ]?(?P<month>" + "|".join(
        sorted((calendar.month_name[i] for i in range(1, 13)), key=len, reverse=True)) + r")\b(?!\s+(?:19|20)\d{2})", re.I), "bare_month"),
    (re.compile(r"(?<![\d.,$€£-])\b(?P<year>(?:19|20)\d{2})\b(?![.,]?\d|%|-\d)"), "year"),
]


_YEAR_ANCHOR = re.compile(r"(?:19|20)\d\d")
_KEYWORDS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
             "quarter", "half", "month", "year", "q1", "q2", "q3", "q4", "h1", "h2")
#: Every reference contains a year or a keyword and is shorter than this on either side of it.
_REACH = 60


def _windows(text: str) -> list[tuple[int, int]]:
    """Merged spans around the places a time reference could be.

    Thirteen case-insensitive patterns over a whole text cost about half a second per MB in
    Python's regex engine; finding anchors with ``str.find`` and one simple pattern, then
    matching only around them, costs a tenth of that on real text.
    """
    anchors = [m.start() for m in _YEAR_ANCHOR.finditer(text)]
    lower = text.lower()
    for keyword in _KEYWORDS:
        i = lower.find(keyword)
        while i != -1:
            anchors.append(i)
            i = lower.find(keyword, i + 1)
    merged: list[tuple[int, int]] = []
    for anchor in sorted(anchors):
        a, b = max(0, anchor - _REACH), min(len(text), anchor + _REACH)
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


#: Where no time reference is: URLs, inline code, fenced code.
_NOT_TEXT = re.compile(r"(?:https?|ftp)://[^\s<>)\]]+|\bwww\.[^\s<>)\]]+|(?<!`)(`++)(?!`).+?(?<!`)\1(?!`)"
                       r"|^[ \t]*(?:```|~~~)[^\n]*\n(?:.*\n)*?[ \t]*(?:```|~~~)", re.MULTILINE)
#: A name given an abbreviation that looks like a period: "HackerOne (H1)", "Q1 (Quantum One)".
_DEFINED = re.compile(r"(?<![\w&.-])[A-Z][\w&.-]*+(?:[ \t]++[A-Z][\w&.-]*+){0,4}[ \t]*+\((?P<a>[HQ][1-4]|FY\d{2,4})\)"
                      r"|\b(?P<b>[HQ][1-4]|FY\d{2,4})[ \t]*+\((?:the[ \t]++)?[A-Z][\w&.-]*+(?:[ \t]++[\w&.-]++){0,4}+\)")


def defined_names(text: str) -> frozenset[str]:
    """Tokens that ``text`` defines as names rather than periods ("HackerOne (H1)", "H1
    (HackerOne)"): a document computes them once, for every piece of it."""
    names = set()
    for m in _DEFINED.finditer(text):
        token = m.group("a") or m.group("b")
        if not re.fullmatch(r"(?:the[ \t]+)?(?:first|second|third|fourth|1st|2nd|3rd|4th)\b.*|.*\b(?:half|quarter|"
                            r"year)\b.*", m.group(0).split("(", 1)[1] if m.group("b") else m.group(0), re.IGNORECASE):
            names.add(token.upper())
    return frozenset(names)


def extract_time_refs(text: str, reference: date | None = None, *,
                      names: frozenset[str] | None = None) -> list[TimeRef]:
    """Every time reference in ``text``, in order, longest match first where they overlap.

    ``reference`` (the document's date) resolves references without a year and relative ones.
    Nothing inside a URL or code counts, nor a token defined as a name (``names``, else those
    ``text`` itself defines: see :func:`defined_names`).
    """
    found: list[TimeRef] = []
    names = defined_names(text) if names is None else names
    blocked = [m.span() for m in _NOT_TEXT.finditer(text)] if "`" in text or "://" in text or "www." in text else []
    windows = [(0, len(text))] if len(text) < 4 * _REACH else _windows(text)
    for lo, hi in windows:
        # Matching with pos/endpos (not slices) keeps lookbehinds and word boundaries exact.
        taken = DisjointSpans()
        for a, b in blocked:
            if a < hi and b > lo:
                taken.add(max(a, lo), min(b, hi))
        for pattern, kind in _RULES:
            for m in pattern.finditer(text, lo, hi):
                a, b = m.span()
                if not taken.is_free(a, b):
                    continue
                if names and m.group(0).split()[0].upper().rstrip("'") in names:
                    continue
                ref = _build(kind, m, reference)
                if ref is not None:
                    found.append(ref)
                    taken.add(a, b)
    return sorted(found, key=lambda r: r.start)


def _build(kind: str, m: re.Match[str], reference: date | None) -> TimeRef | None:
    text, a, b = m.group(0), m.start(), m.end()
    g = m.groupdict()
    year = int(g["year"]) if g.get("year") else (2000 + int(g["yy"]) if g.get("yy") else None)
    # Quarters and halves without a year of their own fall in the document's year.
    year_or_reference = year if year is not None else (reference.year if reference else None)
    if kind == "iso_date":
        return _day(int(g["year"]), int(g["m"]), int(g["d"]), text, a, b)
    if kind in ("month_day_year", "day_month_year"):
        return _day(year, MONTHS[g["month"].lower()], int(g["d"]), text, a, b)  # type: ignore[arg-type]
    if kind in ("year_quarter", "quarter"):
        return _quarter(int(g["q"]), year_or_reference, text, a, b)
    if kind == "quarter_words" and g["ord"].lower() == "last" and year is None:
        kind = "relative"  # "last quarter" without a year is the previous quarter, not Q4
        g = {"rel": "last", "unit": "quarter"}
    if kind == "quarter_words":
        return _quarter(_ORDINAL[g["ord"].lower()], year_or_reference, text, a, b)
    if kind == "half":
        return _half(int(g["h"]), year_or_reference, text, a, b)
    if kind == "half_words":
        return _half(_ORDINAL[g["ord"].lower()], year_or_reference, text, a, b)
    if kind == "month_year":
        return _month(MONTHS[g["month"].lower()], year, text, a, b)
    if kind == "iso_month":
        return _month(int(g["m"]), int(g["year"]), text, a, b)
    if kind == "bare_month":
        month = MONTHS[g["month"].lower()]
        start = a + m.group(0).lower().index(g["month"].lower())
        return _month(month, reference.year if reference else None, text[start - a :], start, b)
    if kind == "relative":
        unit = g["unit"].lower()
        amount = {"next": 1, "coming": 1, "last": -1, "previous": -1}.get(g["rel"].lower(), 0)
        if reference is None:
            return TimeRef(text, a, b, unit, f"{g['rel'].lower()} {unit}", False)
        y, index = _shift(reference, unit, amount)
        if unit == "year":
            return _year(y, text, a, b)
        return {"quarter": _quarter, "half": _half, "month": _month}[unit](index, y, text, a, b)
    if kind == "year":
        return _year(int(g["year"]), text, a, b)
    if kind == "month_in_years":
        month = MONTHS[g["month"].lower()]
        if reference is None:
            return _month(month, None, text, a, b)
        return _month(month, reference.year + _count(g["n"]), text, a, b)
    if kind == "ahead":
        unit, n = (g["unit"] or g["unit2"]).lower(), _count(g["n"] or g["n2"])
        if reference is None:
            return TimeRef(text, a, b, unit, " ".join(text.lower().split()), False)
        y, index = _shift(reference, unit, n)
        if unit == "year":
            return _year(y, text, a, b)
        return {"quarter": _quarter, "month": _month}[unit](index, y, text, a, b)
    if kind == "month_day":
        month, d = MONTHS[g["month"].lower()], int(g["d"])
        if not 1 <= d <= 31:
            return None
        if reference is None:
            return TimeRef(text, a, b, "date", f"{calendar.month_name[month]} {d}", False)
        # The year that puts the day nearest the document's date: "January 15" in December
        # is next January, "December 20" in January last December.
        years = [y for y in (reference.year - 1, reference.year, reference.year + 1)
                 if d <= calendar.monthrange(y, month)[1]]
        if not years:
            return None
        year = min(years, key=lambda y: abs((date(y, month, d) - reference).days))
        return _day(year, month, d, text, a, b)
    return None  # pragma: no cover - every rule kind is handled above


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


UNRESOLVED = " (unresolved)"


def time_labels(refs: list[TimeRef]) -> list[str]:
    """Distinct canonical periods in order of appearance; unresolved ones marked as such."""
    return list(dict.fromkeys(r.canonical if r.resolved else r.canonical + UNRESOLVED for r in refs))


_CANONICAL_QUARTER = re.compile(r"^Q([1-4]) (\d{4})$")
_CANONICAL_HALF = re.compile(r"^H([12]) (\d{4})$")
_CANONICAL_YEAR = re.compile(r"^(\d{4})$")
_CANONICAL_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_CANONICAL_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


@lru_cache(maxsize=4096)
def period_bounds(canonical: str) -> tuple[date, date] | None:
    """First and last day of a canonical period (``Q2 2025``, ``H1 2025``, ``2025``,
    ``2025-03``, ``2025-03-04``); None for unresolved or unknown ones."""
    text = canonical.strip()
    if not text or text.endswith(UNRESOLVED.strip()):
        return None
    ref: TimeRef | None = None
    try:
        if m := _CANONICAL_DAY.match(text):
            ref = _day(int(m[1]), int(m[2]), int(m[3]), text, 0, len(text))
        elif m := _CANONICAL_MONTH.match(text):
            month = int(m[2])
            ref = _month(month, int(m[1]), text, 0, len(text)) if 1 <= month <= 12 else None
        elif m := _CANONICAL_QUARTER.match(text):
            ref = _quarter(int(m[1]), int(m[2]), text, 0, len(text))
        elif m := _CANONICAL_HALF.match(text):
            ref = _half(int(m[1]), int(m[2]), text, 0, len(text))
        elif m := _CANONICAL_YEAR.match(text):
            ref = _year(int(m[1]), text, 0, len(text))
    except ValueError:  # a year 0000 is no period
        return None
    if ref is None or ref.period_start is None or ref.period_end is None:
        return None  # a month 13 or a 31st of February is no period either
    return ref.period_start, ref.period_end
