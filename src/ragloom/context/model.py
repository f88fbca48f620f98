"""The values the optimiser's steps pass to each other and return."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragloom.types import ScoredChunk


@dataclass(frozen=True, slots=True)
class Relationship:
    """A reason to read two chunks together. Two chunks may hold several relationships.

    For ``temporal_sequence`` the source is the earlier chunk; otherwise the order of the
    two ids carries no meaning.
    """

    source_id: str
    target_id: str
    type: str
    strength: float  # in [0, 1]
    description: str

    def other(self, chunk_id: str) -> str:
        return self.target_id if chunk_id == self.source_id else self.source_id

    def to_dict(self) -> dict[str, Any]:
        return {"source_id": self.source_id, "target_id": self.target_id, "type": self.type,
                "strength": self.strength, "description": self.description}


@dataclass(frozen=True, slots=True)
class Prioritized:
    """A chunk with its priority and the parts the priority was made of."""

    chunk: ScoredChunk
    priority: float
    relevance: float  # the normalised retrieval score
    relationship: float  # sum of relationship strengths, capped at 1
    query_overlap: float  # share of the query's content words found in the chunk
    recency: float  # 0 undated, else scaled to [0, 1] across the candidates

    @property
    def chunk_id(self) -> str:
        return self.chunk.chunk_id


@dataclass(frozen=True, slots=True)
class DedupResult:
    chunks: tuple[ScoredChunk, ...]
    removed: tuple[tuple[str, str], ...]
    merged: Mapping[str, tuple[str, ...]]  # surviving id -> every id merged into it, itself first
    stats: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class BudgetResult:
    selected: tuple[Prioritized, ...]  # priority order; trimmed chunks carry their new text
    removed: tuple[tuple[str, str], ...]
    estimated_tokens: int  # the sum the greedy pass counted, header overhead included


@dataclass(frozen=True, slots=True)
class OptimizedContext:
    """What the optimiser sends to the model, and an account of how it got there."""

    chunks: tuple[ScoredChunk, ...]  # final order; merged or trimmed chunks keep exact offsets
    relationships: tuple[Relationship, ...]  # between the final chunks only
    total_tokens: int  # tokens of ``formatted`` under the tokenizer used
    strategy: str
    strategy_reason: str
    removed: tuple[tuple[str, str], ...]  # (chunk id, reason), in the order steps decided
    deduplication_stats: Mapping[str, int]
    budget: int  # tokens available: max_tokens - reserve_tokens
    formatted: str
    priorities: Mapping[str, float] = field(default_factory=dict)
    merged: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tokenizer: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunks": [c.to_dict() for c in self.chunks],
            "relationships": [r.to_dict() for r in self.relationships],
            "total_tokens": self.total_tokens,
            "strategy": self.strategy,
            "strategy_reason": self.strategy_reason,
            "removed": [{"chunk_id": cid, "reason": reason} for cid, reason in self.removed],
            "deduplication_stats": dict(self.deduplication_stats),
            "budget": self.budget,
            "formatted": self.formatted,
            "priorities": dict(self.priorities),
            "merged": {k: list(v) for k, v in self.merged.items()},
            "tokenizer": self.tokenizer,
        }
