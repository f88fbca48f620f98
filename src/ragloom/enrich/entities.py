"""Typed entity mentions with exact offsets, found offline.

Four sources, in order of trust:

1. a **gazetteer** of known entities and their aliases per type (``entities.toml`` or
   ``entities.yaml`` in the workspace), matched in one regex pass built from a trie of the
   aliases, so thousands of aliases cost about as much as a few;
2. an **NER model** when one is installed with local weights (spaCy or GLiNER), through
   :class:`SpacyExtractor` / :class:`GlinerExtractor`;
3. **pattern rules**: dates (through :mod:`ragloom.parse.timeref`) and any regular
   expressions the gazetteer file declares;
4. **capitalised-phrase candidates**, typed by their shape (``… Inc`` is an organisation,
   ``Dr. …`` a person, ``… v2`` a product), or ``other``; a capital counts only where its
   position does not explain it, and the shapes kept by default are those measured at least
   0.8 precise (:data:`~ragloom.config.CANDIDATE_SHAPES`, ``bench/entity_precision.py``); and people named by
   their place in meeting notes: a speaker's turn, a list of attendees.

Overlaps are resolved in that order of trust, then by length. Aliases resolve to one canonical
entity; inside a document, a short form (``Apex``) resolves to the one longer name it starts
(``Apex HVAC``). What a whole workspace knows (a name counted wherever it is written, variants
merged) is :mod:`ragloom.enrich.census`'s.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ragloom.config import candidate_shapes
from ragloom.errors import ConfigError, MissingExtraError
from ragloom.parse.code import blank_spans, code_regions
from ragloom.parse.spans import DisjointSpans
from ragloom.parse.timeref import extract_time_refs
from ragloom.types import Chunk

DEFAULT_TYPES = ("customer", "service", "product", "location", "technician", "procedure", "person", "organisation", "date")
OTHER = "other"

SOURCE_RANK = {"gazetteer": 0, "model": 1, "pattern": 2, "candidate": 3}
CONFIDENCE = {"gazetteer": 0.95, "model": 0.8, "pattern": 0.9, "candidate": 0.5}
#: The shapes that name a person by place (a speaker's turn, a list of attendees).
BY_PLACE = ("person_turn", "person_list")


@dataclass(frozen=True, slots=True)
class EntityMention:
    start: int
    end: int
    text: str
    canonical: str
    type: str
    confidence: float
    source: str  # gazetteer | model | pattern | candidate
    #: The capitalised-phrase shape that found a candidate (``person_turn``, ...); empty otherwise.
    shape: str = ""

    @property
    def entity_id(self) -> str:
        return entity_id(self.type, self.canonical)


def entity_id(kind: str, canonical: str) -> str:
    return kind + ":" + hashlib.blake2b(canonical.casefold().encode(), digest_size=6).hexdigest()


# -- the gazetteer -----------------------------------------------------------------------------


def _trie_pattern(words: Iterable[str]) -> str:
    """A regex alternation of ``words`` factored into a trie (the engine then scans in C)."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = True

    def render(node: dict[str, Any]) -> str:
        ends = "" in node
        branches = [re.escape(ch) + render(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 and not ends else "(?:" + "|".join(branches) + ")"
        return body + ("?" if ends else "")

    return render(trie)


@dataclass
class Gazetteer:
    """Known entities: ``{type: {canonical name: [aliases]}}`` plus ``(type, regex)`` patterns."""

    entries: Mapping[str, Mapping[str, Sequence[str]]] = field(default_factory=dict)
    patterns: Sequence[tuple[str, str]] = ()

    def __post_init__(self) -> None:
        self._lookup: dict[str, tuple[str, str]] = {}  # casefolded alias -> (type, canonical)
        self._exact: dict[str, str] = {}  # casefolded alias -> alias as written
        for kind, names in self.entries.items():
            for canonical, aliases in names.items():
                for alias in (canonical, *aliases):
                    key = " ".join(alias.split()).casefold()
                    if key:
                        self._lookup.setdefault(key, (kind, canonical))
                        self._exact.setdefault(key, alias)
        self._regex = None
        if self._lookup:
            body = _trie_pattern(sorted(self._lookup, key=len, reverse=True))
            # Aliases are matched on word boundaries, case-insensitively, longest first.
            self._regex = re.compile(r"(?<!\w)" + body + r"(?!\w)", re.IGNORECASE)
        self._compiled = []
        for kind, pattern in self.patterns:
            try:
                self._compiled.append((kind, re.compile(pattern)))
            except re.error as exc:
                raise ConfigError(f"entity pattern {pattern!r} for type {kind!r} is not a valid regex ({exc})") from exc

    def __bool__(self) -> bool:
        return bool(self._lookup or self._compiled)

    def resolve(self, alias: str) -> tuple[str, str] | None:
        """(type, canonical) for a name or alias, if known."""
        return self._lookup.get(" ".join(alias.split()).casefold())

    def find(self, text: str) -> list[EntityMention]:
        found: list[EntityMention] = []
        if self._regex is not None:
            for m in self._regex.finditer(text):
                key = " ".join(m.group(0).split()).casefold()
                kind, canonical = self._lookup[key]
                exact = m.group(0) == self._exact[key]
                found.append(EntityMention(m.start(), m.end(), m.group(0), canonical, kind,
                                           CONFIDENCE["gazetteer"] if exact else 0.85, "gazetteer"))
        for kind, regex in self._compiled:
            for m in regex.finditer(text):
                if m.end() > m.start():
                    found.append(EntityMention(m.start(), m.end(), m.group(0), m.group(0), kind,
                                               CONFIDENCE["pattern"], "pattern"))
        return found

    @classmethod
    def load(cls, path: str | Path) -> Gazetteer:
        """Read a TOML or YAML gazetteer::

            [customer]
            "Apex HVAC" = ["Apex", "Apex HVAC Services"]

            [[pattern]]
            type = "procedure"
            regex = "\\\\bSOP-\\\\d+\\\\b"
        """
        path = Path(path)
        try:
            raw = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the gazetteer {path} ({exc.strerror}); fix entities.gazetteer") from exc
        if path.suffix.lower() in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError as exc:
                raise MissingExtraError("pyyaml", "local", f"reading {path}") from exc
            try:
                data = yaml.safe_load(raw) or {}
            except yaml.YAMLError as exc:
                raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
        else:
            try:
                data = tomllib.loads(raw)
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
        patterns = [(p.get("type", OTHER), p["regex"]) for p in data.pop("pattern", []) if "regex" in p]
        entries: dict[str, dict[str, list[str]]] = {}
        for kind, names in data.items():
            if not isinstance(names, Mapping):
                raise ConfigError(f"{path}: [{kind}] must map canonical names to lists of aliases")
            entries[kind] = {str(name): [str(a) for a in (aliases or [])] for name, aliases in names.items()}
        return cls(entries, patterns)


# -- optional NER models -------------------------------------------------------------------------


class ModelExtractor(Protocol):
    def __call__(self, text: str) -> list[EntityMention]: ...


SPACY_LABELS = {"PERSON": "person", "ORG": "organisation", "GPE": "location", "LOC": "location",
                "FAC": "location", "PRODUCT": "product", "DATE": "date", "NORP": "organisation"}


class SpacyExtractor:
    """Entities from a spaCy pipeline (``nlp``, or the installed model named ``model``)."""

    def __init__(self, nlp: Callable[[str], Any] | None = None, *, model: str = "en_core_web_sm",
                 labels: Mapping[str, str] = SPACY_LABELS) -> None:
        if nlp is None:
            try:
                import spacy
            except ImportError as exc:
                raise MissingExtraError("spacy", "ner", "spaCy entity extraction") from exc
            nlp = spacy.load(model)
        self.nlp, self.labels = nlp, labels

    def __call__(self, text: str) -> list[EntityMention]:
        out = []
        for ent in self.nlp(text).ents:
            kind = self.labels.get(ent.label_)
            if kind:
                out.append(EntityMention(ent.start_char, ent.end_char, ent.text, ent.text, kind,
                                         CONFIDENCE["model"], "model"))
        return out


class GlinerExtractor:
    """Entities from a GLiNER model with local weights; the labels are the entity types."""

    def __init__(self, model: Any, *, types: Sequence[str] = DEFAULT_TYPES, threshold: float = 0.5) -> None:  # noqa: ANN401
        if isinstance(model, str | Path):
            try:
                from gliner import GLiNER
            except ImportError as exc:
                raise MissingExtraError("gliner", "ner", "GLiNER entity extraction") from exc
            model = GLiNER.from_pretrained(str(model), local_files_only=True)
        self.model, self.types, self.threshold = model, list(types), threshold

    def __call__(self, text: str) -> list[EntityMention]:
        out = []
        for ent in self.model.predict_entities(text, self.types, threshold=self.threshold):
            out.append(EntityMention(ent["start"], ent["end"], ent["text"], ent["text"], ent["label"],
                                     float(ent.get("score", CONFIDENCE["model"])), "model"))
        return out


# -- capitalised-phrase candidates ------------------------------------------------------------
#
# A capital letter is evidence of a name only where position does not explain it: at a line or
# sentence start, in a table cell, a heading or a line of shouted licence text, "Platform
# devices", "Payload Format" and "AS IS" are capitalised by where they stand. Each document is
# its own evidence: a phrase is a name when it also stands capitalised in the middle of a
# sentence, and not when its lower-case form is written too ("the normal API" beside "Normal
# API"). Code (backticks, literal blocks, doctest lines, identifiers with "_", dotted names,
# calls) is never a name. bench/entity_precision.py measures every shape on a labelled sample.

_WEAK = "weak"  # a lone word capitalised by position: kept only if it turns out to be a short form


@dataclass(frozen=True, slots=True)
class Candidate:
    """A capitalised-phrase mention and the shape that found it (a key of :data:`~ragloom.config.CANDIDATE_SHAPES`)."""

    mention: EntityMention
    shape: str


_JOINER = r"(?:of|and|&|the|de|von|van|for)"
_CAP_WORD = r"(?:[A-Z][\w&'’.-]*[\w&]|[A-Z])"
_GAP = r"(?: |[ \t]*\n[ \t]*)"  # one space, or one line break: a name may wrap (tabs and runs of spaces are columns)
_VERSION = r"(?:v\d+(?:\.\d+)*|\d+(?:\.\d+)+)"
_CANDIDATE = re.compile(
    rf"(?<![\w&#@/.-]){_CAP_WORD}(?:{_GAP}(?:{_JOINER}{_GAP})?{_CAP_WORD})*"
    rf"(?: {_VERSION}(?!\w|\.\d))?(?![\w])"  # an optional version: "Fleet Tracker v3", "in Python 3.13."
)
_ORG_SUFFIX = re.compile(
    r"\b(?:Inc|LLC|Ltd|Corp|Corporation|Company|Co|Group|GmbH|AG|SA|PLC|Partners|Research|Labs?|Systems|"
    r"Technologies|Software|Solutions|Services|Bank|University|Institute|Foundation|Agency|Association|"
    r"Plumbing|HVAC|Electric|Electrical|Heating|Cooling|Roofing|Builders|Contractors|Logistics)\.?$"
)
_ORG_PREFIX = re.compile(r"^(?:University|Bank|Institute|Corporation|Foundation|Ministry|Department|College|Museum|"
                         r"Council|Bureau|Office)\s+(?:of|for)\s")
_PERSON_TITLE = re.compile(r"(?<![\w.])(?:Mr|Mrs|Ms|Dr|Prof|Sir)\.?[ \t]+$")  # searched up to the name
_ROLE_ACRONYMS = r"(?:CEO|CTO|CFO|COO|CPO|VP|SVP|EVP|PM)"
#: What follows a person's name: a team or role in parentheses ("(Finance)", "(CEO)"; not an
#: acronym being defined, "(EEE)", "(PyPI)"), ", CEO", a colon and what they said ("Luis: the
#: bus is late"; a capital after the colon is as often a title's subtitle), a verb of speech.
_PERSON_CONTEXT = re.compile(
    rf"^(?:[ \t]*\((?:{_ROLE_ACRONYMS}\b[\w ,&-]*|(?![A-Za-z]*[A-Z][A-Za-z]*[A-Z][a-z]*\))[A-Z][\w&-]*[a-z][\w ,&-]*)\)"
    rf"|,\s*(?:the\s+)?(?:{_ROLE_ACRONYMS}|Head|Director|Manager|Senior|Lead|Engineer|Analyst|Principal|Founder)\b"
    r"|:[ \t]+[a-z]|\s+(?:said|says|asked|told|wrote)\b)")
#: Words of job titles: "VP Engineering", "Senior Product Manager" are roles, not names.
_ROLE_WORDS = frozenset("""VP SVP EVP CEO CTO CFO COO CPO Head Lead Senior Junior Principal Staff Chief Manager Director
    Engineer Officer President Analyst Architect Designer Owner Coordinator Specialist Consultant Intern""".split())
#: "Maya Okafor (Product)": what follows a person's name in parentheses is a team or a role.
_AFTER_NAME = re.compile(r"[A-Z][a-z]+ [A-Z][a-z]+ \($")
_NAME_WORD = re.compile(r"[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)*")
_VERSION_END = re.compile(rf"\s{_VERSION}$")
_PRODUCT_WORDS = frozenset("App API SDK Portal Platform Suite Cloud Online Catalog Dashboard Engine".split())
#: Words that a number follows without making a product: "Version 1.2", "Section 3.1".
_NOT_PRODUCTS = frozenset("""Version Release Revision Rev Section Chapter Part Step Phase Stage Level Figure Table Page
    Appendix Item Issue Volume Vol Build Patch Update Through Double Float Rule Example Note Option Case Class Type
    Article Clause Paragraph Line Test""".split())
#: Capitalised words that are not names on their own (sentence starters, days, headings).
COMMON = frozenset(
    """A An The This That These Those It Its We Our Us You Your They Their He She His Her I In On At For From To
    Of By With As If When While After Before Because But And Or Not No Yes All Any Each Every Some Most More Less
    Many Much Few New Old First Second Third Last Next Other Another Such Both Either Neither Then Than There Here
    Where What Which Who Whom Whose Why How Also Only Just Still Even Already Today Tomorrow Yesterday Monday
    Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August September
    October November December Q1 Q2 Q3 Q4 H1 H2 Note Notes Status Owner Date Author Attendees Decisions Discussion
    Summary Goals Scope Risks Risk Mitigation Problem Requirements Milestones Questions Action Items Follow Ups
    Overview Introduction Conclusion Background Context Proposal Alternatives Recommendation Let Do Does Did Is Are
    Was Were Be Been Will Would Should Could Can May Might Must Shall Please Thanks See Yes Maybe Realistically
    Together Once Until During Since Without Within Across Per Via Up Down Out Over Under Again Further However
    Therefore Thus Otherwise Instead Meanwhile Moreover Furthermore Finally Similarly Currently Usually Normally
    Typically Generally Sometimes Often Always Never Perhaps Unfortunately Fortunately""".split()
)
#: Words of code that are capitalised: literals and markers, never names.
CODE_WORDS = frozenset("None True False NULL Null TODO FIXME XXX EOF NaN Ellipsis".split())
#: All-capital words that name a kind of thing, not one thing.
GENERIC_ACRONYMS = frozenset("""API APIS SDK CPU GPU RAM ROM DMA DLL URL URI ID IDS OS UI UX IO PDF CSV TSV TXT FAQ
    KPI OKR OKRS ETA ASAP FYI CEO CTO CFO COO VP PM QA HR IT EOD BOM LGTM PR PRD MVP SLA SLO TBD TBA N/A OK AM PM
    GMT UTC DB SQL CLI GUI IP TCP UDP DNS SSH TLS SSL ASCII README NB PS RFC IRQ IRQS PID UID GID FD ABI ISA""".split())
_ENUMERATION = re.compile(r"[A-Z]{1,2}\d{1,2}[a-z]?|[A-Z]{2,}s")  # KR1, P0, H2 and plurals (URBs, QBRs)
#: Words a candidate phrase does not end with: the common words, and the joiners inside a name
#: ("Bank of America", "Smith & Sons") that are left dangling at its end.
_TRAILING = COMMON | {"of", "and", "&", "the", "de", "von", "van", "for"}
_LEADING = COMMON | {"of", "and", "&", "the", "de", "von", "van", "for", "Copyright", "Portions"}
_HEADING_LINE = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_LINE_MARKER = re.compile(r"[ \t]*(?:(?:[-*+>#]+|\d+(?:\.\d+)*[.)]?|[A-Za-z][.)]|\|)[ \t]*)*")
_LOWER_WORD = re.compile(r"(?<![\w'’-])[a-z][a-z'’-]*[a-z](?![\w'’-])")
#: Not prose, besides the code blocks and spans of :func:`ragloom.parse.code.code_regions`.
_NOT_PROSE_LINES = re.compile(
    r"^[ \t]*(?:\.\. |>>>|\.\.\.[ \t])[^\n]*"  # reST directives and comments, doctest lines
    r"|https?://\S+",  # web addresses
    re.MULTILINE,
)
_MAIL_DOMAIN = re.compile(r"@[\w-]+\.[\w.]+")  # a mail address, found from its "@" (a scan for its start is slow)
_MAIL_USER = re.compile(r"(?<![\w.+-])[\w.+-]+$")
_LETTERS = re.compile(r"[^\W\d_]")
_WORD_BEFORE = re.compile(r"(?<![\w&'’.-])(\w[\w&'’.-]*[\w&]|\w)\s+$")
_WORD_AFTER = re.compile(r"\s+(\w[\w&'’.-]*[\w&]|\w)(?![\w&'’-])")
_FREE, _START, _HEADING, _SHOUT, _COLON = range(5)


def code_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds code, not prose (fenced and inline code and literal blocks, found by
    :func:`ragloom.parse.code.code_regions`; reST directive and doctest lines, web and mail
    addresses), sorted by start; spans may overlap."""
    spans = code_regions(text, inline=True) + [(m.start(), m.end()) for m in _NOT_PROSE_LINES.finditer(text)]
    for m in _MAIL_DOMAIN.finditer(text):
        user = _MAIL_USER.search(text, max(0, m.start() - 64), m.start())
        if user is not None:
            spans.append((user.start(), m.end()))
    return sorted(spans)


def _is_titled(word: str) -> bool:
    return word[:1].isupper() and word[1:].islower()


def _looks_like_code(prose: str, start: int, end: int) -> bool:
    phrase = prose[start:end]
    if "_" in phrase or prose[end : end + 1] in ("(", "=", "[") or prose[start - 1 : start] in ("=", "\\"):
        return True
    # A dotted name is code when what follows the dot is an identifier ("TestCase.assertEqual",
    # "Message.get_payload"), not a domain or a file type ("BeOpen.com", "Node.js").
    return bool(re.search(r"\w\.[a-z]*[A-Z_]", phrase))


class _Document:
    """What one document says about its capitalised phrases: where code is, how each word is written."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.prose = blank_spans(text, code_spans(text), "\x00")  # the text with code blanked out, same offsets
        self.lower = Counter(_LOWER_WORD.findall(self.prose))
        self.free_words: Counter[str] = Counter()  # capitalised where position does not explain it
        self.free_phrases: Counter[str] = Counter()
        self.written: Counter[str] = Counter()  # words of the capitalised runs, wherever they stand
        self._lines: dict[int, int] = {}
        self._pairs: set[tuple[str, str, int]] | None = None
        self.pieces: list[tuple[int, int, int]] = []
        for m in _CANDIDATE.finditer(self.prose):
            for a, b in self._split(m.start(), m.end()):
                where = self.slot(a)
                self.pieces.append((a, b, where))
                phrase = " ".join(text[a:b].split())
                self.written.update(phrase.split())
                multiword = " " in phrase
                if where == _FREE or where == _COLON and multiword:
                    self.free_phrases[phrase] += 1
                if where in (_FREE, _START, _COLON):
                    for i, word in enumerate(phrase.split()):
                        if i or where == _FREE or where == _COLON and multiword:
                            self.free_words[word] += 1

    def line_kind(self, line_start: int) -> int:
        kind = self._lines.get(line_start)
        if kind is None:
            end = self.text.find("\n", line_start)
            line = self.text[line_start : end if end >= 0 else len(self.text)]
            letters = _LETTERS.findall(line)
            if len(letters) >= 12 and len(line.split()) >= 3 and sum(map(str.isupper, letters)) >= 0.7 * len(letters):
                kind = _SHOUT
            elif _HEADING_LINE.match(line):
                kind = _HEADING
            else:
                kind = _FREE
            self._lines[line_start] = kind
        return kind

    def slot(self, start: int) -> int:
        """Whether the capital at ``start`` is explained by position (line or sentence start, a
        table cell, a heading, a shouted line) or not (``_FREE``)."""
        line_start = self.prose.rfind("\n", 0, start) + 1
        kind = self.line_kind(line_start)
        if kind != _FREE:
            return kind
        before = self.prose[line_start:start].rstrip(" \t*_\"'“‘([")
        if not before or _LINE_MARKER.fullmatch(before) or before[-1] in ".!?|":
            return _START
        return _COLON if before[-1] == ":" else _FREE

    def common(self, word: str) -> bool:
        """A capitalised word this document also writes in lower case at least as often as it
        writes it capitalised mid-sentence."""
        return word in COMMON or self.lower[word.lower()] >= max(1, self.free_words[word])

    def lower_variant(self, words: Sequence[str]) -> bool:
        """Whether the phrase is also written with one of its capitalised words in lower case
        ("the normal API" beside "Normal API"), judged on its neighbouring word pairs."""
        if self._pairs is None:
            self._pairs = self._lower_pairs()
        folded = [w.casefold() for w in words]
        return any((folded[i], folded[i + 1], i + j) in self._pairs
                   for i in range(len(words) - 1) for j in (0, 1) if _is_titled(words[i + j]))

    def _lower_pairs(self) -> set[tuple[str, str, int]]:
        """The word pairs of the prose in which a word that some capitalised phrase capitalises
        is written in lower case, as (first, second, which one was lower case): one search for
        those words, however many phrases ask (a search per phrase made long documents quadratic)."""
        phrases = (self.text[a:b].split() for a, b, _ in self.pieces)
        titled = {w.lower() for words in phrases if len(words) > 1 for w in words if _is_titled(w)}
        pairs: set[tuple[str, str, int]] = set()
        if not titled:
            return pairs
        prose = self.prose
        for m in re.finditer(r"(?<![\w&'’.-])(?:" + _trie_pattern(titled) + r")(?![\w&'’-])", prose):
            word = m.group(0)
            before = _WORD_BEFORE.search(prose, max(0, m.start() - 60), m.start())
            if before is not None:
                pairs.add((before.group(1).casefold(), word, 1))
            after = _WORD_AFTER.match(prose, m.end(), m.end() + 60)
            if after is not None:
                pairs.add((word, after.group(1).casefold(), 0))
        return pairs

    def _split(self, start: int, end: int) -> Iterable[tuple[int, int]]:
        """The names inside one capitalised run: split at "and" and "the" ("Jobber and Housecall
        Pro", "Build the QuickBooks"), after a possessive, at a line break out of a heading or a
        table, and trimmed of function words and enumerators at either end ("of Python 3.3", "Task C")."""
        text = self.text
        group: list[tuple[int, int]] = []
        previous_end = start
        for m in re.finditer(r"\S+", text[start:end]):
            a, b = start + m.start(), start + m.end()
            word = text[a:b]
            if group and "\n" in text[previous_end:a] and self.line_kind(text.rfind("\n", 0, previous_end) + 1) != _FREE:
                yield from self._trim(group)
                group = []
            previous_end = b
            if word in ("and", "the"):
                yield from self._trim(group)
                group = []
                continue
            possessive = word.endswith(("'s", "’s")) and len(word) > 2
            group.append((a, b - 2 if possessive else b))
            if possessive:
                yield from self._trim(group)
                group = []
        yield from self._trim(group)

    def _trim(self, group: list[tuple[int, int]]) -> Iterable[tuple[int, int]]:
        text = self.text
        words = [(a, b - len(text[a:b]) + len(text[a:b].rstrip(".'’"))) for a, b in group]
        words = [(a, b) for a, b in words if b > a]
        while words and text[words[0][0] : words[0][1]] in _LEADING:
            words.pop(0)
        while words and (text[words[-1][0] : words[-1][1]] in _TRAILING or words[-1][1] - words[-1][0] == 1 and len(words) > 1):
            words.pop()
        if words:
            yield words[0][0], words[-1][1]


def _classify(doc: _Document, start: int, end: int, where: int) -> Candidate | None:
    """The shape of one capitalised piece, the first that fits of: company word, title, person
    context, version, product word, then untyped (an acronym, a name, or a weak lone word)."""
    text = doc.text
    if _looks_like_code(doc.prose, start, end) or where == _SHOUT:
        return None
    words = text[start:end].split()
    phrase = " ".join(words)
    if len(words) > 1 and all(w.isupper() for w in words):
        return None  # shouted, not named
    seen_free = doc.free_phrases[phrase] > 0
    after = text[end : end + 40]

    def made(kind: str, confidence: float, shape: str) -> Candidate:
        return Candidate(EntityMention(start, end, text[start:end], text[start:end], kind, confidence, "candidate",
                                       shape), shape)

    name_like = all(_NAME_WORD.fullmatch(w) and w not in COMMON for w in words)
    if len(words) > 1 and (_ORG_SUFFIX.search(phrase) and words[0] not in _TRAILING or _ORG_PREFIX.match(phrase)) \
            and (where != _HEADING or doc.free_phrases[phrase]):
        return made("organisation", 0.6, "organisation")
    if name_like and _PERSON_TITLE.search(text, max(0, start - 8), start):
        return made("person", 0.6, "person_title")
    if name_like and len(words) in (2, 3) and where != _HEADING and _PERSON_CONTEXT.match(after) \
            and text[start - 1 : start] != ":" \
            and not any(doc.common(w) for w in words):
        return made("person", 0.55, "person_context")
    version = _VERSION_END.search(phrase)
    if version:
        name = phrase[: version.start()].split()
        numbers = version.group(0).strip().lstrip("v").split(".")
        if name and name[0] not in _NOT_PRODUCTS and not (len(name) > 1 and all(w.isupper() for w in name)) \
                and all(len(n) <= 4 for n in numbers):
            return made("product", 0.5, "product_version")
        return None
    if len(words) > 1 and words[-1] in _PRODUCT_WORDS and len(words[0]) > 1 and seen_free \
            and not doc.lower_variant(words):
        return made("product", 0.5, "product_name")
    if len(words) == 1:
        word = words[0]
        if word in CODE_WORDS or word in COMMON or len(word) < 2:
            return None
        letters = "".join(ch for ch in word if ch.isalpha())
        if letters.isupper() and len(letters) > 1:
            if word.upper() in GENERIC_ACRONYMS or _ENUMERATION.fullmatch(word) or doc.written[word] < 2 \
                    or len(word) > 3 and word.isalpha() and doc.lower[word.lower()]:  # UPDATE beside "update"
                return None
            return made(OTHER, 0.35, "acronym")
        if _ENUMERATION.fullmatch(word) or _AFTER_NAME.search(text, max(0, start - 40), start):
            return None
        return made(OTHER, 0.35, _WEAK if doc.common(word) or not doc.free_words[word] else "name")
    if seen_free and not doc.lower_variant(words) and not any(w in CODE_WORDS or w in _ROLE_WORDS for w in words) \
            and not _AFTER_NAME.search(text, max(0, start - 40), start):
        return made(OTHER, 0.35, "name")
    return None


# -- people by their place in meeting notes ------------------------------------------------------
#
# Meeting notes name people where the capital-position rule above finds no evidence: at the
# start of a speaker's turn ("Eric Huss: I think …", "- **Jane Doe**: …") and in lists of people
# ("Attendees: A, B, C", the lines under an "Attendance" heading). There the place is the
# evidence. One word is a person in a list of people, or when it opens two turns of the document
# and is written in lower case less often than that ("Decision:" is, "Mara:" is not).

_TURN = re.compile(
    r"^[ \t]*(?:(?:[-*+>]|\d{1,3}[.)])[ \t]+)*(?:\*\*|__)?"
    # possessive: the colon must follow the whole name at once
    r"(?P<name>[^\W\d_][\w'’-]*+(?:[ \t][^\W\d_][\w'’-]*+){0,3}+)"
    # what follows is said, not linked
    r"(?:\*\*|__)?[ \t]*:(?:\*\*|__)?[ \t]+(?=[^\s<\[(`])(?!https?:)", re.MULTILINE)
_ROSTER_LINE = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?(?:(?:\*\*|__)?(?P<label>[A-Za-z][A-Za-z -]{0,40}?)(?:\*\*|__)?[ \t]*:(?:\*\*|__)?[ \t]*)?"
    r"(?P<items>\S[^\n]*)$", re.MULTILINE)
_ROSTER_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(?:\*\*)?(?:attendees|attendance|participants|present|people)"
                             r"\b[^\n]*$", re.MULTILINE | re.IGNORECASE)
