from __future__ import annotations

import json
from datetime import date

import pytest

from ragloom.analyse.contradictions import Contradiction, Statement
from ragloom.errors import InvalidParameterError
from ragloom.synthesise import (
    Quote,
    add_statement_sources,
    format_sources,
    number_report_sources,
    number_sources,
    statement_number,
)
from ragloom.synthesise.sources import check_numbering
from tests.synthesise.materials import corpus


def test_number_sources_copies_provenance_and_text_exactly() -> None:
    c = corpus()
    sources = number_sources(c.chunks[:5], start=3)
    assert [s.number for s in sources] == [3, 4, 5, 6, 7]
    for chunk, source in zip(c.chunks[:5], sources, strict=True):
        assert source.chunk_id == chunk.chunk_id
        assert source.section_path == " > ".join(chunk.section_path)
        assert source.text == c.text_of(source.document_id)[source.start : source.end]
        assert source.document_date == chunk.document_date
    json.dumps([s.to_dict() for s in sources])
    with pytest.raises(InvalidParameterError, match="1-based"):
        number_sources(c.chunks[:1], start=0)


def test_one_numbering_for_a_whole_report() -> None:
    chunks = corpus().chunks
    per_query, sources = number_report_sources([("q1", chunks[:3]), ("q2", chunks[2:5]), ("q3", [])])
    assert [s.number for s in sources] == [1, 2, 3, 4, 5]
    assert [s.number for s in per_query[0][1]] == [1, 2, 3]
    assert [s.number for s in per_query[1][1]] == [3, 4, 5]  # chunk 2 keeps its number
    assert per_query[2] == ("q3", ())


def test_numbering_must_be_distinct() -> None:
    sources = number_sources(corpus().chunks[:2])
    with pytest.raises(InvalidParameterError, match="used twice"):
        check_numbering([sources[0], sources[0]])


def test_format_sources_shows_number_lens_document_section_and_text() -> None:
    source = corpus().sources[3]
    block = format_sources([source])
    assert block.startswith(f"[{source.number}]\n")
    assert f"Lens: {source.lens}" in block
    assert source.source_name in block and source.title in block
    assert f"Section: {source.section_path}" in block
    assert source.text.strip() in block


def _contradiction(first: Statement, second: Statement) -> Contradiction:
    return Contradiction("date", "engineering_vs_team-structured", "catalog integration", "Q2 2025 vs Q3 2025",
                         "Engineering feasibility may conflict with product plans", (first, second), 0.9, 0.6, 0.9)


def test_statements_map_to_the_source_that_holds_them_or_are_added() -> None:
    c = corpus()
    inside, outside = c.sources[1], c.sources[-1]
    start = inside.start + inside.text.index(inside.text.split()[1])
    a = Statement(inside.chunk_id, inside.document_id, inside.lens, inside.source_path, inside.section_path,
                  start, inside.end, c.text_of(inside.document_id)[start : inside.end])
    b = Statement(outside.chunk_id, outside.document_id, outside.lens, outside.source_path, outside.section_path,
                  outside.start, outside.end, outside.text)
    kept = list(c.sources[:5])
    assert statement_number(a, kept) == inside.number
    assert statement_number(a, kept, {inside.chunk_id: 4}) == inside.number  # a wrong mapping is not trusted
    assert statement_number(b, kept) is None
    grown = add_statement_sources(kept, [_contradiction(a, b)])
    assert len(grown) == 6
    added = grown[-1]
    assert added.number == 6 and added.lens == outside.lens
    assert added.text == c.text_of(added.document_id)[added.start : added.end]
    assert statement_number(b, grown) == 6
    assert add_statement_sources(grown, [_contradiction(a, b)]) == grown  # idempotent


def test_quote_from_source_keeps_document_offsets() -> None:
    source = corpus().sources[4]
    quote = Quote.from_source(source, 2, 12)
    assert corpus().text_of(source.document_id)[quote.start : quote.end] == quote.text
    with pytest.raises(InvalidParameterError, match="within source"):
        Quote.from_source(source, 5, len(source.text) + 1)
    assert quote.to_dict()["number"] == source.number
    assert isinstance(source.to_dict()["document_date"], str | None)
    assert date.fromisoformat(source.to_dict()["document_date"] or "2025-01-01")
