"""The web app's pure parts: the highlighted document, the job registry, the launch command."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest

from ragloom.errors import ConfigError, InvalidParameterError
from ragloom.graph import EDGE_TYPES
from ragloom.ui import APP, launch, streamlit_command
from ragloom.ui.helpers import (
    EDGE_COLOURS,
    EDGE_HELP,
    describe_via,
    find_eval_results,
    highlight_html,
    marked_spans,
    merge_spans,
    settings_changes,
)
from ragloom.ui.jobs import DONE, FAILED, JobProgress, JobRegistry


def test_highlight_escapes_the_text_and_marks_the_exact_span() -> None:
    text = "<b>not bold</b> & then: the <script>alert(1)</script> span\nnext line"
    start = text.index("<script>")
    end = text.index("</script>") + len("</script>")
    body = highlight_html(text, [(start, end)], element_id="doc 1")
    assert "<script>alert" not in body and "&lt;b&gt;not bold&lt;/b&gt; &amp;" in body
    assert marked_spans(body) == [(start, end, text[start:end])]
    assert 'id="doc-1"' in body and "getElementById('doc-1')" in body  # scrolled to


def test_spans_are_clipped_sorted_and_merged() -> None:
    assert merge_spans([(8, 12), (0, 3), (2, 5), (20, 40), (6, 6)], 30) == [(0, 5), (8, 12), (20, 30)]
    body = highlight_html("abcdefghij", [(6, 8), (1, 3)], element_id="x")
    assert [m[2] for m in marked_spans(body)] == ["bc", "gh"]


def test_via_names_the_seed_the_edge_and_the_hops() -> None:
    line = describe_via({"seed": "c1", "edge": "TOPIC_OVERLAP", "weight": 5.0, "hops": 1}, "roadmap.md › Q3")
    assert line == "Brought in by the graph from roadmap.md › Q3 over a TOPIC_OVERLAP edge (weight 5.00, 1 hop)"


def test_only_changed_settings_are_written() -> None:
    current = {"chunking": {"chunk_size": 1024, "strategy": "token"}, "retrieval": {"lenses": ("a", "b")}}
    wanted = {"chunking": {"chunk_size": 512, "strategy": "token"}, "retrieval": {"lenses": ["a", "b"]}}
    assert settings_changes(current, wanted) == {"chunking": {"chunk_size": 512}}


def test_eval_results_group_a_suites_files(tmp_path: Path) -> None:
    (tmp_path / "windows.md").write_text("# `ragloom eval windows`\n\ntext\n\n![c](windows_curve.png)\n")
    (tmp_path / "windows.json").write_text("{}")
    for name in ("windows_curve.png", "windows_tokens_recall.png", "other.png"):
        (tmp_path / name).write_bytes(b"\x89PNG")
    [result] = find_eval_results([tmp_path, tmp_path / ".", tmp_path / "missing"])
    assert result.name == "windows" and result.json == tmp_path / "windows.json"
    assert [p.name for p in result.images] == ["windows_curve.png", "windows_tokens_recall.png"]
    assert result.body() == ("ragloom eval windows", "text")


def test_jobs_record_progress_results_and_errors() -> None:
    jobs = JobRegistry()
    release = threading.Event()

    def work(job):  # type: ignore[no-untyped-def]
        progress = JobProgress(job)
        progress.stage("Reading", 4)
        progress.advance("Reading", 3)
        progress.message("a.md: could not be read")
        release.wait(5)
        return 42

    job = jobs.submit("ingest", "Ingesting", work, writes=True)
    second = jobs.submit("ingest", "Ingesting more", lambda job: 7, writes=True)
    for _ in range(100):
        if job.fraction() == 0.75:
            break
        threading.Event().wait(0.02)
    assert job.fraction() == 0.75 and job.describe() == "Ingesting: Reading 3/4"
    assert second.active and second.started_at is None  # writers wait for each other
    assert jobs.writing() is job
    release.set()
    assert jobs.wait(job, 5) and jobs.wait(second, 5)
    assert (job.status, job.result, job.snapshot()[2]) == (DONE, 42, ["a.md: could not be read"])
    assert second.result == 7 and jobs.latest("ingest") is second

    def boom(job):  # type: ignore[no-untyped-def]
        raise InvalidParameterError("lens 'x y' is not a valid name")

    failed = jobs.submit("ingest", "Failing", boom)
    assert jobs.wait(failed, 5)
    assert failed.status == FAILED and failed.error == "lens 'x y' is not a valid name"


def test_launch_command_serves_the_app_headless_without_telemetry() -> None:
    command = streamlit_command(port=8600, host="127.0.0.1")
    assert command[:5] == [sys.executable, "-m", "streamlit", "run", str(APP)]
    flags = dict(zip(command[5::2], command[6::2], strict=True))
    assert flags == {"--server.port": "8600", "--server.address": "127.0.0.1", "--server.headless": "true",
                     "--browser.gatherUsageStats": "false", "--server.fileWatcherType": "none"}
    assert APP.is_file()


def test_launch_refuses_a_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        launch(tmp_path / "ws", config=tmp_path / "nope.toml", port=8600)


def test_launch_says_when_the_port_is_taken_or_the_host_unknown_before_starting_streamlit(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"cannot listen on 127.0.0.1:{port} .*pick another --port"):
            launch(tmp_path / "ws", port=port)
    with pytest.raises(ConfigError, match="--host 'nosuchhost.invalid' is not an address of this machine"):
        launch(tmp_path / "ws", port=8600, host="nosuchhost.invalid")


def test_every_edge_type_has_a_colour_and_a_meaning() -> None:
    assert set(EDGE_COLOURS) == set(EDGE_HELP) == set(EDGE_TYPES)
    assert len(set(EDGE_COLOURS.values())) == len(EDGE_COLOURS)  # told apart in the picture
