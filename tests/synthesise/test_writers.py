from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import InvalidParameterError
from ragloom.synthesise import (
    ANSWER_LABEL,
    AnthropicLLM,
    ExtractiveWriter,
    LLMSettings,
    LLMWriter,
    OpenAICompatibleLLM,
    Prompts,
    Source,
    Writer,
    load_prompt,
    writer_from_settings,
)
from ragloom.synthesise.extract import candidates
from tests.synthesise.fake_llm import FakeLLMServer, text_reply
from tests.synthesise.materials import AUTHORITY, corpus

QUESTIONS = [
    "When does the catalog integration with QuickBooks ship?",
    "How many engineers do we have, and how many are planned?",
    "Why do customers churn?",
    "What do customers say about offline mode in the mobile app?",
    "What are the risks of the event bus migration?",
    "How should we price the Pro plan?",
]


def first_sentences(sources: list[Source] | tuple[Source, ...]) -> set[tuple[str, int]]:
    """(document, start) of the first quotable sentence of every source."""
    out = set()
    for s in sources:
        found = candidates([s])
        if found:
            out.add((s.document_id, found[0].quote().start))
    return out


def assert_quotes_exact(quotes: tuple, sources: tuple[Source, ...] | list[Source]) -> None:
    by_number = {s.number: s for s in sources}
    for q in quotes:
        assert corpus().text_of(q.document_id)[q.start : q.end] == q.text
        source = by_number[q.number]
        assert source.contains(q.document_id, q.start, q.end) and q.lens == source.lens


# -- the extractive writer on the sample materials --------------------------------------------


@pytest.mark.parametrize("question", QUESTIONS)
def test_extractive_answer_quotes_verbatim_with_valid_citations(question: str) -> None:
    sources = corpus().sources
    answer = ExtractiveWriter().answer(question, sources)
    assert answer.extractive and answer.writer == "extractive"
    assert answer.text.splitlines()[0] == ANSWER_LABEL
    assert "no language model configured" in answer.text.splitlines()[0]
    assert 1 <= len(answer.quotes) <= 5
    assert_quotes_exact(answer.quotes, sources)
    assert answer.citations.ok, answer.citations.to_dict()
    assert answer.citations.invalid == [] and answer.citations.bad_quotes == []
    assert answer.citations.valid == list(dict.fromkeys(q.number for q in answer.quotes))
    for q in answer.quotes:  # each statement is written quoted, with its citation
        assert f"{q.display}” [{q.number}]" in answer.text


def test_extractive_answer_covers_the_question_across_lenses() -> None:
    answer = ExtractiveWriter().answer(QUESTIONS[0], corpus().sources)
    lenses = {q.lens for q in answer.quotes}
    assert len(lenses) >= 3  # the roadmap, the planning sync and the design doc disagree
    joined = " ".join(q.text.lower() for q in answer.quotes)
    assert "quickbooks" in joined and "catalog" in joined


def test_statements_are_not_the_first_sentence_of_each_chunk() -> None:
    sources = corpus().sources
    picked = set()
    firsts = first_sentences(sources)
    for question in QUESTIONS:
        picked |= {(q.document_id, q.start) for q in ExtractiveWriter().answer(question, sources).quotes}
    assert len(picked - firsts) > len(picked) / 2


@given(st.lists(st.sampled_from(sorted({w for s in corpus().sources for w in re.findall(r"[A-Za-z]{4,}", s.text)})),
                min_size=1, max_size=6))
def test_any_question_gives_exact_quotes_and_valid_citations(words: list[str]) -> None:
    sources = corpus().sources[::2]
    answer = ExtractiveWriter(max_statements=4).answer(" ".join(words) + "?", sources)
    assert_quotes_exact(answer.quotes, sources)
    assert answer.citations.ok
    assert len(answer.quotes) <= 4


def test_extractive_section_speaks_for_every_lens_in_authority_order() -> None:
    sources = corpus().sources
    section = ExtractiveWriter().section("catalog integration schedule and risks", sources, lenses=AUTHORITY)
    present = [lens for lens in AUTHORITY if any(s.lens == lens for s in sources)]
    assert list(section.lenses_heard) == present
    assert {q.lens for q in section.quotes} == set(present)
    headings = re.findall(r"^\*\*(.+?)\*\*$", section.text, flags=re.MULTILINE)
    assert headings == present
    assert_quotes_exact(section.quotes, sources)
    assert section.citations.ok and section.citations.invalid == []
    assert section.statements == len(section.quotes) >= len(present)


def test_extractive_section_puts_unlisted_lenses_last() -> None:
    sources = corpus().sources
    section = ExtractiveWriter(per_lens=1).section("pricing", sources, lenses=["engineering", "your-voice"])
    listed = [lens for lens in section.lenses_heard if lens in ("engineering", "your-voice")]
    assert section.lenses_heard[: len(listed)] == tuple(listed) and len(section.lenses_heard) > len(listed)
    # a lens is heard only where one of its sentences names the query's words: no off-topic padding
    for quote in section.quotes:
        assert "pric" in quote.text.lower()
    assert set(section.lenses_heard) < {s.lens for s in sources}


