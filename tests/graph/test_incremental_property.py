"""An incremental graph update equals a full rebuild, on generated workspaces.

Hypothesis writes small corpora of Markdown documents (several lenses; titles and headings that
name subjects other documents mention, among them qualified names such as ``Atlas (project)``;
shared domain terms; dates; near-duplicate paragraphs, so that ``SIMILAR_TO`` edges appear)
and a sequence of steps (edit a section, rename a heading or a title, add or drop a section,
rewrite a document, move it to another lens, delete it, add a new one: one or several per
step). Every step goes through the public :class:`~ragloom.engine.Engine` (``ingest``,
``delete``), so the graph is updated incrementally by the ingest; after every step the stored
edges must equal those of :meth:`Engine.build_graph`, the full rebuild.

The settings keep the caps low (``entity_postings``, ``max_postings``, the clique bounds) so
that names, terms and groups cross them in both directions, and ``max_similar`` is drawn: 1 or
2, where chunks' neighbour lists overflow (which neighbours a chunk keeps then depends on the
others; :class:`ragloom.graph.maintain.SimilarReach`), or above any corpus's chunk count.

Edges are compared as (source, target, kind) with their attributes, weights to within one step
of their 6-decimal rounding. One difference is allowed: ``SIMILAR_TO`` pairs that tie with
others at a chunk's ``max_similar`` cut (duplicate chunks), which the builder breaks by float32
rounding; both graphs must then still keep, for every chunk, what any build keeps
(:class:`Similarity`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine

from ..conftest import fast_settings

LENSES = ("engineering", "team-structured", "your-voice")
#: Names the documents are about (titles, headings) and that other documents mention.
SUBJECTS = ("Apollo Launch", "Billing Service", "Orion", "Event Bus", "Atlas (project)", "Atlas", "QuickBooks Sync",
            "Dispatch Two", "Fieldline")
#: Headings that recur across documents: kinds of section, not subjects.
GENERIC = ("Overview", "Risks", "Next steps")
TERMS = ("invoice", "latency", "warehouse", "pricing", "onboarding", "forecast")
DATES = ("Q3 2025", "2025-08", "March 2024", "Q1 2026", "2026")
#: Near duplicates: the same long paragraph with one word changed, for SIMILAR_TO edges.
BOILERPLATE = ("The nightly export copies every {t} row to the warehouse, checks the totals against the ledger, "
               "retries failed batches twice with a growing delay, and pages the on-call engineer when the second "
               "retry fails or the totals still disagree after reconciliation.")

#: Examples per run: about a second each (RAGLOOM_GRAPH_EXAMPLES=300 for a thorough search).
EXAMPLES = int(os.environ.get("RAGLOOM_GRAPH_EXAMPLES", "25"))

SETTINGS = {
    "chunking.chunk_size": 80,
    "chunking.chunk_overlap": 0,
    "chunking.min_chunk_chars": 0,
    "graph.similarity_threshold": 0.6,
    "graph.entity_postings": 3,
    "graph.max_postings": 3,
    "graph.min_shared_terms": 1,
    "graph.source_clique_bound": 3,
    "graph.lens_clique_bound": 6,
    "graph.domain_terms": TERMS,
}


@dataclass(frozen=True)
class Doc:
    title: str
    sections: tuple[tuple[str, str], ...]  # (heading, body)

    def markdown(self) -> str:
        parts = [f"# {self.title}\n"]
        for heading, body in self.sections:
            parts.append(f"## {heading}\n\n{body}\n" if heading else f"{body}\n")
        return "\n".join(parts)


def sentence(kind: str, subject: str, term: str, date: str) -> str:
    if kind == "mention":
        return f"The team reviewed {subject} with the {term} owners."
    if kind == "date":
        return f"The {term} work on {subject} lands in {date}."
    if kind == "copy":
        return BOILERPLATE.format(t=term)
    return f"Nothing here names a subject; the {term} {term} review is routine."


bodies = st.lists(
    st.builds(sentence, st.sampled_from(["mention", "date", "copy", "plain"]), st.sampled_from(SUBJECTS),
              st.sampled_from(TERMS), st.sampled_from(DATES)),
    min_size=1, max_size=3).map(" ".join)
headings = st.sampled_from(SUBJECTS + GENERIC + ("",))
docs = st.builds(Doc, st.sampled_from(SUBJECTS + ("Weekly notes", "Roadmap")),
                 st.lists(st.tuples(headings, bodies), min_size=1, max_size=3).map(tuple))


@st.composite
def operations(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["edit", "heading", "title", "append", "drop", "rewrite", "move", "delete", "add"]))
    if kind in ("edit", "heading", "drop"):
        return kind, (draw(st.integers(0, 99)), draw(st.integers(0, 2)), draw(bodies if kind == "edit" else headings))
    if kind == "title":
        return kind, (draw(st.integers(0, 99)), draw(st.sampled_from(SUBJECTS + ("Weekly notes",))))
    if kind == "append":
        return kind, (draw(st.integers(0, 99)), draw(st.tuples(headings, bodies)))
    if kind == "rewrite":
        return kind, (draw(st.integers(0, 99)), draw(docs))
    if kind == "move":
        return kind, (draw(st.integers(0, 99)), draw(st.sampled_from(LENSES)))
    if kind == "delete":
        return kind, draw(st.integers(0, 99))
    return kind, (draw(st.sampled_from(LENSES)), draw(docs))


corpora = st.lists(st.tuples(st.sampled_from(LENSES), docs), min_size=2, max_size=5)
#: Each step: one or several operations, ingested together.
steps = st.lists(st.lists(operations(), min_size=1, max_size=3), min_size=1, max_size=4)


class Workspace:
    """Files on disk, each under a lens, kept in step with an engine through its public API."""

    def __init__(self, root: Path, max_similar: int) -> None:
        self.folder = root / "docs"
        self.folder.mkdir()
        self.engine = Engine(root / "ws", settings=fast_settings(**SETTINGS, **{"graph.max_similar": max_similar}),
                             embedder=HashingEmbedder())
        self.files: dict[str, tuple[str, Doc]] = {}  # file name -> (lens, document)
        self.made = 0
        self.ingested: set[str] = set()

    def write(self, lens: str, doc: Doc, name: str | None = None) -> str:
        if name is None:
            name, self.made = f"doc{self.made}.md", self.made + 1
        self.files[name] = (lens, doc)
        (self.folder / name).write_text(doc.markdown(), encoding="utf-8")
        return name

    def pick(self, i: int) -> str | None:
        names = sorted(self.files)
        return names[i % len(names)] if names else None

    def apply(self, kind: str, args: Any, dirty: set[str], gone: set[str]) -> None:  # noqa: ANN401
        if kind == "add":
            dirty.add(self.write(*args))
            return
        name = self.pick(args if kind == "delete" else args[0])
        if name is None:
            return
        lens, doc = self.files[name]
        sections = list(doc.sections)
        if kind == "delete":
            del self.files[name]
            (self.folder / name).unlink()
            dirty.discard(name)
            if name in self.ingested:
                gone.add(name)
            return
        if kind == "move":
            lens = args[1]
        elif kind == "title":
            doc = replace(doc, title=args[1])
        elif kind == "append":
            sections.append(args[1])
        elif kind == "rewrite":
            doc = args[1]
        else:
            j = args[1] % len(sections)
            heading, body = sections[j]
            if kind == "edit":
                sections[j] = (heading, args[2])
            elif kind == "heading":
                sections[j] = (args[2], body)
            elif len(sections) > 1:  # drop
                del sections[j]
        if kind not in ("title", "rewrite", "move"):
            doc = replace(doc, sections=tuple(sections))
        self.write(lens, doc, name)
        dirty.add(name)

    def ingest(self, dirty: set[str], gone: set[str]) -> None:
        """The step's changes, one ingest per lens (a moved document is re-read under its new
        lens), deletions first."""
        if gone:
            assert self.engine.delete([str(self.folder / n) for n in sorted(gone)]) == len(gone)
            self.ingested -= gone
        for lens in LENSES:
            paths = [self.folder / n for n in sorted(dirty) if self.files[n][0] == lens]
            if paths:
                report = self.engine.ingest(paths, lens=lens)
                assert report.ok, report.failed
        self.ingested |= dirty


def edges(engine: Engine) -> dict[tuple[str, str, str], tuple[float, Any]]:
    """The stored edges: (source, target, kind) -> (weight, attributes)."""
    out = {}
    for r in engine.store.edges("default"):
        key = (r["src"], r["dst"], r["type"])
        assert key not in out, f"edge stored twice: {key}"
        out[key] = (float(r["weight"]), json.loads(r["attrs"]) if isinstance(r["attrs"], str) else r["attrs"])
    return out


#: One step of the 6-decimal rounding, and the float error around it.
WEIGHT_TOLERANCE = 1e-6 + 1e-9


#: Similarities this close are a tie: float32 products of other shapes differ by about 1e-7.
TIE = 1e-6


class Similarity:
    """What any build may choose for ``SIMILAR_TO`` edges, given the chunks' vectors.

    The builder ranks a chunk's neighbours by float32 similarity, then by position, and keeps
    the first ``max_similar``: where neighbours tie at that cut (duplicate chunks), which of them
    are kept depends on the rounding of the product, so on the shape of the search (an update
    searches from the changed chunks only). Such pairs may differ between an update and a
    rebuild; what every build must do is checked instead (:meth:`problems`).
    """

    def __init__(self, engine: Engine, max_similar: int) -> None:
        rows = engine.store.chunks("default", columns=["chunk_id", "vector"])
        unit = np.stack([np.asarray(r["vector"], dtype=np.float64) for r in rows]) if rows else np.zeros((0, 1))
        unit /= np.linalg.norm(unit, axis=1, keepdims=True)
        self.sims = unit @ unit.T
        np.fill_diagonal(self.sims, -np.inf)
        self.ids = [r["chunk_id"] for r in rows]
        self.at = {cid: i for i, cid in enumerate(self.ids)}
        self.threshold, self.keep = engine.settings.graph.similarity_threshold, max_similar

    def _cut(self, u: int) -> tuple[np.ndarray, float | None]:
        """The chunks that may be u's neighbours, and the similarity at u's cut (None: no cut)."""
        near = np.flatnonzero(self.sims[u] > self.threshold - TIE)
        if len(near) <= self.keep:
            return near, None
        return near, float(np.sort(self.sims[u, near])[::-1][self.keep - 1])

    def tied(self, a: str, b: str) -> bool:
        """Whether rounding may decide the pair either way: at the threshold, or tied with other
        neighbours at one end's cut."""
        u, v = self.at[a], self.at[b]
        if abs(self.sims[u, v] - self.threshold) <= TIE:
            return True
        for x, y in ((u, v), (v, u)):
            near, cut = self._cut(x)
            if cut is not None and abs(self.sims[x, y] - cut) <= TIE:
                tied = self.sims[x, near]
                if (tied > cut + TIE).sum() < self.keep < (tied >= cut - TIE).sum():
                    return True
        return False

    def problems(self, edges: set[tuple[str, str]]) -> list[str]:
        """How ``edges`` (SIMILAR_TO pairs) break what every build does: each chunk keeps its
        neighbours above its cut, and as many as it keeps in all."""
        linked: dict[int, set[int]] = {}
        for a, b in edges:
            linked.setdefault(self.at[a], set()).add(self.at[b])
            linked.setdefault(self.at[b], set()).add(self.at[a])
        out = []
        for u in range(len(self.ids)):
            near, cut = self._cut(u)
            sure = {int(v) for v in near if self.sims[u, v] > self.threshold + TIE}
            has = linked.get(u, set())
            if cut is None:
                wanted, count = sure, 0
            else:
                wanted = {int(v) for v in near if self.sims[u, v] > cut + TIE}
                count = min(self.keep, len(sure))
            if not wanted <= has or len(has & {int(v) for v in near}) < count:
                out.append(f"{self.ids[u]} keeps {sorted(self.ids[v] for v in has)}, not its "
                           f"{self.keep} nearest (surely {sorted(self.ids[v] for v in wanted)})")
        return out