_ANY_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]", re.MULTILINE)
#: The last word of a label that introduces people: "Council members: …", "Facilitator: …".
_ROSTER_WORDS = frozenset("""attendees attendance attending present participants members observers guests invitees
    apologies regrets absent facilitator facilitators chair chairs host hosts scribe notetaker notetakers note-taker
    note-takers minute-taker minute-takers minutes moderator moderators presenters speakers directors
    representatives unavailable missing""".split())
#: A line that starts with a label of people (a cheap search first: most documents have none).
#: Its words are matched case by case: an IGNORECASE search took three times as long.
_ROSTER_LABEL = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?(?:[A-Za-z]+[ -]){0,3}(?:"
                           + _trie_pattern([*_ROSTER_WORDS, *(w.capitalize() for w in _ROSTER_WORDS)])
                           + r")(?:\*\*|__)?[ \t]*:", re.MULTILINE)
_ROSTER_ITEM = re.compile(r"[^,;]+")
_ROSTER_AND = re.compile(r"(?<![ \t])[ \t]+(?:and|&)[ \t]+")  # from a run's start: linear on runs of blanks
_ROSTER_NAME = re.compile(r"[ \t]*@?(?P<name>[^\W\d_][\w'’-]*(?:[ \t]+[^\W\d_][\w'’-]*){0,3})"
                          r"[ \t]*(?:\([^)\n]*\))?[ \t.]*")  # "Maya Okafor (Product)"
