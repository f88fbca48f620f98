"""ask and generate: on the sample materials with the offline writer, through the CLI, and with
a language model served by a local HTTP server that speaks its API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragloom.cli import app
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import InvalidParameterError
from ragloom.synthesise import ExtractiveWriter, Report
from ragloom.writing import SEED_QUERIES, read_queries

from .conftest import ingest_all, sample_settings
from .synthesise.fake_llm import FakeLLMServer, text_reply

runner = CliRunner()


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Engine:
    from ragloom.demo import install_samples

    ws = tmp_path_factory.mktemp("writing") / "ws"
    install_samples(materials, ws)
    engine = Engine(ws, settings=sample_settings(), embedder=HashingEmbedder())
    ingest_all(engine, materials)
    return engine


@pytest.fixture(scope="module")
def report(sample: Engine) -> Report:
    return sample.generate()


def document_text(engine: Engine, document_id: str) -> str:
    return engine.store.document_texts("default", [document_id])[document_id]


def test_the_offline_report_hears_every_lens_and_cites_validly(sample: Engine, report: Report) -> None:
    assert report.extractive and report.to_markdown().startswith("*Extractive report")
    # the seed's six queries, and before them a section per theme, named by the workspace's own words
    assert [s.query for s in report.sections] == list(SEED_QUERIES)
    assert 2 <= len(report.themes) <= 6 and not {t.query for t in report.themes} & set(SEED_QUERIES)
    heard = {lens for s in (*report.themes, *report.sections) for lens in s.lenses_heard}
    assert heard == sample.store.lenses("default")
    assert report.citations.ok and not report.citations.invalid and not report.citations.uncited_sentences
    for section in (*report.themes, *report.sections):
        assert section.citations.ok
        numbers = {s.number for s in section.sources}
        assert {q.number for q in section.quotes} <= numbers


def test_every_quote_is_verbatim_at_its_offsets(sample: Engine, report: Report) -> None:
    by_number = {s.number: s for s in report.sources}
    quotes = [q for s in (*report.themes, *report.sections) for q in s.quotes]
    quotes += [q for c in report.contradictions for q in (c.first, c.second)]
    quotes += [t.quote for t in report.timeline] + [d.quote for d in report.decisions]
    quotes += [q.quote for q in report.open_questions if q.quote is not None]
    assert len(quotes) > 20
    for q in quotes:
        source = by_number[q.number]
        assert source.start <= q.start < q.end <= source.end
        assert document_text(sample, source.document_id)[q.start : q.end] == q.text


def test_every_contradiction_found_is_in_the_report_with_both_sides(sample: Engine, report: Report) -> None:
    assert report.stats["contradictions_found"] == len(report.contradictions) > 0
    chosen = [s.chunk_id for s in report.sources]
    found = sample.insights.contradictions(chunk_ids=chosen, limit=20)
    assert {(c.topic, c.difference) for c in found} == {(c.topic, c.difference) for c in report.contradictions}
    markdown = report.to_markdown()
    for c in report.contradictions:
        assert c.first.lens != c.second.lens
        assert f"[{c.first.number}]" in markdown and f"[{c.second.number}]" in markdown


def test_the_report_is_saved_as_markdown_and_json(sample: Engine, report: Report) -> None:
    saved = sorted((sample.workspace.path / "reports").glob("*"))
    assert {p.suffix for p in saved} == {".md", ".json"}
    assert {p.suffix for p in report.saved} == {".md", ".json"} and set(report.saved) <= set(saved)
    # the report says where it went, in its JSON too, not in its files
    data = json.loads(next(p for p in report.saved if p.suffix == ".json").read_text(encoding="utf-8"))
    assert report.to_dict()["saved"] == [str(p) for p in report.saved] and "saved" not in data
    assert {"sections", "timeline", "contradictions", "open_questions", "sources", "stats", "citations"} <= data.keys()
    stats = data["stats"]
    assert len(stats["queries"]) == len(report.themes) + 6 and len(stats["themes"]) == len(report.themes) and {"balanced", "graph_expanded", "in_context", "tokens"} <= \
        stats["queries"][0].keys()
    assert any(q["graph_expanded"] > 0 for q in stats["queries"])
    timeline = [entry["sort_key"] for entry in data["timeline"]]
    assert timeline == sorted(timeline)


def test_sections_do_not_repeat_each_others_chunks(report: Report) -> None:
    seen: dict[str, str] = {}
    for section in (*report.themes, *report.sections):
        for source in section.sources:
            assert seen.setdefault(source.chunk_id, section.query) == section.query


def test_ask_answers_with_valid_citations_at_exact_offsets(sample: Engine) -> None:
    result = sample.ask("When will the QuickBooks catalog integration ship?")
    answer = result.answer
    assert answer.extractive and answer.citations.ok and answer.quotes
    for q in answer.quotes:
        source = next(s for s in answer.sources if s.number == q.number)
        assert document_text(sample, source.document_id)[q.start : q.end] == q.text
    assert any("QuickBooks" in q.text for q in answer.quotes)
    data = result.to_dict()
    assert {"text", "sources", "citations", "mode", "context", "timings"} <= data.keys()
    json.dumps(data)


def test_user_queries_and_context_shape_the_report(sample: Engine, tmp_path: Path) -> None:
    file = tmp_path / "queries.txt"
    file.write_text("# our own questions\nofflline mode for technicians\n\npricing and packaging\n", encoding="utf-8")
    queries = read_queries(file)
    assert queries == ["offlline mode for technicians", "pricing and packaging"]
    out = tmp_path / "out" / "roadmap.md"
    report = sample.generate(queries=queries, context="We must decide what ships in Q3 2025.", out=out)
    assert [s.query for s in report.sections] == [*queries, "We must decide what ships in Q3 2025."]
    assert out.is_file() and out.with_suffix(".json").is_file()
    assert "We must decide what ships in Q3 2025." in out.read_text(encoding="utf-8")
    bare = sample.generate(queries=queries, context=None)  # no focus: None is as good as ""
    assert [s.query for s in bare.sections] == queries


def cli(*args: str, ws: Path, env: dict[str, str] | None = None):  # noqa: ANN201
    return runner.invoke(app, [*args, "--workspace", str(ws)],
                         env={"RAGLOOM_EMBEDDING__MODEL": "hashing", "RAGLOOM_EMBEDDING__CACHE": "false", **(env or {})})


@pytest.fixture(scope="module")
def cli_ws(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Path:
    ws = tmp_path_factory.mktemp("cli") / "ws"
    for lens in ("engineering", "team-structured", "your-voice"):
        assert cli("ingest", str(materials / lens), "--lens", lens, ws=ws).exit_code == 0
    return ws


def test_cli_ask_and_generate_write_valid_json(cli_ws: Path, tmp_path: Path) -> None:
    result = cli("ask", "How many engineers by June?", "--json", ws=cli_ws)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["extractive"] and data["citations"]["ok"] and data["sources"]
    assert {"document_id", "section_path", "lens", "start", "end", "text"} <= data["sources"][0].keys()
    result = cli("generate", "--json", "--out", str(tmp_path / "r.md"), ws=cli_ws)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["themes"] and len(data["sections"]) == 6 and data["citations"]["ok"]
    assert (tmp_path / "r.md").is_file()


def test_cli_ask_streams_and_lists_the_cited_sources(cli_ws: Path) -> None:
    result = cli("ask", "technical debt in the mobile app", "--stream", ws=cli_ws)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("*Extractive answer")
    assert "Sources" in result.stdout and "citations:" in result.stdout


def test_an_empty_question_is_an_error_and_an_empty_query_says_so(sample: Engine, cli_ws: Path) -> None:
    for question in ("", "  \n\t"):
        with pytest.raises(InvalidParameterError, match="the question is empty: ask something"):
            sample.ask(question)
    result = cli("ask", " ", ws=cli_ws)
    assert result.exit_code == 2 and "the question is empty" in result.output
    found = sample.query("   ")
    assert not found.results and "the query is empty: give the words to search for" in found.notes


def test_a_report_budget_below_the_reserve_is_refused_before_any_retrieval(sample: Engine) -> None:
    steps: list[str] = []
    with pytest.raises(InvalidParameterError, match=r"budget \(10\) must be larger than "
                                                    r"context_optimization.reserve_tokens"):
        sample.generate(budget=10, progress=lambda message, done, total: steps.append(message))
    assert steps == []


def test_cli_names_a_missing_queries_file(cli_ws: Path, tmp_path: Path) -> None:
    result = cli("generate", "--queries", str(tmp_path / "none.txt"), ws=cli_ws)
    assert result.exit_code == 2 and "none.txt" in result.output and "one query per line" in result.output


@pytest.fixture
def llm_server() -> FakeLLMServer:
    server = FakeLLMServer().start()
    yield server  # type: ignore[misc]
    server.stop()


def llm_env(server: FakeLLMServer, provider: str) -> dict[str, str]:
    url = server.url + ("/v1" if provider == "openai" else "")
    return {"RAGLOOM_LLM__PROVIDER": provider, "RAGLOOM_LLM__BASE_URL": url, "RAGLOOM_LLM__MAX_RETRIES": "0",
            "RAGLOOM_LLM__TIMEOUT": "5", "ANTHROPIC_API_KEY": "sk-test", "OPENAI_API_KEY": "sk-test"}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_model_answer_is_checked_and_a_made_up_source_flagged(cli_ws: Path, llm_server: FakeLLMServer,
                                                                provider: str) -> None:
    llm_server.push(text_reply("The team plans 24 engineers but expects 21 by June [1]. Hiring is slow [42].",
                               chunks=5))
    result = cli("ask", "How many engineers by June?", "--json", ws=cli_ws, env=llm_env(llm_server, provider))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert not data["extractive"] and data["citations"]["invalid"] == [42] and data["citations"]["valid"] == [1]
    assert not data["citations"]["ok"]
    sent = json.dumps(llm_server.requests[-1].body)
    assert "How many engineers by June?" in sent and "[1]" in sent  # the question and the numbered sources


def test_a_model_report_streams_through_the_cli(cli_ws: Path, llm_server: FakeLLMServer) -> None:
    llm_server.push(text_reply("The sources say the catalog ships in Q3 2025 [1].", chunks=4))
    result = cli("generate", "--queries", str(write_queries(cli_ws.parent)), "--stream", ws=cli_ws,
                 env=llm_env(llm_server, "openai"))
    assert result.exit_code == 0, result.output
    # one streamed section per theme of the workspace and per query
    written = result.stdout.count("The sources say the catalog ships in Q3 2025 [1].")
    assert written == len(llm_server.requests) >= 3 and all(r.body.get("stream") for r in llm_server.requests)
    assert "## catalog integration timeline" in result.stdout and "## engineering capacity" in result.stdout


def write_queries(folder: Path) -> Path:
    file = folder / "two-queries.txt"
    file.write_text("catalog integration timeline\nengineering capacity\n", encoding="utf-8")
    return file


def test_an_endpoint_that_is_down_gets_one_clear_line(cli_ws: Path) -> None:
    env = {"RAGLOOM_LLM__PROVIDER": "openai", "RAGLOOM_LLM__BASE_URL": "http://127.0.0.1:9/v1",
           "RAGLOOM_LLM__MAX_RETRIES": "0", "OPENAI_API_KEY": "sk-test"}
    result = cli("ask", "anything at all", ws=cli_ws, env=env)
    assert result.exit_code == 2
    assert "127.0.0.1:9" in result.output and "Traceback" not in result.output


def test_the_extractive_writer_weighs_meaning_from_the_sentence_index(sample: Engine) -> None:
    writer = sample.writing._for(None, None, None)
    assert isinstance(writer, ExtractiveWriter) and writer.closeness is not None
    assert sample.writing._for(None, None, "2025-01-01").closeness is None  # type: ignore[attr-defined]


def test_reports_of_one_title_in_one_second_keep_both_and_say_where(sample: Engine, report: Report,
                                                                     tmp_path: Path) -> None:
    first = sample.writing.save(report)
    second = sample.writing.save(report, tmp_path / "out" / "roadmap.md")
    stems = [report.saved[0].stem, first[0].stem, second[0].stem]
    assert len(set(stems)) == 3 and stems[1].startswith(stems[0]) and stems[2].startswith(stems[0])
    assert all(p.is_file() for p in [*report.saved, *first, *second])
    assert second[2:] == [tmp_path / "out" / "roadmap.md", tmp_path / "out" / "roadmap.json"]
    result = CliRunner().invoke(app, ["generate", "--out", str(tmp_path / "cli.md"), "--workspace",
                                      str(sample.workspace.path)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    wrote = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("wrote ")]
    assert len(wrote) == 2 and wrote[1] == f"wrote {tmp_path / 'cli.md'} and its .json"
