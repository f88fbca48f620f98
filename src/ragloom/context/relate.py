"""Step 3: say which chunks belong together, and why.

Pairs are found through inverted indexes (entity -> chunks, period -> chunks, document ->
chunks), so only chunks that share something are ever compared; two unrelated chunks never
get a relationship. A key shared by most of the chunks (see ``COMMON_SHARE``) makes no
pairs on its own.

==================  ============================================  ==========================
type                condition                                     strength
==================  ============================================  ==========================
strong_overlap      entity Jaccard above ``strong_overlap``       the Jaccard index
moderate_overlap    entity Jaccard above ``moderate_overlap``     the Jaccard index
weak_overlap        at least one shared entity                    the Jaccard index
same_period         a resolved period in common (``Q2 2025``)     0.5
temporal_sequence   related as above, both dated, dates differ    0.6 (source is the earlier)
same_document       one document                                  0.4
<graph edge type>   an edge of the context graph, lower-cased     the edge weight, in [0, 1]
==================  ============================================  ==========================
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from typing import Any

from ragloom.context._text import content_date, resolved_periods
from ragloom.context.model import Relationship
from ragloom.errors import InvalidParameterError
from ragloom.types import ScoredChunk

STRONG_OVERLAP = "strong_overlap"
MODERATE_OVERLAP = "moderate_overlap"
WEAK_OVERLAP = "weak_overlap"
SAME_PERIOD = "same_period"
TEMPORAL_SEQUENCE = "temporal_sequence"
SAME_DOCUMENT = "same_document"

#: Fixed strengths (seed 004: temporal_boost 0.6, same_document_boost 0.4).
FIXED_STRENGTHS: Mapping[str, float] = {SAME_PERIOD: 0.5, TEMPORAL_SEQUENCE: 0.6, SAME_DOCUMENT: 0.4}
#: Context-graph edge types not turned into relationships: SAME_SOURCE is ``same_document``
#: already, and SAME_LENS joins every chunk of a lens, which would make every context dense.
SKIPPED_GRAPH_TYPES = frozenset({"SAME_SOURCE", "SAME_LENS"})
#: An entity, period or document found in more than this share of the chunks (and in more
#: than ``POSTINGS_FLOOR`` of them) relates no pair by itself: it is what the whole result is
#: about, not a link between two parts of it, and its pairs would grow with the square of
#: the candidates.
COMMON_SHARE = 0.5
POSTINGS_FLOOR = 16
#: Shared entities named in a description before "+N more".
DESCRIBED_ENTITIES = 3

#: Context-graph edges: ``{(id_a, id_b): [(edge_type, weight), ...]}``; a callable
#: ``neighbours(chunk_id) -> [(other_id, edge_type, weight), ...]`` (``ContextGraph.neighbours``
#: fits); or an iterable of edges with ``src``, ``dst``, ``type`` and ``weight``
#: (:class:`ragloom.graph.Edge`) or of ``(src, dst, type, weight)`` tuples.
GraphEdges = (
    Mapping[tuple[str, str], Iterable[tuple[str, float]]]
    | Callable[[str], Iterable[tuple[str, str, float]]]
    | Iterable[Any]
)


def _overlap_type(jaccard: float, strong: float, moderate: float) -> str:
    if jaccard > strong:
        return STRONG_OVERLAP
    if jaccard > moderate:
        return MODERATE_OVERLAP
    return WEAK_OVERLAP


def _describe_entities(shared: Iterable[str]) -> str:
    names = sorted(shared)
    text = ", ".join(names[:DESCRIBED_ENTITIES])
    if len(names) > DESCRIBED_ENTITIES:
        text += f" (+{len(names) - DESCRIBED_ENTITIES} more)"
    return f"shared entities: {text}"


def graph_edge_triples(graph_edges: GraphEdges | None, chunk_ids: Sequence[str],
                       aliases: Mapping[str, str] | None = None) -> dict[tuple[str, str, str], float]:
    """The graph edges between ``chunk_ids`` as ``{(id_a, id_b, edge_type): weight}``.

    ``aliases`` maps ids merged away by deduplication to the id that absorbed them, so an
    edge naming a merged span still lands on the merged chunk. Weights are clipped to [0, 1];
    of repeated edges the strongest is kept; self-loops (after aliasing) are dropped.
    """
    if graph_edges is None:
        return {}
    present = set(chunk_ids)
    alias = dict(aliases or {})
    out: dict[tuple[str, str, str], float] = {}

    def add(a: str, b: str, kind: str, weight: float) -> None:
        a, b = alias.get(a, a), alias.get(b, b)
        if a == b or a not in present or b not in present or kind in SKIPPED_GRAPH_TYPES:
            return
        if b < a:
            a, b = b, a
        key = (a, b, str(kind))
        w = min(max(float(weight), 0.0), 1.0)
        if w > out.get(key, -1.0):
            out[key] = w

    if isinstance(graph_edges, Mapping):
        for (a, b), edges in graph_edges.items():
            if isinstance(edges, tuple) and len(edges) == 2 and isinstance(edges[0], str):
                edges = [edges]  # one (type, weight) instead of a list of them
            for kind, weight in edges:
                add(a, b, kind, weight)
    elif callable(graph_edges):
        # Ask for the merged-away ids too: the graph knows them, not the merged chunk.
        asked = list(present) + [k for k, v in alias.items() if v in present]
        for cid in asked:
            for other, kind, weight in graph_edges(cid):
                add(cid, other, kind, weight)
    else:
        for edge in graph_edges:
            if isinstance(edge, tuple):
                a, b, kind, weight = edge
            else:
                a, b, kind, weight = edge.src, edge.dst, edge.type, edge.weight
            add(a, b, kind, weight)
    return out


def find_relationships(chunks: Sequence[ScoredChunk], *, strong_overlap: float = 0.5,
                       moderate_overlap: float = 0.2, graph_edges: GraphEdges | None = None,
                       aliases: Mapping[str, str] | None = None) -> list[Relationship]:
    """Every relationship between ``chunks``, ordered by the pair's positions, then type."""
    if not 0.0 <= moderate_overlap <= strong_overlap <= 1.0:
        raise InvalidParameterError(
            f"moderate_overlap ({moderate_overlap}) must be between 0 and strong_overlap ({strong_overlap}), "
            "which must be at most 1")
    ids = [c.chunk_id for c in chunks]
    position = {cid: i for i, cid in enumerate(ids)}
    entity_sets = [frozenset(c.entities) for c in chunks]

    entity_index: defaultdict[str, list[int]] = defaultdict(list)
    period_index: defaultdict[str, list[int]] = defaultdict(list)
    document_index: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    periods = [resolved_periods(c) for c in chunks]
    for i, c in enumerate(chunks):
        for e in entity_sets[i]:
            entity_index[e].append(i)
        for p in periods[i]:
            period_index[p].append(i)
        document_index[(c.tenant, c.document_id)].append(i)

    found: list[tuple[int, int, str, float, str]] = []
    related: set[tuple[int, int]] = set()
    cap = max(POSTINGS_FLOOR, int(COMMON_SHARE * len(chunks)))

    entity_pairs: set[tuple[int, int]] = set()
    for members in entity_index.values():
        if len(members) <= cap:
            entity_pairs.update(itertools.combinations(members, 2))
    for i, j in entity_pairs:
        a, b = entity_sets[i], entity_sets[j]
        shared = a & b  # common entities count here, though they found no pair on their own
        jac = len(shared) / (len(a) + len(b) - len(shared))
        found.append((i, j, _overlap_type(jac, strong_overlap, moderate_overlap), jac, _describe_entities(shared)))
    related |= entity_pairs

    period_pairs: set[tuple[int, int]] = set()
    for members in period_index.values():
        if len(members) <= cap:
            period_pairs.update(itertools.combinations(members, 2))
    for i, j in period_pairs:
        shared_periods = [p for p in periods[i] if p in periods[j]]
        found.append((i, j, SAME_PERIOD, FIXED_STRENGTHS[SAME_PERIOD], "shared period: " + ", ".join(shared_periods)))
    related |= period_pairs

    for members in document_index.values():
        if len(members) > cap:
            continue
        for i, j in itertools.combinations(members, 2):
            ci, cj = chunks[i], chunks[j]
            title = ci.title or ci.source_name
            what = "adjacent chunks of" if abs(ci.chunk_index - cj.chunk_index) == 1 else "same document:"
            found.append((i, j, SAME_DOCUMENT, FIXED_STRENGTHS[SAME_DOCUMENT], f"{what} {title}"))
            related.add((i, j))

    # A sequence only between chunks that already share something: two dated chunks about
    # unrelated things are not a story.
    dates: list[date | None] = [content_date(c) for c in chunks]
    for i, j in related:
        di, dj = dates[i], dates[j]
        if di is None or dj is None or di == dj:
            continue
        early, late = (di, dj) if di < dj else (dj, di)
        found.append((i, j, TEMPORAL_SEQUENCE, FIXED_STRENGTHS[TEMPORAL_SEQUENCE],
                      f"{early.isoformat()} before {late.isoformat()}"))

    for (src, dst, edge_type), weight in graph_edge_triples(graph_edges, ids, aliases).items():
        i, j = sorted((position[src], position[dst]))
        found.append((i, j, edge_type.lower(), weight, f"context graph {edge_type} ({weight:.2f})"))

    found.sort(key=lambda f: (f[0], f[1], f[2]))
    out = []
    for i, j, kind, strength, description in found:
        first, second = i, j
        di, dj = dates[i], dates[j]
        if kind == TEMPORAL_SEQUENCE and di is not None and dj is not None and dj < di:
            first, second = j, i
        out.append(Relationship(ids[first], ids[second], kind, float(strength), description))
    return out


def relationship_strengths(relationships: Iterable[Relationship]) -> dict[str, float]:
    """Per chunk id, the sum of the strengths of its relationships (uncapped)."""
    total: defaultdict[str, float] = defaultdict(float)
    for r in relationships:
        total[r.source_id] += r.strength
        total[r.target_id] += r.strength
    return dict(total)


def between(relationships: Iterable[Relationship], chunk_ids: Iterable[str]) -> list[Relationship]:
    """The relationships whose two chunks are both in ``chunk_ids``."""
    keep = set(chunk_ids)
    return [r for r in relationships if r.source_id in keep and r.target_id in keep]

