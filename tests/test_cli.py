from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from ragloom.cli import app

from .conftest import fast_settings

runner = CliRunner()
FAST = {"RAGLOOM_EMBEDDING__MODEL": "hashing", "RAGLOOM_EMBEDDING__CACHE": "false"}


def run(*args: str, ws: Path):
    return runner.invoke(app, [*args, "--workspace", str(ws)], env=FAST)


def test_ingest_query_stats_clear(tmp_path: Path, materials: Path) -> None:
    ws = tmp_path / "ws"
    result = run("ingest", str(materials / "engineering"), "--lens", "engineering", ws=ws)
    assert result.exit_code == 0, result.output
    assert "3 files: 3 added" in result.output
    result = run("query", "event bus idempotency", "-k", "2", "--json", ws=ws)
    data = json.loads(result.stdout)
    assert data["mode"] == "hybrid" and len(data["results"]) == 2
    first = data["results"][0]
    assert {"score", "relevance", "source_path", "lens", "section_path", "start", "end", "text"} <= first.keys()
    result = run("query", "event bus", "--lens", "nope", ws=ws)
    assert result.exit_code == 2 and "has no lens 'nope'; its lenses are: engineering" in result.stderr
    result = run("stats", "--json", ws=ws)
    assert json.loads(result.stdout)["documents"] == 3
    result = run("clear", "--lens", "engineering", "--yes", ws=ws)
    assert "removed 3 documents" in result.stdout


