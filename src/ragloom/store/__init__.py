"""Persistence: the LanceDB store, its schemas and row conversions, the write plan of a document
version, and the filter builders that keep user strings in literals."""

from typing import TYPE_CHECKING

from ragloom.exports import lazy

if TYPE_CHECKING:
    from ragloom.store.filters import scope, sql_in, sql_str, sql_time
    from ragloom.store.lance import LanceStore
    from ragloom.store.schema import DOCUMENT_SCHEMA, chunk_schema

__all__ = ["DOCUMENT_SCHEMA", "LanceStore", "chunk_schema", "scope", "sql_in", "sql_str", "sql_time"]

__getattr__, __dir__ = lazy(globals(), {
    "ragloom.store.filters": ("scope", "sql_in", "sql_str", "sql_time"),
    "ragloom.store.lance": ("LanceStore",),
    "ragloom.store.schema": ("DOCUMENT_SCHEMA", "chunk_schema"),
})
