"""Citations in written text, checked against the numbered sources.

A citation is ``[3]``, ``[1, 2]``, ``[1][2]`` or a range ``[2-4]`` (also ``[2–4]`` and mixed
forms such as ``[1, 3-5]``). Text in code spans and fences is not read, and ``[1](url)`` is a
Markdown link, not a citation.

Checked after writing, for every writer:

- which cited numbers match a source (``valid``) and which match none (``invalid``);
- which sentences carry no citation (``uncited_sentences``): headings, list markers alone,
  very short lines, lines that introduce a list (ending with a colon), lines entirely in
  italics (notes such as the extractive writer's label) and sentences that say the sources do
  not answer are not claims and need none;
- which quotations do not occur in the source they cite (``bad_quotes``): a span in double
  quotes followed by ``[n]`` must be found in source n, comparing with whitespace collapsed,
  typographic quotes and dashes folded, Markdown emphasis ignored, and the first letter's case
  free; ``...`` or ``…`` inside a quote stands for omitted text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragloom.parse.code import mask_code
from ragloom.parse.sentences import sentence_spans
from ragloom.synthesise.sources import Quote, Source, one_line

#: A range wider than this is not expanded (``[1-100000]`` is a typo, not a hundred thousand sources).
MAX_RANGE = 100
#: A line with fewer words than this is a label, not a sentence.
MIN_SENTENCE_WORDS = 4

_NUMBER_ITEM = r"\d+(?:\s*[-–—]\s*\d+)?"
CITATION = re.compile(r"\[\s*(" + _NUMBER_ITEM + r"(?:\s*[,;]\s*" + _NUMBER_ITEM + r")*)\s*\](?!\()")
_ITEM = re.compile(r"(\d+)(?:\s*[-–—]\s*(\d+))?")
_QUOTED = re.compile(
    r"(?:“(?P<curly>[^“”]{2,2000}?)”|\"(?P<straight>[^\"\n]{2,2000}?)\")"
    r"[\s,.;:!?)]{0,3}(?P<cites>(?:\[[^\]\n]{1,60}\](?!\()\s?)+)")
_ELLIPSIS = re.compile(r"(?<!\s)\s*+(?:\[\s*+(?:\.\.\.|…)\s*+\]|\.\.\.|…)\s*+")
_LINE_MARKERS = re.compile(r"^(?:\s*>)*\s*(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d{1,9}[.)]\s+)?")
_TABLE_RULE = re.compile(r"^[\s|:\-+]*$")
_ITALIC_LINE = re.compile(r"\*[^*\n]+\*|_[^_\n]+_|\*\*[^*\n]+\*\*:?")
_WORD = re.compile(r"[^\W_]+")
#: Saying that the sources do not answer is the honest sentence, and has nothing to cite. Only
#: a statement about what the sources say counts ("the documents show no slip" is a claim).
_NOT_SAYING = (r"(?:say|state|mention|answer|cover|address|specify|give|provide|include|contain|discuss|tell|explain|"
               r"name|indicate|detail|confirm|report|describe|reveal|clarify|offer|list|show|use)")
_NO_ANSWER = re.compile(
    r"\b(?:sources?|context|materials?|documents?)\b[^.]{0,40}?\b(?:do(?:es)?\s+not|did\s+not|don't|doesn't|never)\s+"
    + _NOT_SAYING + r"\b"
    r"|\b(?:sources?|materials?|documents?)\b[^.]{0,40}?\b(?:says?|mentions?)\s+nothing\b"
    r"|\bno\s+(?:source|document|material)s?\b[^.]{0,40}?\b(?:says?|mentions?|states?|answers?|covers?|was\s+found)\b"
    r"|\bnot\s+(?:covered|mentioned|addressed|answered|stated)\s+(?:in|by)\s+(?:the|any)\s+"
    r"(?:sources?|materials?|documents?)\b",
    re.IGNORECASE)
_FOLD = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'", "–": "-", "—": "-",
                       "\u00a0": " "})
_DROPPED = frozenset("*`")


def parse_numbers(inner: str) -> list[int]:
    """The numbers in the brackets of one citation, ranges expanded (``"1, 3-5"`` -> 1, 3, 4, 5)."""
    out: list[int] = []
    for m in _ITEM.finditer(inner):
        first, last = int(m.group(1)), int(m.group(2)) if m.group(2) else None
        if last is not None and first <= last and last - first <= MAX_RANGE:
            out.extend(range(first, last + 1))
        else:
            out.extend([first] if last is None else [first, last])
    return out


#: A whole line in single-asterisk or underscore italics (list markers and quote marks allowed).
_NOTE_LINE = re.compile(r"^[ \t>]*(?:[-*+] |\d+\. )?(?:\*(?!\*)[^\n]*[^*\s]\*|_(?!_)[^\n]*[^_\s]_)[ \t]*$",
                        re.MULTILINE)


def find_citations(text: str) -> list[tuple[int, int, list[int]]]:
    """``(start, end, numbers)`` of every citation in ``text``, in order."""
    return [(m.start(), m.end(), parse_numbers(m.group(1))) for m in CITATION.finditer(mask_code(text))]


def cited_numbers(text: str) -> list[int]:
    """Distinct cited numbers in order of first appearance."""
    return list(dict.fromkeys(n for _, _, numbers in find_citations(text) for n in numbers))


def _normalised(text: str) -> tuple[str, list[int]]:
    """``text`` folded for comparison, and for each of its characters the offset it came from."""
    out: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text.translate(_FOLD)):
        if ch in _DROPPED:
            continue
        if ch.isspace():
            if out and out[-1] != " ":
                out.append(" ")
                index.append(i)
            continue
        out.append(ch)
        index.append(i)
    while out and out[-1] == " ":
        out.pop()
        index.pop()
    return "".join(out), index


def _find(haystack: str, needle: str, start: int = 0) -> int:
    pos = haystack.find(needle, start)
    if pos < 0 and needle[:1].isalpha():  # "The catalog …" quoting "… the catalog …"
        pos = haystack.find(needle[0].swapcase() + needle[1:], start)
    return pos


def locate_quote(source: Source, quote: str) -> Quote | None:
    """Where ``quote`` occurs in ``source`` (as a :class:`Quote` with exact document offsets),
    or None. Omissions marked with an ellipsis are allowed: the fragments must occur in order,
    and the quote spans from the first to the last."""
    haystack, index = _normalised(source.text)
    fragments = [f for f in (_normalised(part)[0].strip(" \"'.,;:") for part in _ELLIPSIS.split(quote)) if f]
    if not fragments or not haystack:
        return None
    pos, first, last = 0, -1, -1
    for fragment in fragments:
        found = _find(haystack, fragment, pos)
        if found < 0:
            return None
        first = found if first < 0 else first
        last = found + len(fragment) - 1
        pos = last + 1
    return Quote.from_source(source, index[first], index[last] + 1)


@dataclass(frozen=True)
class Citations:
    """The outcome of checking a text's citations against its sources."""

    valid: list[int] = field(default_factory=list)
    invalid: list[int] = field(default_factory=list)
    uncited_sentences: list[str] = field(default_factory=list)
    bad_quotes: list[dict[str, Any]] = field(default_factory=list)
    cited_sentences: int = 0  # claim sentences that cite at least one existing source
    require_citations: bool = True

    @property
    def ok(self) -> bool:
        """No invented numbers, no misquotes, and (when required) no uncited claim."""
        return not self.invalid and not self.bad_quotes and not (self.require_citations and self.uncited_sentences)

    def summary(self) -> str:
        """One line for a status bar or a log."""
        parts = [f"{len(self.valid)} sources cited"]
        if self.invalid:
            parts.append("invalid " + ", ".join(f"[{n}]" for n in self.invalid))
        if self.uncited_sentences:
            parts.append(f"{len(self.uncited_sentences)} uncited sentences")
        if self.bad_quotes:
            parts.append(f"{len(self.bad_quotes)} quotes not found in their source")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"valid": list(self.valid), "invalid": list(self.invalid),
                "uncited_sentences": list(self.uncited_sentences), "bad_quotes": [dict(q) for q in self.bad_quotes],
                "cited_sentences": self.cited_sentences, "require_citations": self.require_citations, "ok": self.ok,
                "summary": self.summary()}


