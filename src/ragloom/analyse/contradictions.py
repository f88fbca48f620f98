"""Contradictions between lenses, made concrete: two statements, where they are, what differs.

A contradiction is two statements from **different lenses** (and different documents) that
make **comparable claims about the same subject** and cannot both hold. Every sentence of the
sentence index becomes a set of claims about the key terms (and entities) it names:

- **when**: a schedule verb ("ships", "moves to", "GA", "planned for" …) with a period for
  the subject ("in Q2 2025", "by May 15, 2025", "not before Q3 2025", "won't make Q2"), read
  as an interval; what starts ("CPQ starts in Q3") is never set against what ships;
- **how much**: a quantity held by the subjects named in its clause, with its kind and unit:
  money in one currency per the same thing ("$49 per technician per month"), percentages,
  durations, data sizes, frequencies, bit rates, or counts of one noun ("18 engineers");
- **whether**: a plan the clause commits to ("approved", "committed to", "planned for", or
  a date given for the subject) or rules out ("not a priority", "out of scope",
  "postponed"), with the periods it names.

Two claims conflict when they are about the same subject and:

- **date**: their intervals cannot both hold (Q2 2025 against not-before-Q3 2025);
- **number**: same kind and unit, held by the same subjects (the same specific subjects
  exactly: "churn for FSM vendors" is not Fieldline's churn; a specific subject must name one
  thing, an entity or a term of several words: "block group", not "group"; money,
  percentages, durations and sizes need one, a count may hang on a shared general term), and
  every pair of values more than 5% apart;
- **negation**: one commits to what the other rules out, both naming periods, and the
  periods overlap; ruling out one variant ("full offline editing") leaves the others open.

Only prose is read. Code blocks, literal blocks (after ``::``), shell and debugger sessions,
headings, table rows, inline code, URLs, paths and ``key=value`` settings make no claims, so
``$1`` in an awk script or a debugger is no price. Numbers that are not quantities are
skipped: version, section and list numbers, identifiers (x86, IPv4, KR3), ranges and lists of
alternatives ("15 or 30 bits"), ratios, times of day, bounds and targets ("below 1.5%", "from
18 to 24", "about 85%"), years (periods, not quantities) and a currency sign without a price
(no scale, rate, grouping or money word in the sentence).

Merely mentioning the same topic is never a contradiction. Nothing here reads embeddings: the
verdicts are the same whichever embedder built the index. Warnings are ranked by how certain
the conflict is and by the authority of the lenses involved (``graph.authority``, then the
order the workspace's lenses were first ingested).
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

from ragloom.parse.code import FENCE_MARKER, code_regions
from ragloom.parse.timeref import TimeRef, extract_time_refs

SCHEDULE = re.compile(
    r"\b(?:ship|ships|shipping|shipped|launch|launches|launched|release|releases|released|GA|general availability|"
    r"available|deliver|delivers|delivered|land|lands|due|target|targets|targeted|planned|scheduled|moves?\s+to|"
    r"moved\s+to|slips?\s+to|follows|starts?|start|begins?|complete|completed|finish|ready|go(?:es)?\s+live|"
    r"arrives?|comes?|in\s+Q[1-4]|(?<=n't\s)make|(?<=not\s)make)\b", re.IGNORECASE)
#: What starts is a different event from what ships: "CPQ starts in Q3" does not contradict "CPQ ships in Q4".
START = re.compile(r"\b(?:start|starts|started|begin|begins|began|kicks?\s+off|kicked\s+off)\b", re.IGNORECASE)
#: Any negation: it makes a period a period the subject misses ("won't make Q2").
NEGATION = re.compile(r"\b(?:not|never|cannot|won't|isn't|aren't|wasn't|don't|doesn't|didn't|can't)\b", re.IGNORECASE)
#: A plan ruled out, said of the clause's subject.
RULED_OUT = re.compile(
    r"\bnot\s++(?:yet\s++)?(?:(?:a|an|our|the)\s++)?(?:top\s++|high\s++|near-term\s++|\d{4}\s++)?(?:priority|planned|approved|"
    r"committed|scheduled|in\s+scope|on\s+the\s+roadmap)\b|\bout\s+of\s+scope\b|"
    r"\b(?:will\s+not|won't|do\s+not|don't)\s+(?:ship|build|deliver|add|launch|include|commit)\b|"
    r"\b(?:postponed|cancell?ed|dropped|rejected|deprioriti[sz]ed|descoped|shelved)\b", re.IGNORECASE)
#: A plan committed to.
COMMITTED = re.compile(
    r"\b(?:committed\s+to|commit\s+to|approved|promised|is\s+planned|are\s+planned|planned\s+for|scheduled\s+for|"
    r"(?:a|top|our)\s+priority|prioriti[sz]ed|decided\s+to|agreed\s+to|will\s+(?:ship|build|deliver|launch)|"
    r"in\s+scope)\b", re.IGNORECASE)
#: Clauses that take no stance: conditions, hedges and reported speech.
HEDGED = re.compile(r"\b(?:if|whether|unless|maybe|perhaps|might|could|should|says|said|according\s+to)\b",
                    re.IGNORECASE)
#: How close (in characters, within one clause) a stance word must be to the subject it is about.
STANCE_REACH = 60
EXCLUDED = re.compile(r"\b(?:without|except|excluding|not)\s+(?:the\s+)?$", re.IGNORECASE)
#: A subject right after one of these is a modifier or a landmark, not what the clause is about
#: ("the catalog integration *with QuickBooks* ships", "planned: Q3, *before offline mode*").
PREPOSITION = re.compile(r"\b(?:with|without|for|before|after|until|till|except|excluding|including|than|unlike|"
                         r"besides|beyond|like|via|per|versus|vs|against)\s+(?:the\s+|a\s+|an\s+)?$", re.IGNORECASE)
#: What may stand right before a bare year that is a year.
YEAR_LEAD = re.compile(r"\b(?:in|by|since|until|till|before|after|from|during|of|for|to|through|early|mid|late|"
                       r"end\s+of|until\s+the\s+end\s+of)\s+$|\b(?:Q[1-4]|H[12]|FY)\s*$", re.IGNORECASE)
#: Words that name a variant of a subject: "read-only offline mode" is not "full offline editing".
QUALIFIERS = frozenset("""full read-only readonly partial basic limited complete lite light advanced premium
    native minimal""".split())
#: Words that make a number a bound, a target, an estimate or a change rather than a fact.
BOUND = re.compile(r"\b(?:below|above|under|over|toward|towards|at\s+least|at\s+most|up\s+to|more\s+than|less\s+than|"
                   r"fewer\s+than|from|to|than|about|around|roughly|approximately|nearly|almost|estimated|an\s+estimated|"
                   r"by|within|until|till|per|every|only|max(?:imum)?|min(?:imum)?|limit(?:ed)?\s+to|up\s+from|"
                   r"down\s+from)\s+(?:the\s+|a\s+|an\s+)?$", re.IGNORECASE)
#: A number right after one of these names a version, a section, a step or an identifier.
LABEL_WORDS = frozenset("""version versions v release releases python linux kernel kernels rfc pep section sections
    chapter chapters figure fig table tables step steps item items page pages line lines column columns phase part
    appendix note example bug issue issues kr level levels ipv ieee iso cve gcc glibc no number nr id port ports
    slot cpu core node rule option options patch rev revision build series model type class bit byte index entry
    offset register bank channel lane irq vector mode state stage round tier priority python3 year""".split())
#: Plural-looking words after a number that are verbs, pronouns or adverbs, not counted nouns.
NOT_NOUNS = frozenset("""this has was is does as its his us yes thus plus minus less unless across always perhaps
    sometimes whereas besides towards afterwards nevertheless regardless various previous obvious means uses sets
    gets takes makes needs requires returns contains allows provides includes indicates serves becomes runs works
    shows adds calls holds keeps lets looks moves reads writes sends starts stops tells tries turns wants seems
    remains represents specifies defines describes enables disables creates causes checks handles implements maps
    marks passes points refers reports supports follows exists applies depends happens goes comes says lives
    ships lands grows falls rises drops costs pays gives leaves loses wins hits fits comprises consists""".split())
#: Prose the reader never sees as words or numbers: inline code and reST roles, URLs, links,
#: e-mail addresses, file paths, ``key=value`` settings, shell and debugger variables, hex.
NOT_PROSE = re.compile(
    r"``.+?``|`[^`\n]*`|(?<![\w:.+-]):[\w:.+-]+:`[^`]*`"
    r"|(?:https?|ftp|file)://\S+|<[^<>\s]+>|(?<![\w.+-])[\w.+-]++@[\w-]++\.[\w.]+"
    r"|(?<![\w~.])(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]*)+"
    r"|(?<![\w.\[\]-])[\w.\[\]-]++=\S*"
    r"|\$(?:\{[^}\s{$]*\}|[@#?*!]|\d+\s*=)"
    r"|\b0x[0-9a-fA-F]+\b", re.DOTALL)
#: Lines that belong to a shell, a REPL or a debugger.
PROMPT = re.compile(r"^[ \t]*(?:>>>|\.\.\.[ \t]|\$[ \t]|%[ \t]|\(gdb\)|\(pdb\)|In \[\d+\]:|[\w.-]+@[\w.-]+:\S*[$#])",
                    re.MULTILINE | re.IGNORECASE)
TABLE_LINE = re.compile(r"^[ \t]*(?:\||\+[-=+]{3,}|={3,}(?:[ \t]+={3,})*[ \t]*$)", re.MULTILINE)
#: Characters that are rare in prose and common in code; above this share of a sentence, it is code.
CODE_SYMBOLS = frozenset("{}[]()<>=;|&*\\_^~@#$")
CODE_SHARE = 0.1
NUMBER = re.compile(r"(?P<currency>[$€£¥])?(?P<value>\d+(?:,\d{3})*(?:\.\d+)?)")
SCALE = re.compile(r"(?:\s?(?P<abbr>[kKMB]|bn)\b|\s(?P<word>thousand|million|billion|trillion)\b)")
SCALES = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "bn": 1e9, "thousand": 1e3, "million": 1e6, "billion": 1e9,
          "trillion": 1e12}
PERCENT = re.compile(r"\s?(?:%|percent\b|per\s+cent\b)(?:\s+of\s+(?:the\s+|all\s+)?(?P<of>[a-z]+))?", re.IGNORECASE)
#: (pattern, kind, base unit, factor): measured quantities, written with or without a space.
MEASURES: tuple[tuple[re.Pattern[str], str, str, float], ...] = tuple(
    (re.compile(p), kind, unit, factor) for p, kind, unit, factor in [
        (r"\s?(?:ns|nanoseconds?)\b", "duration", "s", 1e-9),
        (r"\s?(?:µs|us|usecs?|microseconds?)\b", "duration", "s", 1e-6),
        (r"\s?(?:ms|msecs?|milliseconds?)\b", "duration", "s", 1e-3),
        (r"(?:s|\s?(?:secs?|seconds?))\b", "duration", "s", 1.0),  # "5s", not "1990s" (see _numbers)
        (r"\s?(?:mins?|minutes?)\b", "duration", "s", 60.0),
        (r"\s?(?:hrs?|hours?)\b", "duration", "s", 3600.0),  # not "210h": that is hex
        (r"\s(?:days?)\b", "duration", "s", 86400.0),
        (r"\s(?:weeks?)\b", "duration", "s", 7 * 86400.0),
        (r"\s(?:months?)\b", "duration", "s", 30.44 * 86400.0),
        (r"\s(?:years?)\b", "duration", "s", 365.25 * 86400.0),
        (r"\s(?:bits?)\b", "size", "bit", 1.0),  # not "64bit": that names a feature
        (r"\s?(?:bytes?|octets?|B)\b", "size", "bit", 8.0),
        (r"\s?(?:KB|kB|KiB|kilobytes?)\b", "size", "bit", 8 * 1024.0),
        (r"\s?(?:MB|MiB|megabytes?)\b", "size", "bit", 8 * 1024.0**2),
        (r"\s?(?:GB|GiB|gigabytes?)\b", "size", "bit", 8 * 1024.0**3),
        (r"\s?(?:TB|TiB|terabytes?)\b", "size", "bit", 8 * 1024.0**4),
        (r"\s?(?:Hz|hertz)\b", "frequency", "Hz", 1.0),
        (r"\s?kHz\b", "frequency", "Hz", 1e3),
        (r"\s?MHz\b", "frequency", "Hz", 1e6),
        (r"\s?GHz\b", "frequency", "Hz", 1e9),
        (r"\s?bps\b", "rate", "bit/s", 1.0),
        (r"\s?[kK]bps\b", "rate", "bit/s", 1e3),
        (r"\s?Mbps\b", "rate", "bit/s", 1e6),
        (r"\s?Gbps\b", "rate", "bit/s", 1e9),
    ])
#: A counted noun after a number, perhaps after one adjective ("1,840 paying companies").
COUNT = re.compile(r"\s(?:(?P<adj>[a-z]+(?:ing|ive|ed|al|ful|ous|ic|ary|ble|ent|ant)|[a-z]+-[a-z]+)\s)?"
                   r"(?P<noun>[a-z][a-z-]*[a-z]|[A-Z]{2,})s\b")
RATE = re.compile(r"\s+(?:per|a|an|each)\s+(?P<per>[a-z]+)(?:\s+per\s+(?P<per2>[a-z]+))?\b", re.IGNORECASE)
MONEY_WORDS = re.compile(
    r"\b(?:prices?|priced|pricing|costs?|pay|paid|fees?|revenue|arr|mrr|budget|salary|spend|spent|worth|funding|"
    r"raised|valuation|charges?|charged|discount|invoices?|subscription|dollars?|usd|eur|euros?|gbp|sales|income|"
    r"profit|margin|market)\b", re.IGNORECASE)
CURRENCIES = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
#: Key terms that are units, not subjects ("KiB", "ms").
UNIT_TERM = re.compile(r"[kmgt]i?b|bytes?|bits?|[mun]?s|msecs?|secs?|[kmg]?hz|[kmg]?bps|percent|%", re.IGNORECASE)
VERSION_AFTER = re.compile(r"\s+v?\d+(?:\.\d+)+\b")
UNIT = "unit:"  # index keys of quantities ("unit:<kind>\x00<unit>\x00<subject>"), beside subjects
NUMBER_TOLERANCE = 0.05
MAX_GROUP = 200


@dataclass(frozen=True, slots=True)
class Statement:
    chunk_id: str
    document_id: str
    lens: str
    source_path: str
    section_path: str
    start: int
    end: int
    text: str
    #: The document's own date (a meeting's), when it has one.
    document_date: date | None = None


@dataclass(frozen=True, slots=True)
class Contradiction:
    kind: str  # date | number | negation
    type: str  # "<lens>_vs_<lens>", the lenses by name
    topic: str
    difference: str
    note: str
    statements: tuple[Statement, Statement]
    certainty: float
    authority: float
    score: float

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for statement in data["statements"]:
            day = statement.get("document_date")
            statement["document_date"] = day.isoformat() if isinstance(day, date) else None
        return data


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number that measures or counts something, in its base unit."""

    kind: str  # money | percent | duration | size | frequency | rate | count
    unit: str  # "USD per technician per month", "%", "% of accounts", "s", "bit", "engineer"
    value: float
    written: str
    subjects: frozenset[str]  # the key terms that hold it (its clause's, else its heading's)
    specific: frozenset[str]  # those of them that are not generic domain terms
    strong: frozenset[str]  # those specific ones that name one thing: entities, terms of several words


