"""Contradictions between lenses, made concrete: two statements, where they are, what differs.

Every sentence of the sentence index becomes a set of *claims* about the key terms it names:

- **when**: a schedule verb ("ships", "moves to", "GA", "planned for" …) with a period
  ("Q2 2025", "August 2025");
- **how much**: a number with what it counts ("18 engineers", "$49 per technician", "2.1%");
- **whether**: the sentence's polarity (negated or not) and its embedding.

Claims are grouped by subject through an inverted index (never all pairs of sentences), and
two claims from different lenses conflict when they are about the same subject and:

- **date**: their periods do not overlap;
- **number**: they count the same thing with values more than 5% apart;
- **negation**: one negates what the other asserts, and the sentences say nearly the same
  thing otherwise (cosine of their embeddings at least 0.4).

Merely mentioning the same topic is never a contradiction. Warnings are ranked by how certain
the conflict is and by the authority of the lenses involved (a setting, seed 000's order by
default).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from ragloom.enrich.timeref import TimeRef, extract_time_refs

SCHEDULE = re.compile(
    r"\b(?:ship|ships|shipping|shipped|launch|launches|launched|release|releases|released|GA|general availability|"
    r"available|deliver|delivers|delivered|land|lands|due|target|targets|targeted|planned|scheduled|moves?\s+to|"
    r"moved\s+to|slips?\s+to|follows|starts?|start|begins?|complete|completed|finish|ready|go(?:es)?\s+live|"
    r"arrives?|comes?|in\s+Q[1-4])\b", re.IGNORECASE)
NEGATION = re.compile(
    r"\b(?:not|never|won't|isn't|aren't|wasn't|don't|doesn't|didn't|cannot|can't|postponed|cancel(?:led|ed)?|"
    r"dropped|rejected|out of scope|deprioriti[sz]ed)\b(?!\s+(?:before|until|after|earlier|later|only)\b)",
    re.IGNORECASE)
COMMITMENT = re.compile(
    r"\b(?:committed|commit|approved|approve|promised|priority|prioriti[sz]ed|decided|agreed|will\s+(?:ship|build|"
    r"deliver|add|support|launch|include)|is\s+planned|are\s+planned|in\s+scope|included|includes)\b", re.IGNORECASE)
#: How close (in characters, within one clause) a stance word must be to the subject it is about.
STANCE_REACH = 60
EXCLUDED = re.compile(r"\b(?:without|except|excluding|not)\s+(?:the\s+)?$", re.IGNORECASE)
#: Words that make a number a bound or a target rather than a fact ("below 1.5%", "from 18 to 24").
BOUND = re.compile(r"\b(?:below|above|under|over|toward|towards|at least|at most|up to|more than|less than|"
                   r"from|to|than|about|around|roughly|approximately)\s+(?:the\s+)?$", re.IGNORECASE)
QUANTITY = re.compile(
    r"(?P<value>\$?\d[\d,]*(?:\.\d+)?)(?:\s*(?P<scale>%|percent\b|k\b|m\b|million\b|billion\b))?"
    r"(?:\s+(?P<unit>(?:per\s+[a-z]+(?:\s+per\s+[a-z]+)?)|[a-z][a-z-]+s\b))?", re.IGNORECASE)
#: Lens pairs the seed names, with its notes.
SEED_TYPES = {
    frozenset({"team-conversational", "team-structured"}): (
        "conversational_vs_structured", "Team discussions may reveal concerns not in formal docs"),
    frozenset({"engineering", "team-structured"}): (
        "engineering_vs_product", "Engineering feasibility may conflict with product plans"),
}
NEGATION_SIMILARITY = 0.4
UNIT = "unit:"  # index keys of quantities, beside subjects
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


@dataclass(frozen=True, slots=True)
class Contradiction:
    kind: str  # date | number | negation
    type: str  # conversational_vs_structured, engineering_vs_product, or "<lens>_vs_<lens>"
    topic: str
    difference: str
    note: str
    statements: tuple[Statement, Statement]
    certainty: float
    authority: float
    score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Sentence:
    statement: Statement
    subjects: set[str]
    specific: set[str]
    periods: dict[str, list[TimeRef]] = field(default_factory=dict)  # subject -> the periods nearest it
    quantities: list[tuple[str, str, float, str]] = field(default_factory=list)  # (subject, unit, value, written)
    stance: dict[str, bool] = field(default_factory=dict)  # subject -> asserted (True) or negated (False)
    vector: np.ndarray | None = None


def _number(raw: str) -> float | None:
    try:
        return float(raw.replace("$", "").replace(",", ""))
    except ValueError:
        return None


def _quantities(text: str, where: Mapping[str, list[int]], context: str = "") -> list[tuple[str, str, float, str]]:
    """(subject, unit, value, as written) for each number that counts something.

    The unit is what is counted ("engineers", "$ per technician per month", "% of accounts",
    "% churn"); the subject is the one named nearest before the number in the same clause, or
    else ``context`` (a subject the section heading names), so that the Pro and Starter plans'
    prices are not one quantity. Table rows are skipped: their numbers belong to columns this
    cannot see.
    """
    if text.lstrip().startswith("|"):
        return []
    out = []
    for m in QUANTITY.finditer(text):
        value = _number(m.group("value"))
        if value is None or re.fullmatch(r"(?:19|20)\d\d", m.group("value")):
            continue  # a year is a period, not a quantity
        if BOUND.search(text[max(0, m.start() - 16) : m.start()]):
            continue
        unit = (m.group("unit") or "").lower()
        scale = (m.group("scale") or "").lower()
        clause_start = max(text.rfind(";", 0, m.start()), text.rfind(":", 0, m.start()), text.rfind(",", 0, m.start())) + 1
        before = {t: max(p for p in spots if p < m.start()) for t, spots in where.items()
                  if any(clause_start <= p < m.start() for p in spots)}
        subject = max(before, key=before.__getitem__) if before else ""
        if scale in ("%", "percent"):
            of = re.match(r"\s+of\s+([a-z]+)", text[m.end() :], re.IGNORECASE)
            unit = "% of " + of.group(1).lower() if of else ("% " + subject if subject else "")
            subject = "" if not of else subject
        elif m.group("value").startswith("$"):
            unit = "$ " + unit
        if not unit.strip() or unit.rstrip("s") in ("week", "month", "day", "year", "hour", "minute", "second"):
            continue  # durations and bare numbers are not comparable quantities
        if not subject and context:
            subject = context
        scaled = value * {"k": 1e3, "m": 1e6, "million": 1e6, "billion": 1e9}.get(scale, 1.0)
        out.append((subject, unit.strip(), scaled, m.group(0).strip()))
    return out


@lru_cache(maxsize=4096)
def _whole_word(term: str) -> re.Pattern[str]:
    """``term`` where no word character touches it on either side."""
    return re.compile(r"(?<!\w)" + re.escape(term) + r"(?!\w)")


def _positions(text: str, terms: Sequence[str]) -> dict[str, list[int]]:
    """Where each of ``terms`` occurs in ``text`` (case-insensitive, whole words); adjacent
    terms also count as one phrase ("catalog" + "integration" is "catalog integration"), which
    names an initiative more precisely than either word."""
    lower = text.lower()
    hits: list[tuple[int, int, str]] = []
    for t in terms:
        hits.extend((m.start(), m.end(), t) for m in _whole_word(t).finditer(lower))
    hits.sort()
    found: dict[str, list[int]] = defaultdict(list)
    for start, _, term in hits:
        found[term].append(start)
    for (a_start, a_end, _), (b_start, b_end, _) in zip(hits, hits[1:], strict=False):
        if 0 < b_start - a_end <= 1 and lower[a_end:b_start] == " ":
            found[lower[a_start:b_end]].append(a_start)
    return dict(found)


def _stances(text: str, where: Mapping[str, list[int]]) -> dict[str, bool]:
    """For each subject, whether the clause around it commits to it or negates it.

    Table rows, headings and questions take no stance. A negation next to the subject wins
    over a commitment word next to it ("is not a priority").
    """
    stripped = text.lstrip()
    if stripped.startswith(("|", "#")) or text.rstrip().endswith("?"):
        return {}
    clauses = [m.span() for m in re.finditer(r"[^;:]+", text)]
    out: dict[str, bool] = {}
    for subject, spots in where.items():
        for spot in spots:
            lo, hi = next(((a, b) for a, b in clauses if a <= spot < b), (0, len(text)))
            window = text[max(lo, spot - STANCE_REACH) : min(hi, spot + len(subject) + STANCE_REACH)]
            if NEGATION.search(window):
                out[subject] = False
                break
            if COMMITMENT.search(window):
                out[subject] = True
    return out


def _assign(text: str, periods: Sequence[TimeRef], where: Mapping[str, list[int]]) -> dict[str, list[TimeRef]]:
    """Each period goes to the subject named last before it in its clause ("CPQ follows in Q3
    once the catalog ships in June": Q3 is CPQ's, June the catalog's), or failing that to one
    named just after it; a period near no subject is nobody's."""
    out: dict[str, list[TimeRef]] = defaultdict(list)
    # "the catalog without QuickBooks sync in June": what comes after "without" is not what ships.
    where = {t: [p for p in spots if not EXCLUDED.search(text[max(0, p - 12) : p])] for t, spots in where.items()}
    for ref in periods:
        clause = text.rfind(";", 0, ref.start) + 1
        before = {t: max(p for p in spots if clause <= p < ref.start) for t, spots in where.items()
                  if any(clause <= p < ref.start for p in spots)}
        if before:
            out[max(before, key=before.__getitem__)].append(ref)
            continue
        # Only a subject right after the period, past a comma ("In Q3 2025, CPQ ships"), owns it.
        after = {t: p for t, spots in where.items() for p in spots
                 if p >= ref.end and re.fullmatch(r"\s*,?\s*(?:the\s+)?", text[ref.end : p], re.IGNORECASE)}
        if after:
            out[min(after, key=after.__getitem__)].append(ref)
    return dict(out)


def sentences_with_claims(sentences: Sequence[Mapping[str, Any]], chunks: Sequence[Mapping[str, Any]],
                          generic: set[str], aliases: Mapping[str, str] | None = None) -> list[_Sentence]:
    """Claims of every sentence row, given the chunk rows of the same documents.

    ``aliases`` maps lower-cased alias to lower-cased canonical name (``cpq`` to
    ``configure-price-quote``): a sentence naming an entity by an alias is about the entity.
    """
    by_canonical: dict[str, list[str]] = defaultdict(list)
    for alias, canonical in (aliases or {}).items():
        by_canonical[canonical].append(alias)
    by_doc: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for c in chunks:
        by_doc[c["document_id"]].append(c)
    out = []
    for s in sentences:
        start, end = int(s["start_char"]), int(s["end_char"])
        home = next((c for c in by_doc.get(s["document_id"], ()) if c["start_char"] <= start and end <= c["end_char"]),
                    None)
        if home is None:
            continue
        terms = list(home.get("key_terms") or ())
        where = _positions(s["text"], terms + [a for t in terms for a in by_canonical.get(t, ())])
        for alias, canonical in (aliases or {}).items():
            if alias in where and canonical in terms:
                where.setdefault(canonical, []).extend(where.pop(alias))
        if not where:
            continue
        subjects = set(where)
        statement = Statement(home["chunk_id"], s["document_id"], s["lens"], s["source_path"],
                              s.get("section_path") or "", start, end, s["text"])
        item = _Sentence(statement, subjects, {t for t in subjects if t not in generic or " " in t})
        specific = {t: p for t, p in where.items() if t in item.specific}
        if SCHEDULE.search(s["text"]) and specific:
            refs = [r for r in extract_time_refs(s["text"], reference=s.get("document_date"))
                    if r.resolved and r.kind in ("quarter", "half", "month", "date")]
            item.periods = _assign(s["text"], refs, specific) if refs else {}
        heading = (s.get("section_path") or "").rsplit(" > ", 1)[-1].lower()
        context = next((t for t in terms if _whole_word(t).search(heading)), "")
        item.quantities = _quantities(s["text"], where, context)
        item.stance = _stances(s["text"], specific)
        if s.get("vector") is not None:
            v = np.asarray(s["vector"], dtype=np.float32)
            item.vector = v / (np.linalg.norm(v) or 1.0)
        out.append(item)
    return out


def _authority(lens: str, order: Sequence[str]) -> float:
    """1 for the most authoritative lens, falling to 1/n for the last; 0 for unranked lenses."""
    if lens not in order:
        return 0.0
    return (len(order) - order.index(lens)) / len(order)


def _pair_type(a: str, b: str) -> tuple[str, str]:
    known = SEED_TYPES.get(frozenset({a, b}))
    if known:
        return known
    first, second = sorted((a, b))
    return f"{first}_vs_{second}", f"{first} and {second} disagree"


def _describe(ref: TimeRef) -> str:
    return ref.canonical


def _compare(a: _Sentence, b: _Sentence, topic: str) -> list[tuple[str, str, float]]:
    """(kind, difference, certainty) for every conflict between two sentences about ``topic``."""
    found = []
    pa, pb = a.periods.get(topic, []), b.periods.get(topic, [])
    if pa and pb and not any(x.overlaps(y) for x in pa for y in pb):
        same_grain = {r.kind for r in pa} & {r.kind for r in pb}
        certainty = 0.9 if same_grain else 0.75
        if len(pa) > 1 or len(pb) > 1:
            certainty -= 0.15  # several dates for one subject in a sentence: less sure which is meant
        found.append(("date", f"{', '.join(map(_describe, pa))} vs {', '.join(map(_describe, pb))}", certainty))
    unit = topic[len(UNIT) :] if topic.startswith(UNIT) else None
    qa = [(s, v, raw) for s, u, v, raw in a.quantities if u == unit]
    qb = [(s, v, raw) for s, u, v, raw in b.quantities if u == unit]
    # The same unit counts the same thing unless both name different specific subjects
    # ("the Pro plan" and "the Starter plan").
    qa = [q for q in qa if any(q[0] == o[0] or q[0] not in a.specific or o[0] not in b.specific for o in qb)]
    qb = [o for o in qb if any(q[0] == o[0] or q[0] not in a.specific or o[0] not in b.specific for q in qa)]
    if qa and qb and not any(abs(x - y) <= NUMBER_TOLERANCE * max(abs(x), abs(y)) for _, x, _ in qa for _, y, _ in qb):
        # One figure each is a plain disagreement; several (a change "from 18 to 24") are less sure.
        certainty = 0.8 if len(qa) == len(qb) == 1 else 0.55
        found.append(("number", f"{', '.join(r for *_, r in qa)} vs {', '.join(r for *_, r in qb)}", certainty))
    if topic in a.stance and topic in b.stance and a.stance[topic] != b.stance[topic]:
        similarity = float(a.vector @ b.vector) if a.vector is not None and b.vector is not None else 0.5
        if similarity >= NEGATION_SIMILARITY:
            words = {True: "commits to", False: "negates"}
            found.append(("negation", f"{words[a.stance[topic]]} vs {words[b.stance[topic]]} {topic}",
                          round(0.35 + 0.5 * similarity, 3)))
    return found


def detect_contradictions(sentences: Sequence[_Sentence], *, authority: Sequence[str], limit: int | None = None,
                          topic: str | None = None) -> list[Contradiction]:
    """Conflicts between sentences of different lenses, best first."""
    index: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(sentences):
        for subject in s.specific | {UNIT + q[1] for q in s.quantities}:
            index[subject].append(i)
    seen: dict[tuple[int, int, str], Contradiction] = {}
    for subject, members in index.items():
        if topic is not None and topic.lower() not in subject and subject not in topic.lower():
            continue
        if len(members) < 2 or len(members) > MAX_GROUP:
            continue
        name = subject.removeprefix(UNIT)  # a quantity's key is "unit:<noun>"; its topic the noun
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                a, b = sentences[i], sentences[j]
                if a.statement.lens == b.statement.lens or a.statement.document_id == b.statement.document_id:
                    continue
                for kind, difference, certainty in _compare(a, b, subject):
                    key = (min(i, j), max(i, j), kind)
                    if key in seen:  # the same two statements about another name of the same thing
                        known = seen[key]
                        seen[key] = replace(known, topic=f"{known.topic}; {name}")
                        continue
                    kind_name, note = _pair_type(a.statement.lens, b.statement.lens)
                    weight = (_authority(a.statement.lens, authority) + _authority(b.statement.lens, authority)) / 2
                    first, second = sorted((a.statement, b.statement),
                                           key=lambda s: -_authority(s.lens, authority))
                    seen[key] = Contradiction(kind, kind_name, name, difference, note, (first, second),
                                              round(certainty, 3), round(weight, 3), round(certainty * (0.5 + weight), 4))
    ranked = sorted(seen.values(), key=lambda c: (-c.score, c.topic))
    return ranked[:limit] if limit is not None else ranked
