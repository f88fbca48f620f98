from __future__ import annotations

import random
from dataclasses import replace
from datetime import date

from ragloom.context import (
    format_context,
    optimize_context,
    parse_related_types,
    parse_source_numbers,
)
from ragloom.context.model import Relationship
from ragloom.tokens import get_tokenizer

from .factory import chunk, paragraph

TOK = get_tokenizer("cl100k_base")


def related_candidates(n: int = 10, seed: int = 2):
    rng = random.Random(seed)
    return [chunk(f"chunk-id-{i:03d}-xyz", paragraph(rng, 3), rng.random(), doc=f"doc-{i % 3}", start=1000 * i,
                  title=f"Title {i % 3}", entities=tuple(rng.sample(["e:a", "e:b", "e:c", "e:d"], 2)),
                  section=("Plan", f"Part {i}"), document_date=date(2024, 1 + i % 12, 1) if i % 2 else None)
            for i in range(n)]


def test_header_and_source_lines() -> None:
    a = chunk("a", "First text.", 0.875, title="Roadmap", source="docs/roadmap.md", section=("Plan", "Q2"),
              document_date=date(2025, 4, 1))
    b = replace(chunk("b", "Second text.", 0.5, source="notes/b.md", lens="team"), title="")
    rels = [Relationship("a", "b", "strong_overlap", 0.8, ""), Relationship("b", "a", "same_document", 0.4, "")]
    text, tokens = format_context([a, b], rels, "what ships\nin Q2?", "temporal", tokenizer=TOK)
    assert tokens == TOK.count(text)
    assert text.startswith(f"# Context for query: what ships in Q2?\nStrategy: temporal | Sources: 2 | Tokens: {tokens}\n")
    assert "## Source 1: Roadmap (roadmap.md)\nSection: Plan > Q2 | Lens: engineering | Date: 2025-04-01 | Relevance: 0.88\n" in text
    assert "Related to: Source 2 (strong_overlap, same_document)\n\nFirst text.\n" in text
    assert "## Source 2: b.md\nLens: team | Date: undated | Relevance: 0.50\nRelated to: Source 1 (strong_overlap, same_document)" in text
    assert parse_source_numbers(text) == {1: (2,), 2: (1,)}
    assert parse_related_types(text) == {1: {2: ("strong_overlap", "same_document")},
                                         2: {1: ("strong_overlap", "same_document")}}


def test_round_trip_names_sources_by_number_never_by_id() -> None:
    candidates = related_candidates(12)
    result = optimize_context(candidates, "part plan", max_tokens=100_000)
    text = result.formatted
    assert "chunk-id-" not in text
    parsed = parse_source_numbers(text)
    n = len(result.chunks)
    assert sorted(parsed) == list(range(1, n + 1))
    pairs = {frozenset((r.source_id, r.target_id)) for r in result.relationships}
    types = parse_related_types(text)
    for number, related in parsed.items():
        assert related, "every chunk here shares an entity with others"
        assert len(related) <= 3
        for other in related:
            assert 1 <= other <= n and other != number
            a, b = result.chunks[number - 1].chunk_id, result.chunks[other - 1].chunk_id
            assert frozenset((a, b)) in pairs
            assert set(types[number][other]) == {r.type for r in result.relationships
                                                 if {r.source_id, r.target_id} == {a, b}}


def test_a_source_heading_inside_chunk_text_is_not_a_source() -> None:
    sneaky = chunk("a", "Quoted:\n## Source 7: fake\nmeta\nRelated to: Source 9 (x)\n", 0.9)
    text, _ = format_context([sneaky], [], "q", "relevance", tokenizer=TOK)
    assert parse_source_numbers(text) == {1: ()}


def test_long_queries_are_shortened_in_the_header() -> None:
    text, _ = format_context([], [], "word " * 500, "relevance", tokenizer=TOK)
    first = text.splitlines()[0]
    assert len(first) == len("# Context for query: ") + 300 and first.endswith("…")