@dataclass(frozen=True, slots=True)
class Period:
    """When a sentence says something happens to a subject: an interval of days (open on
    either side for deadlines and floors), or a period it says the subject misses."""

    ref: TimeRef
    low: date | None
    high: date | None
    missed: bool = False  # "won't make Q2": any time but this
    event: str = "done"  # done | start

    def describe(self) -> str:
        if self.missed:
            return f"not {self.ref.canonical}"
        if self.low is None:
            return f"by {self.ref.canonical}"
        if self.high is None:
            return f"not before {self.ref.canonical}" if self.low == self.ref.period_start else f"after {self.ref.canonical}"
        return self.ref.canonical

    def compatible(self, other: Period) -> bool:
        """Whether both can hold at once."""
        if self.missed and other.missed:
            return True
        if self.missed or other.missed:
            missed, said = (self, other) if self.missed else (other, self)
            # A period said to be missed conflicts only with a claim that lies wholly inside it.
            inside = (said.low is not None and said.high is not None and missed.low is not None
                      and missed.high is not None and missed.low <= said.low and said.high <= missed.high)
            return not inside
        return ((self.low is None or other.high is None or self.low <= other.high)
                and (other.low is None or self.high is None or other.low <= self.high))


@dataclass
class _Sentence:
    statement: Statement
    subjects: set[str]
    specific: set[str]
    periods: dict[str, list[Period]] = field(default_factory=dict)  # subject -> when it happens
    quantities: list[Quantity] = field(default_factory=list)
    stance: dict[str, bool] = field(default_factory=dict)  # subject -> committed (True) or ruled out (False)
    stance_periods: dict[str, list[TimeRef]] = field(default_factory=dict)  # subject -> periods of the stance
    variants: dict[str, frozenset[str]] = field(default_factory=dict)  # subject -> its qualifiers ("read-only")


