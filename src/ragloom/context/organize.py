"""Step 6: the reading order.

================  =======================================================================
strategy          order
================  =======================================================================
relevance         highest priority first
temporal          oldest first (document date, else earliest resolved period, else ingest
                  date); undated chunks last, by priority
topical           clusters (connected by relationships of strength >= 0.3), the cluster
                  with the best mean priority first, by priority inside
hierarchical      overview before detail: document openings first, then shallower
                  sections before deeper ones, by priority inside
edges             most relevant at both ends, least in the middle (1, 3, 5, ..., 6, 4, 2):
                  models read the ends of a long context best ("lost in the middle")
lens              grouped by lens, the lenses in authority order (``graph.authority``), by
                  priority inside: what a multi-lens report is written from
auto              chosen from the data; see :func:`choose_strategy`
================  =======================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date

from ragloom.context._text import content_date, order_date
from ragloom.context.model import Prioritized, Relationship
from ragloom.errors import UnknownNameError

AUTO = "auto"
#: Relationships at least this strong join two chunks into one topic.
TOPICAL_MIN_STRENGTH = 0.3
#: ``auto`` orders by time when more than this share of chunks is dated.
DATED_SHARE = 0.5
#: ``auto`` clusters by topic when more than this share of chunk pairs is related.
DENSE_RELATIONSHIPS = 0.3
#: ``auto`` puts the best chunks at both ends of a context with more chunks than this.
LONG_CONTEXT_CHUNKS = 8

Strategy = Callable[[Sequence[Prioritized], Sequence[Relationship]], list[Prioritized]]


def _by_priority(items: Sequence[Prioritized]) -> list[Prioritized]:
    return sorted(items, key=lambda p: (-p.priority, -p.relevance))


def by_relevance(items: Sequence[Prioritized], relationships: Sequence[Relationship] = ()) -> list[Prioritized]:
    return _by_priority(items)


def by_time(items: Sequence[Prioritized], relationships: Sequence[Relationship] = ()) -> list[Prioritized]:
    dated: list[tuple[date, int, Prioritized]] = []
    undated: list[Prioritized] = []
    for i, p in enumerate(_by_priority(items)):
        d = order_date(p.chunk)
        if d is None:
            undated.append(p)
        else:
            dated.append((d, i, p))
    return [p for _, _, p in sorted(dated, key=lambda t: (t[0], t[1]))] + undated


def topic_clusters(items: Sequence[Prioritized], relationships: Sequence[Relationship], *,
                   min_strength: float = TOPICAL_MIN_STRENGTH) -> list[list[Prioritized]]:
    """Connected components of the relationships at least ``min_strength`` strong, the best
    cluster (by mean priority) first, each by priority."""
    index = {p.chunk_id: i for i, p in enumerate(items)}
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for r in relationships:
        if r.strength >= min_strength and r.source_id in index and r.target_id in index:
            a, b = root(index[r.source_id]), root(index[r.target_id])
            if a != b:
                parent[max(a, b)] = min(a, b)
    clusters: dict[int, list[Prioritized]] = {}
    for i, p in enumerate(items):
        clusters.setdefault(root(i), []).append(p)
    ranked = [_by_priority(c) for c in clusters.values()]
    ranked.sort(key=lambda c: (-sum(p.priority for p in c) / len(c), -c[0].priority))
    return ranked


def by_topic(items: Sequence[Prioritized], relationships: Sequence[Relationship] = ()) -> list[Prioritized]:
    return [p for cluster in topic_clusters(items, relationships) for p in cluster]


def by_hierarchy(items: Sequence[Prioritized], relationships: Sequence[Relationship] = ()) -> list[Prioritized]:
    ranked = _by_priority(items)
    order = sorted(range(len(ranked)), key=lambda i: (
        ranked[i].chunk.chunk_index != 0, len(ranked[i].chunk.section_path), i))
    return [ranked[i] for i in order]


def by_edges(items: Sequence[Prioritized], relationships: Sequence[Relationship] = ()) -> list[Prioritized]:
    ranked = _by_priority(items)
    return ranked[0::2] + ranked[1::2][::-1]


def by_lens(items: Sequence[Prioritized], relationships: Sequence[Relationship] = (),
            lens_order: Sequence[str] = ()) -> list[Prioritized]:
    """Lenses in ``lens_order`` (others after them, by name), by priority inside each."""
    rank = {lens: i for i, lens in enumerate(lens_order)}
    return sorted(_by_priority(items), key=lambda p: (rank.get(p.chunk.lens, len(rank)), p.chunk.lens
                                                      if p.chunk.lens not in rank else ""))


#: The organisation strategies, by name (``auto`` chooses among them).
STRATEGIES: Mapping[str, Strategy] = {
    "relevance": by_relevance,
    "temporal": by_time,
    "topical": by_topic,
    "hierarchical": by_hierarchy,
    "edges": by_edges,
    "lens": by_lens,
}


def strategy_names() -> list[str]:
    return [*STRATEGIES, AUTO]


def check_strategy(name: str) -> str:
    if name != AUTO and name not in STRATEGIES:
        raise UnknownNameError("organisation strategy", name, strategy_names())
    return name


def choose_strategy(items: Sequence[Prioritized], relationships: Sequence[Relationship]) -> tuple[str, str]:
    """The strategy ``auto`` picks for these chunks, and why, in a few words.

    Time first (a question over dated sources is usually about how things moved), then
    topics when relationships are dense, then the ends of a long context, else relevance.
    """
    n = len(items)
    if n < 2:
        return "relevance", f"{n} chunk{'s' if n != 1 else ''} → relevance"
    dates = [d for p in items if (d := content_date(p.chunk)) is not None]
    if len(dates) / n > DATED_SHARE and len(set(dates)) > 1:
        return "temporal", f"{len(dates)}/{n} chunks dated (>{DATED_SHARE:.0%}) → temporal"
    ids = {p.chunk_id for p in items}
    pairs = {frozenset((r.source_id, r.target_id)) for r in relationships
             if r.source_id in ids and r.target_id in ids}
    density = len(pairs) / (n * (n - 1) / 2)
    if n >= 3 and density > DENSE_RELATIONSHIPS:
        return "topical", f"dense relationships ({density:.0%} of pairs related) → topical"
    if n > LONG_CONTEXT_CHUNKS:
        return "edges", f"long context ({n} chunks > {LONG_CONTEXT_CHUNKS}) → edges"
    return "relevance", "no dominant signal → relevance"


def organize(items: Sequence[Prioritized], relationships: Sequence[Relationship], strategy: str = AUTO, *,
             lens_order: Sequence[str] | None = None) -> tuple[list[Prioritized], str, str]:
    """``items`` in reading order, with the strategy used and the reason for it
    (``lens_order`` for the ``lens`` strategy)."""
    check_strategy(strategy)
    if strategy == AUTO:
        strategy, reason = choose_strategy(items, relationships)
    else:
        reason = "requested"
    if strategy == "lens" and lens_order is not None:
        return by_lens(items, relationships, lens_order), strategy, reason
    return STRATEGIES[strategy](items, relationships), strategy, reason