def _is_claim(body: str) -> bool:
    """Whether a sentence of written text states something (and so must cite)."""
    line = _LINE_MARKERS.sub("", body, count=1).strip()
    if not line or line.startswith("#") or _TABLE_RULE.match(line):
        return False
    if line.startswith("|"):
        line = line.strip("|").strip()
    if _ITALIC_LINE.fullmatch(line) or line.endswith(":"):
        return False
    if len(_WORD.findall(CITATION.sub(" ", line))) < MIN_SENTENCE_WORDS:
        return False
    return not _NO_ANSWER.search(line)


def claim_sentences(text: str) -> list[tuple[str, list[int]]]:
    """``(sentence, cited numbers)`` for every claim sentence of ``text``, in order.

    A citation right after a sentence's closing punctuation (``… in June. [2] Next …``)
    belongs to that sentence, although the splitter puts it at the head of the next one.
    """
    # A line in italics is a note of the code's (a label, a contradiction's difference), not
    # a claim, however many sentences it holds.
    masked = _NOTE_LINE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), mask_code(text))
    cites = find_citations(text)
    pieces: list[tuple[str, list[int]]] = []
    for start, end in sentence_spans(masked):
        lead = start
        while (head := next((c for c in cites if c[0] == lead), None)) is not None:
            if pieces:
                pieces[-1][1].extend(head[2])
            lead = head[1]
            while lead < end and (masked[lead].isspace() or masked[lead] in ".,;:"):
                lead += 1
        if lead < end:
            pieces.append((text[lead:end], [n for a, b, ns in cites if lead <= a and b <= end for n in ns]))
    return [(one_line(body), numbers) for body, numbers in pieces if _is_claim(body)]