# -- prose -------------------------------------------------------------------------------------


def _in_regions(regions: Sequence[tuple[int, int]], start: int) -> bool:
    i = bisect.bisect_right(regions, start, key=lambda r: r[0]) - 1
    return i >= 0 and regions[i][0] <= start < regions[i][1]


def is_code(text: str) -> bool:
    """Whether a sentence is code, a table, a session transcript or a heading: no claims."""
    stripped = text.lstrip()
    if not stripped or stripped.startswith("#") or FENCE_MARKER.search(text):
        return True
    if PROMPT.search(text) or TABLE_LINE.search(text):
        return True
    prose = NOT_PROSE.sub(lambda m: " " * len(m.group(0)), text)
    visible = [c for c in prose if not c.isspace()]
    return bool(visible) and sum(c in CODE_SYMBOLS for c in visible) / len(visible) >= CODE_SHARE


def prose_of(text: str) -> str:
    """``text`` with everything that is not prose blanked out (same length: offsets hold)."""
    return NOT_PROSE.sub(lambda m: " " * len(m.group(0)), text)


# -- quantities --------------------------------------------------------------------------------


def _noun(word: str) -> str:
    """A plural's singular, closely enough to match "engineers" with "engineers"."""
    lower = word.lower()
    if re.search(r"(?:ch|sh|ss|x)es$", lower):
        return lower[:-2]
    if lower.endswith("ies") and len(lower) > 4:
        return lower[:-3] + "y"
    return lower[:-1] if lower.endswith("s") else lower