#: Words that open labelled lines of notes and documentation, not turns ("Returns: …").
_LABEL_WORDS = frozenset("""Link Links Label Labels Goal Goals Proposal Conclusion Decision Decide Discuss Info Outcome
    Outcomes Update Updates Agenda Minutes Topic Topics Observers Council Attendance Facilitator Total Time Estimate
    Example Examples Warning Important Tip Caution Source Sources Reference References Result Results Reason Pros Cons
    Edit Reminder Consensus Unavailable Missing Room Nominated Apologies Previous Related Current Budget Travel Input
    Output Returns Return Raises Parameters Args Arguments Usage Default Type Value Values Name Version Availability
    Changed Deprecated Added Subject Cc Re Fwd Bug Fix Feature Description Details Steps Expected Actual Priority
    Assignee Reviewer Reviewers Contact Email Phone Website Location Venue Solution Problem Issue Issues Requirement
    Answer Question Action Actions Comment Comments Response Recap Purpose Audience Attachments Meeting Call Notes
    Present Absent Guests Members Participants Feedback Announcement Announcements Vote Votes Motion Agreed Resolved
    Resolution Follow Next Done Open Closed Pending Blocked Todo Tasks Task Step Phase Stage Option Options Pro Con
    Yes No Cost Costs Price Impact Effort Confidence Reach Score Owner Owners Lead Leads Team Teams Inform
    Volunteer Volunteers""".split())
