"""Persistence: the LanceDB store and the filter builders that keep user strings in literals."""

from ragloom.store.filters import scope, sql_in, sql_str, sql_time
from ragloom.store.lance import DOCUMENT_SCHEMA, LanceStore, chunk_schema

__all__ = ["DOCUMENT_SCHEMA", "LanceStore", "chunk_schema", "scope", "sql_in", "sql_str", "sql_time"]