def _plural(noun: str) -> str:
    if re.search(r"(?:ch|sh|s|x)$", noun):
        return noun + "es"
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    return noun + "s"


def _clause(text: str, at: int, separators: str = ";:,") -> tuple[int, int]:
    """The clause of ``text`` around offset ``at``: between the nearest separators."""
    lo = max(text.rfind(s, 0, at) for s in separators) + 1
    his = [i for i in (text.find(s, at) for s in separators) if i != -1]
    return lo, min(his) if his else len(text)


def _holders(text: str, where: Mapping[str, list[int]], span: tuple[int, int], kind: str, unit_words: set[str],
             context: Sequence[str]) -> frozenset[str]:
    """The subjects that hold a quantity at ``span``: the terms of its clause (never the
    counted noun or a unit itself), else its section heading's; a count may also hang on a
    term elsewhere in its sentence ("we expect 21 engineers by June, not the 24 the roadmap
    assumes"), a measure may not ("on a 32-bit CPU" is not what "4 bits" measures)."""
    lo, hi = _clause(text, span[0])
    terms = {t for t in where if t not in unit_words and _noun(t) not in unit_words and not UNIT_TERM.fullmatch(t)}
    in_clause = {t for t in terms if any(lo <= p < hi and not span[0] <= p < span[1] for p in where[t])}
    if in_clause:
        return frozenset(in_clause)
    if kind == "count" and terms:
        return frozenset(terms)
    return frozenset(t for t in context if t in terms or t not in where)


def _numbers(text: str) -> Iterator[tuple[int, int, str, str, float, set[str]]]:
    """(start, end, kind, unit, value in the base unit, words of the unit) of every number of
    ``text`` (prose, already blanked where it is not) that measures or counts something."""
    money_words = bool(MONEY_WORDS.search(text))
    for m in NUMBER.finditer(text):
        start, end = m.span()
        currency, raw = m.group("currency"), m.group("value")
        before = text[start - 1] if start else " "
        after = text[end : end + 2]
        head = text[max(0, start - 40) : start]
        word_before = re.search(r"(?<![A-Za-z])([A-Za-z]+)\W{0,2}$", head)
        if (before.isalnum() or before in "._/\\^#@:=*+-~'\"$€£¥"  # an identifier, a version, a path, an expression
                or re.match(r"[.:/^*×=x+-]?\d|[.,]\w|-[A-Za-z]|_", after)  # 1.2.3, 10:05, 3/4, 4*n, "64-bit"
                or (currency and after[:1].isalpha() and not SCALE.match(text, end))
                or BOUND.search(head)
                or (word_before and word_before.group(1).lower() in LABEL_WORDS)
                or (not text[text.rfind("\n", 0, start) + 1 : start].strip(" \t-*+(") and re.match(r"[.)]", after))
                or (before == "(" and after[:1] == ")")
                # a range or a list of alternatives, not one value
                or re.search(r"\d\s*(?:,|or|and|to|-|–|/|x|×)\s*[$€£¥]?$", head)
                or re.match(r"\s*(?:,|or|and|to|-|–|/)\s*[$€£¥]?\d", text[end : end + 8])):
            continue
        value = float(raw.replace(",", ""))
        rest, factor = end, 1.0
        scale = SCALE.match(text, rest)
        if scale and (currency or COUNT.match(text, scale.end())):
            factor = SCALES[scale.group("abbr") or scale.group("word")]
            rest = scale.end()
        if currency:
            rate = RATE.match(text, rest)
            if not (factor != 1.0 or rate or "," in raw or re.fullmatch(r"\d+\.\d\d", raw) or money_words):
                continue  # "$1" without a price's marks is a variable
            yield start, rate.end() if rate else rest, "money", CURRENCIES[currency] + _per(rate), value * factor, set()
            continue
        percent = PERCENT.match(text, rest)
        if percent:
            of = percent.group("of")
            rate = None if of else RATE.match(text, percent.end())
            unit = "%" + (f" of {_noun(of)}" if of else "") + _per(rate)
            yield start, rate.end() if rate else percent.end(), "percent", unit, value, {_noun(of)} if of else set()
            continue
        measure = next(((p.match(text, rest), kind, unit, f) for p, kind, unit, f in MEASURES if p.match(text, rest)),
                       None)
        if measure is not None:
            measured, kind, unit, f = measure
            word = measured.group(0).strip() if measured else ""
            if (word == "s" and re.fullmatch(r"(?:19|20)\d\d", raw)) or (
                    value != 1 and word.isalpha() and word.islower() and len(word) > 2 and not word.endswith("s")):
                continue  # a decade ("1990s"), or a compound ("a 10 second interval", "a 32 bit CRC")
            yield start, measured.end() if measured else rest, kind, unit, value * factor * f, set()
        else:
            count = COUNT.match(text, rest)
            if count is None or (factor == 1.0 and "." in raw):
                continue  # nothing counted, or a fraction of a thing: a version ("the 2.2 kernels")
            noun = count.group("noun") + "s"
            if noun.lower() in NOT_NOUNS or re.search(r"(?:ss|us|is)$", noun.lower()):
                continue
            rate = RATE.match(text, count.end())
            unit = _noun(noun) + _per(rate)
            yield start, rate.end() if rate else count.end(), "count", unit, value * factor, {_noun(noun), noun.lower()}


