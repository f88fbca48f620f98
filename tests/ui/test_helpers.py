"""The web app's pure parts: the highlighted document, the job registry, the launch command."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragloom import ui as ui_module
from ragloom.cli import app as cli_app
from ragloom.config import PROVIDER_DEFAULTS
from ragloom.errors import ConfigError, InvalidParameterError
from ragloom.graph import EDGE_TYPES
from ragloom.httpguard import is_loopback
from ragloom.ui import APP, launch, streamlit_command
from ragloom.ui.helpers import (
    EDGE_COLOURS,
    EDGE_HELP,
    describe_via,
    find_eval_results,
    highlight_html,
    key_note,
    key_variables,
    llm_problems,
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
                     "--browser.gatherUsageStats": "false", "--server.fileWatcherType": "none",
                     "--server.maxUploadSize": "50"}  # ingest.max_file_mb's default, not Streamlit's 200 MB
    assert APP.is_file()
    # A limit below a whole MB still lets a file through the uploader (ingest refuses it with a line).
    for mb, flag in ((0.2, "1"), (7.5, "8"), (300.0, "300")):
        command = streamlit_command(port=8600, host="127.0.0.1", max_upload_mb=mb)
        assert command[command.index("--server.maxUploadSize") + 1] == flag


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


# -- who may reach the app, and what its Settings page may change ------------------------------


def test_only_loopback_addresses_and_names_count_as_this_machine() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST", "::ffff:127.0.0.1"):
        assert is_loopback(host), host
    for host in ("", None, "0.0.0.0", "::", "[::]", "192.168.1.20", "10.0.0.1", "fe80::1%eth0", "8.8.8.8",
                 "nosuchhost.invalid", "127.0.0.1.nip.io.invalid"):
        assert not is_loopback(host), host


@given(st.ip_addresses())
def test_an_address_is_this_machine_exactly_when_it_is_a_loopback_one(ip) -> None:  # type: ignore[no-untyped-def]
    mapped = getattr(ip, "ipv4_mapped", None)
    assert is_loopback(str(ip)) == (mapped or ip).is_loopback


def test_the_key_variables_are_the_providers_own_and_the_operators() -> None:
    own = [defaults[2] for defaults in PROVIDER_DEFAULTS.values()]
    assert key_variables() == own == ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]
    assert key_variables([" GROQ_API_KEY", "OPENAI_API_KEY", "not a name", "", "x=1"]) == [*own, "GROQ_API_KEY"]


ALLOWED = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GROQ_API_KEY"]


def test_the_key_line_says_whether_an_allowed_variable_is_set_never_its_value() -> None:
    environ = {"ANTHROPIC_API_KEY": "sk-ant-secret", "AWS_SECRET_ACCESS_KEY": "aws-secret"}
    assert key_note("anthropic", "ANTHROPIC_API_KEY", ALLOWED, environ) == (
        ":material/key: ANTHROPIC_API_KEY is set in the environment.")
    assert "**OPENAI_API_KEY is not set.**" in key_note("openai", "OPENAI_API_KEY", ALLOWED, environ)
    assert key_note("none", "ANTHROPIC_API_KEY", ALLOWED, environ).startswith(":material/key: No key needed")
    other = key_note("openai", "AWS_SECRET_ACCESS_KEY", ALLOWED, environ)
    assert other == key_note("openai", "AWS_SECRET_ACCESS_KEY", ALLOWED, {})  # the same, set or not
    assert "is set in" not in other and "not set" not in other and "aws-secret" not in other
    assert "looks only at ANTHROPIC_API_KEY, OPENAI_API_KEY, GROQ_API_KEY" in other


@given(st.from_regex(r"[A-Z_][A-Z0-9_]{0,30}", fullmatch=True), st.text(min_size=1), st.sampled_from(
    ["anthropic", "openai", "my-plugin"]))
def test_the_key_line_tells_nothing_about_a_variable_that_is_not_allowed(name: str, value: str,
                                                                         provider: str) -> None:
    if name in ALLOWED:
        return
    assert key_note(provider, name, ALLOWED, {name: value}) == key_note(provider, name, ALLOWED, {})


def test_the_key_variable_and_base_url_are_checked_before_saving() -> None:
    current = {"provider": "openai", "model": "", "base_url": "", "api_key_env": ""}
    ok = {**current, "base_url": "http://localhost:11434/v1", "api_key_env": "GROQ_API_KEY"}
    assert llm_problems(current, ok, allowed=ALLOWED, exposed=False) == []
    [problem] = llm_problems(current, {**current, "api_key_env": "AWS_SECRET_ACCESS_KEY"}, allowed=ALLOWED,
                             exposed=False)
    assert problem.startswith("llm.api_key_env 'AWS_SECRET_ACCESS_KEY' is not a key variable the web app may use")
    assert "[server] llm_key_variables" in problem
    [problem] = llm_problems(current, {**current, "base_url": "file:///etc/passwd"}, allowed=ALLOWED, exposed=False)
    assert "not an http:// or https:// address" in problem
    # Beyond this machine neither may change, even to an allowed value; other settings may.
    assert len(llm_problems(current, ok, allowed=ALLOWED, exposed=True)) == 2
    assert all("cannot be changed from the web app while it listens beyond this machine" in p
               for p in llm_problems(current, ok, allowed=ALLOWED, exposed=True))
    assert llm_problems(current, {**current, "provider": "anthropic", "model": "m"}, allowed=ALLOWED,
                        exposed=True) == []
    # A variable the operator's file already names stays when other settings are saved.
    configured = {**current, "api_key_env": "OPERATORS_KEY"}
    assert llm_problems(configured, {**configured, "model": "m"}, allowed=ALLOWED, exposed=False) == []


def test_launch_refuses_an_address_beyond_this_machine_unless_told_it_is_insecure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    started: list[list[str]] = []

    class Server:  # stands in for the Streamlit process
        def __init__(self, command: list[str], env: dict[str, str]) -> None:
            started.append(command)

        def wait(self, timeout: float | None = None) -> int:
            return 0

        def poll(self) -> int:
            return 0

    monkeypatch.setattr(ui_module.subprocess, "Popen", Server)
    port = free_port()
    with pytest.raises(ConfigError) as refused:
        launch(tmp_path / "ws", port=port, host="0.0.0.0")
    message = str(refused.value)
    assert message.startswith("--host '0.0.0.0' listens beyond this machine, and the web app has no login: anyone "
                              f"who can reach port {port} could read every document")
    assert "pass --insecure" in message and not started

    assert launch(tmp_path / "ws", port=port, host="0.0.0.0", insecure=True) == 0
    err = capsys.readouterr().err
    assert "WARNING: listening on 0.0.0.0" in err and "has no login: anyone who can reach this port can read every " \
        "document" in err
    assert started and started[0][started[0].index("--server.address") + 1] == "0.0.0.0"

    assert launch(tmp_path / "ws", port=port, host="localhost") == 0  # this machine: no flag, no warning
    assert "WARNING" not in capsys.readouterr().err


def test_ragloom_ui_says_why_it_refuses_a_public_host(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_app, ["ui", "--host", "0.0.0.0", "--port", str(free_port()), "--workspace",
                                          str(tmp_path / "ws")])
    assert result.exit_code == 2
    assert "listens beyond this machine, and the web app has no login" in " ".join(result.output.split())
    assert "--insecure" in CliRunner().invoke(cli_app, ["ui", "--help"]).output


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
