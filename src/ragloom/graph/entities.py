"""Entity edges: chunks linked through the named subjects they mention.

A workspace names its own subjects without any gazetteer: every document's title and every
heading says what the text under it is *about*. A chunk is about the innermost heading of its
section, and the first chunk of a document also about the document's title. A name ending in a
parenthesised qualifier (``Doctor Strange (2016 film)``, ``Winner (band)``) also stands without
it, since that is how other text names it, unless some chunk is about the bare name itself
(``Ed Wood`` is the person, not ``Ed Wood (film)``). A name is a *subject* when the chunks about
it lie in one document: a heading that recurs across documents ("Introduction", "Examples",
``fn new``) labels a kind of section, not a thing.

A chunk *mentions* a subject of another chunk when the name occurs in its text as whole words,
in the same case (``Apple`` is not ``apple``). Each name is looked for on its own, so "New York
City" mentions both "New York City" and "New York" when both are subjects: mentions of one
name never depend on which other names exist, which keeps an incremental update equal to a
full build.

Two edge kinds, never between chunks of one document (``SAME_SOURCE`` links those already;
and the document about a name naming it is not a mention of something else):

``MENTIONS``        a chunk mentions a name another chunk is about: the bridge of a multi-hop
                    question ("the film *Kiss and Tell*" → the chunk about Shirley Temple)
``SHARED_ENTITY``   two chunks mention the same name

Each edge is weighted by how specific its name is: a name held by ``df`` chunks (about it or
mentioning it) weighs ``log(1 + cap / df) / log(1 + cap)``, in (0, 1], with ``cap`` the
``entity_postings`` setting; a name held by more than ``cap`` chunks carries no signal and
makes no edge. Two chunks linked through several names keep one edge of each kind, weighted by
the most specific name, and list the names in ``attrs["entities"]``; a ``MENTIONS`` edge also
lists, in ``attrs["about"]``, the end (or ends) that the names are about, so that graph mode
can follow it from the mention to the subject only.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragloom.graph.model import MENTIONS, SHARED_ENTITY, Edge, GraphNode, edge
from ragloom.types import SECTION_SEPARATOR

_WORD = re.compile(r"\w+")
_QUALIFIER = re.compile(r"(?<!\s)\s*+\([^()]*\)\s*+$")
#: Names longer than this are sentences used as headings, not names anything repeats.
MAX_NAME_CHARS = 120


def _clean(name: str) -> str | None:
    name = " ".join(name.split())
    return name if 1 < len(name) <= MAX_NAME_CHARS and any(ch.isalpha() for ch in name) else None


def name_variants(name: str) -> tuple[str, ...]:
    """``name`` with its whitespace normalised, and without a trailing parenthesised qualifier
    when it has one; names without a letter, of one character or longer than
    :data:`MAX_NAME_CHARS` are none."""
    full = _clean(name)
    if full is None:
        return ()
    bare = _clean(_QUALIFIER.sub("", full))
    return (full, bare) if bare is not None and bare != full else (full,)


def about_names(title: str, section_path: str | Sequence[str], chunk_index: int) -> tuple[str, ...]:
    """The names a chunk is about, as written: its innermost heading, and its document's title
    for the document's first chunk (the bare forms of qualified names come from
    :func:`subjects`)."""
    path = section_path.split(SECTION_SEPARATOR) if isinstance(section_path, str) else list(section_path)
    names: list[str] = []
    if path:
        names.extend(name_variants(path[-1])[:1])
    if chunk_index == 0:
        names.extend(name_variants(title)[:1])
    return tuple(dict.fromkeys(names))


def subjects(entries: Sequence[tuple[str, Sequence[str]]]) -> dict[str, list[int]]:
    """The subjects of a workspace, each with the positions of the chunks about it, from each
    chunk's (document id, :func:`about_names`): names as written first, bare forms of qualified
    names where no chunk is about the bare name itself, and only names whose chunks lie in one
    document."""
    exact: dict[str, list[int]] = defaultdict(list)
    bare: dict[str, list[int]] = defaultdict(list)
    for i, (_, names) in enumerate(entries):
        for name in names:
            exact[name].append(i)
            for variant in name_variants(name)[1:]:
                bare[variant].append(i)
    out = {}
    for name in exact.keys() | bare.keys():
        members = exact.get(name) or bare[name]
        if len({entries[i][0] for i in members}) == 1:
            out[name] = members
    return out


_WORD_CHAR = re.compile(r"\w")


def occurs(name: str, text: str) -> bool:
    r"""Whether ``name`` occurs in ``text`` with no word character either side (the regex
    ``(?<!\w)name(?!\w)``, found with ``str.find``, which is several times faster)."""
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        if (start == 0 or not _WORD_CHAR.match(text[start - 1])) and (end == len(text) or not _WORD_CHAR.match(text[end])):
            return True
        start = text.find(name, start + 1)
    return False


class NameIndex:
    """Finds which of a set of names occur in a text: whole words, the same case.

    Names are keyed by their first two word tokens (one, for a one-word name); a text's word
    tokens and adjacent pairs are collected in one C-level pass, so only the names whose key
    occurs are checked with a regular expression. The cost grows with the text, hardly with the
    number of names.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self._single: dict[str, list[str]] = defaultdict(list)
        self._pair: dict[tuple[str, str], list[str]] = defaultdict(list)
        for name in sorted(set(names)):
            words = _WORD.findall(name)
            if len(words) == 1:
                self._single[words[0]].append(name)
            elif words:
                self._pair[(words[0], words[1])].append(name)

    def __len__(self) -> int:
        return sum(map(len, self._single.values())) + sum(map(len, self._pair.values()))

    def find(self, text: str) -> set[str]:
        """The names that occur in ``text``."""
        tokens = _WORD.findall(text)
        if not tokens:
            return set()
        found: set[str] = set()
        candidates: list[str] = []
        for word in self._single.keys() & set(tokens):
            for name in self._single[word]:
                # A name that is one whole word token occurs as one: no need to look again.
                (found.add if name == word else candidates.append)(name)
        if self._pair and len(tokens) > 1:
            pairs = set(zip(tokens, tokens[1:], strict=False))
            candidates += [name for pair in self._pair.keys() & pairs for name in self._pair[pair]]
        found.update(name for name in candidates if occurs(name, text))
        return found