def _per(rate: re.Match[str] | None) -> str:
    """" per month", " per technician per month" or nothing."""
    if rate is None:
        return ""
    return f" per {rate.group('per').lower()}" + (f" per {rate.group('per2').lower()}" if rate.group("per2") else "")


def quantities(text: str, where: Mapping[str, list[int]], *, generic: Collection[str] = (),
               strong: Collection[str] = (), context: Sequence[str] = ()) -> list[Quantity]:
    """Every number of ``text`` (prose) that measures or counts something, with the subjects
    that hold it. ``generic`` terms are too general to tell subjects apart; ``strong`` ones
    (entities) name one thing even when they are a single word."""
    out = []
    for start, end, kind, unit, value, unit_words in _numbers(text):
        holders = _holders(text, where, (start, end), kind, unit_words, context)
        specific = frozenset(t for t in holders if t not in generic or " " in t)
        out.append(Quantity(kind, unit, value, " ".join(text[start:end].split()), holders, specific,
                            frozenset(t for t in specific if t in strong or re.search(r"[\s-]", t))))
    return out


def comparable(a: Quantity, b: Quantity) -> bool:
    """Whether two quantities measure the same thing of the same subject.

    Both hold the same specific subjects, and those name one thing (an entity or a term of
    several words: "block group", not "group"). A count of one noun ("engineers") may also
    hang on a shared general term ("engineering"); any other measure needs the same subjects
    exactly, one of them specific ("Fieldline's churn" is not "churn for FSM vendors")."""
    if (a.kind, a.unit) != (b.kind, b.unit) or not a.subjects & b.subjects or a.specific != b.specific:
        return False
    if a.specific and not a.strong:
        return False
    return a.kind == "count" or (bool(a.specific) and a.subjects == b.subjects)


# -- subjects, periods and stances ----------------------------------------------------------------


@lru_cache(maxsize=4096)
def _whole_word(term: str) -> re.Pattern[str]:
    """``term`` where no word character touches it on either side (its words may be broken
    across lines, its last may be plural: a key term is kept singular, "travel grant")."""
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, term.split())) + r"(?:e?s)?(?!\w)")


def _positions(text: str, terms: Sequence[str]) -> dict[str, list[int]]:
    """Where each of ``terms`` occurs in ``text`` (case-insensitive, whole words).

    Adjacent terms also count as one phrase ("catalog" + "integration" is "catalog
    integration"), which names an initiative more precisely than either word; a term right
    before a version number ("Python 2.6") is that version, another subject than the term
    alone; and a term inside a longer one at the same place ("offline" in "offline mode") is
    not named there on its own.
    """
    lower = text.lower()
    hits: list[tuple[int, int, str]] = []
    for t in set(terms):
        hits.extend((m.start(), m.end(), t) for m in _whole_word(t).finditer(lower))
    hits.sort()
    spans: list[tuple[int, int, str]] = []
    for start, end, term in hits:
        version = VERSION_AFTER.match(lower, end)
        spans.append((start, end, f"{term} {version.group(0).strip()}" if version else term))
    for (a_start, a_end, _), (b_start, b_end, _) in zip(hits, hits[1:], strict=False):
        if 0 < b_start - a_end <= 2 and lower[a_end:b_start].isspace():
            spans.append((a_start, b_end, " ".join(lower[a_start:b_end].split())))
    found: dict[str, list[int]] = defaultdict(list)
    for start, end, term in spans:
        if not any(s <= start and end <= e and e - s > end - start for s, e, _ in spans):
            found[term].append(start)
    return dict(found)


def _heads(text: str, where: Mapping[str, list[int]], lo: int, hi: int) -> dict[str, int]:
    """Subjects named in ``text[lo:hi]`` that are what the clause is about, by first position:
    not right after a preposition ("with QuickBooks", "before offline mode")."""
    out: dict[str, int] = {}
    for t, spots in where.items():
        for p in spots:
            if lo <= p < hi and not PREPOSITION.search(text[max(lo, p - 24) : p]):
                out[t] = min(out.get(t, p), p)
    return out


