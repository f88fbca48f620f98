"""What runs after retrieval, in order: each post-stage takes the result and returns it,
changed or not (age decay and the context optimiser today; a reranker or a writer tomorrow).

    class KeepEngineering:
        name = "engineering only"
        def __call__(self, result, request):
            result.results = [r for r in result.results if r.lens == "engineering"]
            return result

    engine.queries.post_stages.insert(0, KeepEngineering())
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ragloom.context import OptimizedContext
from ragloom.context.relate import SKIPPED_GRAPH_TYPES
from ragloom.query.result import QueryResult
from ragloom.retrieve.base import age_decay

if TYPE_CHECKING:
    from ragloom.components import Components
    from ragloom.query.service import QueryRequest


@runtime_checkable
class PostStage(Protocol):
    name: str

    def __call__(self, result: QueryResult, request: QueryRequest) -> QueryResult: ...


@dataclass
class AgeDecay:
    """Older chunks score less (``retrieval.age_decay``), relative to the query's as-of moment."""

    components: Components
    name: str = "age decay"

    def __call__(self, result: QueryResult, request: QueryRequest) -> QueryResult:
        s = self.components.settings.retrieval
        if s.age_decay:
            result.results = age_decay(result.results, request.as_of or datetime.now(UTC),
                                       per_year=s.age_decay_per_year, floor=s.age_decay_floor)
        return result


@dataclass
class Optimise:
    """The optimised context window (``result.context``) when the request asks for one; graph
    edges between the results count as relationships when the graph is on."""

    components: Components
    name: str = "optimise"

    def __call__(self, result: QueryResult, request: QueryRequest) -> QueryResult:
        if request.optimize:
            result.context = optimise(self.components, result, budget=request.budget, organize=request.organize)
        return result


def optimise(components: Components, result: QueryResult, *, budget: int | None = None,
             organize: str | None = None) -> OptimizedContext:
    """The optimised context of ``result``'s chunks (see :mod:`ragloom.context`)."""
    edges = None
    if components.settings.graph.enabled and result.results:
        edges = components.store.edges_among(result.tenant, {r.chunk_id for r in result.results},
                                             skip_types=SKIPPED_GRAPH_TYPES)
    return components.optimizer.optimize(result.results, result.query, organize=organize, max_tokens=budget,
                                         graph_edges=edges, lens_order=components.lens_order(result.tenant))


def default_post_stages(components: Components) -> list[PostStage]:
    return [AgeDecay(components), Optimise(components)]
