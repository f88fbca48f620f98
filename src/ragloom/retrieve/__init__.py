"""Retrieval modes, found by name: ``vector``, ``bm25``, ``hybrid``, ``balanced``, ``graph``,
``window`` and ``dynamic``."""

from ragloom.retrieve import basic as _basic  # noqa: F401  (registers the modes)
from ragloom.retrieve import graph as _graph  # noqa: F401
from ragloom.retrieve import lens as _lens  # noqa: F401
from ragloom.retrieve import window as _window  # noqa: F401
from ragloom.retrieve.base import (
    SearchRequest,
    get_mode,
    mode,
    mode_names,
    reciprocal_rank_fusion,
    to_scored,
)

__all__ = ["SearchRequest", "get_mode", "mode", "mode_names", "reciprocal_rank_fusion", "to_scored"]