_PARTICLES = frozenset("van von de der den da di du la le del bin al".split())


def _name_token(word: str, *, alone: bool) -> bool:
    """A word that can stand in a person's name: letters (with ``-`` or an apostrophe) after a
    capital; all capitals only for a short handle standing alone ("TC")."""
    letters = word.replace("-", "").replace("'", "").replace("’", "")
    if len(letters) < 2 or not letters.isalpha() or not word[0].isupper():
        return False
    if letters.isupper():
        return alone and len(letters) <= 4 and word not in GENERIC_ACRONYMS
    return not (word in COMMON or word in CODE_WORDS or word in _ROLE_WORDS or word in _LABEL_WORDS
                or word in _PRODUCT_WORDS)


def _person_words(words: Sequence[str]) -> bool:
    if not words or len(words) > 4 or words[0] in _PARTICLES or words[-1] in _PARTICLES:
        return False
    named = [w for w in words if w not in _PARTICLES]
    if len(named) > 3 or len(named) < len(words) - 1:
        return False
    return all(_name_token(w, alone=len(words) == 1) for w in named) \
        and not _ORG_SUFFIX.search(" ".join(words))


def _rosters(doc: _Document) -> Iterable[tuple[int, int]]:
    """The lines that list people: those with a label of people, and every line under an
    attendance heading up to the next heading."""
    prose = doc.prose
    spans: list[tuple[int, int]] = []  # where to look: under an attendance heading, or a line with a label of people
    for m in _ROSTER_HEADING.finditer(prose):
        nxt = _ANY_HEADING.search(prose, m.end())
        spans.append((m.end(), nxt.start() if nxt else len(prose)))
    labelled = [(m.start(), m.end()) for m in _ROSTER_LABEL.finditer(prose)]
    for a, b in sorted(spans + labelled):
        inside = (a, b) in spans
        for m in _ROSTER_LINE.finditer(prose, a, b if inside else prose.find("\n", b) % (len(prose) + 1)):
            label = (m.group("label") or "").strip()
            if inside and len(label.split()) <= 3 or label and label.split()[-1].lower() in _ROSTER_WORDS:
                yield m.start("items"), m.end("items")


