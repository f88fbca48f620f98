"""Queries: a typed request through a retrieval mode, then the post-stages."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ragloom.context import OptimizedContext
from ragloom.graph.maintain import GraphMaintainer
from ragloom.query.poststages import PostStage, default_post_stages, optimise
from ragloom.query.request import Query
from ragloom.query.result import (
    PERIOD_BOOST,
    Preference,
    QueryResult,
    as_of_moment,
    date_range,
    preferred_period,
    shown,
)
from ragloom.retrieve.base import ModeOptions, SearchRequest, get_mode, with_relevance
from ragloom.retrieve.graph import GraphOptions, expand_seeds
from ragloom.store.filters import DateRange
from ragloom.store.plan import CHUNKS
from ragloom.types import ScoredChunk

if TYPE_CHECKING:
    from ragloom.components import Components


@dataclass(frozen=True)
class QueryRequest:
    """Everything a query asks for, checked: the mode's options are its typed options."""

    text: str
    mode: str
    options: ModeOptions
    tenant: str
    #: Results to return: :meth:`QueryService.request` fills in ``retrieval.k`` (or, for an optimised
    #: context, ``context_optimization.candidates``). None asks a mode for all it finds (``balanced``:
    #: ``chunks_per_lens`` of every lens; ``graph``: ``final_limit``), for callers inside ragloom.
    k: int | None = None
    lenses: tuple[str, ...] | None = None
    as_of: datetime | None = None
    dated: DateRange | None = None
    budget: int | None = None
    organize: str | None = None
    optimize: bool = False
    #: A period the query names; its documents rank first (none when ``dated`` limits them).
    preferred: Preference | None = None


