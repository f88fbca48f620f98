"""Which sentences answer a question: the offline writer's ``ask``.

A question asks for something: a number ("how many", "how long"), a day ("when", "what
date"), a person ("who"), a place ("where"), a reason ("why"), a decision ("what was decided"),
a yes or a no ("is", "does", "was"). Every sentence of the retrieved sources is a candidate
(:func:`~ragloom.synthesise.extract.candidates`), scored by

    W_LEX × how well it matches the question's words, rare ones weighing more (BM25 over the
            candidates, as a share of the best)
  + W_SEM × how close it is in meaning (its vector in the sentence index, as a share of the best)
  + W_NEAR × how well its neighbours match (the answer often follows the line that names the
            subject: "Proposal: a Mastodon instance …" then "Decision: Mara will coordinate.")
  + W_KIND × whether it holds what the question asks for (a number, a date, a name …)
  + W_RANK × the rank of its source
  − what says nothing on its own: a question, a lead-in that ends in a colon, a chat filler, a
    document's bookkeeping line ("Author: …") unless the question asks about it.

The best sentence is quoted, then any other within :data:`KEEP_SHARE` of its score (at most
the writer's limit). The weights were chosen on the tuning half of a labelled set of questions
on a corpus nobody here wrote (``bench/answer_tuning.py``; docs/benchmarks.md).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragloom.parse.timeref import extract_time_refs
from ragloom.synthesise.extract import Candidate, stem, terms

#: Weights of the score (see the module's docstring).
W_LEX = 1.0
W_SEM = 0.5
W_NEAR = 0.4
W_KIND = 0.15
W_RANK = 0.5
QUESTION_PENALTY = 0.3
LEAD_IN_PENALTY = 0.2
FILLER_PENALTY = 1.0
#: Sentences quoted after the best one must score at least this share of it.
KEEP_SHARE = 0.7
#: The best sentence answers when it names one of the question's words, or is at least this
#: close in meaning (cosine); else the answer says that nothing answers, and shows the closest.
ANSWERS_COSINE = 0.5
#: BM25's constants.
K1, B = 1.2, 0.75

NUMBER, DATE, PERSON, PLACE, REASON, DECISION, YES_NO, OTHER = (
    "number", "date", "person", "place", "reason", "decision", "yes_no", "other")
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (NUMBER, re.compile(r"^\s*(?:how\s+(?:many|much|long|often|large|big|far|old|soon)|what\s+(?:is|was|were|are)\s+"
                        r"the\s+(?:number|amount|size|budget|cost|price|limit|total|percentage|share|rate|term|"
                        r"length|duration)|what\s+(?:percentage|share|fraction|amount|sum))\b", re.IGNORECASE)),
    (DATE, re.compile(r"^\s*(?:when|(?:on|by|until|since)\s+(?:what|which)\s+(?:day|date)|what\s+(?:day|date|time|"
                      r"year|month)|which\s+(?:day|date|year|month))\b", re.IGNORECASE)),
    (PERSON, re.compile(r"^\s*(?:who|whom|whose|which\s+(?:person|people|member|members|company|companies|team|"
                        r"teams|organi[sz]ation))\b", re.IGNORECASE)),
    (PLACE, re.compile(r"^\s*(?:where|(?:in\s+)?which\s+(?:country|city|place|venue|location|room))\b", re.IGNORECASE)),
    (REASON, re.compile(r"^\s*(?:why|what\s+(?:is|was)\s+the\s+reason|for\s+what\s+reason|how\s+come)\b",
                        re.IGNORECASE)),
    (DECISION, re.compile(r"\b(?:decide[ds]?|decision|agree[ds]?|approve[ds]?|conclude[ds]?|vote[ds]?|resolved?|"
                          r"settled?)\b", re.IGNORECASE)),
    (YES_NO, re.compile(r"^\s*(?:is|are|was|were|does|do|did|can|could|should|will|would|has|have|had|may|must)\b",
                        re.IGNORECASE)),
)
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|thirty|fifty|hundred|"
                     r"thousand|million|billion|dozen|half|once|twice|weekly|monthly|yearly|annual(?:ly)?)\b",
                     re.IGNORECASE)
#: A capitalised word not opening the sentence (nor a speaker's "TC:"), or two in a row.
_NAME = re.compile(r"(?<=[\s(\[,;])(?:[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)*|[A-Z]{2,}(?![:\w]))")
_PLACE = re.compile(r"\b(?:in|at|to|near|from)\s+(?:the\s+)?[A-Z][a-z]+")
_REASON = re.compile(r"\b(?:because|since|so\s+that|due\s+to|the\s+reason|in\s+order\s+to|otherwise|as\s+a\s+result|"
                     r"the\s+challenge|the\s+problem|the\s+concern|to\s+avoid|to\s+make\s+sure|given\s+that)\b",
                     re.IGNORECASE)
_DECIDED = re.compile(r"\b(?:decision|decided|agreed|approved|consensus|resolved|no\s+objections?|motion\s+passe[sd]|"
                      r"voted?|accepted|adopted|we\s+will|will\s+be|ayes)\b", re.IGNORECASE)
_STANCE = re.compile(r"\b(?:yes|no|not|never|none|approved|rejected|declined|agreed|will|won't|cannot|can't|must|"
                     r"allowed|required|only)\b", re.IGNORECASE)
#: Lines of a conversation that say nothing on their own.
_FILLER = re.compile(r"^\W*(?:[\w .'-]{1,40}:\s*)?(?:thanks?(?:\s+you)?|thank\s+you|sounds\s+good|great|cool|ok(?:ay)?|"
                     r"sure|agreed|\+1|yes|yep|no|nope|that\s+is\s+news\s+to\s+me|makes\s+sense|good\s+point|"
                     r"i\s+agree|same|noted|got\s+it|right|indeed|exactly|correct|perfect|nice|wow|hmm+)\W*$",
                     re.IGNORECASE)


def question_kind(question: str) -> str:
    """What ``question`` asks for: number, date, person, place, reason, decision, yes_no or other."""
    for kind, pattern in _KINDS:
        if pattern.search(question):
            return kind
    return OTHER


def holds(kind: str, text: str) -> float:
    """How well ``text`` holds what a question of ``kind`` asks for, in [0, 1]."""
    if kind == NUMBER:
        return 1.0 if _NUMBER.search(text) else 0.0
    if kind == DATE:
        refs = extract_time_refs(text)
        return 1.0 if any(r.kind in ("date", "month") for r in refs) else 0.5 if refs else 0.0
    if kind == PERSON:
        return 1.0 if _NAME.search(text) else 0.0
    if kind == PLACE:
        return 1.0 if _PLACE.search(text) else 0.0
    if kind == REASON:
        return 1.0 if _REASON.search(text) else 0.0
    if kind == DECISION:
        return 1.0 if _DECIDED.search(text) else 0.0
    if kind == YES_NO:
        return 1.0 if _STANCE.search(text) else 0.0
    return 0.0


def is_filler(text: str) -> bool:
    """A line that says nothing on its own ("Thanks!", "TC: Sounds good.", "That is news to me.")."""
    return len(text) <= 60 and bool(_FILLER.match(text.strip().rstrip(".!")))


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate sentence, its score and the parts of it."""

    candidate: Candidate
    score: float
    parts: Mapping[str, float]


