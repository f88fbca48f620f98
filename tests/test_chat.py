"""``ragloom chat``: driven through piped standard input (CliRunner and a real process) and
through a pseudo-terminal, as a person would type it."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragloom.cli import app

runner = CliRunner()
FAST = {"RAGLOOM_EMBEDDING__MODEL": "hashing", "RAGLOOM_EMBEDDING__CACHE": "false"}
TIMING = re.compile(r", \d+ ms\)")
RESULT_LENS = re.compile(r"^  \d+\. .*?(engineering|team-structured)", re.MULTILINE)  # a result's first line
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Path:
    ws = tmp_path_factory.mktemp("chat") / "ws"
    for lens in ("engineering", "team-structured"):
        result = runner.invoke(app, ["ingest", str(materials / lens), "--lens", lens, "-w", str(ws)], env=FAST)
        assert result.exit_code == 0, result.output
    return ws


def chat(ws: Path, lines: list[str], *args: str) -> str:
    result = runner.invoke(app, ["chat", "-w", str(ws), *args], input="".join(f"{line}\n" for line in lines), env=FAST)
    assert result.exit_code == 0, result.output
    return TIMING.sub(")", result.stdout)


def query_output(ws: Path, *args: str) -> str:
    result = runner.invoke(app, ["query", *args, "-w", str(ws)], env=FAST)
    assert result.exit_code == 0, result.output
    return TIMING.sub(")", result.stdout)


def test_each_question_is_answered_as_ragloom_query_prints_it(ws: Path) -> None:
    out = chat(ws, ["event bus idempotency", "/mode bm25", "/k 2", "capacity per quarter"], "-k", "3")
    greeting = " ".join(out.split("\n\n")[0].split())
    assert re.match(rf"ragloom chat on {re.escape(str(ws))} \(\d+ documents; mode hybrid, k 3, every lens\)", greeting)
    first = query_output(ws, "event bus idempotency", "-k", "3")
    second = query_output(ws, "capacity per quarter", "-k", "2", "--mode", "bm25")
    assert first in out and second in out
    assert out.index(first) < out.index("now: mode bm25, k 3") < out.index("now: mode bm25, k 2") < out.index(second)


def test_the_k_the_chat_names_is_the_number_of_results_in_every_mode(ws: Path) -> None:
    question = "catalog integration and the event bus"
    lines = [step for mode in ("vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic")
             for step in (f"/mode {mode}", question)]
    out = chat(ws, lines)
    assert "mode hybrid, k 5, every lens" in " ".join(out.split("\n\n")[0].split())
    answers = re.split(r"^now: mode \w+, k 5, every lens$", out, flags=re.MULTILINE)[1:]
    assert len(answers) == 7
    for answer in answers:  # "k 5": at most 5 results, graph and balanced too (they printed 24 to 50)
        assert 0 < len(re.findall(r"^  \d+\. ", answer, re.MULTILINE)) <= 5, answer


def test_lens_filters_add_up_and_clear(ws: Path) -> None:
    question = "catalog integration"
    out = chat(ws, ["/lens engineering", question, "/lens team-structured", question, "/lens", question],
               "-k", "8", "--mode", "bm25")
    assert "now: mode bm25, k 8, engineering\n" in out
    assert "now: mode bm25, k 8, engineering, team-structured\n" in out
    assert "now: mode bm25, k 8, every lens\n" in out
    one = query_output(ws, question, "-k", "8", "--mode", "bm25", "--lens", "engineering")
    two = query_output(ws, question, "-k", "8", "--mode", "bm25", "--lens", "engineering", "--lens", "team-structured")
    every = query_output(ws, question, "-k", "8", "--mode", "bm25")
    assert set(RESULT_LENS.findall(one)) == {"engineering"}
    assert set(RESULT_LENS.findall(two)) == set(RESULT_LENS.findall(every)) == {"engineering", "team-structured"}
    assert out.index(one) < out.index(two) < out.rindex(every)


def test_mode_options_apply_to_each_question_until_cleared_or_the_mode_changes(ws: Path) -> None:
    question = "event bus migration"
    out = chat(ws, ["/option threshold=-1", "/option treshold=1", question, "/option query_floor=0.1", "/option",
                    question, "/option threshold=0.5", "/mode bm25"], "--mode", "dynamic", "-o", "max_expand=2")
    flat = " ".join(out.split())  # a long "now:" line wraps at 80 columns
    assert "6 documents; mode dynamic, max_expand=2, k 5, every lens)" in flat
    assert "now: mode dynamic, max_expand=2, threshold=-1, k 5, every lens" in flat
    assert "now: mode dynamic, max_expand=2, threshold=-1, query_floor=0.1, k 5, every lens" in flat
    grown = query_output(ws, question, "--mode", "dynamic", "-o", "max_expand=2", "-o", "threshold=-1")
    plain = query_output(ws, question, "--mode", "dynamic")
    assert grown != plain
    assert out.index(grown) < out.index("now: mode dynamic, k 5, every lens\n") < out.index(plain)
    assert "now: mode bm25, k 5, every lens\n" in out  # /mode cleared them
    result = runner.invoke(app, ["chat", "-w", str(ws)], env=FAST,
                           input="/option treshold=1\n/mode bm25\n/option threshold=0.5\n")
    assert "unknown option 'treshold' for retrieval mode 'hybrid'" in result.output
    assert "unknown option 'threshold' for retrieval mode 'bm25'" in result.output


def test_ask_answers_with_citations_like_ragloom_ask(ws: Path) -> None:
    question = "When will the QuickBooks catalog integration ship?"
    out = chat(ws, [f"/ask {question}"])
    asked = runner.invoke(app, ["ask", question, "-w", str(ws)], env=FAST)
    assert asked.exit_code == 0, asked.output
    answer = asked.stdout.split("Sources (")[0]
    assert answer.strip() and answer in out
    assert "citations:" in out and "Sources (" in out


def test_commands_help_errors_and_quit(ws: Path) -> None:
    result = runner.invoke(app, ["chat", "-w", str(ws)], env=FAST, input="/help\n/mode nope\n/k 0\n/k many\n/k\n"
                           "/frobnicate\n/ask\n/option k=3\n/mode graph\n/quit\nnever asked\n")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "/mode MODE" in out and "balanced, bm25, dynamic, graph, hybrid, vector, window" in out
    assert "unknown retrieval mode 'nope'; choose one of" in out
    assert "k (0) must be at least 1" in out
    assert "/k 'many': give a whole number" in out and "/k needs a value" in out
    assert "unknown command /frobnicate; /help lists the commands" in out and "/ask needs a question" in out
    assert "option 'k' is a parameter of the request itself, not an option of the retrieval mode: give k as its own parameter (the CLI's -k" in " ".join(out.split())
    assert "now: mode graph, k 5, every lens" in out  # the bad values changed nothing
    assert "never asked" not in out


def test_end_of_input_leaves_and_bad_options_exit_2(ws: Path) -> None:
    result = runner.invoke(app, ["chat", "-w", str(ws)], env=FAST, input="event bus\n")
    assert result.exit_code == 0 and "event bus  (hybrid" in result.stdout
    result = runner.invoke(app, ["chat", "-w", str(ws), "--mode", "nope"], env=FAST, input="event bus\n")
    assert result.exit_code == 2 and "unknown retrieval mode 'nope'" in result.output
    result = runner.invoke(app, ["chat", "-w", str(ws), "--as-of", "soon"], env=FAST, input="")
    assert result.exit_code == 2 and "not an ISO 8601 time" in result.output


def _command() -> list[str]:
    script = Path(sys.executable).with_name("ragloom")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "ragloom.cli"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")} | FAST | {"COLUMNS": "120"}


class Output:
    """What a process wrote to ``fd``, read as it comes; :meth:`expect` waits for the next marker."""

    def __init__(self, fd: int, timeout: float = 120) -> None:
        self.fd, self.deadline = fd, time.monotonic() + timeout
        self.seen, self.at = "", 0
        self._raw = b""

    def expect(self, marker: str) -> str:
        """Everything from the last marker to the end of this one."""
        while marker not in self.seen[self.at:]:
            assert time.monotonic() < self.deadline, f"no {marker!r} in {self.seen[self.at:]!r}"
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # the terminal closed
                    chunk = b""
                assert chunk, f"the chat ended before {marker!r}: {self.seen[self.at:]!r}"
                self._raw += chunk
                self.seen = ANSI.sub("", self._raw.decode("utf-8", "replace"))
        end = self.seen.index(marker, self.at) + len(marker)
        part, self.at = self.seen[self.at:end], end
        return part


def test_a_real_process_on_a_pipe_leaves_on_ctrl_c(ws: Path) -> None:
    # Ctrl-C as a person's terminal delivers it: a job started in the background of a shell
    # (nohup make test &) ignores SIGINT, and its children inherit that; the chat must not.
    process = subprocess.Popen([*_command(), "chat", "-w", str(ws), "-k", "1"], env=_env(), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(b"event bus\n")
        process.stdin.flush()
        output = Output(process.stdout.fileno())
        assert "ragloom chat on" in output.expect("event bus  (hybrid")
        output.expect("examples/materials/")  # the result
        process.send_signal(signal.SIGINT)  # Ctrl-C while it waits for the next line
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_terminal_gets_a_prompt_and_ctrl_d_leaves(ws: Path) -> None:
    import pty

    controller, terminal = pty.openpty()
    process = subprocess.Popen([*_command(), "chat", "-w", str(ws), "-k", "1"], env=_env(), stdin=terminal,
                               stdout=terminal, stderr=terminal, close_fds=True)
    os.close(terminal)
    try:
        output = Output(controller)
        output.expect("ragloom> ")
        os.write(controller, b"/k 2\r")
        output.expect("now: mode hybrid, k 2")
        os.write(controller, b"event bus\r")
        output.expect("event bus  (hybrid")
        assert "examples/materials/" in output.expect("ragloom> ")  # the results, then the next prompt
        os.write(controller, b"\x04")  # Ctrl-D on an empty line
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
