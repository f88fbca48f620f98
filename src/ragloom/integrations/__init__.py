"""Adapters for other RAG frameworks (each behind its own extra)."""
