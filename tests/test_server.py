"""The HTTP API over real HTTP: a uvicorn server in a thread (and one ``ragloom serve`` process),
on a workspace of the sample materials, each answer checked against the engine's own result."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragloom.demo import install_samples
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import MissingExtraError
from ragloom.server import create_app
from tests.conftest import MATERIALS, fast_settings, sample_settings

pytest.importorskip("fastapi", reason="the HTTP API needs the serve extra: pip install 'ragloom[serve]'")
uvicorn = pytest.importorskip("uvicorn", reason="the HTTP API needs the serve extra: pip install 'ragloom[serve]'")

FAST = {"RAGLOOM_EMBEDDING__MODEL": "hashing", "RAGLOOM_EMBEDDING__CACHE": "false"}
LENSES = sorted(p.name for p in MATERIALS.iterdir() if p.is_dir())
QUESTION = "When will the QuickBooks catalog integration ship?"
#: Every mode, with one of its own options where it has some.
MODES: dict[str, dict[str, Any]] = {
    "vector": {}, "bm25": {}, "hybrid": {"fusion_weights": {"vector": 1.0, "bm25": 0.5}},
    "balanced": {"chunks_per_lens": 2}, "graph": {}, "window": {"window": 2}, "dynamic": {"threshold": 0.6},
}
LOCK_TIMEOUT = 3.0


class ThreadedServer:
    """uvicorn serving ``app`` on a free port of 127.0.0.1, in a background thread."""

    def __init__(self, app: Any) -> None:  # noqa: ANN401
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))  # bound here: no race for the port
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


def same(data: Any) -> Any:  # noqa: ANN401
    """What the CLI's --json prints for ``data``, read back, without the run's timings."""
    loaded = json.loads(json.dumps(data, ensure_ascii=False, default=str))
    return _untimed(loaded)


def _untimed(data: Any) -> Any:  # noqa: ANN401
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items() if k not in ("seconds", "timings")}
    if isinstance(data, list):
        return [_untimed(v) for v in data]
    return data


def ok(response: httpx.Response) -> Any:  # noqa: ANN401
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Engine, list[dict[str, Any]]]]:
    """A server over a fresh workspace, the sample materials ingested through it (one lens per
    folder), an HTTP client, an engine of the test's own over the same workspace, and the
    ingest reports."""
    ws = tmp_path_factory.mktemp("served") / "ws"
    install_samples(MATERIALS, ws)
    roots = [str(MATERIALS), str(tmp_path_factory.getbasetemp())]  # ingest by path: the operator's folders
    engine = Engine(ws, settings=sample_settings(**{"workspace.lock_timeout": LOCK_TIMEOUT,
                                                    "server.ingest_roots": roots}), embedder=HashingEmbedder())
    with ThreadedServer(create_app(engine)) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        deadline = time.monotonic() + 30
        while not client.get("/health").json()["model_loaded"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        reports = [ok(client.post("/ingest", json={"paths": [str(MATERIALS / lens)], "lens": lens}))
                   for lens in LENSES]
        yield client, Engine(ws, settings=sample_settings(), embedder=HashingEmbedder()), reports


def test_health_and_ingest(served: tuple[httpx.Client, Engine, list[dict[str, Any]]]) -> None:
    client, local, reports = served
    for lens, report in zip(LENSES, reports, strict=True):
        assert report["ok"] and report["files"] == report["added"] > 0, (lens, report)
        assert {d["source"].split("/")[-2] for d in report["documents"]} == {lens}
    health = ok(client.get("/health"))
    assert health["status"] == "ok" and health["model_loaded"] is True and health["model_error"] is None
    assert health["workspace"] == str(local.workspace.path)
    assert health["documents"] == sum(r["added"] for r in reports) == local.stats()["documents"]
    again = ok(client.post("/ingest", json={"paths": [str(MATERIALS / "engineering")], "lens": "engineering"}))
    assert again["unchanged"] == again["files"] and not again["added"]


def test_health_reads_no_row(served: tuple[httpx.Client, Engine, list[dict[str, Any]]],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Open without a key, /health must stay cheap at any size: it counts, it never reads rows.
    from ragloom.store.lance import LanceStore

    def no_rows(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        raise AssertionError("/health read rows")

    client, local, _ = served
    for read in ("chunks", "documents", "document_texts", "current_columns"):
        monkeypatch.setattr(LanceStore, read, no_rows)
    assert ok(client.get("/health"))["documents"] == local.store.document_count(local.components.tenant(None)) > 0


@pytest.mark.parametrize("mode", sorted(MODES))
def test_query_in_every_mode_is_the_engines_result(served: tuple[httpx.Client, Engine, list[dict[str, Any]]],
                                                   mode: str) -> None:
    client, local, _ = served
    body = {"text": QUESTION, "k": 4, "mode": mode, "options": MODES[mode]}
    data = ok(client.post("/query", json=body))
    assert data["mode"] == mode and data["results"] and data["context"] is None
    assert {"query", "mode", "tenant", "as_of", "results", "notes", "warnings", "seconds", "timings"} <= set(data)
    expected = local.query(QUESTION, k=4, mode=mode, **MODES[mode])
    assert _untimed(data) == same(expected.to_dict())


def test_query_with_lenses_as_of_and_a_context(served: tuple[httpx.Client, Engine, list[dict[str, Any]]]) -> None:
    client, local, _ = served
    data = ok(client.post("/query", json={"text": QUESTION, "lenses": ["engineering", "your-voice"], "budget": 1500,
                                          "organize": "lens", "as_of": "2100-01-01T00:00:00Z"}))
    assert {r["lens"] for r in data["results"]} <= {"engineering", "your-voice"}
    assert data["context"]["budget"] == 1500 - 500 and data["context"]["chunks"]  # less reserve_tokens
    assert data["as_of"].startswith("2100-01-01")
    expected = local.query(QUESTION, lenses=["engineering", "your-voice"], budget=1500, organize="lens",
                           as_of="2100-01-01T00:00:00Z")
    assert _untimed(data) == same(expected.to_dict())
    before = ok(client.post("/query", json={"text": QUESTION, "as_of": "2000-01-01"}))
    assert before["results"] == []
    shown = ok(client.post("/query", json={"text": QUESTION, "optimize": True}))
    assert shown["context"]["formatted"].startswith("# Context for query")
    march = ok(client.post("/query", json={"text": QUESTION, "dated_from": "2025-03-01", "dated_to": "2025-03-31"}))
    assert _untimed(march) == same(local.query(QUESTION, dated_from="2025-03-01", dated_to="2025-03-31").to_dict())
    assert march["results"] and all("2025-03-01" <= r["document_date"] <= "2025-03-31" for r in march["results"])


def test_ask_and_generate(served: tuple[httpx.Client, Engine, list[dict[str, Any]]]) -> None:
    client, local, _ = served
    data = ok(client.post("/ask", json={"question": QUESTION, "lenses": ["engineering", "team-structured"]}))
    assert data["citations"]["ok"] and data["sources"] and data["context"]["tokens"] > 0
    expected = local.ask(QUESTION, lenses=["engineering", "team-structured"])
    assert _untimed(data) == same(expected.to_dict())
    report = ok(client.post("/generate", json={"context": "what ships in Q3 2025", "title": "Over HTTP",
                                               "queries": ["roadmap priorities and timeline", "risks and concerns"]}))
    assert report["title"] == "Over HTTP" and len(report["sections"]) == 3  # two queries and the context
    assert report["citations"]["ok"] and report["sources"]
    assert list((local.workspace.path / "reports").glob("*.md"))


def test_stats_graph_contradictions_history_entities(
        served: tuple[httpx.Client, Engine, list[dict[str, Any]]]) -> None:
    client, local, _ = served
    assert ok(client.get("/stats")) == same(local.stats())
    graph = ok(client.get("/graph/stats"))
    assert graph["nodes"] > 0 and graph == same(local.graph().stats())
    hit = ok(client.post("/query", json={"text": "event bus", "k": 1}))["results"][0]
    node = ok(client.get(f"/graph/chunks/{hit['chunk_id']}", params={"limit": 5}))
    assert node["id"] == hit["chunk_id"] and 0 < len(node["relations"]) <= 5
    assert node == same(local.graph().show(hit["chunk_id"], limit=5))
    found = ok(client.get("/contradictions", params={"limit": 5}))
    assert found and found == same([c.to_dict() for c in local.contradictions(limit=5)])
    two = ok(client.get("/contradictions", params=[("lens", "engineering"), ("lens", "team-structured")]))
    assert two == same([c.to_dict() for c in local.contradictions(lenses=["engineering", "team-structured"])])
    path = str(MATERIALS / "engineering" / "tech-debt-register.md")
    rows = ok(client.get("/history", params={"path": path}))
    assert [r["change_type"] for r in rows] == ["create"] and rows == same(local.history(path))
    entities = ok(client.get("/entities", params={"type": "customer"}))
    assert "Apex HVAC" in {e["name"] for e in entities} and entities == same(local.entities(type="customer")[:30])
    refs = ok(client.get(f"/backrefs/{hit['chunk_id']}"))
    assert refs == same([r.to_dict() for r in local.back_references(hit["chunk_id"])])
    assert ok(client.get("/quality", params={"worst": 3})) == same(local.quality(worst=3))


@pytest.mark.parametrize(("body", "error", "words"), [
    ({"text": "x", "options": {"bogus": 1}}, "InvalidParameterError", "unknown option 'bogus'"),
    ({"text": "x", "options": {"k": 1}}, "InvalidParameterError", "is a parameter of the request itself"),
    ({"text": "x", "as_of": "yesterday"}, "InvalidParameterError", "not an ISO 8601 time"),
])
def test_bad_queries_are_400_with_the_ragloom_message(served: tuple[httpx.Client, Engine, list[dict[str, Any]]],
                                                      body: dict[str, Any], error: str, words: str) -> None:
    client, _, _ = served
    response = client.post("/query", json=body)
    assert response.status_code == 400, response.text
    data = response.json()
    assert data["error"] == error and words in data["detail"] and "Traceback" not in response.text


def test_other_errors(served: tuple[httpx.Client, Engine, list[dict[str, Any]]]) -> None:
    client, _, _ = served
    missing = client.get("/graph/chunks/no-such-chunk")
    assert missing.status_code == 404
    assert missing.json()["error"] == "UnknownChunkError"
    assert missing.json()["detail"].startswith("no chunk 'no-such-chunk' in the graph; take ids from 'ragloom query")
    assert client.get("/backrefs/no-such-chunk").status_code == 404
    typo = client.post("/query", json={"txt": "x"})
    assert typo.status_code == 422 and typo.json()["error"] == "RequestValidationError"
    assert "body.text: Field required" in typo.json()["detail"] and "body.txt" in typo.json()["detail"]
    assert client.post("/query", content=b"{not json", headers={"content-type": "application/json"}).status_code == 422
    for body in ({"question": "x", "mode": "nope"}, {"question": "x", "tenant": "no/such tenant"},
                 {"question": "x", "budget": 500}):  # what the schema says: a 422 naming the field
        wrong = client.post("/ask", json=body)
        assert wrong.status_code == 422 and f"body.{next(iter(set(body) - {'question'}))}" in wrong.json()["detail"]
    empty = client.post("/ask", json={"question": "  "})
    assert empty.status_code == 422 and "body.question" in empty.json()["detail"]  # the schema says it: not blank
    assert client.get("/contradictions", params={"limit": -1}).status_code == 422  # the API bounds it before the engine does
    assert client.post("/ingest", json={"paths": [], "lens": "x"}).status_code == 422
    bad_lens = client.post("/ingest", json={"paths": [str(MATERIALS)], "lens": "bad lens"})
    assert bad_lens.status_code == 422 and "body.lens" in bad_lens.json()["detail"]
    gone = ok(client.post("/ingest", json={"paths": [str(MATERIALS / "no-such-folder")], "lens": "x"}))
    assert gone["failed"] and not gone["ok"]
    outside = client.post("/ingest", json={"paths": ["/no/such/folder"], "lens": "x"})  # not under ingest_roots
    assert outside.status_code == 403 and "server.ingest_roots" in outside.json()["detail"]
    assert client.get("/history", params={"path": "a\x00b"}).status_code == 422
    assert client.get("/nowhere").json() == {"error": "NotFound", "detail": "Not Found"}
    assert client.delete("/query").json()["error"] == "MethodNotAllowed"


def test_a_waiting_write_blocks_no_reader_and_ends_in_503(served: tuple[httpx.Client, Engine, list[dict[str, Any]]],
                                                          tmp_path: Path) -> None:
    client, local, _ = served
    (tmp_path / "new.md").write_text("# New\n\nA new note about the event bus.\n", encoding="utf-8")
    answers: list[httpx.Response] = []
    with local.store.writer():  # another writer holds the workspace
        writing = threading.Thread(target=lambda: answers.append(
            client.post("/ingest", json={"paths": [str(tmp_path / "new.md")], "lens": "engineering"})))
        writing.start()
        time.sleep(0.3)
        for _ in range(3):  # reads are answered while the ingest waits for the lock
            assert ok(client.post("/query", json={"text": "event bus", "k": 1}))["results"]
            assert ok(client.get("/health"))["status"] == "ok"
        assert writing.is_alive()
        writing.join(timeout=LOCK_TIMEOUT + 30)
    response = answers[0]
    assert response.status_code == 503 and response.headers["retry-after"]
    assert response.json()["error"] == "WorkspaceLockedError" and "lock_timeout" in response.json()["detail"]
    assert ok(client.post("/ingest", json={"paths": [str(tmp_path / "new.md")], "lens": "engineering"}))["added"] == 1


def test_concurrent_queries_agree(served: tuple[httpx.Client, Engine, list[dict[str, Any]]]) -> None:
    client, _, _ = served
    bodies = [{"text": QUESTION, "mode": mode, "k": 3} for mode in ("hybrid", "graph", "bm25", "window")] * 2
    results: dict[int, Any] = {}

    def run(i: int) -> None:
        results[i] = ok(client.post("/query", json=bodies[i]))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == len(bodies)
    for i in range(4):
        assert _untimed(results[i]) == _untimed(results[i + 4])


def test_openapi_lists_every_route_with_documented_bodies(
        served: tuple[httpx.Client, Engine, list[dict[str, Any]]]) -> None:
    client, _, _ = served
    spec = ok(client.get("/openapi.json"))
    routes = {(path, method) for path, methods in spec["paths"].items() for method in methods}
    assert routes == {
        ("/health", "get"), ("/ingest", "post"), ("/query", "post"), ("/ask", "post"), ("/generate", "post"),
        ("/stats", "get"), ("/graph/stats", "get"), ("/graph/chunks/{chunk_id}", "get"), ("/contradictions", "get"),
        ("/history", "get"), ("/entities", "get"), ("/backrefs/{chunk_id}", "get"), ("/quality", "get"),
        ("/documents", "post"),
    }
    for name in ("QueryBody", "AskBody", "GenerateBody", "IngestBody"):
        fields = spec["components"]["schemas"][name]["properties"]
        assert all(f.get("description") for f in fields.values()), name
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert "cdn" not in docs.text.lower() and "https://" not in docs.text  # local-first: no asset from the internet
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert client.get(f"/docs-assets/{asset}").status_code == 200


def test_a_bug_is_a_500_in_the_same_shape(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    app = create_app(engine, warm=False)

    def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/broken", broken)
    with TestClient(app, base_url="http://localhost", raise_server_exceptions=False) as client:
        response = client.get("/broken")
        assert response.status_code == 500
        assert response.json()["error"] == "RuntimeError" and "a bug" in response.json()["detail"]
        health = client.get("/health").json()  # not warmed: up, the model to load on first use
        assert health["status"] == "ok" and health["documents"] == 0 and health["model_loaded"] is False


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if not installed: find_spec gives None
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    with pytest.raises(MissingExtraError, match=r"pip install 'ragloom\[serve\]'"):
        create_app(engine)


def test_the_core_imports_without_fastapi() -> None:
    code = ("import sys; import ragloom, ragloom.cli, ragloom.server; "
            "assert not {'fastapi', 'uvicorn'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _ragloom() -> list[str]:
    script = Path(sys.executable).with_name("ragloom")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "ragloom.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ragloom_serve_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    local = Engine(ws, settings=fast_settings(), embedder=HashingEmbedder())
    local.ingest(MATERIALS / "engineering", lens="engineering")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")} | FAST
    process = subprocess.Popen([*_ragloom(), "serve", "--port", str(port), "--workspace", str(ws)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        health: dict[str, Any] = {}
        while not health.get("model_loaded"):
            assert process.poll() is None, process.communicate()[0]
            assert time.monotonic() < deadline, "ragloom serve did not become ready"
            try:
                health = httpx.get(f"{url}/health", timeout=5).json()
            except httpx.TransportError:
                time.sleep(0.2)
        assert health["documents"] == 3 and health["workspace"] == str(ws.resolve())
        data = ok(httpx.post(f"{url}/query", json={"text": "event bus idempotency", "k": 2}, timeout=60))
        assert _untimed(data) == same(local.query("event bus idempotency", k=2).to_dict())
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: a graceful stop, status 0
        output = process.communicate(timeout=60)[0]
    assert process.returncode == 0, output
    assert f"ragloom serve: http://127.0.0.1:{port}" in output


def test_ragloom_serve_says_when_the_port_is_taken(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragloom.cli import app

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["serve", "--port", str(port), "--workspace", str(tmp_path / "ws")], env=FAST)
    assert result.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in result.output
    result = CliRunner().invoke(app, ["serve", "--port", "70000", "--workspace", str(tmp_path / "ws")], env=FAST)
    assert result.exit_code == 2 and "--port (70000)" in result.output