def assert_same_graph(incremental: dict[tuple[str, str, str], tuple[float, Any]],
                      rebuilt: dict[tuple[str, str, str], tuple[float, Any]], where: str,
                      similarity: Similarity) -> None:
    differ = incremental.keys() ^ rebuilt.keys()
    ties = {key for key in differ if key[2] == "SIMILAR_TO" and similarity.tied(key[0], key[1])}
    if ties:
        event("SIMILAR_TO pairs tied at a chunk's cut")
    for graph, name in ((incremental, "incremental"), (rebuilt, "rebuilt")):
        wrong = similarity.problems({(a, b) for a, b, kind in graph if kind == "SIMILAR_TO"})
        assert not wrong, f"{where}: the {name} graph's SIMILAR_TO edges: {wrong}"
    only_incremental = sorted(incremental.keys() - rebuilt.keys() - ties)
    only_rebuilt = sorted(rebuilt.keys() - incremental.keys() - ties)
    assert not only_incremental and not only_rebuilt, (
        f"{where}: edges only in the incremental graph {only_incremental}, only in the rebuild {only_rebuilt}")
    for key in rebuilt.keys() & incremental.keys():
        # Weights are stored rounded to 6 decimals; a SIMILAR_TO weight is a float32 dot product
        # whose summation order depends on the shape of the block searched (an update searches
        # from the changed chunks only), so the two may round to neighbouring millionths.
        weight, attrs = rebuilt[key]
        assert incremental[key][0] == pytest.approx(weight, abs=WEIGHT_TOLERANCE), f"{where}: weight of {key}"
        assert incremental[key][1] == attrs, f"{where}: attributes of {key}"