def specificity(holders: int, cap: int) -> float:
    """The weight of a name held by ``holders`` chunks: 1 for one, falling towards
    ``log 2 / log(1 + cap)`` at ``cap`` (see the module docstring)."""
    return math.log1p(cap / max(holders, 1)) / math.log1p(cap)


@dataclass(frozen=True, slots=True)
class Holders:
    """The chunks (positions in the node list) about one name and those mentioning it."""

    about: tuple[int, ...]
    mentioning: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.about) + len(self.mentioning)  # never the same chunk in both: see holders()


def holders(nodes: Sequence[GraphNode]) -> dict[str, Holders]:
    """Every subject's holders (see :func:`subjects`; a mention of anything else is not an
    entity of the workspace); chunks of the subject's own document never count as mentioning it."""
    mentioning: dict[str, list[int]] = defaultdict(list)
    for i, n in enumerate(nodes):
        for name in n.mentions:
            mentioning[name].append(i)
    found = subjects([(n.document_id, n.about) for n in nodes])
    out = {}
    for name, members in found.items():
        home = nodes[members[0]].document_id
        # The document about a name naming it is not a mention of something else.
        out[name] = Holders(tuple(members), tuple(i for i in mentioning.get(name, ()) if nodes[i].document_id != home))
    return out


def entity_edges(nodes: Sequence[GraphNode], cap: int, *, only: set[int] | None = None,
                 index: Mapping[str, Holders] | None = None) -> list[Edge]:
    """``MENTIONS`` and ``SHARED_ENTITY`` edges (with ``only``, just those touching the chunks
    at those positions), built from each node's ``about`` and ``mentions``."""

    index = holders(nodes) if index is None else index
    # (low, high) -> [weight, names, about ends]
    mentions: dict[tuple[int, int], list[Any]] = {}
    shared: dict[tuple[int, int], list[Any]] = {}

    def add(found: dict[tuple[int, int], list[Any]], a: int, b: int, name: str, weight: float, about: int) -> None:
        key = (a, b) if a < b else (b, a)
        entry = found.setdefault(key, [0.0, set(), set()])
        entry[0] = max(entry[0], weight)
        entry[1].add(name)
        if about >= 0:
            entry[2].add(about)

    for name, h in index.items():
        count = h.count
        if count < 2 or count > cap or not h.mentioning:
            continue
        if only is not None and not only.intersection(h.about) and not only.intersection(h.mentioning):
            continue
        weight = round(specificity(count, cap), 6)
        for m in h.mentioning:  # never of the subject's own document
            for a in h.about:
                if only is None or m in only or a in only:
                    add(mentions, m, a, name, weight, a)
        for x, m in enumerate(h.mentioning):
            for y in h.mentioning[x + 1 :]:
                if nodes[m].document_id != nodes[y].document_id and (only is None or m in only or y in only):
                    add(shared, m, y, name, weight, -1)
    edges = []
    for (a, b), (weight, names, ends) in sorted(mentions.items()):
        edges.append(edge(nodes[a].chunk_id, nodes[b].chunk_id, MENTIONS, weight, entities=sorted(names),
                           about=sorted(nodes[e].chunk_id for e in ends)))
    for (a, b), (weight, names, _) in sorted(shared.items()):
        edges.append(edge(nodes[a].chunk_id, nodes[b].chunk_id, SHARED_ENTITY, weight, entities=sorted(names)))
    return edges


