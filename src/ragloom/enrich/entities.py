"""Typed entity mentions with exact offsets, found offline.

Four sources, in order of trust:

1. a **gazetteer** of known entities and their aliases per type (``entities.toml`` or
   ``entities.yaml`` in the workspace), matched in one regex pass built from a trie of the
   aliases, so thousands of aliases cost about as much as a few;
2. an **NER model** when one is installed with local weights (spaCy or GLiNER), through
   :class:`SpacyExtractor` / :class:`GlinerExtractor`;
3. **pattern rules**: dates (through :mod:`ragloom.enrich.timeref`) and any regular
   expressions the gazetteer file declares;
4. **capitalised-phrase candidates**, typed by their shape (``… Inc`` is an organisation,
   ``Dr. …`` a person, ``… v2`` a product), or ``other``.

Overlaps are resolved in that order of trust, then by length. Aliases resolve to one canonical
entity; inside a document, a later short form (``Apex``) resolves to the longer name it
abbreviates (``Apex HVAC``).
"""

from __future__ import annotations

import bisect
import hashlib
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ragloom.enrich.spans import DisjointSpans
from ragloom.enrich.timeref import extract_time_refs
from ragloom.errors import ConfigError, MissingExtraError
from ragloom.types import Chunk

DEFAULT_TYPES = ("customer", "service", "product", "location", "technician", "procedure", "person", "organisation", "date")
OTHER = "other"

SOURCE_RANK = {"gazetteer": 0, "model": 1, "pattern": 2, "candidate": 3}
CONFIDENCE = {"gazetteer": 0.95, "model": 0.8, "pattern": 0.9, "candidate": 0.5}


@dataclass(frozen=True, slots=True)
class EntityMention:
    start: int
    end: int
    text: str
    canonical: str
    type: str
    confidence: float
    source: str  # gazetteer | model | pattern | candidate

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

_CAP_WORD = r"(?:[A-Z][\w&'.-]*[\w&]|[A-Z])"
_CANDIDATE = re.compile(
    rf"(?<![\w&#@/-])({_CAP_WORD}(?:[ \t]+(?:of|and|&|the|de|von|van|for)?[ \t]*{_CAP_WORD})*"
    r"(?:[ \t]+(?:v\d+(?:\.\d+)*|\d+\.\d+)(?!\w|\.\d))?)(?![\w])"  # an optional version: "Fleet Tracker v3"
)
_ORG_SUFFIX = re.compile(
    r"\b(?:Inc|LLC|Ltd|Corp|Corporation|Company|Co|Group|GmbH|AG|SA|PLC|Partners|Research|Labs?|Systems|"
    r"Technologies|Software|Solutions|Services|Bank|University|Institute|Foundation|Agency|Association|"
    r"Plumbing|HVAC|Electric|Electrical|Heating|Cooling|Roofing|Builders|Contractors|Pro)\.?$"
)
_PERSON_TITLE = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sir)\.?\s+)$")
_PERSON_CONTEXT = re.compile(r"^\s*(?:\((?:[A-Z][\w ,&-]*)\)|,\s*(?:the\s+)?(?:CEO|CTO|CFO|VP|Head|Director|Manager|"
                             r"Senior|Lead|Engineer|Analyst|Principal|Founder)\b|:\s|\s+(?:said|says|asked|told|wrote)\b)")
