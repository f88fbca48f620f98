from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragloom.cli import app

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
    assert {"score", "source_path", "lens", "section_path", "start", "end", "text"} <= first.keys()
    result = run("query", "event bus", "--lens", "nope", ws=ws)
    assert "no results" in result.stdout
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
    assert result.exit_code == 0 and "reindexed 1 documents" in result.stdout


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
    result = run("query", "catalog integration", "--mode", "balanced", "--json", ws=ws)
    assert len({r["lens"] for r in json.loads(result.stdout)["results"]}) == 6


def test_query_budget_and_show_context(tmp_path: Path, materials: Path) -> None:
    ws = tmp_path / "ws"
    run("ingest", str(materials / "engineering"), "--lens", "engineering", ws=ws)
    result = run("query", "event bus migration", "--budget", "900", "--organize", "relevance", "--show-context", ws=ws)
    assert result.exit_code == 0, result.output
    assert "organised by relevance" in result.stdout and "## Source 1" in result.stdout
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
    assert result.exit_code == 0 and "deleted 1 of 1 documents named (history kept)" in result.stdout
    assert json.loads(run("stats", "--json", ws=ws).stdout)["documents"] == 1
    found = json.loads(run("query", "apples red sweet", "--mode", "bm25", "--json", ws=ws).stdout)["results"]
    assert all(not r["source_path"].endswith("a.md") for r in found)
    again = run("delete", str(folder / "a.md"), "nope", "--yes", ws=ws)
    assert again.exit_code == 1 and "no current document matches" in " ".join(again.stderr.split())
    assert run("ingest", str(folder), "--lens", "x", ws=ws).exit_code == 0
    rows = json.loads(run("history", str(folder / "a.md"), "--json", ws=ws).stdout)
    assert [(r["version_sequence"], r["change_type"], r["change_summary"]) for r in rows] == [
        (1, "create", "created with 1 chunks"), (2, "delete", "deleted"), (3, "update", "restored")]
    table = run("history", str(folder / "a.md"), ws=ws).stdout
    assert "restored" in table and "deleted" in table
    doc_id = json.loads(run("query", "bananas", "--json", ws=ws).stdout)["results"][0]["document_id"]
    assert "deleted 1 of 1" in run("delete", doc_id, "-y", ws=ws).stdout


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
