from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pytest

from ragloom.errors import InvalidParameterError
from ragloom.synthesise import (
    EXTRACTIVE_LABEL,
    AnthropicLLM,
    ExtractiveWriter,
    LLMWriter,
    Report,
    SectionInput,
    build_report,
    build_timeline,
    number_report_sources,
)
from ragloom.synthesise.sources import one_line
from ragloom.types import ScoredChunk
from tests.synthesise.fake_llm import FakeLLMServer, text_reply
from tests.synthesise.materials import AUTHORITY, contradictions, corpus

QUERIES = {
    "When does the catalog integration with QuickBooks ship?": ("catalog", "quickbooks", "event bus"),
    "How many engineers will we have?": ("engineers", "hiring", "headcount"),
    "What do customers say about offline mode?": ("offline",),
    "What is our plan for the Mars colony?": ("mars colony",),  # nothing: a thin section
}
LENSES = (*AUTHORITY, "customer-voice")  # a lens the materials do not have


def retrieve(words: tuple[str, ...], k: int = 8) -> list[ScoredChunk]:
    """A stand-in for retrieval: the chunks that name the words most often."""
    scored = [(sum(c.text.lower().count(w) for w in words), c) for c in corpus().chunks]
    return [c for n, c in sorted(scored, key=lambda nc: -nc[0]) if n > 0][:k]


def extractive_report(**options: object) -> Report:
    c = corpus()
    per_query, sources = number_report_sources([(q, retrieve(words)) for q, words in QUERIES.items()])
    found = contradictions(c.documents, c.chunks)[:3]
    progress: list[tuple[int, int, str]] = []
    report = build_report(
        "Fieldline roadmap 2025", [SectionInput(q, s) for q, s in per_query], found, sources, LENSES,
        ExtractiveWriter(), context="We are a 40-person field-service software company.\nBe candid.",
        stats={"retrieval": {"mode": "hybrid", "k": 8}, "when": date(2025, 3, 1), "lenses": ("a", "b"),
               "ids": {"x", "y"}, "mean": np.float32(0.5), "scores": np.arange(3)},
        on_progress=lambda *p: progress.append(p), now=datetime(2025, 3, 20, 9, 30, tzinfo=UTC), **options)
    assert progress == [(i, len(QUERIES), q) for i, q in enumerate(QUERIES)] + [(len(QUERIES), len(QUERIES), "")]
    return report


@pytest.fixture(scope="module")
def report() -> Report:
    return extractive_report()