def _roster_names(doc: _Document, start: int, end: int) -> list[tuple[int, int]]:
    """The people named in one list line, when at least half of its items are names."""
    prose = doc.prose
    # "A, B and C": "and" separates items like a comma (replaced by one of the same length).
    line = _ROSTER_AND.sub(lambda m: "," + " " * (len(m.group(0)) - 1), prose[start:end])
    names, items = [], 0
    for item in _ROSTER_ITEM.finditer(line):
        if not item.group(0).strip():
            continue
        items += 1
        m = _ROSTER_NAME.fullmatch(prose, start + item.start(), start + item.end())
        if m is None:
            continue
        words = m.group("name").split()
        if _person_words(words) and all(doc.lower[w.lower()] < max(1, doc.written[w]) for w in words):
            names.append((m.start("name"), m.end("name")))
    return names if names and 2 * len(names) >= items else []


def _name_shaped(word: str) -> bool:
    """A word written as a name is: a capital, then lower case, for each part of "Jean-Luc",
    "O'Brien" or "McKay" (not "GitHub", "AssertionError", "Signed-off-by")."""
    parts = re.split(r"[-'’]", word)
    for i, part in enumerate(parts):
        part = _NAME_PREFIX.sub("", part, count=1) if len(part) > 4 else part  # noqa: PLW2901
        if not part[:1].isupper() or not (part[1:].islower() or not part[1:] and i < len(parts) - 1):
            return False
    return True