class QueryService:
    """Runs queries for an engine: :meth:`request` checks one, :meth:`run` answers it."""

    def __init__(self, components: Components, post_stages: Sequence[PostStage] | None = None) -> None:
        self.c = components
        self.post_stages: list[PostStage] = list(post_stages) if post_stages is not None \
            else default_post_stages(components)

    def request(self, query: Query | str, /, **given: Any) -> QueryRequest:  # noqa: ANN401
        """A checked request: known mode, its own options only, valid names, counts and times.

        ``query`` is a :class:`~ragloom.query.request.Query`, or its text with the fields and
        options as keyword arguments (see :meth:`Query.build`). Every bad value is an
        :class:`InvalidParameterError` naming the parameter, its bound and the fix; values are
        echoed shortened, so that a 1 MB argument makes a one-line error.
        """
        from ragloom.errors import InvalidParameterError

        q = Query.build(query, **given)
        text, k, mode, lenses, tenant = q.text, q.k, q.mode, q.lenses, q.tenant
        budget, organize, optimize = q.budget, q.organize, q.optimize
        if not isinstance(text, str):
            raise InvalidParameterError(f"the query text must be a string, not {type(text).__name__}")
        name = mode or self.c.settings.retrieval.mode
        if not isinstance(name, str) or len(name) > 64:
            raise InvalidParameterError(f"mode {shown(name)} is not a retrieval mode; "
                                        "see ragloom.retrieve.mode_names()")
        retriever = get_mode(name)
        if k is not None and (isinstance(k, bool) or not isinstance(k, int)):
            raise InvalidParameterError(f"k must be a whole number, not {shown(k)}")
        if k is not None and k < 1:
            raise InvalidParameterError(f"k ({k}) must be at least 1: the number of results to return")
        self.check_budget(budget)
        if organize is not None and (not isinstance(organize, str) or len(organize) > 64):
            raise InvalidParameterError(f"organize {shown(organize)} is not an organisation strategy")
        optimize = optimize or budget is not None or organize is not None
        if optimize and k is None:
            k = self.c.settings.context_optimization.candidates
        if k is None:  # every mode returns retrieval.k (balanced and graph retrieve more to choose from)
            k = self.c.settings.retrieval.k
        lens_list = [lenses] if isinstance(lenses, str) else list(lenses) if lenses else None
        for lens in lens_list or ():  # any text: a lens is a filter literal (none matches a name never ingested)
            if not isinstance(lens, str):
                raise InvalidParameterError(f"lens {shown(lens)} must be a string")
        moment = as_of_moment(q.as_of)
        dated = date_range(q.dated_from, q.dated_to)
        tenant = self.c.tenant(tenant)
        self.c.check_lenses(tenant, lens_list, as_of=moment)
        return QueryRequest(
            text=text, mode=name, options=retriever.options.build(self.c.settings, dict(q.options), mode=name),
            tenant=tenant, k=k,
            lenses=tuple(lens_list) if lens_list else None,
            as_of=moment, dated=dated,
            budget=budget, organize=organize, optimize=optimize,
            preferred=preferred_period(text) if dated is None and self.c.settings.retrieval.prefer_named_periods
            else None,
        )

    def check_budget(self, budget: int | None) -> None:
        """Raise unless ``budget`` (tokens of context) is None or a whole number above the reserve."""
        from ragloom.errors import InvalidParameterError

        if budget is None:
            return
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise InvalidParameterError(f"budget must be a whole number, not {shown(budget)}")
        reserve = self.c.settings.context_optimization.reserve_tokens
        if budget <= reserve:
            raise InvalidParameterError(
                f"budget ({budget}) must be larger than context_optimization.reserve_tokens ({reserve})")

    def _search(self, request: QueryRequest, *, dated: DateRange | None = None) -> SearchRequest:
        graph = GraphMaintainer(self.c)
        return SearchRequest(text=request.text, store=self.c.store, embedder=self.c.embedder, tenant=request.tenant,
                             settings=self.c.settings, options=request.options, k=request.k,
                             lenses=list(request.lenses) if request.lenses else None, as_of=request.as_of,
                             dated=dated or request.dated,
                             graph=lambda: graph.view(request.tenant))

    def run(self, request: QueryRequest) -> QueryResult:
        with self.c.store.reading():  # the retrieval and every post-stage read one commit
            return self._run(request)

    def _run(self, request: QueryRequest) -> QueryResult:
        started = time.perf_counter()
        search = self._search(request)
        mode = get_mode(request.mode)
        # An empty workspace answers nothing without loading the model to embed the query.
        searchable = request.text.strip() and self.c.store.has_table(CHUNKS)
        results = with_relevance(mode(search), mode.scale) if searchable else []
        if results and request.preferred is not None:
            inside = self._search(request, dated=request.preferred.range)
            results = _prefer(results, with_relevance(mode(inside), mode.scale), search.limit)
            search.timings.update({f"{k} (period)": v for k, v in inside.timings.items()})
            search.notes.append(f"ranked documents dated {request.preferred.named} first, as the query names it "
                                "(--dated-from/--dated-to keeps only those)")
        if not request.text.strip():
            search.notes.append("the query is empty: give the words to search for")
        elif not results and not self.c.store.documents_any():
            search.notes.append(f"the workspace {self.c.workspace} has no documents yet: ingest some with "
                                "'ragloom ingest PATH --lens NAME'")
        elif not results and request.tenant not in self.c.store.tenants():  # other tenants are not named
            search.notes.append(f"tenant {request.tenant!r} has no documents in the workspace {self.c.workspace}; "
                                "check the tenant's name, or ingest into it")
        result = QueryResult(request.text, request.mode, results, request.tenant, request.as_of, search.notes,
                             self.c.warnings(), timings=search.timings, dated=request.dated,
                             preferred=request.preferred)
        for stage in self.post_stages:
            started_stage = time.perf_counter()
            result = stage(result, request)
            result.timings[stage.name] = result.timings.get(stage.name, 0.0) + time.perf_counter() - started_stage
        result.seconds = time.perf_counter() - started
        return result

    def expand(self, request: QueryRequest, seeds: Sequence[ScoredChunk]) -> list[ScoredChunk]:
        """``seeds`` (found by any mode for ``request``) and their context-graph neighbours,
        ranked for relevance and lens diversity (the ``[graph]`` settings)."""
        search = self._search(request)
        return expand_seeds(search, seeds, GraphOptions.build(self.c.settings, {}, mode="graph"))

    def optimize(self, results: Sequence[ScoredChunk], query: str, *, budget: int | None = None,
                 organize: str | None = None, tenant: str | None = None) -> OptimizedContext:
        """The optimised context window for ``results`` retrieved elsewhere."""
        result = QueryResult(query, "given", list(results), self.c.tenant(tenant))
        return optimise(self.c, result, budget=budget, organize=organize)


def _prefer(results: Sequence[ScoredChunk], inside: Sequence[ScoredChunk], limit: int) -> list[ScoredChunk]:
    """``results`` with those of ``inside`` (the same search over the preferred period's
    documents) merged in, their relevance raised by :data:`PERIOD_BOOST` (at most 1); best
    first, at most ``limit``."""
    best = {r.chunk_id: r for r in results}
    for r in inside:
        boosted = replace(r, relevance=min(1.0, r.relevance * PERIOD_BOOST), scores={**r.scores, "period": PERIOD_BOOST})
        if r.chunk_id not in best or boosted.relevance >= best[r.chunk_id].relevance:
            best[r.chunk_id] = boosted
    return sorted(best.values(), key=lambda r: -r.relevance)[:limit]
