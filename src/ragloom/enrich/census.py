"""The entities a workspace knows, every mention of them counted, obvious variants merged.

Extraction (:mod:`ragloom.enrich.entities`) reads one document at a time and finds a name where
that document gives evidence for it: a company word, a speaker's turn, a list of attendees. Once
a name is known anywhere in the workspace, :func:`take_census` counts it wherever it is written
as whole words, in one trie-regex pass per document (as the gazetteer matches), so a product
found typed in 9 documents is counted in the 80 that write it. The census is a function of the
current documents and their stored mentions: an incremental ingest lists what a full build does.

Obvious variants of one name become one entity, whose aliases they are (:func:`merge_variants`):

- the same letters in another case, accents or punctuation ("Node.js", "NodeJS", "node.js";
  "Jakub Beranek", "Jakub Beránek");
- a one-letter typo of a frequent name ("Erik Huss" for "Eric Huss"): one letter replaced, added
  or dropped; both names at least six letters and of as many words; the word that differs at
  least four letters long and without digits ("Rust 1.85" is not "Rust 1.87"); the rarer name
  at most a third as frequent; and its differing word no part of any other entity's name ("Mary
  Smith" stays apart from "Mark Smith" when the workspace also knows "Mary Jones");
- a person's one-word name ("Mara") that starts exactly one longer person's name ("Mara Bos").

A product known with its version ("Node.js v22", "Python 3.11") makes the product itself known
("Node.js", "Python"), as it does inside one document. Types must agree, or an untyped
(``other``) entity joins a typed one. An entity is named by its form with a capital (then a dot)
before an all-lower-case one, then by the longest, then by the most written. Merging repeats
until nothing merges, so the result does not depend on the order of the entities and merging it
again changes nothing.

Where a name is counted: a form other than the canonical name counts everywhere when it is a
variant of it or an alias the gazetteer or a model gave; a one-word short form ("Apex" for "Apex
HVAC") only when it starts the name of exactly one entity of the workspace and is no entity's
own name; a plain word ("Mark", "Kernel") only where the workspace writes it capitalised more
often than in lower case. Names with a dot between letters or a capital after a small letter
("Node.js", "GitHub") are matched in any case and without their punctuation; other names as
written ("Mark" the person is not "mark"). Code, web and mail addresses are skipped. A stored
mention keeps its document's entity, except a document's short form that the workspace knows as
another type's own name, written alone more often ("Rust" beside "Rust Foundation").
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragloom.enrich.entities import _VERSION_END, COMMON, OTHER, _trie_pattern, code_spans, entity_id
from ragloom.parse.spans import DisjointSpans

#: The typo rule's bounds (see the module's docstring).
TYPO_MIN_LETTERS = 6
TYPO_MIN_WORD = 4
TYPO_RATIO = 3
#: Types whose mentions a pattern finds, not a name: never counted again (nor are entities that
#: only the gazetteer's patterns found).
UNCOUNTED_TYPES = frozenset({"date"})


@dataclass(frozen=True, slots=True)
class Named:
    """An entity as :func:`merge_variants` sees it: its key, name, type and how often it is written."""

    key: str
    name: str
    type: str
    weight: int


@dataclass(frozen=True, slots=True)
class Mention:
    """One counted mention: where it is, what is written, and the (merged) entity's id."""

    document_id: str
    start: int
    end: int
    text: str
    entity_id: str


@dataclass(frozen=True, slots=True)
class Entity:
    entity_id: str
    name: str
    type: str


@dataclass(frozen=True)
class Census:
    entities: Mapping[str, Entity]
    mentions: Sequence[Mention]


def fold(name: str) -> str:
    """``name`` without case, accents, punctuation or spaces: equal for "Node.js" and "nodejs"."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", name) if ch.isalnum()).casefold()


def _fold_words(name: str) -> str:
    return " ".join(w for w in (fold(w) for w in name.split()) if w)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one letter replaced, added or dropped apart."""
    if len(a) < len(b):
        a, b = b, a
    if len(a) - len(b) > 1 or a == b:
        return False
    i = 0
    while i < len(b) and a[i] == b[i]:
        i += 1
    return a[i + 1 :] == b[i + 1 :] if len(a) == len(b) else a[i + 1 :] == b[i:]