def _variant(text: str, spots: Sequence[int]) -> frozenset[str]:
    """The qualifiers of a subject where the text names it ("read-only", "full"): what
    variant of it the text is about."""
    lower = text.lower()
    return frozenset(w for p in spots for w in re.findall(r"[a-z][a-z-]*", lower[max(0, p - 16) : p + 24])
                     if w in QUALIFIERS)


def _stances(text: str, where: Mapping[str, list[int]], reference: date | None,
             ) -> tuple[dict[str, bool], dict[str, list[TimeRef]]]:
    """For the subject each clause is about, whether the clause commits to a plan for it or
    rules the plan out, and the periods the clause names.

    Table rows, headings and questions take no stance, nor do conditions, hedges and
    reported speech. A plan ruled out wins over a commitment word in the same clause ("is not
    a priority")."""
    if text.rstrip().endswith("?"):
        return {}, {}
    stance: dict[str, bool] = {}
    periods: dict[str, list[TimeRef]] = {}
    for m in re.finditer(r"[^;:]+", text):
        lo, hi = m.span()
        clause = text[lo:hi]
        if HEDGED.search(clause):
            continue
        ruled_out = RULED_OUT.search(clause)
        committed = COMMITTED.search(clause)
        if ruled_out:
            verdict, word = False, ruled_out
        elif committed and not NEGATION.search(clause):
            verdict, word = True, committed
        else:
            continue
        at = lo + word.start()
        near = {t: p for t, p in _heads(text, where, lo, hi).items()
                if abs(p - at) <= STANCE_REACH + len(t)}
        if not near:
            continue
        subject = min(near, key=near.__getitem__)
        stance.setdefault(subject, verdict)
        refs = _periods_in(clause, reference)
        periods.setdefault(subject, refs)
    return stance, periods


def _periods_in(text: str, reference: date | None) -> list[TimeRef]:
    """The resolved periods of ``text``; a bare year only where a preposition introduces it
    ("released in 2002", "moved to 2026"): "larger than 2047 bytes" names no year."""
    return [r for r in extract_time_refs(text, reference=reference) if r.resolved and (
        r.kind != "year" or YEAR_LEAD.search(text, 0, r.start))]


def _period(text: str, clause_start: int, ref: TimeRef) -> Period:
    """The interval ``ref`` stands for, read from the words before it in its clause."""
    head = text[clause_start : ref.start]
    lead = r"\s+(?:the\s+)?(?:end\s+of\s+|mid-?|early\s+|late\s+)?$"
    verbs = list(SCHEDULE.finditer(head))
    event = "start" if verbs and START.fullmatch(verbs[-1].group(0)) else "done"
    low, high = ref.period_start, ref.period_end
    if re.search(r"\b(?:not|n't|cannot|never)\b[^;,.]{0,40}?\b(?:before|until|till)" + lead, head, re.IGNORECASE):
        return Period(ref, low, None, event=event)
    if re.search(r"\b(?:by|before|until|till|no\s+later\s+than)" + lead, head, re.IGNORECASE):
        return Period(ref, None, high, event=event)
    if re.search(r"\b(?:after|since)" + lead, head, re.IGNORECASE):
        return Period(ref, high + timedelta(days=1) if high else None, None, event=event)
    if re.search(r"\b(?:from|starting(?:\s+in)?|beginning(?:\s+in)?)" + lead, head, re.IGNORECASE):
        return Period(ref, low, None, event=event)
    return Period(ref, low, high, missed=bool(NEGATION.search(head)), event=event)


def _assign(text: str, periods: Sequence[TimeRef], where: Mapping[str, list[int]]) -> dict[str, list[Period]]:
    """Each period goes to the subject named last before it in its clause ("CPQ follows in Q3
    once the catalog ships in June": Q3 is CPQ's, June the catalog's), preferring a subject
    the clause is about over one after a preposition ("the catalog integration with
    QuickBooks ships in Q3" is about the integration), or failing that to one named just
    after it; a period near no subject is nobody's."""
    out: dict[str, list[Period]] = defaultdict(list)
    # "the catalog without QuickBooks sync in June": what comes after "without" is not what ships.
    where = {t: [p for p in spots if not EXCLUDED.search(text[max(0, p - 12) : p])] for t, spots in where.items()}
    for ref in periods:
        clause = text.rfind(";", 0, ref.start) + 1
        before = _heads(text, where, clause, ref.start) or {
            t: min(p for p in spots if clause <= p < ref.start) for t, spots in where.items()
            if any(clause <= p < ref.start for p in spots)}
        if before:
            last = {t: max(p for p in where[t] if clause <= p < ref.start) for t in before}
            out[max(last, key=last.__getitem__)].append(_period(text, clause, ref))
            continue
        # Only a subject right after the period, past a comma ("In Q3 2025, CPQ ships"), owns it.
        after = {t: p for t, spots in where.items() for p in spots
                 if p >= ref.end and re.fullmatch(r"\s*,?\s*(?:the\s+)?", text[ref.end : p], re.IGNORECASE)}
        if after:
            out[min(after, key=after.__getitem__)].append(_period(text, clause, ref))
    return dict(out)


def _capitalised(term: str, text: str) -> bool:
    """Whether ``text`` writes the one-word ``term`` with a capital (a name: "Fieldline"),
    or does not name it at all (then it is no subject anyway)."""
    found = [m.group(0) for m in re.finditer(rf"(?<!\w){re.escape(term)}(?:e?s)?(?!\w)", text, re.IGNORECASE)]
    return not found or any(word[:1].isupper() for word in found)


_TOKEN = re.compile(r"[a-z0-9](?:[a-z0-9.'-]*[a-z0-9])?")