_PRODUCT_SHAPE = re.compile(r"(?:\bv\d+(?:\.\d+)*|\b\d+\.\d+|\b(?:App|API|SDK|Portal|Platform|Suite|Cloud|Online|"
                            r"Catalog|Dashboard|Engine))$")
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
    Together Once Until During Since Without Within Across Per Via Up Down Out Over Under Again Further""".split()
)
#: Words a candidate phrase does not end with: the common words, and the joiners inside a name
#: ("Bank of America", "Smith & Sons") that are left dangling at its end.
_TRAILING = COMMON | {"of", "and", "&", "the", "de", "von", "van", "for"}


def _candidate_type(phrase: str, before: str, after: str) -> tuple[str, float]:
    if _ORG_SUFFIX.search(phrase):
        return "organisation", 0.6
    if _PERSON_TITLE.search(before):
        return "person", 0.6
    words = phrase.split()
    if len(words) in (2, 3) and all(w[0].isupper() and w[1:].islower() for w in words if len(w) > 1) \
            and _PERSON_CONTEXT.match(after):
        return "person", 0.55
    if _PRODUCT_SHAPE.search(phrase):
        return "product", 0.5
    return OTHER, 0.35


def capitalised_candidates(text: str) -> list[EntityMention]:
    """Capitalised phrases that are not sentence-initial common words."""
    out = []
    for m in _CANDIDATE.finditer(text):
        phrase = m.group(1).rstrip(".'")
        words = phrase.split()
        while words and words[0] in COMMON:
            words.pop(0)
        while words and words[-1] in _TRAILING:
            words.pop()
        if not words:
            continue
        if len(words) == 1 and (len(words[0]) < 3 or words[0].isupper() and len(words[0]) < 2):
            continue
        name = " ".join(words)
        start = m.start(1) + m.group(1).index(words[0])
        end = start + len(name) if text[start : start + len(name)] == name else None
        if end is None:  # the words were separated by more than one space: find the exact end
            last = m.group(1).rindex(words[-1])
            end = m.start(1) + last + len(words[-1])
        kind, confidence = _candidate_type(text[start:end], text[max(0, start - 8) : start], text[end : end + 40])
        if kind == OTHER and len(words) == 1 and (start == 0 or text[start - 2 : start].strip() in ("", ".", "!", "?", "#")):
            continue  # a lone capitalised word at a sentence start says nothing
        out.append(EntityMention(start, end, text[start:end], text[start:end], kind, confidence, "candidate"))
    return out


# -- the extractor --------------------------------------------------------------------------------


def _date_mentions(text: str) -> list[EntityMention]:
    out = []
    for ref in extract_time_refs(text):
        if ref.kind in ("date", "month") and ref.resolved:
            out.append(EntityMention(ref.start, ref.end, ref.text, ref.canonical, "date", CONFIDENCE["pattern"], "pattern"))
    return out


class EntityExtractor:
    """Combines the sources above; ``types`` limits what is kept (``other`` is kept only if listed)."""

    def __init__(self, gazetteer: Gazetteer | None = None, *, models: Sequence[ModelExtractor] = (),
                 types: Sequence[str] = DEFAULT_TYPES, candidates: bool = True, dates: bool = True) -> None:
        self.gazetteer = gazetteer or Gazetteer()
        self.models = list(models)
        self.types = set(types)
        self.candidates = candidates
        self.dates = dates

    def __call__(self, text: str) -> list[EntityMention]:
        found = self.gazetteer.find(text)
        for model in self.models:
            found.extend(self._canonicalise(m) for m in model(text))
        if self.dates:
            found.extend(_date_mentions(text))
        if self.candidates:
            found.extend(self._canonicalise(m) for m in capitalised_candidates(text))
        kept = self._resolve_overlaps(found)
        return self._short_forms([m for m in kept if m.type in self.types])

    def _canonicalise(self, mention: EntityMention) -> EntityMention:
        known = self.gazetteer.resolve(mention.text)
        if known is None:
            return mention
        kind, canonical = known
        return EntityMention(mention.start, mention.end, mention.text, canonical, kind,
                             max(mention.confidence, 0.85), mention.source)

    @staticmethod
    def _resolve_overlaps(found: list[EntityMention]) -> list[EntityMention]:
        ranked = sorted(found, key=lambda m: (SOURCE_RANK[m.source], -(m.end - m.start), m.start))
        occupied = DisjointSpans()
        return sorted((m for m in ranked if occupied.add(m.start, m.end)), key=lambda m: m.start)

    @staticmethod
    def _short_forms(mentions: list[EntityMention]) -> list[EntityMention]:
        """A one-word ``other`` mention that starts a longer typed name seen earlier becomes that entity."""
        longer: dict[str, EntityMention] = {}
        out = []
        for m in mentions:
            words = m.canonical.split()
            if len(words) > 1 and m.type != OTHER:
                longer.setdefault(words[0].casefold(), m)
            if len(words) == 1 and m.type == OTHER and m.canonical.casefold() in longer:
                full = longer[m.canonical.casefold()]
                m = EntityMention(m.start, m.end, m.text, full.canonical, full.type, 0.6, m.source)  # noqa: PLW2901
            out.append(m)
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
