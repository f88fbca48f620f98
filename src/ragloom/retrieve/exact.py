"""Exact terms of a query: the tokens an embedding blurs and a reader means to the letter.

A question that names ``asyncio.gather``, ``vm.swappiness``, ``PYTHONHASHSEED``, ``E0502``,
``/proc/sys/kernel/sysrq`` or "Node.js 18" asks about that identifier, path, code or version and
no other: the embedding of ``os.replace`` sits next to ``os.rename``'s, and BM25's tokenizer
cuts ``asyncio.gather`` into two common words. :func:`exact_terms` finds such tokens;
:func:`exact_ranking` orders fusion candidates by how many of them a chunk holds verbatim
(case kept for identifiers, word-bounded), which hybrid fusion adds as one more ranked list
(see :mod:`ragloom.retrieve.basic`).

A version matches its series: "18" matches "18.x" and "18.2.0" (a number never matches inside a
longer number: "18" is not in "118" or "1.18").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

#: The token shapes that mean one thing only, tried in this order at each position.
_TERM = re.compile(
    r"""
      (?P<path>(?<![\w/])(?:~|\.{1,2})?/[\w.\-]+(?:/[\w.\-]+)+/?)           # /proc/sys/kernel/sysrq
    | (?P<quoted>`[^`\n]{1,80}`)                                          # `code`
    | (?P<dotted>\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?)              # asyncio.gather, Node.js
    | (?P<call>\b[A-Za-z_]\w*\(\))                                        # round()
    | (?P<code>\b[A-Za-z]+-\d+\b)                                       # SHA-1, UTF-8
    | (?P<version>(?<![\w.])v?\d+(?:\.(?:\d+|x))+(?!\w|\.\w))            # 3.11, 18.x, v2.0.1
    | (?P<word>\b\w+\b)
    """,
    re.VERBOSE,
)
_CAMEL = re.compile(r"[a-z][A-Z]")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")


def _shaped(word: str) -> bool:
    """Whether a word is an identifier or a code by its shape: ``snake_case`` or ``__hash__``
    (an underscore and a letter or digit), ``CamelCase`` inside (``StrEnum``, ``OpenSSL``,
    ``eBPF``), letters with digits (``E0502``, ``sha256``; not ``7th``), or capitals of three
    letters or more (``PYTHONHASHSEED``, ``RCU``)."""
    if "_" in word:
        return any(c.isalnum() for c in word)
    if _CAMEL.search(word):
        return True
    if any(c.isdigit() for c in word):
        return any(c.isalpha() for c in word) and _ORDINAL.fullmatch(word) is None
    return len(word) >= 3 and word.isascii() and word.isalpha() and word.isupper()


#: Dotted words that are prose, not identifiers.
_PROSE_DOTS = frozenset({"e.g", "i.e", "etc", "vs", "a.m", "p.m", "u.s", "cf"})
#: Nouns after which a bare number is a version or a code ("protocol 5", "port 8080").
_NUMBERED = frozenset({"version", "versions", "release", "releases", "protocol", "level", "port", "code", "error",
                       "issue", "rfc", "pep", "step", "phase", "chapter", "section", "option", "mode", "api", "v"})
#: Capitalised words that name nothing: "The 2011 season" holds no version.
_FUNCTION_WORDS = frozenset({"the", "a", "an", "in", "on", "at", "by", "of", "for", "since", "from", "to", "and",
                             "or", "with", "than", "is", "was", "what", "which", "when", "how", "who", "does", "did"})


def _names_a_number(previous: str, term_before: bool) -> bool:
    """Whether a bare number after the word ``previous`` is a version or a code: after an exact
    term ("Node.js 18"), a name ("Python 3") or a numbered noun ("protocol 5"); not a count or a
    year in prose ("over 60 million", "died in 2007")."""
    if term_before or previous.lower() in _NUMBERED:
        return True
    return previous[:1].isupper() and previous.lower() not in _FUNCTION_WORDS


def exact_terms(text: str) -> list[str]:
    """The exact terms of ``text`` in order of first appearance, each once: paths, quoted
    code, dotted names and calls, versions, words shaped like identifiers (``snake_case``,
    ``CamelCase``, letters with digits, capitals of three letters or more), and a bare number
    where it names a version or a code (see :func:`_names_a_number`)."""
    out: list[str] = []
    previous, term_before, end = "", False, -2  # the token before, whether it was a term, where it ended
    for m in _TERM.finditer(text):
        kind = m.lastgroup
        term = m.group()
        adjacent = text[end : m.start()].strip() == "" and end >= 0
        before, was_term = (previous, term_before) if adjacent else ("", False)
        previous, term_before, end = term, False, m.end()
        if kind == "quoted":
            term = term.strip("`").strip()
        elif kind == "dotted":
            term = term.removesuffix("()")
            if term.lower() in _PROSE_DOTS or all(len(part) == 1 for part in term.split(".")):
                continue
        elif kind == "call":
            term = term.removesuffix("()")
        elif kind == "word" and term.isdigit():
            if not _names_a_number(before, was_term):
                continue
        elif kind == "word" and not _shaped(term):
            continue
        term_before = True
        if term and term not in out:
            out.append(term)
    return out


