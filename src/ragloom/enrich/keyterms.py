"""Key terms of a chunk: proper-noun phrases, the subjects its text repeats, the settings'
domain terms and the entities it mentions, ranked.

A term's rank is its count in the chunk, with multi-word proper-noun phrases and known
entities counted double: they say more about what a chunk is about than a single common noun.
Content words and two-word phrases count when the chunk says them at least twice: what a text
repeats is what it is about, whatever its domain, so no vocabulary is built in. Which of them
distinguish a chunk is learned from the whole workspace when the graph is built: a term most
chunks share links nothing (``graph.max_postings``, ``graph.max_posting_share``). Terms are
lower-cased so that "Catalog" and "catalog" are one term.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ragloom.enrich.entities import COMMON, capitalised_candidates, named_by_place
from ragloom.parse.words import GENERAL_WORDS, STOP_WORDS

#: A content word: letters (a hyphen or an apostrophe inside), at least four of them.
#: A lower-case word: letters, joined by single hyphens, with an apostrophe's ending ("don't").
_WORD = re.compile(r"(?<![\w-])[a-z]+(?:-[a-z]+)*(?:'[a-z]{1,2})?(?![\w-])")
MIN_WORD = 4
#: A content word or phrase must appear this often in a chunk to be one of its key terms. At 2
#: the short paragraphs of the multi-hop set link each other in the graph by words like "film",
#: and graph mode finds both paragraphs in the top 5 for 78% of questions instead of 88%
#: (docs/benchmarks.md, issue 25). The subjects lenses share, which contradictions need, are
#: counted from 2 repeats apart from the key terms (:func:`repeated_terms`, SUBJECT_REPEATS).
MIN_REPEATS = 4
#: A content word repeated this often in a chunk is one of the subjects it speaks about.
SUBJECT_REPEATS = 2


@lru_cache(maxsize=32)
def _domain_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    if not terms:
        return None
    alternatives = sorted({re.escape(t.lower()) for t in terms if t.strip()}, key=len, reverse=True)
    # Plurals count as the term: "customers" is about customers.
    return re.compile(r"(?<!\w)(" + "|".join(alternatives) + r")(?:s|es)?(?!\w)", re.IGNORECASE)


def _singular(word: str) -> str:
    """A crude singular, so that "grants" and "grant" are one term ("class" stays)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


#: Links and code say where, not what: their words are no terms.
_NOT_PROSE = re.compile(r"(?:https?|ftp)://\S+|\bwww\.\S+|`[^`\n]*`|\[[^\[\]\n]*\]\([^()\n]*\)|<[^<>\n]*>")


def repeated_terms(text: str, top_n: int, at_least: int = SUBJECT_REPEATS) -> list[str]:
    """The ``top_n`` content words and pairs ``text`` repeats most, ``at_least`` times each (not
    stop or general words), most repeated first (ties by first appearance)."""
    lowered = text.lower()
    repeated = [(n, lowered.find(t), t) for t, n in _content_terms(text).items() if n >= at_least and t not in _STOP]
    return [t for _, _, t in sorted(repeated, key=lambda r: (-r[0], r[1] if r[1] >= 0 else len(text)))[:top_n]]


def _content_terms(text: str) -> Counter[str]:
    """Content words and adjacent pairs of them, with their counts and singular forms."""
    text = _NOT_PROSE.sub(lambda m: " " * len(m.group(0)), text)
    counts: Counter[str] = Counter()
    previous: str | None = None
    last_end = -1
    for m in _WORD.finditer(text):  # lower-case words: capitalised ones are names, counted above
        word = m.group(0)
        if len(word) < MIN_WORD:
            continue
        word = _singular(word) if word not in STOP_WORDS else word
        if word in STOP_WORDS or word in GENERAL_WORDS or word in _STOP:
            previous = None
            continue
        counts[word] += 1
        # A pair only across one space: "travel grant", not words a comma or a line separates.
        if previous is not None and text[last_end:m.start()] == " ":
            counts[f"{previous} {word}"] += 1
        previous, last_end = word, m.end()
    return counts


def extract_key_terms(text: str, *, domain_terms: Sequence[str] = (), entities: Iterable[str] = (),
                      top_n: int = 10, not_topics: Iterable[str] = ()) -> list[str]:
    """The ``top_n`` key terms of ``text``, best first (ties by first appearance); never one of
    ``not_topics`` (the people a document names as its speakers and attendees)."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    excluded = {" ".join(t.lower().split()) for t in not_topics}

    def add(term: str, weight: int, position: int) -> None:
        term = " ".join(term.lower().split())
        if len(term) < 2 or term in _STOP or term in excluded:
            return
        counts[term] += weight
        first.setdefault(term, position)

    for m in capitalised_candidates(text):
        if not named_by_place(m):  # who spoke or attended is not what the text is about
            add(m.text, 2 if " " in m.text else 1, m.start)
    pattern = _domain_pattern(tuple(domain_terms))
    if pattern is not None:
        for found in pattern.finditer(text):
            add(found.group(1), 1, found.start())
    for i, name in enumerate(entities):
        add(name, 2, -len(text) + i)  # entities rank first among equals
    ranked = sorted(counts, key=lambda t: (-counts[t], first[t]))[:top_n]
    # What the text repeats fills the places names, entities and domain terms leave.
    fill = [t for t in repeated_terms(text, top_n + len(counts), MIN_REPEATS) if t not in counts and t not in excluded]
    return ranked + fill[:top_n - len(ranked)]


_STOP = frozenset(w.lower() for w in COMMON)