#: The smallest case the property found: four chunks with one text (so each keeps the first of
#: the others, the first document's chunk); that chunk edited, the other three must now keep
#: one another, but an update that redid the edited chunk alone kept their edges to it only.
_SAID = sentence("mention", "Apollo Launch", "invoice", "")
EDITED_NEIGHBOUR = {
    "corpus": [("engineering", Doc("Apollo Launch", (("Apollo Launch", _SAID),))),
               ("engineering", Doc("Apollo Launch", (("Apollo Launch", _SAID),) * 3))],
    "plan": [[("edit", (0, 0, f"{_SAID} {_SAID}"))]],
    "max_similar": 1,
}


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=corpora, plan=steps, max_similar=st.sampled_from([1, 2, 64]))
@example(**EDITED_NEIGHBOUR)
def test_incremental_updates_equal_a_full_rebuild(tmp_path_factory: pytest.TempPathFactory,
                                                  corpus: list[tuple[str, Doc]], plan: list[list[tuple[str, Any]]],
                                                  max_similar: int) -> None:
    space = Workspace(tmp_path_factory.mktemp("graph"), max_similar)
    first = {space.write(lens, doc) for lens, doc in corpus}
    history = [f"ingest {[(lens, doc.markdown()) for lens, doc in corpus]}"]
    for number, step in enumerate([None, *plan]):
        dirty, gone = (first, set()) if step is None else (set(), set())
        for kind, args in step or ():
            space.apply(kind, args, dirty, gone)
            history.append(f"{kind} {args!r}")
        space.ingest(dirty, gone)
        incremental = edges(space.engine)
        space.engine.build_graph()
        rebuilt = edges(space.engine)
        assert_same_graph(incremental, rebuilt, f"after step {number}; steps so far:\n" + "\n".join(history),
                          Similarity(space.engine, max_similar))
        for kind in sorted({kind for _, _, kind in rebuilt}):
            event(f"edge kind {kind}")