def roles(nodes: Iterable[GraphNode]) -> dict[str, set[tuple[str, bool]]]:
    """For every subject, the (chunk id, is about it) pairs holding it: what its edges are made
    from."""
    listed = list(nodes)
    return {name: {(listed[i].chunk_id, True) for i in h.about} | {(listed[i].chunk_id, False) for i in h.mentioning}
            for name, h in holders(listed).items()}


def changed_holders(before: Iterable[GraphNode], after: Iterable[GraphNode]) -> set[str]:
    """Chunk ids whose entity edges an update must recompute: every holder, before or after,
    of a name whose holders changed (their weights depend on how many there are)."""
    old, new = roles(before), roles(after)
    out: set[str] = set()
    for name in old.keys() | new.keys():
        was, now = old.get(name, set()), new.get(name, set())
        if was != now:
            out.update(cid for cid, _ in was | now)
    return out


def with_entities(nodes: Sequence[GraphNode], rows: Mapping[str, Mapping[str, Any]],
                  extra: Sequence[tuple[GraphNode, Mapping[str, Any]]] = ()) -> tuple[list[GraphNode], list[GraphNode]]:
    """``nodes`` with what each is about and mentions, found in their ``rows`` (``title``,
    ``section_path``, ``chunk_index``, ``text``); and the ``extra`` nodes (chunks an update
    took away, with their rows) likewise. Mentions are looked for among the names of both
    together: a name counts only where some chunk of the node list at hand is about it (see
    :func:`holders`), and each name is found on its own, so one pass serves the workspace as it
    was and as it is."""

    def about(row: Mapping[str, Any]) -> tuple[str, ...]:
        return about_names(row.get("title") or "", row.get("section_path") or "", int(row.get("chunk_index") or 0))

    current = [(n, rows[n.chunk_id]) for n in nodes]
    abouts = {id(row): about(row) for _, row in (*current, *extra)}
    index = NameIndex({variant for names in abouts.values() for name in names for variant in name_variants(name)})

    def attach(node: GraphNode, row: Mapping[str, Any]) -> GraphNode:
        return replace(node, about=abouts[id(row)], mentions=tuple(sorted(index.find(row.get("text") or ""))))

    return [attach(n, r) for n, r in current], [attach(n, r) for n, r in extra]