_NAME_PREFIX = re.compile(r"^(?:Mc|Mac|Le|La|De|Di|Da|Du|Van|Von)(?=[A-Z])")
_SPOKEN = re.compile(r"(?<![\w'’/.-])[a-z]+(?![\w'’/-]|\.\w)")  # a lower-case word (not a path's) after a turn


def _people(doc: _Document) -> list[tuple[int, int, str]]:
    """People named by their place: ``(start, end, shape)``, shape ``person_turn`` or ``person_list``.

    A turn is a name at a line's start, a colon, then speech (three words or more, two of them
    lower case: "Enum: 65/0x41" and "Title: **Linux Kernel**" are labels); a document's turns
    count when two people or more take them (documentation has "Rationale: The idea is …" once)."""
    prose = doc.prose
    found: dict[tuple[int, int], str] = {}
    listed: set[str] = set()
    for a, b in _rosters(doc):
        for start, end in _roster_names(doc, a, b):
            found[(start, end)] = "person_list"
            listed.update(prose[start:end].split()[:1])
    turns: list[tuple[int, int, bool]] = []
    for m in _TURN.finditer(prose):
        end = prose.find("\n", m.end())
        said = prose[m.end() : end if end >= 0 else len(prose)]
        turns.append((m.start("name"), m.end("name"), len(said.split()) >= 3 and len(_SPOKEN.findall(said)) >= 2))
    spoken = Counter(prose[a:b] for a, b, speech in turns if speech)
    speakers: dict[tuple[int, int], str] = {}
    others: set[str] = set()  # who else takes turns: people the document lists
    for a, b, _ in turns:
        name = prose[a:b]
        words = name.split()
        if (a, b) in found or not _person_words(words):
            continue
        if len(words) == 1 and name in listed:
            found[(a, b)] = "person_turn"  # a word the document lists among its people
            others.add(name)
            continue
        if not spoken[name] or not all(_name_shaped(w) for w in words if w not in _PARTICLES):
            continue
        if len(words) == 1 and (spoken[name] < 2 or doc.lower[name.lower()] >= spoken[name]):
            continue  # one word must open two turns, and be written in lower case less often
        if any(doc.lower[w.lower()] >= max(1, doc.written[w]) for w in words):
            continue  # "Next Steps:" beside "next steps"
        speakers[(a, b)] = name
    if len(set(speakers.values()) | others) >= 2 or any(name.split()[0] in listed for name in speakers.values()):
        found.update(dict.fromkeys(speakers, "person_turn"))
    return sorted((a, b, shape) for (a, b), shape in found.items())


