"""Queries: typed requests, the query service, post-stages, results."""

from ragloom.query.poststages import AgeDecay, Optimise, PostStage, default_post_stages
from ragloom.query.request import Query
from ragloom.query.result import QueryResult, parse_time
from ragloom.query.service import QueryRequest, QueryService

__all__ = ["AgeDecay", "Optimise", "PostStage", "Query", "QueryRequest", "QueryResult", "QueryService",
           "default_post_stages", "parse_time"]