def section_of(markdown: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", markdown, flags=re.MULTILINE | re.DOTALL)
    assert match, heading
    return match.group(1)


def test_markdown_has_the_label_and_every_section(report: Report) -> None:
    md = report.to_markdown()
    assert md.splitlines()[0].startswith(f"*{EXTRACTIVE_LABEL}")
    assert "# Fieldline roadmap 2025" in md
    assert "> We are a 40-person field-service software company.\n> Be candid." in md
    for query in QUERIES:
        assert f"## {query}\n" in md
    for heading in ("Timeline", "Contradictions and supersessions", "Open questions", "Sources", "Statistics"):
        assert f"\n## {heading}\n" in md
    assert "## Citation check" not in md  # the extractive report cites validly throughout


def test_every_statement_is_exact_and_cited(report: Report) -> None:
    c = corpus()
    assert report.citations.ok, report.citations.to_dict()
    assert report.citations.invalid == [] and report.citations.uncited_sentences == []
    by_number = {s.number: s for s in report.sources}
    quotes = [q for s in report.sections for q in s.quotes]
    quotes += [q for x in report.contradictions for q in (x.first, x.second)] + [t.quote for t in report.timeline]
    for q in quotes:
        assert c.text_of(q.document_id)[q.start : q.end] == q.text
        assert by_number[q.number].contains(q.document_id, q.start, q.end)
    for s in report.sources:
        assert c.text_of(s.document_id)[s.start : s.end] == s.text


def test_sections_speak_for_each_retrieved_lens(report: Report) -> None:
    for section in report.sections:
        retrieved = {s.lens for s in section.sources}
        assert set(section.lenses_heard) == retrieved
        assert list(section.lenses_heard) == [lens for lens in LENSES if lens in retrieved]


def test_timeline_is_chronological_and_dated_by_the_documents(report: Report) -> None:
    assert len(report.timeline) >= 5
    keys = [(t.start, t.end) for t in report.timeline]
    assert keys == sorted(keys)
    md_lines = [line for line in section_of(report.to_markdown(), "Timeline").splitlines() if line.startswith("- ")]
    assert [line.split("**")[1] for line in md_lines] == [t.period for t in report.timeline]
    for t in report.timeline:
        assert t.start <= t.end and not t.quote.display.endswith("?")
        assert t.quote.display in md_lines[report.timeline.index(t)]
    # "in June" in the planning sync of February 2025 is June 2025: resolved by the document's date
    june = [t for t in report.timeline if "in June" in t.quote.text]
    assert june and all(t.start == date(2025, 6, 1) for t in june)


def test_contradictions_quote_both_sides(report: Report) -> None:
    assert report.contradictions
    block = section_of(report.to_markdown(), "Contradictions and supersessions")
    for x in report.contradictions:
        assert x.first.lens != x.second.lens
        for side in (x.first, x.second):
            assert f"> “{one_line(side.text)}” [{side.number}]" in block
        assert x.difference in block


def test_statements_outside_the_retrieved_sources_are_added() -> None:
    c = corpus()
    per_query, sources = number_report_sources([("q", retrieve(("offline",), k=2))])
    found = contradictions(c.documents, c.chunks)[:2]
    report = build_report("T", [SectionInput(q, s) for q, s in per_query], found, sources, AUTHORITY,
                          ExtractiveWriter())
    assert len(report.sources) > len(sources)
    assert [s.number for s in report.sources] == list(range(1, len(report.sources) + 1))
    assert report.citations.invalid == []


def test_open_questions_name_thin_queries_and_silent_lenses(report: Report) -> None:
    kinds = {(q.kind, q.query or q.lens) for q in report.open_questions}
    assert ("silent_lens", "customer-voice") in kinds
    assert ("thin_evidence", "What is our plan for the Mars colony?") in kinds
    mars = next(s for s in report.sections if "Mars" in s.query)
    assert mars.thin and "0 sources" in mars.thin_reason and "The sources do not answer" in mars.text
    block = section_of(report.to_markdown(), "Open questions")
    assert "customer-voice" in block and "Mars colony" in block
    assert "*Thin evidence: 0 sources" in section_of(report.to_markdown(), "What is our plan for the Mars colony?")


def test_sources_list_maps_numbers_to_paths_sections_and_offsets(report: Report) -> None:
    block = section_of(report.to_markdown(), "Sources")
    for s in report.sources:
        where = f"{s.source_path} › {s.section_path}" if s.section_path else s.source_path
        assert f"- **[{s.number}]** {where} ({s.lens}, chars {s.start}–{s.end})" in block


def test_to_dict_is_json_and_save_writes_both_files(report: Report, tmp_path: Path) -> None:
    data = json.loads(json.dumps(report.to_dict()))
    assert data["extractive"] is True and data["label"] == EXTRACTIVE_LABEL
    assert [s["query"] for s in data["sections"]] == list(QUERIES)
    assert data["stats"]["when"] == "2025-03-01" and data["stats"]["mean"] == 0.5
    assert data["stats"]["scores"] == [0, 1, 2] and data["stats"]["ids"] == ["x", "y"]
    assert [t["sort_key"] for t in data["timeline"]] == sorted(t["sort_key"] for t in data["timeline"])
    assert data["contradictions"][0]["first"]["text"] and data["contradictions"][0]["second"]["text"]
    assert data["citations"]["ok"] is True
    md, js = report.save(tmp_path / "out", "roadmap")
    assert md.read_text(encoding="utf-8") == report.to_markdown()
    assert json.loads(js.read_text(encoding="utf-8")) == data
    with pytest.raises(InvalidParameterError, match="stem"):
        report.save(tmp_path, "../escape")


def test_section_sources_must_come_from_the_report_list() -> None:
    _, sources = number_report_sources([("q", retrieve(("catalog",), k=3))])
    stray = number_report_sources([("q", retrieve(("offline",), k=3))])[1]
    with pytest.raises(InvalidParameterError, match="number_report_sources"):
        build_report("T", [SectionInput("q", tuple(stray))], [], sources, AUTHORITY, ExtractiveWriter())


def test_timeline_leaves_out_unresolved_references() -> None:
    source = corpus().sources[0]
    undated = type(source)(1, "c", "d", "/u.md", "U", "", "engineering", 0, 44,
                           "The catalog integration ships in Q2, maybe.", None, 0.0)
    dated = type(source)(2, "c2", "d2", "/v.md", "V", "", "engineering", 0, 47,
                         "The catalog integration ships in Q3 2025, too.", None, 0.0)
    entries = build_timeline([], [undated, dated])
    assert [t.period for t in entries] == ["Q3 2025"]


def test_a_model_written_report_is_checked_as_a_whole(llm_server: FakeLLMServer) -> None:
    per_query, sources = number_report_sources([(q, retrieve(words)) for q, words in list(QUERIES.items())[:2]])
    first = per_query[0][1][0]
    llm_server.push(text_reply(f"The roadmap covers this [{first.number}]. It also invents a source [99]."),
                    text_reply("Nothing cited here at all, which the check must notice."))
    llm = AnthropicLLM("claude-test", api_key="sk-test", base_url=llm_server.url)
    report = build_report("Model report", [SectionInput(q, s) for q, s in per_query], [], sources, AUTHORITY,
                          LLMWriter(llm))
    md = report.to_markdown()
    assert md.splitlines()[0].startswith("*Written by anthropic (claude-test)")
    assert report.citations.invalid == [99]
    assert "Nothing cited here at all, which the check must notice." in report.citations.uncited_sentences
    assert "## Citation check" in md and "99" in section_of(md, "Citation check")
    assert report.sections[1].thin  # no statement carries a citation
    assert len(llm_server.requests) == 2
