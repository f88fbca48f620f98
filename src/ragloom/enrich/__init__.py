"""Enrichment: contextual prefixes, content hashes, chunk identities."""

from ragloom.enrich.prefix import PrefixBuilder, chunk_id, content_hash, enrich_chunks, shorten_path

__all__ = ["PrefixBuilder", "chunk_id", "content_hash", "enrich_chunks", "shorten_path"]
