"""Queries: typed requests, the query service, post-stages, results."""

from typing import TYPE_CHECKING

from ragloom.exports import lazy

if TYPE_CHECKING:
    from ragloom.query.poststages import AgeDecay, Optimise, PostStage, default_post_stages
    from ragloom.query.request import Query
    from ragloom.query.result import QueryResult, parse_time
    from ragloom.query.service import QueryRequest, QueryService

__all__ = ["AgeDecay", "Optimise", "PostStage", "Query", "QueryRequest", "QueryResult", "QueryService",
           "default_post_stages", "parse_time"]

__getattr__, __dir__ = lazy(globals(), {
    "ragloom.query.poststages": ("AgeDecay", "Optimise", "PostStage", "default_post_stages"),
    "ragloom.query.request": ("Query",),
    "ragloom.query.result": ("QueryResult", "parse_time"),
    "ragloom.query.service": ("QueryRequest", "QueryService"),
})
