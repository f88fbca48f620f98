"""Retrieval modes, found by name: ``vector``, ``bm25``, ``hybrid``, ``balanced``, ``graph``,
``window`` and ``dynamic``, plus any installed package's ``ragloom.modes`` entry points."""

from ragloom.retrieve.base import (
    MODES,
    Mode,
    ModeOptions,
    SearchRequest,
    define,
    get_mode,
    mode_names,
    reciprocal_rank_fusion,
    register_mode,
    to_scored,
)

__all__ = ["MODES", "Mode", "ModeOptions", "SearchRequest", "define", "get_mode", "mode_names",
           "reciprocal_rank_fusion", "register_mode", "to_scored"]
