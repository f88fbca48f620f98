"""The one place where the optimiser's steps are composed:
filter → dedup → relate → prioritise → budget → organise → format."""

from __future__ import annotations

from collections.abc import Sequence

from ragloom.config import ContextSettings
from ragloom.context.budget import fit_budget
from ragloom.context.dedup import SIMILARITY_METHODS, remove_redundancy
from ragloom.context.filter import drop_repeated_ids, filter_relevance, normalize_scores
from ragloom.context.format import format_context
from ragloom.context.model import OptimizedContext, Prioritized, Relationship
from ragloom.context.organize import STRATEGIES, check_strategy
from ragloom.context.organize import organize as order_chunks
from ragloom.context.prioritize import prioritize
from ragloom.context.relate import GraphEdges, between, find_relationships
from ragloom.errors import InvalidParameterError, UnknownNameError
from ragloom.tokens import DEFAULT_TOKENIZER, TokenCounter, get_tokenizer
from ragloom.types import ScoredChunk


def _tokenizer(tokenizer: str | TokenCounter) -> TokenCounter:
    return get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer


def _budget(settings: ContextSettings, max_tokens: int | None) -> int:
    total = settings.max_tokens if max_tokens is None else max_tokens
    if total <= settings.reserve_tokens:
        raise InvalidParameterError(
            f"max_tokens ({total}) must be larger than reserve_tokens ({settings.reserve_tokens})")
    return total - settings.reserve_tokens


def _check_similarity(similarity: str) -> None:
    if similarity not in SIMILARITY_METHODS:
        raise UnknownNameError("similarity method", similarity, SIMILARITY_METHODS)


def optimize_context(candidates: Sequence[ScoredChunk], query: str, settings: ContextSettings | None = None, *,
                     tokenizer: str | TokenCounter = DEFAULT_TOKENIZER, organize: str | None = None,
                     max_tokens: int | None = None, graph_edges: GraphEdges | None = None,
                     similarity: str = "minhash", lens_order: Sequence[str] | None = None) -> OptimizedContext:
    """Turn one query's retrieved candidates into a budgeted, de-duplicated, ordered context.

    ``organize`` and ``max_tokens`` override the settings for this call; ``graph_edges`` adds
    context-graph relationships (see :data:`ragloom.context.relate.GraphEdges`);
    ``similarity`` picks how near-duplicate content is measured (``minhash`` or ``vector``).
    With ``settings.enabled`` false the candidates only get normalised, budgeted and sent in
    relevance order.

    The token count of ``formatted`` under ``tokenizer`` never exceeds
    ``max_tokens - reserve_tokens``; when not even the header fits, nothing is sent.
    """
    settings = settings if settings is not None else ContextSettings()
    requested = check_strategy(organize if organize is not None else settings.organize)
    _check_similarity(similarity)
    budget = _budget(settings, max_tokens)
    counter = _tokenizer(tokenizer)

    unique, removed = drop_repeated_ids(candidates)
    normalised = normalize_scores(unique)
    relationships: list[Relationship]
    if settings.enabled:
        relevant, low = filter_relevance(normalised, settings.min_relevance)
        removed += low
        dedup = remove_redundancy(relevant, similarity_threshold=settings.similarity_threshold,
                                  content_weight=settings.content_weight, entity_weight=settings.entity_weight,
                                  method=similarity)
        removed += dedup.removed
        chunks, stats, merged = list(dedup.chunks), dict(dedup.stats), dict(dedup.merged)
        aliases = {old: new for new, olds in merged.items() for old in olds if old != new}
        relationships = find_relationships(chunks, strong_overlap=settings.strong_overlap,
                                           moderate_overlap=settings.moderate_overlap,
                                           graph_edges=graph_edges, aliases=aliases)
        items = prioritize(chunks, relationships, query, relationship_weight=settings.relationship_weight,
                           query_overlap_weight=settings.query_overlap_weight,
                           recency_weight=settings.recency_weight)
    else:
        requested = "relevance"
        relationships, merged = [], {}
        stats = {"original_count": len(normalised), "unique_count": len(normalised), "removed_count": 0,
                 "merged_count": 0, "groups": 0, "duplicate_characters": 0}
        items = prioritize(normalised, (), query, relationship_weight=0.0, query_overlap_weight=0.0,
                           recency_weight=0.0)

    shrink = 0
    while True:
        fit = fit_budget(items, max(budget - shrink, 0), tokenizer=counter, relationships=relationships,
                         query=query, trim=settings.trim_to_sentences, strategies=STRATEGIES)
        selected: list[Prioritized] = list(fit.selected)
        final = between(relationships, (p.chunk_id for p in selected))
        ordered, strategy, reason = order_chunks(selected, final, requested, lens_order=lens_order)
        if not settings.enabled:
            reason = "optimiser disabled → relevance"
        formatted, total = format_context([p.chunk for p in ordered], final, query, strategy, tokenizer=counter)
        if total <= budget:
            break
        if not selected:
            formatted, total = "", 0  # not even the header fits
            break
        # The pieces were counted apart, the text is counted whole, and tokens can merge or
        # split where pieces meet. Fit again to a budget smaller by the excess, which may
        # trim a chunk where dropping one would lose more.
        shrink += total - budget
    removed += fit.removed

    return OptimizedContext(
        chunks=tuple(p.chunk for p in ordered),
        relationships=tuple(final),
        total_tokens=total,
        strategy=strategy,
        strategy_reason=reason,
        removed=tuple(removed),
        deduplication_stats=stats,
        budget=budget,
        formatted=formatted,
        priorities={p.chunk_id: p.priority for p in ordered},
        merged=merged,
        tokenizer=counter.name,
    )


class ContextOptimizer:
    """:func:`optimize_context` with its settings and tokenizer checked once, up front."""

    def __init__(self, settings: ContextSettings | None = None, *,
                 tokenizer: str | TokenCounter = DEFAULT_TOKENIZER, similarity: str = "minhash") -> None:
        self.settings = settings if settings is not None else ContextSettings()
        check_strategy(self.settings.organize)
        _check_similarity(similarity)
        _budget(self.settings, None)
        self.tokenizer = _tokenizer(tokenizer)
        self.similarity = similarity

    def optimize(self, candidates: Sequence[ScoredChunk], query: str, *, organize: str | None = None,
                 max_tokens: int | None = None, graph_edges: GraphEdges | None = None,
                 lens_order: Sequence[str] | None = None) -> OptimizedContext:
        return optimize_context(candidates, query, self.settings, tokenizer=self.tokenizer, organize=organize,
                                max_tokens=max_tokens, graph_edges=graph_edges, similarity=self.similarity,
                                lens_order=lens_order)