def test_paragraph_style_and_streaming_callback() -> None:
    got: list[str] = []
    answer = ExtractiveWriter(style="paragraph", max_statements=3).answer(QUESTIONS[0], corpus().sources,
                                                                          on_text=got.append)
    assert got == [answer.text]
    body = answer.text.splitlines()[2]
    assert not body.startswith("- ") and body.count("” [") == len(answer.quotes)
    assert answer.citations.ok


def test_no_sources_and_unmatched_questions_say_so() -> None:
    empty = ExtractiveWriter().answer("Anything?", [])
    assert "The sources do not answer" in empty.text and empty.quotes == () and empty.citations.ok
    sources = corpus().by_lens("engineering")
    odd = ExtractiveWriter().answer("zebra xylophone quasar", sources)
    assert "Nothing in the sources answers this question; the closest statements are:" in odd.text
    assert not any(q.text.startswith(("Author:", "Reviewers:")) for q in odd.quotes)  # bookkeeping answers nothing
    assert 1 <= len(odd.quotes) <= 2 and odd.citations.ok
    section = ExtractiveWriter().section("anything", [], lenses=AUTHORITY)
    assert section.quotes == () and "The sources do not answer" in section.text and section.statements == 0


def test_extractive_writer_validates_its_options() -> None:
    with pytest.raises(InvalidParameterError, match="max_statements"):
        ExtractiveWriter(max_statements=0)
    with pytest.raises(InvalidParameterError, match="style"):
        ExtractiveWriter(style="poem")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="min_words"):
        ExtractiveWriter(min_words=9, max_words=3)


# -- the LLM writer through the local server ---------------------------------------------------


def four_sources() -> list[Source]:
    c = corpus()
    picked = [c.by_lens(lens)[1] for lens in ("team-structured", "engineering", "team-conversational", "your-voice")]
    return [Source(n, s.chunk_id, s.document_id, s.source_path, s.title, s.section_path, s.lens, s.start, s.end,
                   s.text, s.document_date, s.score) for n, s in enumerate(picked, 1)]


def test_llm_answer_checks_citations_after_writing(llm_server: FakeLLMServer) -> None:
    sources = four_sources()
    sentence = next(c.text for c in candidates([sources[1]]))
    reply = (f"Engineering writes “{' '.join(sentence.split())}” [2]. The launch moves to Mars [7]. "
             "Nobody in the company objects to it.")
    llm_server.push(text_reply(reply))
    llm = AnthropicLLM("claude-test", api_key="sk-test", base_url=llm_server.url)
    writer = LLMWriter(llm, max_tokens=321)
    assert isinstance(writer, Writer)
    answer = writer.answer("When does the catalog ship?", sources)
    assert answer.text == reply and not answer.extractive and answer.model == "claude-test"
    assert answer.citations.valid == [2]
    assert answer.citations.invalid == [7]
    assert answer.citations.uncited_sentences == ["Nobody in the company objects to it."]
    assert not answer.citations.ok
    (quote,) = answer.quotes  # the model's exact quote, located in source 2
    assert quote.number == 2 and corpus().text_of(quote.document_id)[quote.start : quote.end] == quote.text
    body = llm_server.requests[0].body
    assert body["model"] == "claude-test" and body["max_tokens"] == 321
    assert body["system"] == load_prompt("system")
    prompt = body["messages"][0]["content"]
    assert "When does the catalog ship?" in prompt
    for s in sources:
        assert f"[{s.number}]\nLens: {s.lens}" in prompt and s.text.strip() in prompt


def test_llm_section_streams_and_sends_lenses_and_context(llm_server: FakeLLMServer) -> None:
    sources = four_sources()
    reply = "**engineering**\n\nThe design doc puts general availability in August 2025 [2].\n"
    llm_server.push(text_reply(reply, chunks=5))
    llm = OpenAICompatibleLLM("llama3.2", base_url=llm_server.url + "/v1")
    deltas: list[str] = []
    section = LLMWriter(llm).section("catalog schedule", sources, lenses=AUTHORITY, on_text=deltas.append,
                                     context="We sell to HVAC firms.", title="Roadmap 2025")
    assert len(deltas) >= 4 and "".join(deltas) == section.text == reply
    assert section.lenses_heard == ("engineering",)
    assert section.citations.ok and section.statements == 1
    request = llm_server.requests[0].body
    assert request["stream"] is True and request["model"] == "llama3.2"
    user = request["messages"][1]["content"]
    assert ", ".join(AUTHORITY) in user and "We sell to HVAC firms." in user and "Roadmap 2025" in user


def test_llm_writer_sends_nothing_without_sources(llm_server: FakeLLMServer) -> None:
    llm = AnthropicLLM("claude-test", api_key="sk-test", base_url=llm_server.url)
    answer = LLMWriter(llm).answer("Anything?", [])
    assert "The sources do not answer" in answer.text and llm_server.requests == []


def test_writer_from_settings(tmp_path: Path) -> None:
    assert isinstance(writer_from_settings(LLMSettings(), environ={}), ExtractiveWriter)
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "system.md").write_text("House rules.", encoding="utf-8")
    writer = writer_from_settings(LLMSettings(provider="anthropic", max_tokens=99), workspace=tmp_path,
                                  environ={"ANTHROPIC_API_KEY": "k"})
    assert isinstance(writer, LLMWriter)
    assert writer.prompts.system == "House rules." and writer.max_tokens == 99
    assert writer.prompts.answer == Prompts.load().answer