def find_candidates(text: str) -> list[Candidate]:
    """Every capitalised-phrase candidate of ``text`` with its shape, in text order; lone words
    capitalised only by position come with the shape ``"weak"`` (a possible short form)."""
    doc = _Document(text)
    out = []
    for start, end, where in doc.pieces:
        candidate = _classify(doc, start, end, where)
        if candidate is not None:
            out.append(candidate)
    people = _people(doc)
    if not people:
        return out
    # A person named by place replaces what the capitalised pass made of the same words, unless
    # that pass already found the same person ("Maya Okafor (Product)" in a list of attendees).
    typed = {(c.mention.start, c.mention.end) for c in out if c.mention.type == "person"}
    taken = DisjointSpans()
    for start, end, shape in people:
        if (start, end) not in typed:
            taken.add(start, end)
            out.append(Candidate(EntityMention(start, end, text[start:end], text[start:end], "person", 0.55,
                                               "candidate", shape), shape))
    kept = [c for c in out if c.shape in ("person_turn", "person_list") or taken.is_free(c.mention.start, c.mention.end)]
    return sorted(kept, key=lambda c: c.mention.start)


def capitalised_candidates(text: str, *, shapes: bool | Iterable[str] = True) -> list[EntityMention]:
    """The capitalised-phrase mentions of ``text`` of the given shapes (before short forms are
    resolved, which needs the other sources: see :class:`EntityExtractor`)."""
    keep = candidate_shapes(shapes)
    return [c.mention for c in find_candidates(text) if c.shape in keep]


# -- the extractor --------------------------------------------------------------------------------


def _date_mentions(text: str) -> list[EntityMention]:
    out = []
    for ref in extract_time_refs(text):
        if ref.kind in ("date", "month") and ref.resolved:
            out.append(EntityMention(ref.start, ref.end, ref.text, ref.canonical, "date", CONFIDENCE["pattern"], "pattern"))
    return out


Tagged = tuple[EntityMention, str]  # a mention and what found it: its source, or its candidate shape


