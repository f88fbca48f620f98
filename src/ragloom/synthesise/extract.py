"""Sentence selection for the offline writer: which statements of the sources to quote.

Every sentence of every source is a candidate (split with exact offsets, so a quote is always
``document.text[start:end]``). Picks are greedy: each one maximises

    new query terms covered + 0.3 × query terms it names
    + 0.6 × its meaning's closeness to the question (when sentence vectors are at hand)
    + a bonus for a lens not yet quoted + a small prior from the source's rank
    + a small bonus for sentences about what the sources share (centrality) and for figures
    − redundancy with the statements already picked (word overlap) − a little for a question
    and for a document's bookkeeping line ("Author: …", "Status: …"),

so that a handful of sentences together cover the question, from several lenses, without
repeating one another; a sentence that adds no new query term must name nearly as many of
them as the first pick did. Position in the chunk counts for nothing: the first line of a
chunk is often a heading or a preamble, and picking it by default is what lazy summarisers do.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ragloom.context import query_terms
from ragloom.parse.sentences import sentence_spans
from ragloom.synthesise.citations import CITATION
from ragloom.synthesise.sources import Quote, Source

#: Weights of the greedy score (see the module's docstring).
OVERLAP_WEIGHT = 0.3
LENS_BONUS = 0.3
RANK_PRIOR = 0.15
CENTRALITY_WEIGHT = 0.2
FIGURE_BONUS = 0.05
REDUNDANCY_WEIGHT = 0.8
QUESTION_PENALTY = 0.2
SEMANTIC_WEIGHT = 0.6
LABEL_PENALTY = 0.4
#: With sentence vectors, a candidate naming none of the question's words is still quoted
#: when it is at least this close in meaning (relative to the closest candidate).
SEMANTIC_ENOUGH = 0.85
#: A document's bookkeeping, not a statement about its subject.
_LABEL = re.compile(r"(?i)(?:authors?|reviewers?|attendees|owners?|status|last updated|updated|prepared by|"
                    r"approved by|version|date|distribution|contributors?)\s*:")
#: A candidate this similar (Jaccard of its terms) to a picked one says the same thing again.
DUPLICATE_SIMILARITY = 0.8
#: After the first pick, a candidate that covers no new query term must name at least this
#: share of the query terms the first pick named: a weak fourth sentence dilutes three good ones.
MIN_RELATIVE_SHARE = 0.6

_LEAD = re.compile(r"(?:>\s*)*(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d{1,9}[.)]\s+)?")
_WORD = re.compile(r"[^\W_]+")
_FIGURE = re.compile(r"\d")
_FRAGMENT = re.compile(r"[a-z,;:.)\]}]")
_NOT_PROSE = ("#", "|", "```", "~~~", "<", "---", "===")
#: A Markdown link reference ("[rfc]: https://…"): a list of links, not a statement.
_LINK_REFERENCE = re.compile(r"\[[^\]\n]+\]:\s*\S")


def stem(word: str) -> str:
    """A crude, symmetric suffix strip so that "ships", "shipped" and "shipping" meet "ship"."""
    w = word.lower()
    if len(w) <= 4 or not w.isalpha():
        return w
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and not w.endswith("ss") and len(w) - len(suffix) >= 3:
            w = w[: len(w) - len(suffix)] + replacement
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # "shipp" (from "shipped") is "ship"
    return w


def terms(text: str) -> frozenset[str]:
    """Stemmed content words (the optimiser's stop words removed)."""
    return frozenset(stem(w) for w in query_terms(text))


@dataclass(frozen=True, slots=True)
class Candidate:
    """One sentence of one source; ``start``/``end`` are offsets in the source's text."""

    source: Source
    rank: int  # position of the source in the order given, 0 first
    start: int
    end: int
    terms: frozenset[str]
    figure: bool  # names a number or a date
    question: bool  # asks rather than states
    label: str = ""  # the field of a bookkeeping line ("author" for "Author: ..."), stemmed

    @property
    def text(self) -> str:
        return self.source.text[self.start : self.end]

    def quote(self) -> Quote:
        return Quote.from_source(self.source, self.start, self.end)


def candidates(sources: Sequence[Source], *, min_words: int = 5, max_words: int = 80) -> list[Candidate]:
    """Every prose sentence of ``sources`` worth quoting, in source then text order.

    Headings, table rows, code, HTML and rules are not statements, nor is a sentence with a
    bracketed number (a footnote mark) in it, nor a lead-in that ends in a colon, nor the tail of a sentence that a chunk starts
    in. A list item or blockquote is quoted without its marker (the quote starts after it, so
    offsets stay exact).
    """
    out: list[Candidate] = []
    for rank, source in enumerate(sources):
        for i, (start, end) in enumerate(sentence_spans(source.text)):
            if i == 0 and source.start > 0 and _FRAGMENT.match(source.text, start):
                continue  # a chunk's overlap can begin mid-sentence: quoting half a sentence misleads
            lead = _LEAD.match(source.text, start, end)
            if lead is not None and lead.end() < end:
                start = lead.end()
            text = source.text[start:end]
            if text.startswith(_NOT_PROSE) or CITATION.search(text) or _LINK_REFERENCE.match(text):
                continue  # a bracketed number in a quote would read as a citation of ours
            if text.rstrip("*_ ").endswith(":"):
                continue  # a lead-in ("The plan is to:") says nothing without the list after it
            count = len(_WORD.findall(text))
            if not min_words <= count <= max_words:
                continue
            out.append(Candidate(source, rank, start, end, terms(text), bool(_FIGURE.search(text)),
                             text.rstrip("*_)\"'”’ ").endswith("?"), _label(text)))
    return out


def _label(text: str) -> str:
    found = _LABEL.match(text.lstrip("*_ "))
    return " ".join(stem(w) for w in found.group(0).rstrip(" :").split()) if found else ""


def centrality(pool: Sequence[Candidate]) -> dict[tuple[int, int], float]:
    """Per candidate (by source rank and start), in [0, 1]: how much of it is about terms that
    several sources share. Computed over all of a section's candidates, then used per lens."""
    df: Counter[str] = Counter()
    by_source: dict[int, set[str]] = {}
    for c in pool:
        by_source.setdefault(c.rank, set()).update(c.terms)
    for words in by_source.values():
        df.update(words)
    shared = {t for t, n in df.items() if n >= 2}
    raw = {(c.rank, c.start): len(c.terms & shared) / math.sqrt(len(c.terms) + 1) for c in pool}
    top = max(raw.values(), default=0.0) or 1.0
    return {i: v / top for i, v in raw.items()}


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def select(pool: Sequence[Candidate], question_terms: Iterable[str], *, limit: int, sources: int,
           require_overlap: bool = True, lens_bonus: bool = True,
           central: Mapping[tuple[int, int], float] | None = None,
           closeness: Mapping[tuple[int, int], float] | None = None) -> list[Candidate]:
    """Up to ``limit`` candidates, greedily (see the module's docstring), best first.

    ``sources`` is the number of sources the ranks run over (for the rank prior). With
    ``require_overlap`` a candidate must name at least one of the question's terms (or be
    close enough in meaning, when ``closeness`` is given). ``central`` is :func:`centrality`
    over a wider pool than ``pool`` (default: over ``pool``). ``closeness`` maps a candidate
    (by source rank and start) to its cosine similarity with the question.
    """
    wanted = frozenset(question_terms)
    central = centrality(pool) if central is None else central
    top = max((closeness.get((c.rank, c.start), 0.0) for c in pool), default=0.0) if closeness else 0.0
    near = {(c.rank, c.start): max(closeness.get((c.rank, c.start), 0.0), 0.0) / top for c in pool} \
        if closeness and top > 0 else {}
    picked: list[int] = []
    covered: set[str] = set()
    lenses: set[str] = set()
    seen_spans: set[tuple[str, int, int]] = set()
    seen_texts: set[str] = set()
    first_share = 0
    while len(picked) < limit:
        best, best_score = -1, -math.inf
        for i, c in enumerate(pool):
            if i in picked:
                continue
            hits = c.terms & wanted
            meaning = near.get((c.rank, c.start), 0.0)
            if require_overlap and wanted and not hits and meaning < SEMANTIC_ENOUGH:
                continue
            if c.label and not set(c.label.split()) <= wanted:
                continue  # "Author: …" answers nothing, unless authors were asked about
            if picked and wanted and not hits - covered and len(hits) < MIN_RELATIVE_SHARE * first_share:
                continue
            span = (c.source.document_id, c.source.start + c.start, c.source.start + c.end)
            if span in seen_spans or " ".join(c.text.split()) in seen_texts:
                continue  # overlapping chunks hold the same sentence twice
            redundancy = max((_jaccard(c.terms, pool[j].terms) for j in picked), default=0.0)
            if redundancy >= DUPLICATE_SIMILARITY:
                continue
            share = len(hits) / len(wanted) if wanted else 0.0
            score = (len(hits - covered) / len(wanted) if wanted else 0.0) + OVERLAP_WEIGHT * share
            if lens_bonus and c.source.lens not in lenses and (hits or not wanted):
                score += LENS_BONUS
            score += RANK_PRIOR * (1 - c.rank / max(sources, 1))
            score += CENTRALITY_WEIGHT * central.get((c.rank, c.start), 0.0) + (FIGURE_BONUS if c.figure else 0.0)
            score += SEMANTIC_WEIGHT * meaning - (LABEL_PENALTY if c.label else 0.0)
            score -= REDUNDANCY_WEIGHT * redundancy + (QUESTION_PENALTY if c.question else 0.0)
            # Ties go to the better-ranked source, then to the earlier sentence: a stable order.
            if score > best_score + 1e-12:
                best, best_score = i, score
        if best < 0:
            break
        chosen = pool[best]
        if not picked:
            first_share = len(chosen.terms & wanted)
        picked.append(best)
        covered |= chosen.terms & wanted
        lenses.add(chosen.source.lens)
        seen_spans.add((chosen.source.document_id, chosen.source.start + chosen.start,
                        chosen.source.start + chosen.end))
        seen_texts.add(" ".join(chosen.text.split()))
    return [pool[i] for i in picked]
