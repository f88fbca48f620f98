"""Retrieval modes, found by name: ``vector``, ``bm25``, ``hybrid``."""

from ragloom.retrieve import basic as _basic  # noqa: F401  (registers the modes)
from ragloom.retrieve.base import (
    SearchRequest,
    get_mode,
    mode,
    mode_names,
    reciprocal_rank_fusion,
    to_scored,
)

__all__ = ["SearchRequest", "get_mode", "mode", "mode_names", "reciprocal_rank_fusion", "to_scored"]
