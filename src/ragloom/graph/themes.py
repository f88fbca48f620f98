"""Themes of a workspace: communities of its context graph, each named by its distinctive terms.

The chunks are grouped by Louvain community detection (networkx, a fixed seed) over the edges
that say two chunks are about the same thing: ``SIMILAR_TO`` (close in meaning),
``TOPIC_OVERLAP`` (shared key terms), ``SHARED_ENTITY`` and ``MENTIONS``; the edges that only
say where a chunk is (same document, same lens, next in line, same period) are left out. A
theme is named by the key terms much likelier in it than in the whole workspace (their lift,
damped for terms seen a few times: the idea of class-based TF-IDF, with which BERTopic names
its topics), so the names come from the workspace's own words.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import networkx as nx

from ragloom.graph.model import MENTIONS, SHARED_ENTITY, SIMILAR_TO, TOPIC_OVERLAP
from ragloom.graph.view import ContextGraph

#: Edges that relate chunks by what they are about.
ABOUT = (SIMILAR_TO, TOPIC_OVERLAP, SHARED_ENTITY, MENTIONS)
MIN_SIZE = 3


@dataclass(frozen=True, slots=True)
class Theme:
    """A community of chunks: its name's terms, its chunks (most connected first), its lenses."""

    label: str
    terms: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    lenses: tuple[str, ...]
    documents: int

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "terms": list(self.terms), "chunks": len(self.chunk_ids),
                "documents": self.documents, "lenses": list(self.lenses)}


def find_themes(graph: ContextGraph, *, limit: int = 6, terms: int = 3, seed: int = 7) -> list[Theme]:
    """The ``limit`` largest themes of ``graph`` (of at least :data:`MIN_SIZE` chunks), each
    named by its ``terms`` most distinctive key terms."""
    about = nx.Graph()
    about.add_nodes_from(graph.graph.nodes)
    for a, b, data in graph.graph.edges(data=True):
        if data["type"] in ABOUT and a != b:
            weight = float(data["weight"]) + (about[a][b]["weight"] if about.has_edge(a, b) else 0.0)
            about.add_edge(a, b, weight=weight)
    about.remove_nodes_from([n for n in list(about.nodes) if about.degree(n) == 0])
    if about.number_of_nodes() == 0:
        return []
    groups = [g for g in nx.community.louvain_communities(about, weight="weight", seed=seed) if len(g) >= MIN_SIZE]
    groups.sort(key=lambda g: (-len(g), min(g)))
    nodes = graph.graph.nodes
    df: Counter[str] = Counter(t for n in nodes for t in set(nodes[n]["key_terms"]))
    total = max(1, graph.graph.number_of_nodes())
    themes: list[Theme] = []
    for group in groups:
        if len(themes) >= limit:
            break
        count: Counter[str] = Counter(t for n in group for t in set(nodes[n]["key_terms"]))
        # How much likelier the term is in the theme than in the workspace (its lift), damped for
        # terms seen only a few times: a name on every page says nothing about any theme.
        scores = {t: math.log(1 + k) * math.log((k / len(group)) / (df[t] / total)) for t, k in count.items()
                  if k >= 3 and k / len(group) > df[t] / total}
        named = tuple(sorted(scores, key=lambda t: (-scores[t], t))[:terms])
        if not named:
            continue
        members = sorted(group, key=lambda n: (-float(about.degree(n, weight="weight")), n))
        lenses = tuple(sorted({nodes[n]["lens"] for n in group}))
        themes.append(Theme(", ".join(named), named, tuple(members), lenses,
                            len({nodes[n]["document_id"] for n in group})))
    return themes