def _joins(rare: str, frequent: str) -> bool:
    """Whether an entity of type ``rare`` may join one of type ``frequent``: the same type, or an
    untyped one joining a typed one (never the other way: a person and an organisation would
    meet through an untyped name)."""
    return rare == frequent or rare == OTHER


def _marked(name: str) -> int:
    """0 for a name with a capital, 1 with a dot only, 2 for neither: the established form first."""
    return 0 if any(ch.isupper() for ch in name) else 1 if "." in name else 2


class _Clusters:
    """Union-find over the entities, each cluster named by its best member."""

    def __init__(self, entities: Iterable[Named]) -> None:
        self.items = {e.key: e for e in entities}
        self.parent = {k: k for k in self.items}

    def find(self, key: str) -> str:
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def union(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[max(ra, rb)] = min(ra, rb)
        return True

    def groups(self) -> dict[str, list[Named]]:
        out: dict[str, list[Named]] = defaultdict(list)
        for k, e in self.items.items():
            out[self.find(k)].append(e)
        return out


def _best(members: Sequence[Named]) -> Named:
    """The member that names a cluster: a capital or a dot, then more words, then more written."""
    typed = [m for m in members if m.type != OTHER] or list(members)
    return min(typed, key=lambda m: (_marked(m.name), -len(m.name.split()), -m.weight, m.name, m.key))


def _summary(groups: Mapping[str, Sequence[Named]]) -> dict[str, Named]:
    """Each cluster as one entity: its best member's name and type, the members' weight."""
    out = {}
    for root, members in groups.items():
        best = _best(members)
        out[root] = Named(root, best.name, best.type, sum(m.weight for m in members))
    return out


def _fold_merges(clusters: Mapping[str, Named]) -> list[tuple[str, str]]:
    by_fold: dict[str, list[Named]] = defaultdict(list)
    for c in clusters.values():
        by_fold[fold(c.name)].append(c)
    merges = []
    for group in by_fold.values():
        ranked = sorted(group, key=lambda c: (c.type == OTHER, -c.weight, c.name, c.key))  # typed ones first
        for c in ranked:
            into = next((d for d in ranked if d is not c and _joins(c.type, d.type)), None)
            if into is not None and (into.type != c.type or ranked.index(into) < ranked.index(c)):
                merges.append((c.key, into.key))
    return merges


def _typo_merges(clusters: Mapping[str, Named]) -> list[tuple[str, str]]:
    """Each rarer cluster into the most written one a typo away (the module's rules)."""
    words = {k: _fold_words(c.name) for k, c in clusters.items()}
    users: dict[str, set[str]] = defaultdict(set)  # folded word -> clusters whose names use it
    for k, w in words.items():
        for word in w.split():
            users[word].add(k)
    index: dict[str, list[str]] = defaultdict(list)  # a name with one letter dropped -> clusters
    whole: dict[str, list[str]] = defaultdict(list)
    for k, w in words.items():
        if len(w.replace(" ", "")) >= TYPO_MIN_LETTERS:
            whole[w].append(k)
            for i in range(len(w)):
                if w[i] != " ":
                    index[w[:i] + w[i + 1 :]].append(k)
    merges = []
    for k, w in words.items():
        if len(w.replace(" ", "")) < TYPO_MIN_LETTERS:
            continue
        near: set[str] = set()
        near.update(*(index.get(w[:i] + w[i + 1 :], ()) for i in range(len(w))))  # replaced, or added in w
        near.update(*(whole.get(w[:i] + w[i + 1 :], ()) for i in range(len(w))))
        near.update(index.get(w, ()))  # dropped in w
        best = None
        for other in sorted(near - {k}, key=lambda o: (-clusters[o].weight, clusters[o].name, o)):
            if _typo_of(clusters[k], words[k], clusters[other], words[other], users):
                best = other
                break
        if best is not None:
            merges.append((k, best))
    return merges


def _typo_of(rare: Named, rare_words: str, frequent: Named, frequent_words: str, users: Mapping[str, set[str]]) -> bool:
    if not _joins(rare.type, frequent.type) or rare.weight * TYPO_RATIO > frequent.weight:
        return False
    a, b = rare_words.split(), frequent_words.split()
    if len(a) != len(b) or not _one_edit(rare_words, frequent_words):
        return False
    differ = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    if len(differ) != 1:
        return False
    x, y = differ[0]
    if max(len(x), len(y)) < TYPO_MIN_WORD or any(ch.isdigit() for ch in x + y):
        return False
    return users[x] <= {rare.key, frequent.key}


def _short_form_merges(clusters: Mapping[str, Named]) -> list[tuple[str, str]]:
    heads: dict[str, set[str]] = defaultdict(set)
    for k, c in clusters.items():
        words = c.name.split()
        if len(words) > 1 and c.type == "person":
            heads[fold(words[0])].add(k)
    merges = []
    for k, c in clusters.items():
        if c.type == "person" and len(c.name.split()) == 1:
            into = heads.get(fold(c.name), set())
            if len(into) == 1:
                merges.append((k, next(iter(into))))
    return merges


def merge_variants(entities: Iterable[Named]) -> dict[str, str]:
    """For each entity's key, the key of the entity it merges into (its own when it stays): the
    entity whose name its cluster takes."""
    clusters = _Clusters(entities)
    while True:
        summary = _summary(clusters.groups())
        merges = _fold_merges(summary) or _typo_merges(summary) or _short_form_merges(summary)
        if not any([clusters.union(a, b) for a, b in merges]):  # noqa: C419 - every merge is applied
            break
    named = {root: _best(members).key for root, members in clusters.groups().items()}
    return {k: named[clusters.find(k)] for k in clusters.items}


# -- counting ------------------------------------------------------------------------------------

#: What may not stand before a name: a word, a path, a domain, a handle or a contraction. Checked
#: on each match rather than in the pattern: a leading look-behind makes the engine try it at
#: every position, three times slower than the trie's first-letter scan.
_BEFORE = re.compile(r"(?<![\w@/#.-])(?<!\w['’])")
_AFTER = r"(?:(?=['’]s\b)|(?![\w@/-]|[.'’]\w))"  # a possessive "'s" may follow; a word, path or domain not
_SPACE = re.compile(r"\\ ")
_DOTTED = re.compile(r"[^\W\d_]\.[^\W\d_]")


def _matcher(forms: Iterable[str], *, ignore_case: bool) -> re.Pattern[str] | None:
    forms = sorted({f for f in forms if f and "\\" not in f}, key=len, reverse=True)
    if not forms:
        return None
    # A name may wrap at a line break, as the capitalised pass allows (possessive: a long run of
    # blanks after a first word is read once, not once per way to split it).
    body = _SPACE.sub(lambda _: r"(?:[ \t]++\n?+[ \t]*+|\n[ \t]*+)", _trie_pattern(forms))
    return re.compile("(?:" + body + ")" + _AFTER, re.IGNORECASE if ignore_case else 0)


def _whole(regex: re.Pattern[str] | None, text: str) -> list[tuple[int, int]]:
    """The matches of ``regex`` in ``text`` that start a word (see :data:`_BEFORE`); after one that
    does not, the search goes on from its next character, not its end."""
    out: list[tuple[int, int]] = []
    pos = 0
    while regex is not None:
        m = regex.search(text, pos)
        if m is None:
            break
        if _BEFORE.match(text, m.start()):
            out.append((m.start(), m.end()))
            pos = m.end()
        else:
            pos = m.start() + 1
    return out


def _any_case(form: str) -> bool:
    """A name matched in any case: a dot between letters, or a capital after a small letter
    ("Node.js", "GitHub"; not "IDLE", which is "idle" too)."""
    return len(fold(form)) >= 4 and (_DOTTED.search(form) is not None
                                     or any(a.islower() and b.isupper() for a, b in zip(form, form[1:], strict=False)))


def _plain_word(form: str) -> bool:
    """One word written as any word at a sentence's start is ("Blocks", "Kernel", "Mark")."""
    return form.isalpha() and form[0].isupper() and form[1:].islower()


def _short_form(text: str, canonical: str) -> bool:
    """Whether ``text`` is one word that starts the longer ``canonical`` ("Apex", "Apex HVAC")."""
    return " " not in text and " " in canonical and fold(canonical.split()[0]) == fold(text)


def _countable(form: str) -> bool:
    return len(form) >= 2 and form not in COMMON and any(ch.isalpha() for ch in form)


@dataclass
class _Known:
    type: str
    canonical: str
    count: int
    texts: Counter[str]
    sources: set[str]


def take_census(stored: Iterable[Mapping[str, Any]], texts: Mapping[str, str]) -> Census:
    """Every mention of every entity known from ``stored`` mention rows (``document_id``,
    ``entity_id``, ``canonical``, ``type``, ``text``, ``start_char``, ``end_char``, ``source``)
    in the documents' ``texts`` (by document id), variants merged."""
    rows = list(stored)
    known: dict[str, _Known] = {}
    for r in rows:
        k = known.get(r["entity_id"])
        if k is None:
            k = known[r["entity_id"]] = _Known(r["type"], r["canonical"], 0, Counter(), set())
        k.count += 1
        k.texts[r["text"]] += 1
        k.sources.add(r["source"])
    counted = {key for key, k in known.items() if k.type not in UNCOUNTED_TYPES and k.sources != {"pattern"}}
    # A product known with its version ("Node.js v22") makes the product itself known ("Node.js"),
    # as it does inside one document.
    names = {k.canonical for k in known.values()}
    for key in sorted(counted):
        k = known[key]
        version = _VERSION_END.search(k.canonical) if k.type == "product" else None
        if version is not None and k.canonical[: version.start()] not in names:
            base = k.canonical[: version.start()]
            names.add(base)
            known[entity_id("product", base)] = _Known("product", base, 0, Counter(), {"candidate"})
            counted.add(entity_id("product", base))

    # The forms each entity is written in: its name, its variants and given aliases (direct), and
    # its one-word short forms (counted only where the workspace leaves them unambiguous).
    direct: dict[str, str] = {}
    short: dict[str, set[str]] = defaultdict(set)
    for key in sorted(counted, key=lambda key: (-known[key].count, key)):
        k = known[key]
        if _countable(k.canonical):
            direct.setdefault(k.canonical, key)
    for key in sorted(counted, key=lambda key: (-known[key].count, key)):
        k = known[key]
        for text in k.texts:
            if text == k.canonical or not _countable(text):
                continue
            if _short_form(text, k.canonical) and "gazetteer" not in k.sources:
                short[text].add(key)
            else:
                direct.setdefault(text, key)

    found, lower = _scan(texts, list(direct) + [t for t in short if t not in direct], rows)
    # How often each name is written in full (its variants too): what the typo rule compares. A
    # short form says nothing of how a name is spelt ("Joel" for "Joel Marcy" in one document).
    written: Counter[str] = Counter()
    for key in counted:
        k = known[key]
        written[key] = sum(n for text, n in k.texts.items() if fold(text) == fold(k.canonical))
    for _, _, _, form in found:
        owned = direct.get(form)
        if owned is not None and fold(form) == fold(known[owned].canonical):
            written[owned] += 1
    merged = merge_variants(Named(key, known[key].canonical, known[key].type, written[key]) for key in sorted(counted))
    entities = {}
    for key, into in merged.items():
        k = known[into]
        entities[key] = Entity(entity_id(k.type, k.canonical), k.canonical, k.type)
    for key, k in known.items():
        entities.setdefault(key, Entity(key, k.canonical, k.type))

    # A short form counts when one entity alone of the workspace starts with it.
    starts: dict[str, set[str]] = defaultdict(set)
    for key in counted:
        words = known[key].canonical.split()
        if len(words) > 1:
            starts[fold(words[0])].add(entities[key].entity_id)
    # A plain word counts where the workspace writes it capitalised more often than in lower case
    # ("Kernel", "Blocks" stay where their documents found them; "Intel", "Mara" count everywhere).
    capital = Counter(r["text"] for r in rows) + Counter(form for _, _, _, form in found)
    loose = {form for form in (*direct, *short) if _plain_word(form) and lower[form] >= capital[form]}
    owner = {form: entities[key].entity_id for form, key in direct.items() if form not in loose}
    folded_owner: dict[str, str] = {}
    for form, key in direct.items():
        if _any_case(form):
            folded_owner.setdefault(fold(form), entities[key].entity_id)
    for form, keys in short.items():
        ids = {entities[key].entity_id for key in keys}
        if form not in owner and form not in loose and len(ids) == 1 and starts.get(fold(form)) == ids:
            owner[form] = next(iter(ids))

    # A document's short form that the workspace knows as the own name of an entity of another
    # type, written alone more often than the longer name is written in full, is that entity: "Rust"
    # beside "Rust Foundation" is the language (one document cannot tell). Of the same type, it
    # stays the document's: "Josh" where only Josh Triplett attends is he, not the workspace's "Josh".
    weight: Counter[str] = Counter()
    for key in counted:
        weight[entities[key].entity_id] += written[key]
    alone = {k.canonical: entities[key].entity_id for key, k in known.items() if key in counted and " " not in k.canonical}
    by_id_type = {e.entity_id: e.type for e in entities.values()}
    mentions = []
    for r in rows:
        entity = entities[r["entity_id"]].entity_id
        other = alone.get(r["text"])
        if other is not None and other != entity and r["entity_id"] in counted and weight[other] > weight[entity] \
                and by_id_type[other] != by_id_type[entity] and _short_form(r["text"], known[r["entity_id"]].canonical):
            entity = other
        mentions.append(Mention(r["document_id"], r["start_char"], r["end_char"], r["text"], entity))
    for document_id, start, end, form in found:
        counted_as = owner.get(form) or folded_owner.get(fold(form))
        if counted_as is not None:
            mentions.append(Mention(document_id, start, end, texts[document_id][start:end], counted_as))
    by_id = {e.entity_id: e for e in entities.values()}
    return Census(by_id, sorted(mentions, key=lambda m: (m.document_id, m.start)))


def _scan(texts: Mapping[str, str], forms: Sequence[str],
          rows: Sequence[Mapping[str, Any]]) -> tuple[list[tuple[str, int, int, str]], Counter[str]]:
    """Whole-word occurrences of ``forms`` in ``texts`` outside code and outside the stored
    mentions (``rows``): ``(document id, start, end, form)``, the form as listed (a name matched
    in another case or without its punctuation gives the listed form it folds to); and how often
    each plain word of ``forms`` is written in lower case (by the form)."""
    exact = _matcher(forms, ignore_case=False)
    plain = {f.lower(): f for f in forms if _plain_word(f)}
    small = _matcher(plain, ignore_case=False)
    lower: Counter[str] = Counter()
    loose_forms = [f for f in forms if _any_case(f)]
    loose_forms += [re.sub(r"[.-]", "", f) for f in loose_forms]
    # Matched on the lower-cased text where lower-casing keeps every offset (it does for ASCII):
    # an IGNORECASE pattern loses the trie's fast scan and took ten times as long.
    loose = _matcher({f.lower() for f in loose_forms}, ignore_case=False)
    any_case = _matcher(loose_forms, ignore_case=True)
    by_fold: dict[str, str] = {}
    for f in sorted(forms, key=lambda f: (_marked(f), f)):
        by_fold.setdefault(fold(f), f)
    taken_by: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        taken_by[r["document_id"]].append((r["start_char"], r["end_char"]))
    listed = set(forms)
    out = []
    for document_id, text in texts.items():
        if exact is None and loose is None and small is None:
            break
        folded = text.lower() if loose is not None else text
        hits = _whole(exact, text) + (_whole(loose, folded) if len(folded) == len(text) else _whole(any_case, text))
        small_hits = _whole(small, text)
        if not hits and not small_hits:
            continue
        code = _Intervals(code_spans(text))
        lower.update(plain[text[a:b]] for a, b in small_hits if not code.meets(a, b))
        taken = DisjointSpans()
        for a, b in sorted(taken_by.get(document_id, ())):
            taken.add(a, b)
        for a, b in sorted(set(hits), key=lambda h: (h[0] - h[1], h[0])):  # the longest first
            if not taken.is_free(a, b) or code.meets(a, b):
                continue
            taken.add(a, b)
            written = " ".join(text[a:b].split())
            form = written if written in listed else by_fold.get(fold(written))
            if form is not None:
                out.append((document_id, a, b, form))
    return out, lower


class _Intervals:
    """Spans that may overlap, merged, to ask whether a span meets any of them."""

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for a, b in sorted(spans):
            if self.ends and a <= self.ends[-1]:
                self.ends[-1] = max(self.ends[-1], b)
            else:
                self.starts.append(a)
                self.ends.append(b)

    def meets(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.starts, start)
        return i > 0 and self.ends[i - 1] > start or i < len(self.starts) and self.starts[i] < end
