"""Markdown structure: sections with heading paths, sentences, document types."""

from ragloom.parse.doctype import DEFAULT_RULES, DocTypeRule, infer_doc_type
from ragloom.parse.sections import clean_heading, parse_sections
from ragloom.parse.sentences import paragraph_ends, sentence_ends, sentence_spans

__all__ = [
    "DEFAULT_RULES",
    "DocTypeRule",
    "clean_heading",
    "infer_doc_type",
    "paragraph_ends",
    "parse_sections",
    "sentence_ends",
    "sentence_spans",
]
