"""The graph's model: the edge kinds, a node and an edge, imported by the store and the settings alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SIMILAR_TO, SAME_SOURCE, SAME_LENS = "SIMILAR_TO", "SAME_SOURCE", "SAME_LENS"
TOPIC_OVERLAP, TEMPORAL_OVERLAP, SEQUENTIAL = "TOPIC_OVERLAP", "TEMPORAL_OVERLAP", "SEQUENTIAL"
MENTIONS, SHARED_ENTITY = "MENTIONS", "SHARED_ENTITY"
ENTITY_TYPES = (MENTIONS, SHARED_ENTITY)
EDGE_TYPES = (SIMILAR_TO, SAME_SOURCE, SAME_LENS, TOPIC_OVERLAP, TEMPORAL_OVERLAP, SEQUENTIAL, MENTIONS, SHARED_ENTITY)
#: Weights of the edge types whose weight is fixed (seed 000).
FIXED_WEIGHTS = {SAME_SOURCE: 1.0, SAME_LENS: 0.5, TEMPORAL_OVERLAP: 1.0, SEQUENTIAL: 1.0}


@dataclass(frozen=True, slots=True)
class GraphNode:
    chunk_id: str
    document_id: str
    lens: str
    chunk_index: int
    key_terms: tuple[str, ...] = ()
    periods: tuple[str, ...] = ()  # resolved canonical periods only
    vector: Any = field(default=None, repr=False, compare=False)
    #: Names the chunk is about (its heading; the title, for a document's first chunk) and
    #: names of other chunks its text mentions (see :mod:`ragloom.graph.entities`).
    about: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    type: str
    weight: float
    attrs: Mapping[str, Any] = field(default_factory=dict)


def edge(a: str, b: str, kind: str, weight: float, **attrs: Any) -> Edge:  # noqa: ANN401
    """An undirected edge, stored with its ends in order (``src < dst``)."""
    src, dst = (a, b) if a < b else (b, a)
    return Edge(src, dst, kind, float(weight), attrs)