class EntityExtractor:
    """Combines the sources above; ``types`` limits what is kept (``other`` is kept only if listed).

    ``candidates`` chooses the capitalised-phrase shapes: ``True`` the defaults
    (:data:`~ragloom.config.DEFAULT_CANDIDATE_SHAPES`), ``False`` none, or a list of names from
    :data:`~ragloom.config.CANDIDATE_SHAPES` (``"all"`` for every one).
    """

    def __init__(self, gazetteer: Gazetteer | None = None, *, models: Sequence[ModelExtractor] = (),
                 types: Sequence[str] = DEFAULT_TYPES, candidates: bool | Iterable[str] = True,
                 dates: bool = True) -> None:
        self.gazetteer = gazetteer or Gazetteer()
        self.models = list(models)
        self.types = set(types)
        self.shapes = candidate_shapes(candidates)
        self.candidates = bool(self.shapes)
        self.dates = dates

    def __call__(self, text: str) -> list[EntityMention]:
        return [m for m, _ in self.explain(text)]

    def explain(self, text: str) -> list[Tagged]:
        """The mentions with what found each one: ``gazetteer``, ``model``, ``pattern``, or the
        candidate shape (a key of :data:`~ragloom.config.CANDIDATE_SHAPES`)."""
        found: list[Tagged] = [(m, m.source) for m in self.gazetteer.find(text)]
        for model in self.models:
            found.extend((self._canonicalise(m), m.source) for m in model(text))
        if self.dates:
            found.extend((m, m.source) for m in _date_mentions(text))
        if self.shapes:
            found.extend((self._canonicalise(c.mention), c.shape) for c in find_candidates(text))
        kept = self._short_forms(self._resolve_overlaps(found))
        return [(m, why) for m, why in kept
                if m.type in self.types and (m.source != "candidate" or why in self.shapes)]

    def _canonicalise(self, mention: EntityMention) -> EntityMention:
        known = self.gazetteer.resolve(mention.text)
        if known is None:
            return mention
        kind, canonical = known
        return EntityMention(mention.start, mention.end, mention.text, canonical, kind,
                             max(mention.confidence, 0.85), mention.source, mention.shape)

    @staticmethod
    def _resolve_overlaps(found: list[Tagged]) -> list[Tagged]:
        ranked = sorted(found, key=lambda t: (SOURCE_RANK[t[0].source], -(t[0].end - t[0].start), t[0].start))
        occupied = DisjointSpans()
        return sorted((t for t in ranked if occupied.add(t[0].start, t[0].end)), key=lambda t: t[0].start)

    @staticmethod
    def _short_forms(tagged: list[Tagged]) -> list[Tagged]:
        """A one-word ``other`` mention that starts a longer typed name of the document becomes
        that entity ("Apex" for "Apex HVAC"), or, for a product named by a version or a product
        word ("Python 3.11", "Windows API"), that product itself ("Python"). A word that starts
        names of different entities ("Python Software Foundation", "Python 3.11") stays as it was."""
        heads: dict[str, set[tuple[str, str]]] = {}
        for m, why in tagged:
            words = m.canonical.split()
            if len(words) < 2 or m.type in (OTHER, "date"):
                continue
            if why in ("product_version", "product_name"):
                version = _VERSION_END.search(m.text)
                named = (m.text[: version.start()] if version else m.text.rsplit(None, 1)[0]).split()
                if len(named) == 1:
                    heads.setdefault(named[0].casefold(), set()).add(("product", ""))
                continue
            heads.setdefault(words[0].casefold(), set()).add((m.type, m.canonical))
        alone = Counter(m.canonical.casefold() for m, _ in tagged if m.type == OTHER)
        full = Counter(m.canonical for m, _ in tagged)
        out: list[Tagged] = []
        for m, why in tagged:
            entity = heads.get(m.canonical.casefold()) if m.type == OTHER else None
            if m.type == "person" and why in ("person_turn", "person_list") and " " not in m.canonical:
                # "Mara:" in notes that list "Mara Bos": the one person of the document it starts
                people = {(kind, name) for kind, name in heads.get(m.canonical.casefold(), ()) if kind == "person"}
                if len(people) == 1:
                    m = replace(m, canonical=next(iter(people))[1])  # noqa: PLW2901
            if entity and any(kind == "organisation" and alone[m.canonical.casefold()] > 2 * full[name]
                              for kind, name in entity):
                entity = None  # "Linux" on its own far more often than in "Linux Foundation" is not its short form
            if entity is not None and len(entity) == 1:
                kind, canonical = next(iter(entity))
                # a product's own name must stand as a name somewhere: "Customer" of "Customer Portal" does not
                if kind != "product" or why != _WEAK:
                    m = EntityMention(m.start, m.end, m.text, canonical or m.text, kind, 0.6, m.source)  # noqa: PLW2901
                    why = "short_form"  # noqa: PLW2901
            out.append((m, why))
        return out


def load_gazetteer(folder: Path, explicit: str | None = None) -> Gazetteer:
    """``explicit`` (relative to ``folder``), else ``entities.toml`` / ``entities.yaml`` in ``folder``."""
    if explicit:
        path = Path(explicit)
        return Gazetteer.load(path if path.is_absolute() else folder / path)
    for name in ("entities.toml", "entities.yaml", "entities.yml"):
        if (folder / name).is_file():
            return Gazetteer.load(folder / name)
    return Gazetteer()


def named_by_place(mention: EntityMention) -> bool:
    """Whether a mention is a person named by place (``person_turn``, ``person_list``): who
    spoke or attended, which says nothing of what the text is about."""
    return mention.shape in BY_PLACE


def entities_per_chunk(chunks: Sequence[Chunk], mentions: Sequence[EntityMention]) -> list[list[str]]:
    """For each chunk, the entity ids of the mentions it contains (repeated per mention);
    ``mentions`` sorted by start, as :class:`EntityExtractor` returns them."""
    starts = [m.start for m in mentions]
    out = []
    for c in chunks:
        lo = bisect.bisect_left(starts, c.start)
        hi = bisect.bisect_left(starts, c.end)
        out.append([m.entity_id for m in mentions[lo:hi] if m.end <= c.end])
    return out