@lru_cache(maxsize=512)
def _pattern(term: str) -> tuple[re.Pattern[str], str, bool]:
    """Where ``term`` occurs as a whole token (a number also as the head of a version), the
    literal every occurrence contains, and whether case counts (an identifier's does)."""
    if re.fullmatch(r"v?\d+(?:\.\d+)*", term):
        pattern = rf"(?<![\w.]){re.escape(term)}(?:\.(?:\d+|x))*(?![\w]|\.\d)"
        return re.compile(pattern), term, True
    cased = re.search(r"[A-Z_.]|[a-z][A-Z]", term) is not None
    body, literal = re.escape(term), term
    if len(term) > 4 and term.endswith("s") and term[-2].islower():
        body, literal = re.escape(term[:-1]) + "s?", term[:-1]  # a plural names its singular too
    flags = 0 if cased else re.IGNORECASE
    return re.compile(rf"(?<![\w.]){body}(?![\w]|\.\w)", flags), literal if cased else literal.lower(), cased


def holds(text: str, term: str, lowered: str | None = None) -> bool:
    """Whether ``text`` holds ``term`` as a whole token (see :func:`_pattern`); ``lowered``,
    ``text.lower()`` when the caller has it, saves a copy. A substring test comes first: most
    texts hold most terms nowhere, and ``in`` is far cheaper than the pattern."""
    pattern, literal, cased = _pattern(term)
    if literal not in (text if cased else lowered if lowered is not None else text.lower()):
        return False
    return pattern.search(text) is not None


def _qualified(term: str) -> tuple[str, str] | None:
    """(qualifier, name) of a dotted identifier whose name part can stand alone
    (``json.dumps`` -> ``("json", "dumps")``; ``Node.js`` has no such name)."""
    head, _, name = term.rpartition(".")
    if not head or len(name) < 3 or not name.isidentifier():
        return None
    return head.split(".")[0], name


class _Row:
    """What a stored chunk is searched in: its title and section path, its text, its file name."""

    __slots__ = ("about", "lowered", "stem", "text", "whole")

    def __init__(self, row: Mapping[str, Any]) -> None:
        section = " ".join(map(str, row.get("section_path") or ()))
        self.about = f"{row.get('title') or ''} {section}"
        self.text = str(row.get("text") or "")
        self.whole = f"{self.about} {self.text}"
        self.lowered = self.whole.lower()
        stem = str(row.get("source_path") or "").rsplit("/", 1)[-1].rsplit(".", 1)[0]
        self.stem = stem.replace("-", " ").replace("_", " ")

    def holds(self, term: str) -> bool:
        """The term in the text, title or section path, or, for a dotted name, its last part in
        the text of a document about its first: the page that documents ``json.dumps`` calls it
        ``dumps`` (its file, title or heading says ``json``), while the pages that merely refer
        to it spell it out."""
        if holds(self.whole, term, self.lowered):
            return True
        qualified = _qualified(term)
        if qualified is None:
            return False
        qualifier, name = qualified
        where = f"{self.about} {self.stem}"
        return (qualifier.lower() in where.lower()
                and re.search(rf"(?<!\w){re.escape(qualifier)}(?!\w)", where, re.IGNORECASE) is not None
                and holds(self.text, name))


def exact_ranking(rows: Sequence[Mapping[str, Any]], terms: Sequence[str]) -> list[dict[str, Any]]:
    """The rows that hold at least one of ``terms`` (:meth:`_Row.holds`), the most distinct
    terms first, ties in the given order; each a copy whose ``_score`` is the number of terms
    it holds."""
    scored = []
    for i, row in enumerate(rows):
        searched = _Row(row)
        found = sum(searched.holds(t) for t in terms)
        if found:
            scored.append((-found, i, row))
    scored.sort(key=lambda s: (s[0], s[1]))
    return [{**row, "_score": float(-negative)} for negative, _, row in scored]
