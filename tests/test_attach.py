"""A running ``serve`` or ``chat`` answers the command line over a Unix socket (ragloom.attach):
the same answers as the command's own process, only for this user and these settings, and
nothing left behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragloom import attach
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import RagloomError
from ragloom.query.request import Query
from tests.conftest import fast_settings, ingest_all
from tests.test_chat import Output, _command, _env

#: What differs between two runs of the same request: how long it took, and who answered.
CLOCK = ("seconds", "timings", "served_by")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Engine:
    engine = Engine(tmp_path_factory.mktemp("attach") / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    ingest_all(engine, materials)
    return engine


@pytest.fixture
def listener(engine: Engine) -> Iterator[attach.Listener]:
    with attach.Listener(engine, "the test") as running:
        assert running.listening
        yield running
    assert running.path is not None and not running.path.exists()


def unclocked(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if key not in CLOCK}


def call(engine: Engine, op: str, query: Query, **extra: Any) -> attach.Served | str | None:  # noqa: ANN401
    return attach.call(engine.workspace.uri, lambda: engine.settings, op, {"query": query.to_dict(), **extra})


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid", "graph", "dynamic"])
def test_a_query_is_answered_as_the_engine_answers_it(engine: Engine, listener: attach.Listener, mode: str) -> None:
    query = Query.build("event bus idempotency", k=4, mode=mode, lenses=["engineering"])
    served = call(engine, "query", query)
    assert isinstance(served, attach.Served)
    assert served.by == {"process": "the test", "pid": os.getpid()}
    assert unclocked(served.result) == unclocked(json.loads(json.dumps(engine.query(query).to_dict(), default=str)))


def test_an_answer_streams_and_ends_with_the_whole_result(engine: Engine, listener: attach.Listener) -> None:
    pieces: list[str] = []
    query = Query.build("When will the QuickBooks catalog integration ship?")
    served = attach.call(engine.workspace.uri, lambda: engine.settings, "ask", {"query": query.to_dict()},
                         on_text=pieces.append)
    assert isinstance(served, attach.Served)
    local = engine.ask(query, writer=engine.writing.writer()).to_dict()
    assert served.result["text"] == local["text"] == "".join(pieces)
    assert served.result["citations"] == local["citations"] and served.result["citations"]["ok"]


def test_an_error_is_the_engines_own_message(engine: Engine, listener: attach.Listener) -> None:
    query = Query.build("event bus", mode="nope")
    with pytest.raises(RagloomError) as local:
        engine.query(query)
    with pytest.raises(RagloomError) as served:
        call(engine, "query", query)
    assert str(served.value) == str(local.value) and "unknown retrieval mode 'nope'" in str(served.value)


def test_other_settings_or_another_protocol_leave_the_work_to_the_caller(
        engine: Engine, listener: attach.Listener) -> None:
    other = attach.call(engine.workspace.uri, lambda: fast_settings(**{"retrieval.k": 9}), "query",
                        {"query": Query("event bus").to_dict()})
    assert other == "the running the test has other settings"
    assert listener.path is not None
    for line, refused in ((b"not json", "not JSON"), (b'{"protocol": 0}', "another protocol version"),
                          (json.dumps({"protocol": attach.PROTOCOL, "op": "delete"}).encode(), "unknown operation")):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(listener.path))
            conn.sendall(line + b"\n")
            reply = json.loads(conn.makefile("rb").readline())
        assert reply["ok"] is False and refused in reply["refused"]


def test_nothing_listening_a_dead_socket_and_a_second_process(engine: Engine, tmp_path: Path) -> None:
    assert call(engine, "query", Query("event bus")) is None  # none listening
    path = attach.socket_path(engine.workspace.uri)
    assert path is not None
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # a process that died without removing its socket
    dead.close()
    assert path.exists() and call(engine, "query", Query("event bus")) is None
    with attach.Listener(engine, "first") as first, attach.Listener(engine, "second") as second:
        assert first.listening and not second.listening  # the live one keeps its socket
        served = call(engine, "query", Query("event bus"))
        assert isinstance(served, attach.Served) and served.by["process"] == "first"
        second.close()
        assert path.exists()  # closing the one that never listened removes nothing
    assert not path.exists()


def test_the_socket_is_this_users_alone(engine: Engine, listener: attach.Listener) -> None:
    assert listener.path is not None
    assert stat.S_IMODE(listener.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(listener.path.parent.stat().st_mode) == 0o700
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert attach._same_user(left)
    python = shutil.which("python3", path="/usr/bin:/bin")  # one that another user may run
    if os.getuid() != 0 or python is None:
        return
    # Another user cannot even connect (the folder and the socket are this user's).
    probe = subprocess.run([python, "-c", "import socket, sys; s = socket.socket(socket.AF_UNIX); "
                            "s.connect(sys.argv[1])", str(listener.path)], user=65534, capture_output=True, text=True,
                           check=False)
    assert probe.returncode != 0 and "PermissionError" in probe.stderr


def test_a_runtime_folder_open_to_others_turns_the_feature_off(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "ragloom").mkdir(mode=0o755)
    (tmp_path / "ragloom").chmod(0o755)
    assert attach.runtime_folder() is None and attach.socket_path(engine.workspace.uri) is None
    with attach.Listener(engine, "the test") as running:
        assert not running.listening
    (tmp_path / "ragloom").rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (tmp_path / "ragloom").symlink_to(tmp_path / "elsewhere")
    assert attach.runtime_folder() is None


def test_a_request_too_long_or_too_slow_is_dropped(
        engine: Engine, listener: attach.Listener, monkeypatch: pytest.MonkeyPatch) -> None:
    assert listener.path is not None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(listener.path))
        with pytest.raises(OSError):  # the listener hangs up while the bytes still come
            conn.sendall(b"x" * (attach.MAX_REQUEST * 4))
            assert conn.recv(1) == b""
            raise ConnectionResetError
    monkeypatch.setattr(attach, "READ_SECONDS", 0.2)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(str(listener.path))
        assert conn.recv(1) == b""  # nothing sent: closed once the wait is over
    assert isinstance(call(engine, "query", Query("event bus")), attach.Served)  # and it still answers


# -- the command line, against real processes -------------------------------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Path:
    ws = tmp_path_factory.mktemp("attach-cli") / "ws"
    for lens in ("engineering", "team-structured"):
        done = subprocess.run([*_command(), "ingest", str(materials / lens), "--lens", lens, "-w", str(ws)],
                              env=_env(), capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    return ws


def cli(workspace: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run([*_command(), *args, "--json", "-w", str(workspace)], env=_env(), capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.slow
@pytest.mark.parametrize("server", [["chat"], ["serve", "--port", "0"]])
def test_query_and_ask_use_a_running_server_and_say_so(workspace: Path, server: list[str]) -> None:
    process = subprocess.Popen([*_command(), *server, "-w", str(workspace)], env=_env(), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    try:
        Output(process.stdout.fileno()).expect("are answered here")
        served = cli(workspace, "query", "event bus idempotency", "-k", "3")
        assert served["served_by"] == {"process": f"ragloom {server[0]}", "pid": process.pid}
        here = cli(workspace, "query", "event bus idempotency", "-k", "3", "--local")
        assert "served_by" not in here and unclocked(here) == unclocked(served)
        question = "When will the QuickBooks catalog integration ship?"
        asked, answered_here = cli(workspace, "ask", question), cli(workspace, "ask", question, "--local")
        assert asked["served_by"]["pid"] == process.pid and "served_by" not in answered_here
        assert unclocked(asked) == unclocked(answered_here) and asked["citations"]["ok"]
        process.send_signal(signal.SIGTERM)  # as kill and systemd stop it
        process.wait(timeout=60)
        path = attach.socket_path(workspace)
        assert path is not None and not path.exists()
        assert "served_by" not in cli(workspace, "query", "event bus", "-k", "1")  # none running: as before
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
