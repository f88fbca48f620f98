"""The context window optimiser: filter → dedup → relate → prioritise → budget → organise →
format, each step a pure function, composed in :func:`optimize_context`.

>>> from ragloom.context import optimize_context
>>> ctx = optimize_context(results, "When does the catalog integration ship?")  # doctest: +SKIP
>>> print(ctx.formatted)                                                          # doctest: +SKIP
"""

from ragloom.context.budget import fit_budget, trim_to_sentences
from ragloom.context.dedup import (
    SIMILARITY_METHODS,
    find_duplicates,
    merge_spans,
    remove_redundancy,
)
from ragloom.context.filter import drop_repeated_ids, filter_relevance, normalize_scores
from ragloom.context.format import format_context, parse_related_types, parse_source_numbers
from ragloom.context.model import (
    BudgetResult,
    DedupResult,
    OptimizedContext,
    Prioritized,
    Relationship,
)
from ragloom.context.optimizer import ContextOptimizer, optimize_context
from ragloom.context.organize import STRATEGIES, choose_strategy, organize, strategy_names
from ragloom.context.prioritize import prioritize, query_terms
from ragloom.context.relate import GraphEdges, find_relationships

__all__ = [
    "SIMILARITY_METHODS",
    "STRATEGIES",
    "BudgetResult",
    "ContextOptimizer",
    "DedupResult",
    "GraphEdges",
    "OptimizedContext",
    "Prioritized",
    "Relationship",
    "choose_strategy",
    "drop_repeated_ids",
    "filter_relevance",
    "find_duplicates",
    "find_relationships",
    "fit_budget",
    "format_context",
    "merge_spans",
    "normalize_scores",
    "optimize_context",
    "organize",
    "parse_related_types",
    "parse_source_numbers",
    "prioritize",
    "query_terms",
    "remove_redundancy",
    "strategy_names",
    "trim_to_sentences",
]