def test_ingest_exit_status_is_1_when_a_file_fails(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ok.md").write_text("# Fine\ntext", encoding="utf-8")
    (folder / "bad.pdf").write_bytes(b"not a pdf")
    result = run("ingest", str(folder), "--lens", "x", ws=tmp_path / "ws")
    assert result.exit_code == 1
    assert "bad.pdf" in result.output and "1 failed" in result.output


def test_chunk_jsonl_needs_no_store(tmp_path: Path, materials: Path) -> None:
    doc = materials / "team-structured" / "roadmap-2025.md"
    result = run("chunk", str(doc), "--strategy", "boundary", "--jsonl", ws=tmp_path / "never")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines and {"start_char", "end_char", "text", "contextualized_text", "token_count", "section_path"} <= lines[0].keys()
    assert all(line["contextualized_text"].endswith(line["text"]) for line in lines)
    assert not (tmp_path / "never").exists()


def test_errors_are_one_line_with_exit_2(tmp_path: Path, materials: Path) -> None:
    result = run("chunk", str(materials / "engineering" / "tech-debt-register.md"), "--strategy", "magic", ws=tmp_path)
    assert result.exit_code == 2 and "unknown chunking strategy 'magic'" in result.output
    result = run("ingest", str(materials), "--lens", "bad lens", ws=tmp_path)
    assert result.exit_code == 2 and "not a valid name" in result.output


def test_history_and_reindex(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    folder = tmp_path / "docs"
    folder.mkdir()
    doc = folder / "a.md"
    doc.write_text("# A\nfirst.", encoding="utf-8")
    run("ingest", str(folder), "--lens", "x", ws=ws)
    doc.write_text("# A\nsecond.", encoding="utf-8")
    run("ingest", str(folder), "--lens", "x", ws=ws)
    result = run("history", str(doc), ws=ws)
    assert result.exit_code == 0 and "create" in result.stdout and "update" in result.stdout
    result = run("reindex", ws=ws)
    assert result.exit_code == 0 and "reindexed 1 document:" in result.stdout


def test_demo_runs_on_the_bundled_materials(tmp_path: Path) -> None:
    result = run("demo", ws=tmp_path / "ws")
    assert result.exit_code == 0, result.output
    assert "your-voice" in result.stdout and "QuickBooks" in result.stdout


@pytest.mark.slow
def test_demo_with_the_real_model(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--workspace", str(tmp_path / "ws")])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("examples/materials") >= 9  # three answers with sources for three questions


def test_quality_entities_backrefs_commands(tmp_path: Path, materials: Path) -> None:
    ws = tmp_path / "ws"
    assert run("demo", ws=ws).exit_code == 0
    assert (ws / "entities.toml").is_file()  # the demo installs the sample gazetteer
    result = run("quality", "--lens", "engineering", "--worst", "2", ws=ws)
    assert result.exit_code == 0 and "lowest-scoring" in result.stdout
    data = json.loads(run("quality", "--json", ws=ws).stdout)
    assert data["scored"] > 0 and len(data["worst"]) == 10
    entities = json.loads(run("entities", "--type", "customer", "--json", ws=ws).stdout)
    assert "Apex HVAC" in {e["name"] for e in entities}
    hit = json.loads(run("query", "Apex HVAC renewal offline", "--mode", "bm25", "--json", ws=ws).stdout)["results"][0]
    refs = json.loads(run("backrefs", hit["chunk_id"], "--json", ws=ws).stdout)
    assert refs and {"entity_name", "relationship", "context_summary", "relevance_score"} <= refs[0].keys()
    assert run("backrefs", "no-such-chunk", ws=ws).exit_code == 2


def test_graph_and_contradictions_commands(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert run("demo", ws=ws).exit_code == 0
    stats = json.loads(run("graph", "stats", "--json", ws=ws).stdout)
    assert stats["nodes"] > 0 and "TOPIC_OVERLAP" in stats["edge_types"]
    assert "relationships" in run("graph", "build", ws=ws).stdout
    hit = json.loads(run("query", "event bus", "--json", ws=ws).stdout)["results"][0]
    shown = json.loads(run("graph", "show", hit["chunk_id"], "--json", ws=ws).stdout)
    assert shown["id"] == hit["chunk_id"] and shown["relations"]
    assert run("graph", "show", "nope", ws=ws).exit_code == 2
    out = tmp_path / "graph.graphml"
    assert run("graph", "export", str(out), "--format", "graphml", ws=ws).exit_code == 0 and out.stat().st_size > 0
    assert run("graph", "export", str(tmp_path / "g.x"), "--format", "dot", ws=ws).exit_code == 2
    found = json.loads(run("contradictions", "--json", ws=ws).stdout)
    assert found and {"kind", "type", "topic", "difference", "statements", "certainty"} <= found[0].keys()
    assert len(found[0]["statements"]) == 2
    result = run("query", "catalog integration", "--mode", "balanced", "-k", "6", "--json", ws=ws)
    assert len({r["lens"] for r in json.loads(result.stdout)["results"]}) == 6  # one of each lens, in turn


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic"])
def test_query_without_k_prints_retrieval_k_results_in_every_mode(sample_ws: Path, mode: str) -> None:
    def count(*args: str) -> int:
        result = run("query", "catalog integration and the event bus", "--mode", mode, *args, ws=sample_ws)
        assert result.exit_code == 0, result.output
        return len(json.loads(result.stdout)["results"]) if "--json" in args else \
            len(re.findall(r"^  \d+\. ", result.stdout, re.MULTILINE))

    assert 0 < count("--json") <= 5 and 0 < count() <= 5  # retrieval.k; graph and balanced printed 24 to 50
    assert count("--json", "-k", "2") == 2


def test_query_and_ask_pass_the_modes_own_options(tmp_path: Path, materials: Path) -> None:
    ws = tmp_path / "ws"
    run("ingest", str(materials / "engineering"), "--lens", "engineering", ws=ws)

    def sentences(*options: str) -> int:
        result = run("query", "event bus migration", "--mode", "dynamic", "--json", *options, ws=ws)
        assert result.exit_code == 0, result.output
        return sum(len(r["sentences"]) for r in json.loads(result.stdout)["results"])

    assert sentences("--option", "threshold=0.99") < sentences("-o", "threshold=-1", "-o", "max_expand=3")
    weighted = run("query", "event bus", "--mode", "hybrid", "-o", "fusion_weights={vector = 1.0, bm25 = 2.0}", ws=ws)
    assert weighted.exit_code == 0, weighted.output
    for command in (["query", "event bus"], ["ask", "When does the event bus migration finish?"]):
        result = run(*command, "--mode", "dynamic", "--option", "treshold=0.6", ws=ws)
        message = " ".join(result.output.split())
        assert result.exit_code == 2 and "unknown option 'treshold' for retrieval mode 'dynamic' (did you mean " \
            "'threshold'?)" in message
    result = run("ask", "When does the event bus migration finish?", "--mode", "balanced", "-o", "chunks_per_lens=0",
                 ws=ws)
    assert result.exit_code == 2 and "balanced option chunks_per_lens (0)" in " ".join(result.output.split())
    result = run("query", "event bus", "--option", "threshold", ws=ws)
    assert result.exit_code == 2 and "--option 'threshold': write name=value" in " ".join(result.output.split())


def test_query_budget_and_show_context(tmp_path: Path, materials: Path) -> None:
    ws = tmp_path / "ws"
    run("ingest", str(materials / "engineering"), "--lens", "engineering", ws=ws)
    result = run("query", "event bus migration", "--budget", "900", "--organize", "relevance", "--show-context", ws=ws)
    assert result.exit_code == 0, result.output
    # Standard output is the context exactly as the model gets it; the summary is on standard error.
    assert "organised by relevance" in result.stderr and "## Source 1" in result.stdout
    from ragloom.engine import Engine

    engine = Engine(ws, settings=fast_settings())
    expected = engine.query("event bus migration", budget=900, organize="relevance").context
    assert expected is not None and result.stdout == expected.formatted
    data = json.loads(run("query", "event bus", "--budget", "900", "--json", ws=ws).stdout)
    assert data["context"]["total_tokens"] <= 400 and data["context"]["chunks"]
    bad = run("query", "event bus", "--organize", "alphabetical", ws=ws)
    assert bad.exit_code == 2 and "auto" in bad.output


# -- destructive commands ask; hostile folders; documents deleted and restored ----------------------


def _ingested(tmp_path: Path) -> tuple[Path, Path]:
    ws, folder = tmp_path / "ws", tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Apples\n\nApples are red and sweet.\n", encoding="utf-8")
    (folder / "b.md").write_text("# Bananas\n\nBananas are yellow.\n", encoding="utf-8")
    assert run("ingest", str(folder), "--lens", "x", ws=ws).exit_code == 0
    return ws, folder


def test_clear_and_delete_refuse_without_yes_when_input_is_not_a_terminal(tmp_path: Path) -> None:
    ws, folder = _ingested(tmp_path)
    for command in (["clear"], ["clear", "--lens", "x"], ["delete", str(folder / "a.md")]):
        result = run(*command, ws=ws)
        assert result.exit_code == 2, result.output
        message = " ".join(result.stderr.split())
        assert message.startswith("error: ") and "standard input is not a terminal); pass --yes to confirm" in message
    assert json.loads(run("stats", "--json", ws=ws).stdout)["documents"] == 2


def test_delete_command_tombstones_and_ingest_restores(tmp_path: Path) -> None:
    ws, folder = _ingested(tmp_path)
    result = run("delete", str(folder / "a.md"), "--yes", ws=ws)
    assert result.exit_code == 0 and "deleted 1 document (history kept)" in result.stdout
    assert json.loads(run("stats", "--json", ws=ws).stdout)["documents"] == 1
    found = json.loads(run("query", "apples red sweet", "--mode", "bm25", "--json", ws=ws).stdout)["results"]
    assert all(not r["source_path"].endswith("a.md") for r in found)
    again = run("delete", str(folder / "a.md"), "nope", "--yes", ws=ws)
    assert again.exit_code == 1 and "no current document matches" in " ".join(again.stderr.split())
    assert run("ingest", str(folder), "--lens", "x", ws=ws).exit_code == 0
    rows = json.loads(run("history", str(folder / "a.md"), "--json", ws=ws).stdout)
    assert [(r["version_sequence"], r["change_type"], r["change_summary"]) for r in rows] == [
        (1, "create", "created with 1 chunk"), (2, "delete", "deleted"), (3, "update", "restored")]
    table = run("history", str(folder / "a.md"), ws=ws).stdout
    assert "restored" in table and "deleted" in table
    doc_id = json.loads(run("query", "bananas", "--json", ws=ws).stdout)["results"][0]["document_id"]
    assert "deleted 1 document (history kept)" in run("delete", doc_id, "-y", ws=ws).stdout


def test_delete_a_folder_deletes_every_document_under_it_even_once_gone(tmp_path: Path) -> None:
    ws, folder = _ingested(tmp_path)
    (folder / "sub").mkdir()
    (folder / "sub" / "c.md").write_text("# Cherries\n\nCherries are dark red.\n", encoding="utf-8")
    (tmp_path / "docs-old").mkdir()  # a sibling whose name starts like the folder's stays
    (tmp_path / "docs-old" / "d.md").write_text("# Dates\n\nDates are brown.\n", encoding="utf-8")
    assert run("ingest", str(folder), str(tmp_path / "docs-old"), "--lens", "x", ws=ws).exit_code == 0
    (folder / "sub" / "c.md").unlink()
    (folder / "sub").rmdir()
    result = run("delete", str(folder / "sub") + "/", "--yes", ws=ws)
    assert result.exit_code == 0 and "deleted 1 document (history kept)" in result.stdout
    result = run("delete", str(folder), "--yes", ws=ws)
    assert result.exit_code == 0 and "deleted 2 documents (history kept)" in result.stdout
    assert json.loads(run("stats", "--json", ws=ws).stdout)["documents"] == 1


def test_a_file_named_like_an_option_is_a_file_only_after_double_dash(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ws, folder = _ingested(tmp_path)
    (folder / "--yes").write_text("", encoding="utf-8")
    (folder / "-y").write_text("", encoding="utf-8")
    monkeypatch.chdir(folder)

    def delete(*args: str) -> Result:
        return runner.invoke(app, ["delete", "--workspace", str(ws), *args], env=FAST)

    def documents() -> int:
        return int(json.loads(run("stats", "--json", ws=ws).stdout)["documents"])

    # 'ragloom delete *' in this folder: the shell passes "--yes" first, and it once confirmed the deletion.
    for args in (["--yes", "-y", "a.md", "b.md"], ["-y", "a.md"], ["a.md", "--yes"]):
        result = delete(*args)
        assert result.exit_code == 2 and documents() == 2, result.output
        message = " ".join(result.output.replace("│", " ").split())
        assert "is an option, and also a file in this folder" in message and "nothing was done" in message
        assert "'ragloom delete [OPTIONS] -- FILE...'" in message
    assert run("ingest", "--sync", str(folder), "--lens", "x", ws=ws).exit_code == 0  # no such file: an option
    (folder / "--sync").write_text("", encoding="utf-8")
    assert run("ingest", "--sync", str(folder), "--lens", "x", ws=ws).exit_code == 2
    # After "--" every argument is a name: not a confirmation, so it asks (and cannot, without a terminal).
    result = delete("--", "--yes", "-y", "a.md")
    assert result.exit_code == 2 and "pass --yes to confirm" in " ".join(result.stderr.split()) and documents() == 2
    result = delete("--yes", "--", "--yes", "-y", "a.md")  # confirmed before "--"; the names after it
    assert result.exit_code == 0 and "deleted 1 document (history kept)" in result.stdout and documents() == 1


def _in_a_terminal(args: list[str], answer: str) -> tuple[int, str]:
    """Run ``ragloom args`` with a terminal as standard input, answering ``answer``."""
    import os
    import pty
    import subprocess
    import sys

    controller, terminal = pty.openpty()
    env = dict(os.environ, **FAST)
    proc = subprocess.Popen([sys.executable, "-m", "ragloom.cli", *args], stdin=terminal, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env)
    os.close(terminal)
    os.write(controller, answer.encode() + b"\n")
    out, _ = proc.communicate(timeout=120)
    os.close(controller)
    return proc.returncode, out.decode()


def test_clear_asks_on_a_terminal(tmp_path: Path) -> None:
    ws, _ = _ingested(tmp_path)
    code, out = _in_a_terminal(["clear", "--workspace", str(ws)], "n")
    assert code == 1 and "Delete every document from the workspace, with all versions?" in out
    assert "nothing deleted" in out
    assert json.loads(run("stats", "--json", ws=ws).stdout)["documents"] == 2
    code, out = _in_a_terminal(["clear", "--workspace", str(ws)], "y")
    assert code == 0 and "removed 2 documents" in out


def test_ingest_of_a_hostile_folder_prints_one_line_per_problem(tmp_path: Path) -> None:
    import os

    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "good.md").write_text("# Good\n\nFine text.\n", encoding="utf-8")
    os.symlink("loop-b.md", folder / "loop-a.md")
    os.symlink("loop-a.md", folder / "loop-b.md")
    os.symlink("..", folder / "sub" / "up")
    os.mkfifo(folder / "pipe.md")
    (folder / "big.md").write_text("word " * 300_000, encoding="utf-8")
    env = dict(FAST, RAGLOOM_INGEST__MAX_TEXT_MB="1")
    result = runner.invoke(app, ["ingest", str(folder), str(folder / "good.md"), "--lens", "x", "--workspace",
                                 str(tmp_path / "ws")], env=env)
    assert result.exit_code == 1 and (result.exception is None or isinstance(result.exception, SystemExit))
    text = " ".join(result.output.split())
    for piece in ("loop-a.md: symlink loop", "loop-b.md: symlink loop", "up: symlink loop (leads back to",
                  "pipe.md: not a regular file (it is a FIFO; never opened)",
                  "big.md: converted text too large (1.4 MiB of text, above ingest.max_text_mb = 1)",
                  "6 files: 1 added", "5 failed"):
        assert piece in text, piece
    assert "Traceback" not in result.output


# -- what a new user meets: errors where they made one, readable results, short ids ----------------


@pytest.fixture(scope="module")
def sample_ws(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Path:
    ws = tmp_path_factory.mktemp("sample") / "ws"
    for lens in ("engineering", "team-structured"):
        assert run("ingest", str(materials / lens), "--lens", lens, ws=ws).exit_code == 0
    return ws


def test_results_show_a_relevance_and_short_ids_that_every_command_takes(sample_ws: Path) -> None:
    data = json.loads(run("query", "catalog integration", "-k", "3", "--json", ws=sample_ws).stdout)
    first = data["results"][0]
    assert first["relevance"] == 1.0 and first["scores"]["rrf"] == first["score"]  # raw scores stay in --json
    human = run("query", "catalog integration", "-k", "3", ws=sample_ws).stdout
    short = first["chunk_id"][:8]
    assert f"[{short}]" in human and "1.00" in human and first["chunk_id"] not in human
    shown = run("graph", "show", short, ws=sample_ws)
    assert shown.exit_code == 0, shown.output
    assert f"[{short}]" in shown.stdout and "walks on" in shown.stdout
    node = json.loads(run("graph", "show", short, "--json", ws=sample_ws).stdout)
    assert node["id"] == first["chunk_id"] and node["relations"]
    neighbour = node["relations"][0]
    assert neighbour["neighbour_short_id"] == neighbour["neighbour"][:8] and "neighbour_section" in neighbour
    assert run("graph", "show", neighbour["neighbour_short_id"], ws=sample_ws).exit_code == 0  # walk on
    assert run("backrefs", short, ws=sample_ws).exit_code == 0
    missing = run("graph", "show", "0000ffff", ws=sample_ws)
    assert missing.exit_code == 2 and "no chunk '0000ffff'" in missing.stderr


def test_mistakes_are_named_with_exit_status_2(tmp_path: Path, sample_ws: Path) -> None:
    for args, message in (
        (["query", "x", "--lens", "nosuch"], "has no lens 'nosuch'; its lenses are: engineering, team-structured"),
        (["quality", "--lens", "nosuch"], "has no lens 'nosuch'"),
        (["entities", "--lens", "nosuch"], "has no lens 'nosuch'"),
        (["query", "x", "-k", "0"], "k (0) must be at least 1"),
        (["query", "x", "--dated-from", "2025-13-01"], "is not a date"),
        # A mode option that repeats a parameter of the request: one line naming it and the fix, not a traceback.
        *[([command, "x", "--option", f"{name}=3"], f"'{name}' is a parameter of the request itself")
          for command in ("query", "ask") for name in ("k", "mode", "tenant", "optimize")],
    ):
        result = run(*args, ws=sample_ws)
        assert result.exit_code == 2 and message in " ".join(result.stderr.split()), (args, result.output)
    nowhere = tmp_path / "nowhere"
    for command in (["stats"], ["query", "x"], ["graph", "stats"], ["quality"]):
        result = run(*command, ws=nowhere)
        assert result.exit_code == 2 and "there is no workspace at" in result.stderr, command
    assert not nowhere.exists()  # a read never makes a workspace
    (tmp_path / "empty-ws").mkdir()
    result = run("stats", ws=tmp_path / "empty-ws")
    assert result.exit_code == 0 and "is empty" in result.stdout


def test_a_folder_with_nothing_to_read_is_reported(tmp_path: Path) -> None:
    empty, other = tmp_path / "empty", tmp_path / "other"
    empty.mkdir()
    other.mkdir()
    (other / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (other / "notes.json").write_text("{}", encoding="utf-8")
    result = run("ingest", str(empty), "--lens", "x", ws=tmp_path / "ws")
    assert result.exit_code == 2 and "no files (an empty folder?)" in result.stderr
    result = run("ingest", str(other), "--lens", "x", ws=tmp_path / "ws")
    message = " ".join(result.stderr.split())
    assert result.exit_code == 2 and "only 2 files of types ragloom does not read (.csv 1, .json 1)" in message
    (other / "readme.md").write_text("# Readme\n\nHello there.\n", encoding="utf-8")
    result = run("ingest", str(other), "--lens", "x", ws=tmp_path / "ws")
    assert result.exit_code == 0 and "Skipped 2 files of types ragloom does not read" in " ".join(result.stdout.split())


def test_the_settings_mismatch_is_one_sentence_once(tmp_path: Path, materials: Path) -> None:
    ws = tmp_path / "ws"
    assert run("ingest", str(materials / "engineering"), "--lens", "engineering", ws=ws).exit_code == 0
    (ws / "ragloom.toml").write_text("[chunking]\nchunk_size = 256\n", encoding="utf-8")
    result = run("ingest", str(materials / "engineering"), "--lens", "engineering", ws=ws)
    text = " ".join(result.stderr.split())
    assert text.count("was built with other settings") == 1 and "chunking.chunk_size 1024 -> 256" in text
    assert "Warning" not in result.output and "warnings.warn" not in result.output  # no Python warning line
    (ws / "ragloom.toml").write_text("[chunking]\nchunk_overlap = 5000\n", encoding="utf-8")
    result = run("stats", ws=ws)
    assert result.exit_code == 2 and f"(from {ws / 'ragloom.toml'})" in " ".join(result.stderr.split())


def test_init_config_show_and_version(tmp_path: Path) -> None:
    ws = tmp_path / "new"
    result = run("init", ws=ws)
    assert result.exit_code == 0 and (ws / "ragloom.toml").is_file()
    assert run("init", ws=ws).exit_code == 2  # never overwritten unless --force
    text = (ws / "ragloom.toml").read_text(encoding="utf-8")
    (ws / "ragloom.toml").write_text(text.replace("# chunk_size = 1024", "chunk_size = 512"), encoding="utf-8")
    shown = runner.invoke(app, ["config", "show", "--json", "--workspace", str(ws)],
                          env={**FAST, "RAGLOOM_RETRIEVAL__K": "9"})
    rows = {r["key"]: r for r in json.loads(shown.stdout)}
    assert rows["chunking.chunk_size"] == {"key": "chunking.chunk_size", "value": 512, "source": str(ws / "ragloom.toml")}
    assert rows["retrieval.k"]["source"] == "RAGLOOM_RETRIEVAL__K" and rows["retrieval.k"]["value"] == 9
    assert rows["chunking.chunk_overlap"]["source"] == "default"
    assert rows["embedding.model"]["source"] == "RAGLOOM_EMBEDDING__MODEL"
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.stdout.startswith("ragloom ")


def test_config_show_prints_toml_that_reads_back(tmp_path: Path) -> None:
    import tomllib

    ws, copy = tmp_path / "ws", tmp_path / "copy"
    ws.mkdir()
    (ws / "ragloom.toml").write_text('[chunking]\nchunk_size = 512\n[llm]\nprovider = "openai"\n', encoding="utf-8")
    env = {**FAST, "RAGLOOM_RETRIEVAL__K": "9", "RAGLOOM_SERVER__MAX_K": "40"}
    shown = runner.invoke(app, ["config", "show", "--workspace", str(ws)], env=env)
    assert shown.exit_code == 0, shown.output  # the settings not set ([llm] model, ...) once ended in a traceback
    text = shown.stdout
    for section in ("chunking", "llm", "server", "prefix", "sentences", "entities"):
        assert f"\n[{section}]\n" in text, section
    for name in ("model", "base_url", "temperature", "llm_context_model", "query_floor", "gazetteer"):
        assert f"\n# {name} = (not set)" in text, name
    assert re.search(r"^k = 9 +# from RAGLOOM_RETRIEVAL__K$", text, re.MULTILINE)
    assert re.search(rf"^chunk_size = 512 +# from {re.escape(str(ws / 'ragloom.toml'))}$", text, re.MULTILINE)
    tomllib.loads(text)
    copy.mkdir()
    (copy / "ragloom.toml").write_text(text, encoding="utf-8")  # saved as a workspace's settings: the same values

    def values(folder: Path, environ: dict[str, str]) -> dict[str, object]:
        result = runner.invoke(app, ["config", "show", "--json", "--workspace", str(folder)], env=environ)
        assert result.exit_code == 0, result.output
        return {r["key"]: r["value"] for r in json.loads(result.stdout)}

    assert values(copy, FAST) == values(ws, env)
    changed = runner.invoke(app, ["config", "show", "--changed", "--workspace", str(ws)], env=env).stdout
    assert tomllib.loads(changed) == {"chunking": {"chunk_size": 512}, "llm": {"provider": "openai"},
                                      "retrieval": {"k": 9}, "server": {"max_k": 40},
                                      "embedding": {"cache": False, "model": "hashing"}}


def _commands() -> list[tuple[list[str], Any]]:
    """(path, click command) of every command and group of the command line."""
    import typer.main

    found: list[tuple[list[str], Any]] = []

    def walk(command: Any, path: list[str]) -> None:  # noqa: ANN401 - typer's click commands
        found.append((path, command))
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def test_help_shows_the_extras_to_install_with_their_brackets() -> None:
    """rich reads "[distributed]" as markup and drops it: "pip install 'ragloom'"."""
    extra = re.compile(r"ragloom\\?\[([\w,-]+)\]")
    checked = []
    for path, command in _commands():
        texts = [command.help, command.epilog, *(getattr(param, "help", None) for param in command.params)]
        # A group's help lists its commands' first lines.
        texts += [sub.help.split("\n\n")[0] for sub in getattr(command, "commands", {}).values() if sub.help]
        wanted = {f"ragloom[{name}]" for text in texts if text for name in extra.findall(text)}
        if not wanted:
            continue
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
        assert result.exit_code == 0, result.output
        shown = result.stdout.replace("│", " ")
        for text in sorted(wanted):
            assert text in shown, (path, text, shown)
        assert "ragloom\\[" not in shown and "'ragloom')" not in shown, path
        checked.append(path)
    assert ["ingest"] in checked


def test_ingest_draws_one_bar_whose_total_follows_the_embedding() -> None:
    import io

    from rich.console import Console
    from rich.progress import Progress

    from ragloom.cli.progress import IngestProgress

    bar = Progress(console=Console(file=io.StringIO()))
    progress = IngestProgress(bar, "Ingesting")
    progress.stage("Reading", 10)
    for _ in range(4):
        progress.advance("Reading")
    progress.stage("Embedding", 100)  # the first batch: 4 documents read, 100 texts to embed
    task = bar.tasks[0]
    assert (task.completed, task.total) == (4, 10 + 250)  # the 6 documents to come estimated alike
    assert "4/10 documents read, 0/≈250 chunks and sentences embedded" == task.fields["counts"]
    progress.advance("Embedding", 100)
    for _ in range(6):
        progress.advance("Reading")
    progress.stage("Embedding", 120)
    progress.advance("Embedding", 120)
    task = bar.tasks[0]
    assert task.completed == task.total == 10 + 220 and "≈" not in task.fields["counts"]  # done: exact


@pytest.mark.parametrize("columns", [80, 160])
def test_the_ingest_bar_shows_texts_per_second_and_the_time_left_once_a_file_is_read(columns: int) -> None:
    """With a clock the test moves (rich's Progress and its columns read the console's), no sleeps."""
    import io

    from rich.console import Console

    from ragloom.cli import progress as cli  # the bar and the console it draws on

    now = [1000.0]
    original = cli.err
    cli.err = Console(file=io.StringIO(), width=columns, force_terminal=False, get_time=lambda: now[0])
    try:
        with cli.ingest_progress(label="Ingesting") as progress:
            assert progress is not None

            def shown() -> str:
                out = io.StringIO()
                Console(file=out, width=columns, force_terminal=False).print(progress.progress.get_renderable())
                line = out.getvalue().rstrip("\n")
                assert "\n" not in line and len(line) <= columns and "…" not in line, line
                return line

            progress.stage("Reading", 10)  # the clock starts with the work
            assert shown().endswith("ETA -:--:--")  # nothing done yet
            now[0] += 4
            progress.advance("Reading")
            assert shown().endswith("ETA 0:00:36")  # one file in 4 s: 9 to go, from the files alone
            now[0] += 2
            assert shown().endswith("ETA 0:00:54")  # no news for 2 s: the estimate moves on its own
            progress.stage("Embedding", 100)  # the first batch (1 file): ≈1,000 texts for 10 files
            now[0] += 5
            progress.advance("Embedding", 50)
            line = shown()
            # 50 texts in the 5 s since the batch began; 51 of 1,010 units in 11 s: 959 more take 207 s.
            assert re.search(r" 10/s .*ETA 0:03:27$", line), line
            assert columns < cli.WIDE_BAR or "0:00:11 ETA" in line  # the elapsed time, wide
            now[0] += 5
            assert re.search(r" 5\.0/s .*ETA 0:05:01$", shown())  # 5 s more, no text: slower (16 s × 959 / 51)
            progress.advance("Reading", 9)
            progress.stage("Embedding", 900)
            progress.advance("Embedding", 950)
            line = shown()  # done: 1,000 texts in 10 s, nothing left
            assert "10/10 documents" in line and re.search(r" 100/s .*ETA 0:00:00$", line), line
            now[0] += 60
            assert shown() == line  # and it stays so
    finally:
        cli.err = original


@pytest.mark.parametrize(("columns", "documents", "texts", "contexts"), [
    (80, 2_000, 40_000, 0), (100, 2_000, 40_000, 0), (160, 2_000, 40_000, 0), (80, 120_000, 2_400_000, 0),
    (130, 120_000, 2_400_000, 0), (80, 120_000, 2_400_000, 600_000), (160, 2_000, 40_000, 3_000),
    (160, 120_000, 2_400_000, 600_000)])
def test_the_ingest_bar_fits_the_terminal(columns: int, documents: int, texts: int, contexts: int) -> None:
    """Every column of the bar, counts, ETA included, whole on one line of the terminal."""
    import io

    from rich.console import Console

    from ragloom.cli import progress as cli  # the bar and the console it draws on

    out = io.StringIO()
    console = Console(file=out, width=columns, force_terminal=False)
    original = cli.err
    cli.err = console
    try:
        with cli.ingest_progress(label="Ingesting") as progress:
            assert progress is not None
            progress.stage("Reading", documents)
            progress.advance("Reading", documents * 3 // 4)
            if contexts:  # [prefix] llm_context: a model writes a context for each chunk
                progress.stage(cli.CONTEXT_STAGE, contexts)
                progress.advance(cli.CONTEXT_STAGE, contexts // 2)
            progress.stage("Embedding", texts)
            progress.advance("Embedding", texts * 3 // 10)
    finally:
        cli.err = original
    line = out.getvalue().strip().splitlines()[-1]
    assert len(line) <= columns and "…" not in line, line
    assert "/≈" in line and "ETA" in line, line
    if contexts:  # the chunk contexts written ([prefix] llm_context), whatever else gives way
        assert re.search(r"(1,500/3,000|300k/600k) (chunk )?contexts", line), line
    else:  # the documents read, the short numbers of a large ingest wherever they do not fit in full
        assert re.search(r"(1,500/2,000|90,000/120,000|90k/120k) documents", line), line
