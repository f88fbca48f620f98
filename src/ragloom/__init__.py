"""ragloom: a local-first context engine for retrieval-augmented generation.

>>> from ragloom import Engine
>>> engine = Engine("ragloom-data")
>>> engine.ingest("examples/materials/engineering", lens="engineering")  # doctest: +SKIP
>>> engine.query("When does the catalog integration ship?", k=3)        # doctest: +SKIP
"""

from typing import TYPE_CHECKING

from ragloom.exports import lazy

if TYPE_CHECKING:
    from ragloom.chunk import (
        BoundaryChunker,
        Chunker,
        SentenceChunker,
        TokenChunker,
        chunk_text,
        chunker_names,
        get_chunker,
    )
    from ragloom.config import Settings
    from ragloom.embed import CachedEmbedder, Embedder, HashingEmbedder, SentenceTransformerEmbedder
    from ragloom.engine import Engine, IngestReport, Progress, QueryResult
    from ragloom.enrich import PrefixBuilder
    from ragloom.errors import (
        ConfigError,
        EmbeddingError,
        InvalidParameterError,
        LoadError,
        MissingExtraError,
        RagloomError,
        StoreError,
        UnknownChunkError,
        UnknownNameError,
        WorkspaceMismatchWarning,
    )
    from ragloom.load import load_document
    from ragloom.parse import parse_sections, sentence_spans
    from ragloom.query import Query
    from ragloom.retrieve import mode_names
    from ragloom.tokens import TokenCounter, ensure_tiktoken_offline, get_tokenizer
    from ragloom.types import Chunk, Document, QualityIssue, ScoredChunk, Section, SentenceNode

__version__ = "0.1.0"

__all__ = [
    "BoundaryChunker",
    "CachedEmbedder",
    "Chunk",
    "Chunker",
    "ConfigError",
    "Document",
    "EmbeddingError",
    "Embedder",
    "Engine",
    "HashingEmbedder",
    "IngestReport",
    "InvalidParameterError",
    "LoadError",
    "MissingExtraError",
    "PrefixBuilder",
    "Progress",
    "QualityIssue",
    "Query",
    "QueryResult",
    "RagloomError",
    "ScoredChunk",
    "Section",
    "SentenceChunker",
    "SentenceNode",
    "SentenceTransformerEmbedder",
    "Settings",
    "StoreError",
    "TokenChunker",
    "TokenCounter",
    "UnknownChunkError",
    "UnknownNameError",
    "WorkspaceMismatchWarning",
    "__version__",
    "chunk_text",
    "chunker_names",
    "ensure_tiktoken_offline",
    "get_chunker",
    "get_tokenizer",
    "load_document",
    "mode_names",
    "parse_sections",
    "sentence_spans",
]

# Imported on first use: the command line starts without the engine (ragloom.exports).
__getattr__, __dir__ = lazy(globals(), {
    "ragloom.chunk": ("BoundaryChunker", "Chunker", "SentenceChunker", "TokenChunker", "chunk_text", "chunker_names",
                      "get_chunker"),
    "ragloom.config": ("Settings",),
    "ragloom.embed": ("CachedEmbedder", "Embedder", "HashingEmbedder", "SentenceTransformerEmbedder"),
    "ragloom.engine": ("Engine", "IngestReport", "Progress", "QueryResult"),
    "ragloom.enrich": ("PrefixBuilder",),
    "ragloom.errors": ("ConfigError", "EmbeddingError", "InvalidParameterError", "LoadError", "MissingExtraError",
                       "RagloomError", "StoreError", "UnknownChunkError", "UnknownNameError",
                       "WorkspaceMismatchWarning"),
    "ragloom.load": ("load_document",),
    "ragloom.parse": ("parse_sections", "sentence_spans"),
    "ragloom.query.request": ("Query",),
    "ragloom.retrieve": ("mode_names",),
    "ragloom.tokens": ("TokenCounter", "ensure_tiktoken_offline", "get_tokenizer"),
    "ragloom.types": ("Chunk", "Document", "QualityIssue", "ScoredChunk", "Section", "SentenceNode"),
})