def check_citations(text: str, sources: Sequence[Source], *, require_citations: bool = True) -> Citations:
    """Check ``text``'s citations against ``sources`` (see the module's docstring)."""
    by_number = {s.number: s for s in sources}
    numbers = cited_numbers(text)
    claims = claim_sentences(text)
    uncited = [body for body, cited in claims if not cited] if require_citations else []
    return Citations(
        valid=[n for n in numbers if n in by_number], invalid=[n for n in numbers if n not in by_number],
        uncited_sentences=uncited, bad_quotes=bad_quotes(text, sources),
        cited_sentences=sum(1 for _, cited in claims if any(n in by_number for n in cited)),
        require_citations=require_citations)


def quoted_spans(text: str) -> list[tuple[str, list[int]]]:
    """``(quoted text, cited numbers)`` for every quotation followed by a citation."""
    out = []
    for m in _QUOTED.finditer(mask_code(text)):
        group = "curly" if m.group("curly") is not None else "straight"
        quote = text[m.start(group) : m.end(group)]
        if "\n\n" in quote:
            continue  # a stray quotation mark paired across paragraphs
        numbers = [n for _, _, ns in find_citations(m.group("cites")) for n in ns]
        if numbers:
            out.append((quote, numbers))
    return out


def bad_quotes(text: str, sources: Sequence[Source]) -> list[dict[str, Any]]:
    """Quotations whose text occurs in none of the (existing) sources they cite."""
    by_number = {s.number: s for s in sources}
    out = []
    for quote, numbers in quoted_spans(text):
        cited = [by_number[n] for n in dict.fromkeys(numbers) if n in by_number]
        if cited and not any(locate_quote(s, quote) for s in cited):
            out.append({"quote": one_line(quote), "cited": [s.number for s in cited],
                        "reason": "not found verbatim in " + ", ".join(f"[{s.number}]" for s in cited)})
    return out


def located_quotes(text: str, sources: Sequence[Source]) -> list[Quote]:
    """The quotations of ``text`` that do occur in a source they cite, with exact offsets."""
    by_number = {s.number: s for s in sources}
    out: list[Quote] = []
    for quote, numbers in quoted_spans(text):
        for n in dict.fromkeys(numbers):
            found = locate_quote(by_number[n], quote) if n in by_number else None
            if found is not None:
                if found not in out:
                    out.append(found)
                break
    return out