def _named(text: str, vocabulary: Collection[str]) -> set[str]:
    """The one-word terms of ``vocabulary`` that ``text`` names (plurals too); a phrase is a
    subject already where its chunk holds it, and elsewhere it would outrank what the sentence
    is about."""
    words = [w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith(("ss", "us", "is")) else w
             for w in _TOKEN.findall(text.lower())]
    return {w for w in words if w in vocabulary}


def sentences_with_claims(sentences: Sequence[Mapping[str, Any]], chunks: Sequence[Mapping[str, Any]],
                          generic: set[str], aliases: Mapping[str, str] | None = None,
                          texts: Mapping[str, str] | None = None, entities: Collection[str] = (),
                          vocabulary: Collection[str] = ()) -> list[_Sentence]:
    """Claims of every sentence row, given the chunk rows of the same documents.

    ``aliases`` maps lower-cased alias to lower-cased canonical name (``cpq`` to
    ``configure-price-quote``): a sentence naming an entity by an alias is about the entity.
    ``texts`` (document id to text), when given, marks the sentences inside code and literal
    blocks, which a sentence alone does not show. ``entities`` (lower-cased canonical names of
    trusted entities: a gazetteer's, a model's) name one thing even as a single word
    ("Fieldline"). ``vocabulary`` (terms that chunks of several lenses hold) are subjects
    in a sentence that names none of its chunk's key terms.
    """
    strong = set(entities)
    by_canonical: dict[str, list[str]] = defaultdict(list)
    for alias, canonical in (aliases or {}).items():
        by_canonical[canonical].append(alias)
    by_doc: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for c in chunks:
        by_doc[c["document_id"]].append(c)
    regions = {doc: code_regions(text) for doc, text in (texts or {}).items() if doc in by_doc}
    out = []
    for s in sentences:
        start, end = int(s["start_char"]), int(s["end_char"])
        home = next((c for c in by_doc.get(s["document_id"], ()) if c["start_char"] <= start and end <= c["end_char"]),
                    None)
        if home is None or is_code(s["text"]) or _in_regions(regions.get(s["document_id"], ()), start):
            continue
        text = prose_of(s["text"])
        # A subject is a name, an entity, a phrase or a domain term: a common word the chunk
        # repeats ("year", "program") is a topic of the graph, not a thing a claim is about.
        terms = [t for t in home.get("key_terms") or () if " " in t or t in strong or t in generic
                 or _capitalised(t, s["text"])]
        where = _positions(text, terms + [a for t in terms for a in by_canonical.get(t, ())])
        if not where and vocabulary:  # its chunk's terms name nothing here: the workspace's shared ones may
            terms = sorted(_named(text, vocabulary))
            where = _positions(text, terms)
        for alias, canonical in (aliases or {}).items():
            if alias in where and canonical in terms:
                where.setdefault(canonical, []).extend(where.pop(alias))
        if not where:
            continue
        subjects = set(where)
        day = s.get("document_date")
        statement = Statement(home["chunk_id"], s["document_id"], s["lens"], s["source_path"],
                              s.get("section_path") or "", start, end, s["text"], day if isinstance(day, date) else None)
        item = _Sentence(statement, subjects, {t for t in subjects if t not in generic or " " in t})
        specific = {t: p for t, p in where.items() if t in item.specific}
        reference = s.get("document_date")
        if SCHEDULE.search(text) and specific:
            refs = _periods_in(text, reference)
            item.periods = _assign(text, refs, specific) if refs else {}
        heading = (s.get("section_path") or "").rsplit(" > ", 1)[-1].lower()
        context = [t for t in terms if _whole_word(t).search(heading)]
        item.quantities = quantities(text, where, generic=generic, strong=strong, context=context)
        item.stance, item.stance_periods = _stances(text, specific, reference)
        item.variants = {t: _variant(text, spots) for t, spots in specific.items()}
        if item.periods or item.quantities or item.stance:
            out.append(item)
    return out


# -- conflicts ---------------------------------------------------------------------------------


def _authority(lens: str, order: Sequence[str]) -> float:
    """1 for the most authoritative lens, falling to 1/n for the last; 0 for unranked lenses."""
    if lens not in order:
        return 0.0
    return (len(order) - order.index(lens)) / len(order)


def _pair_type(a: str, b: str) -> tuple[str, str]:
    first, second = sorted((a, b))
    return f"{first}_vs_{second}", f"{first} and {second} disagree"


def _compare(a: _Sentence, b: _Sentence, key: str) -> list[tuple[str, str, str, str, float]]:
    """(kind, what ``a`` says, what ``b`` says, what about, certainty) for every conflict
    between two sentences about ``key`` (a subject, or a quantity's unit and holder)."""
    found = []
    if key.startswith(UNIT):
        _, unit, subject = key[len(UNIT) :].split("\x00")
        qa = [q for q in a.quantities if q.unit == unit and subject in q.subjects]
        qb = [q for q in b.quantities if q.unit == unit and subject in q.subjects]
        qa = [q for q in qa if any(comparable(q, o) for o in qb)]
        qb = [o for o in qb if any(comparable(q, o) for q in qa)]
        if qa and qb and not any(abs(x.value - y.value) <= NUMBER_TOLERANCE * max(abs(x.value), abs(y.value))
                                 for x in qa for y in qb):
            # One figure each is a plain disagreement; several (a change "from 18 to 24") are less sure.
            certainty = 0.8 if len(qa) == len(qb) == 1 else 0.55
            found.append(("number", ", ".join(q.written for q in qa), ", ".join(q.written for q in qb), "", certainty))
        return found
    va, vb = a.variants.get(key, frozenset()), b.variants.get(key, frozenset())
    if va and vb and va != vb:
        return found  # "read-only offline mode" and "full offline editing" are two things
    for event in ("done", "start"):
        pa = [p for p in a.periods.get(key, []) if p.event == event]
        pb = [p for p in b.periods.get(key, []) if p.event == event]
        if pa and pb and not any(x.compatible(y) for x in pa for y in pb):
            plain = all(p.low is not None and p.high is not None and not p.missed for p in pa + pb)
            same_grain = {p.ref.kind for p in pa} & {p.ref.kind for p in pb}
            certainty = 0.9 if same_grain and plain else 0.75
            if len(pa) > 1 or len(pb) > 1:
                certainty -= 0.15  # several dates for one subject in a sentence: less sure which is meant
            found.append(("date", ", ".join(p.describe() for p in pa), ", ".join(p.describe() for p in pb), "",
                          certainty))
    (sa, ta), (sb, tb) = _stance(a, key), _stance(b, key)
    # Ruling out one variant ("full offline editing is not planned") leaves the others open.
    narrower = (sa is False and va - vb) or (sb is False and vb - va)
    # Both must say when: a plan ruled out for 2025 against one committed for Q3 2025. Without
    # periods, "is dropped", "is scheduled" and "is rejected" describe what software does.
    if sa is not None and sb is not None and sa != sb and not narrower and any(x.overlaps(y) for x in ta for y in tb):
        words = {True: "commits to", False: "rules out"}
        found.append(("negation", words[sa], words[sb], f" {key}", 0.8))
    return found