def _bm25(pool: Sequence[Candidate], wanted: frozenset[str]) -> list[float]:
    """BM25 of each candidate for the question's terms, the candidates as the collection."""
    if not pool or not wanted:
        return [0.0] * len(pool)
    counts = [Counter(stem(w) for w in c.text.lower().split()) for c in pool]
    lengths = [max(1, sum(c.values())) for c in counts]
    mean = sum(lengths) / len(lengths)
    df: Counter[str] = Counter()
    for c in pool:
        df.update(c.terms & wanted)
    n = len(pool)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in wanted}
    scores = []
    for c, tf_all, length in zip(pool, counts, lengths, strict=True):
        score = 0.0
        for t in c.terms & wanted:
            tf = max(1, tf_all.get(t, 0))
            score += idf[t] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / mean))
        scores.append(score)
    return scores


def _share(values: Sequence[float]) -> list[float]:
    top = max(values, default=0.0)
    return [max(0.0, v) / top if top > 0 else 0.0 for v in values]


def rank(question: str, pool: Sequence[Candidate], *, sources: int,
         closeness: Mapping[tuple[int, int], float] | None = None) -> list[Ranked]:
    """The candidates scored for ``question`` (see the module's docstring), best first.

    ``closeness`` maps a candidate (by source rank and start) to its cosine with the question;
    ``sources`` is how many sources the ranks run over.
    """
    if not pool:
        return []
    kind = question_kind(question)
    wanted = terms(question)
    lexical = _share(_bm25(pool, wanted))
    close = closeness or {}
    meaning = _share([close.get((c.rank, c.start), 0.0) for c in pool])
    # Neighbours: the candidates before and after in the same source.
    near = [0.0] * len(pool)
    for i, c in enumerate(pool):
        for j in (i - 1, i + 1):
            if 0 <= j < len(pool) and pool[j].source is c.source:
                near[i] = max(near[i], (lexical[j] + meaning[j]) / 2)
    out = []
    for i, c in enumerate(pool):
        text = c.text
        parts = {"lexical": lexical[i], "meaning": meaning[i], "near": near[i], "kind": holds(kind, text),
                 "rank": 1 - c.rank / max(sources, 1), "cosine": close.get((c.rank, c.start), 0.0),
                 "hits": float(len(c.terms & wanted))}
        penalty = (QUESTION_PENALTY if c.question else 0.0) + (LEAD_IN_PENALTY if text.rstrip("*_ ").endswith(":")
                                                               else 0.0) + (FILLER_PENALTY if is_filler(text) else 0.0)
        if c.label and not set(c.label.split()) <= wanted:
            penalty += FILLER_PENALTY  # "Author: …" answers nothing, unless authors were asked about
        score = (W_LEX * parts["lexical"] + W_SEM * parts["meaning"] + W_NEAR * parts["near"]
                 + W_KIND * parts["kind"] + W_RANK * parts["rank"] - penalty)
        out.append(Ranked(c, score, {**parts, "penalty": penalty}))
    out.sort(key=lambda r: (-r.score, r.candidate.rank, r.candidate.start))
    return out


def answers(question: str, pool: Sequence[Candidate], *, sources: int, limit: int,
            closeness: Mapping[tuple[int, int], float] | None = None) -> tuple[list[Ranked], bool]:
    """The sentences to quote, best first, and whether the best one answers at all (else they
    are the closest statements, and the answer says so)."""
    ranked = rank(question, pool, sources=sources, closeness=closeness)
    if not ranked:
        return [], False
    best = ranked[0].score
    picked: list[Ranked] = []
    seen: set[str] = set()
    for r in ranked:
        text = " ".join(r.candidate.text.split())
        span = f"{r.candidate.source.document_id}:{r.candidate.source.start + r.candidate.start}"
        if text in seen or span in seen:
            continue  # overlapping chunks hold the same sentence twice
        if picked and r.score < KEEP_SHARE * best:
            break
        picked.append(r)
        seen.update((text, span))
        if len(picked) >= limit:
            break
    top = ranked[0].parts
    return picked, top["hits"] > 0 or top["cosine"] >= ANSWERS_COSINE
