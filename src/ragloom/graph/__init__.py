"""The context graph: eight kinds of edge between chunks, built without all-pairs loops."""

from typing import TYPE_CHECKING

from ragloom.exports import lazy

if TYPE_CHECKING:
    from ragloom.graph.build import Update, build_edges, term_counts, update_edges
    from ragloom.graph.model import (
        EDGE_TYPES,
        MENTIONS,
        SAME_LENS,
        SAME_SOURCE,
        SEQUENTIAL,
        SHARED_ENTITY,
        SIMILAR_TO,
        TEMPORAL_OVERLAP,
        TOPIC_OVERLAP,
        Edge,
        GraphNode,
    )
    from ragloom.graph.view import ContextGraph, node_attributes

__all__ = [
    "EDGE_TYPES",
    "MENTIONS",
    "SAME_LENS",
    "SAME_SOURCE",
    "SEQUENTIAL",
    "SHARED_ENTITY",
    "SIMILAR_TO",
    "TEMPORAL_OVERLAP",
    "TOPIC_OVERLAP",
    "ContextGraph",
    "Edge",
    "GraphNode",
    "Update",
    "build_edges",
    "node_attributes",
    "term_counts",
    "update_edges",
]

__getattr__, __dir__ = lazy(globals(), {
    "ragloom.graph.build": ("Update", "build_edges", "term_counts", "update_edges"),
    "ragloom.graph.model": ("EDGE_TYPES", "MENTIONS", "SAME_LENS", "SAME_SOURCE", "SEQUENTIAL", "SHARED_ENTITY",
                            "SIMILAR_TO", "TEMPORAL_OVERLAP", "TOPIC_OVERLAP", "Edge", "GraphNode"),
    "ragloom.graph.view": ("ContextGraph", "node_attributes"),
})