def _stance(s: _Sentence, key: str) -> tuple[bool | None, list[TimeRef]]:
    """Whether a sentence commits to ``key`` or rules it out, with the periods it names: a
    date it gives for the subject ("offline mode in Q3 2025") is a commitment too."""
    if key in s.stance:
        return s.stance[key], s.stance_periods.get(key, [])
    dated = [p.ref for p in s.periods.get(key, []) if p.event == "done" and not p.missed and p.low and p.high]
    return (True, dated) if dated else (None, [])


def _keys(s: _Sentence) -> Iterator[str]:
    """The index keys a sentence has claims under."""
    yield from set(s.periods) | set(s.stance)
    for q in s.quantities:
        for subject in q.subjects:
            yield f"{UNIT}{q.kind}\x00{q.unit}\x00{subject}"


def _topic(key: str) -> str:
    """What a conflict is about, for people: the subject, what a count counts ("engineers"),
    or the subject and the unit of a measure ("pro (USD per technician per month)")."""
    if not key.startswith(UNIT):
        return key
    kind, unit, subject = key[len(UNIT) :].split("\x00")
    if kind == "count":
        noun, _, rest = unit.partition(" ")
        return f"{_plural(noun)} {rest}".strip()
    return f"{subject} ({unit})"


SUPERSEDED = "superseded"


def _superseding(a: Statement, b: Statement) -> bool:
    """Whether ``a`` and ``b`` are one lens saying one thing, then another, on different days:
    the later supersedes the earlier (a plan moved, a proposal then the vote the other way).
    Only dates and stances: the amounts one lens gives over time (spent, budgeted, left) are
    too often different measures of one thing."""
    return a.lens == b.lens and a.document_date is not None and b.document_date is not None \
        and a.document_date != b.document_date


def detect_contradictions(sentences: Sequence[_Sentence], *, authority: Sequence[str], limit: int | None = None,
                          topic: str | None = None) -> list[Contradiction]:
    """Conflicts between sentences of different lenses, and within a lens over time (a later
    statement superseding an earlier one, type ``superseded``), best first."""
    index: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(sentences):
        for key in set(_keys(s)):
            index[key].append(i)
    seen: dict[tuple[int, int, str], Contradiction] = {}
    for key, members in sorted(index.items()):
        name = _topic(key)
        if topic is not None and not any(topic in n or n in topic for n in {name, key.split("\x00")[-1]}):
            continue
        if len(members) < 2 or len(members) > MAX_GROUP:
            continue
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                a, b = sentences[i], sentences[j]
                if a.statement.document_id == b.statement.document_id or (
                        a.statement.lens == b.statement.lens and not _superseding(a.statement, b.statement)):
                    continue
                for kind, side_a, side_b, about, certainty in _compare(a, b, key):
                    if kind == "number" and a.statement.lens == b.statement.lens:
                        continue  # amounts a lens gives over time measure different things as often as not
                    pair = (min(i, j), max(i, j), kind)
                    if pair in seen:  # the same two statements about another name of the same thing
                        known = seen[pair]
                        if name not in known.topic.split("; "):
                            seen[pair] = replace(known, topic=f"{known.topic}; {name}")
                        continue
                    weight = (_authority(a.statement.lens, authority) + _authority(b.statement.lens, authority)) / 2
                    if a.statement.lens == b.statement.lens:
                        # Earlier first: what was said, then what replaced it.
                        first, second = sorted((a.statement, b.statement), key=lambda s: (s.document_date, s.start))
                        kind_name = SUPERSEDED
                        note = (f"{second.lens} said one thing on {first.document_date} and another on "
                                f"{second.document_date}: the later statement supersedes the earlier")
                    else:
                        kind_name, note = _pair_type(a.statement.lens, b.statement.lens)
                        first, second = sorted((a.statement, b.statement), key=lambda s: (
                            -_authority(s.lens, authority), s.lens, s.source_path, s.start))
                    sides = (side_a, side_b) if first is a.statement else (side_b, side_a)
                    difference = f"{sides[0]} vs {sides[1]}{about}"
                    seen[pair] = Contradiction(kind, kind_name, name, difference, note, (first, second),
                                               round(certainty, 3), round(weight, 3),
                                               round(certainty * (0.5 + weight), 4))
    ranked = sorted(seen.values(), key=lambda c: (-c.score, c.topic, c.statements[0].source_path,
                                                  c.statements[0].start, c.statements[1].start))
    return ranked[:limit] if limit is not None else ranked
