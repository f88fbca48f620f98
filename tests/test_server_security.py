"""The HTTP API read as an attacker would (docs/security.md): each point checked over real HTTP,
with the server's own client (httpx) against a uvicorn server the test starts."""

from __future__ import annotations

import base64
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.access import Keys
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import ConfigError
from ragloom.server import create_app, exposure
from tests.conftest import fast_settings
from tests.test_server import ThreadedServer

pytest.importorskip("fastapi", reason="the HTTP API needs the serve extra: pip install 'ragloom[serve]'")

#: Each tenant's documents hold a word no other tenant's do.
SECRET = {"acme": "quetzalcoatl", "beta": "xylophonist"}
MODES = ("vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic")


def _note(word: str, n: int) -> str:
    return (f"# Planning note {n}\n\nThe {word} budget review is on Monday. The {word} team ships the "
            f"integration in March.\n\n## Risks\n\nThe {word} vendor may be late; the migration waits for it.\n")


class Site:
    """A served workspace with two tenants, three keys of tenant acme and one of beta."""

    def __init__(self, root: Path, **overrides: object) -> None:
        self.root = root
        self.outside = root / "outside"
        self.allowed = root / "allowed"
        for folder in (self.outside, self.allowed):
            folder.mkdir()
        (self.outside / "private.md").write_text(_note("mandragora", 0), encoding="utf-8")
        (self.allowed / "notes.md").write_text(_note("ordinary", 1), encoding="utf-8")
        (self.allowed / "escape").symlink_to(self.outside, target_is_directory=True)
        self.engine = Engine(root / "ws", settings=fast_settings(**{"server.ingest_roots": [str(self.allowed)],
                                                                    **overrides}), embedder=HashingEmbedder())
        for tenant, word in SECRET.items():
            folder = root / tenant
            folder.mkdir()
            for n in range(3):
                (folder / f"note-{n}.md").write_text(_note(word, n), encoding="utf-8")
            self.engine.ingest(folder, lens="notes", tenant=tenant)
        keys = Keys(self.engine.workspace.path)
        self.key = {role: keys.create(tenant="acme", role=role)[1] for role in ("read", "write", "admin")}
        self.beta = keys.create(tenant="beta", role="admin")[1]
        self.keys = keys

    @staticmethod
    def auth(key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, httpx.Client]]:
    site = Site(tmp_path_factory.mktemp("security"))
    with ThreadedServer(create_app(site.engine, warm=False)) as server, \
            httpx.Client(base_url=server.url, timeout=120) as client:
        yield site, client


# -- keys, roles, tenants ---------------------------------------------------------------------------


def test_without_a_valid_key_nothing_is_answered_but_health(site: tuple[Site, httpx.Client]) -> None:
    s, client = site
    for method, path, body in (("POST", "/query", {"text": "budget"}), ("GET", "/stats", None),
                               ("GET", "/contradictions", None), ("POST", "/ask", {"question": "When?"})):
        for headers in ({}, s.auth("rlk_000000000000_" + "A" * 43), {"Authorization": "Basic Zm9vOmJhcg=="}):
            response = client.request(method, path, json=body, headers=headers)
            assert response.status_code in (401, 403), (path, headers, response.text)
            assert response.json()["error"] in ("Unauthorized", "Forbidden") and "Traceback" not in response.text
    missing = client.get("/stats")
    assert missing.headers["www-authenticate"] == "Bearer" and "ragloom keys create" in missing.json()["detail"]
    health = client.get("/health").json()  # open to a load balancer, but says nothing of the workspace
    assert health["status"] == "ok" and "workspace" not in health and "documents" not in health


def test_roles(site: tuple[Site, httpx.Client]) -> None:
    s, client = site
    upload = {"lens": "notes", "files": [{"name": "roles.md", "content": _note("quetzalcoatl", 9)}]}
    ingest = {"paths": [str(s.allowed / "notes.md")], "lens": "notes"}
    read = s.auth(s.key["read"])
    assert client.post("/query", json={"text": "budget"}, headers=read).status_code == 200
    for path, body in (("/documents", upload), ("/ingest", ingest), ("/generate", {"queries": ["budget"]})):
        refused = client.post(path, json=body, headers=read)
        assert refused.status_code == 403 and "role read" in refused.json()["detail"], path
    write = s.auth(s.key["write"])
    assert client.post("/documents", json=upload, headers=write).json()["added"] == 1
    assert client.post("/ingest", json=ingest, headers=write).status_code == 403
    assert client.post("/ingest", json=ingest, headers=s.auth(s.key["admin"])).json()["added"] == 1


def test_a_key_sees_only_its_tenant(site: tuple[Site, httpx.Client]) -> None:
    s, client = site
    read = s.auth(s.key["read"])
    other = client.post("/query", json={"text": "xylophonist budget", "tenant": "beta"}, headers=read)
    assert other.status_code == 403 and "another tenant" in other.json()["detail"]
    assert client.get("/stats", params={"tenant": "beta"}, headers=read).status_code == 403
    own = client.get("/stats", headers=read).json()
    assert own["tenant"] == "acme" and own["documents"] == len(s.engine.store.documents("acme"))
    assert own["chunk_versions_stored"] < s.engine.stats(tenant="acme")["chunk_versions_stored"] + \
        s.engine.stats(tenant="beta")["chunk_versions_stored"]  # this tenant's versions, not the workspace's


def test_a_revoked_key_is_refused_at_once(site: tuple[Site, httpx.Client]) -> None:
    s, client = site
    grant, key = s.keys.create(tenant="acme", role="read", name="short-lived")
    assert client.get("/stats", headers=s.auth(key)).status_code == 200
    Keys(s.engine.workspace.path).revoke("short-lived")  # as `ragloom keys revoke` does, from another object
    assert client.get("/stats", headers=s.auth(key)).status_code == 401


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.sampled_from(["budget", "vendor late", "integration March", "xylophonist", "quetzalcoatl team",
                             "risks"]) | st.text(min_size=1, max_size=40),
       mode=st.sampled_from(MODES), k=st.integers(1, 30),
       tenant=st.sampled_from([None, "acme", "beta", "default"]),
       endpoint=st.sampled_from(["/query", "/ask", "/contradictions", "/entities", "/stats", "/graph/stats"]))
def test_no_request_with_one_tenants_key_returns_anothers_text(site: tuple[Site, httpx.Client], text: str, mode: str,
                                                               k: int, tenant: str | None, endpoint: str) -> None:
    s, client = site
    for key, foreign in ((s.key["read"], SECRET["beta"]), (s.beta, SECRET["acme"])):
        if endpoint == "/query":
            response = client.post(endpoint, json={"text": text, "mode": mode, "k": k, "tenant": tenant,
                                                   "optimize": k % 2 == 0}, headers=s.auth(key))
        elif endpoint == "/ask":
            response = client.post(endpoint, json={"question": text, "mode": mode, "k": k, "tenant": tenant},
                                   headers=s.auth(key))
        else:
            params: dict[str, Any] = {"tenant": tenant} if tenant else {}
            response = client.get(endpoint, params=params, headers=s.auth(key))
        # 422: a body the schema refuses (a question of whitespace alone, which /ask's model
        # turns away before the engine sees it, where /query's engine answers 400).
        assert response.status_code in (200, 400, 403, 422), response.text
        # A query that names the other tenant's word is echoed back; what the server found is not.
        shown = response.text.lower() if foreign not in text.lower() else " ".join(_found(response.json())).lower()
        assert foreign not in shown


def _found(data: Any) -> Iterator[str]:  # noqa: ANN401
    """Every string of an answer but the question it echoes."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "formatted":  # the context window: its first line names the query
                yield str(value).split("\n", 1)[-1]
            elif key not in ("query", "question"):
                yield from _found(value)
    elif isinstance(data, list):
        for value in data:
            yield from _found(value)
    elif isinstance(data, str):
        yield data


# -- the server's disk ------------------------------------------------------------------------------


def test_ingest_by_path_only_under_the_roots(site: tuple[Site, httpx.Client]) -> None:
    s, client = site
    admin = s.auth(s.key["admin"])
    answers = [client.post("/ingest", json={"paths": [path], "lens": "notes"}, headers=admin)
               for path in (str(s.outside / "private.md"), str(s.outside / "no-such.md"), "/etc/passwd", "/nope")]
    assert {a.status_code for a in answers} == {403}
    # The same words whether or not the path exists: no oracle for the server's disk.
    assert {a.json()["detail"].split("'")[2] for a in answers} == {answers[0].json()["detail"].split("'")[2]}
    linked = client.post("/ingest", json={"paths": [str(s.allowed / "escape" / "private.md")], "lens": "notes"},
                         headers=admin)
    assert linked.status_code == 403  # the link is resolved before the check
    folder = client.post("/ingest", json={"paths": [str(s.allowed)], "lens": "notes"}, headers=admin).json()
    assert any("outside the folders this server may read" in reason for _, reason in
               [(f["source"] if isinstance(f, dict) else f[0], f["message"] if isinstance(f, dict) else f[1])
                for f in folder["failed"]])  # the link inside the root is found, reported, not read
    found = client.post("/query", json={"text": "mandragora", "mode": "bm25"}, headers=admin).json()
    assert all("mandragora" not in r["text"] for r in found["results"])
    nul = client.post("/ingest", json={"paths": ["a\x00b"], "lens": "notes"}, headers=admin)
    assert nul.status_code == 422 and "body.paths" in nul.json()["detail"]


def test_ingest_by_path_is_off_without_roots(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    with ThreadedServer(create_app(engine, warm=False)) as server, httpx.Client(base_url=server.url) as client:
        refused = client.post("/ingest", json={"paths": [str(tmp_path)], "lens": "notes"})
        assert refused.status_code == 403 and "POST /documents" in refused.json()["detail"]


def test_uploads(site: tuple[Site, httpx.Client], tmp_path: Path) -> None:
    s, client = site
    write = s.auth(s.key["write"])
    folder = s.engine.workspace.path / "uploads" / "acme" / "notes"
    for name in ("..", ".", "../../evil.md", "a/b.md", ".hidden.md", "x\x00.md", "run.sh", " padded.md"):
        refused = client.post("/documents", json={"lens": "notes", "files": [{"name": name, "content": "x"}]},
                              headers=write)
        assert refused.status_code in (400, 422) and "Traceback" not in refused.text, name
    twice = client.post("/documents", json={"lens": "notes", "files": [{"name": "a.md", "content": "one two"},
                                                                         {"name": "a.md", "content": "three four"}]},
                        headers=write).json()  # two files of one name are two documents: the second is "a (2).md"
    assert sorted(Path(d["source"]).name for d in twice["documents"]) == ["a (2).md", "a.md"]
    first = client.post("/documents", json={"lens": "notes", "files": [
        {"name": "plan.md", "content": _note("quetzalcoatl", 20)}]}, headers=write).json()
    again = client.post("/documents", json={"lens": "notes", "files": [
        {"name": "plan.md", "content": _note("quetzalcoatl", 21)}]}, headers=write).json()
    assert first["added"] == 1 and again["updated"] == 1  # the same name is a new version of that document
    assert [v["change_type"] for v in s.engine.history(folder / "plan.md", tenant="acme")] == ["create", "update"]
    # A file the ingest refuses is removed; an earlier file of that name is put back.
    broken = base64.b64encode(b"PK\x03\x04 not really a docx").decode()
    bad = client.post("/documents", json={"lens": "notes", "files": [{"name": "plan.md", "content": ""},
                                                                       {"name": "new.docx", "content": broken,
                                                                        "encoding": "base64"}]},
                      headers=write).json()
    assert len(bad["failed"]) >= 1 and not (folder / "new.docx").exists()
    assert "quetzalcoatl" in (folder / "plan.md").read_text(encoding="utf-8")
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # nothing set aside is left
    not_b64 = client.post("/documents", json={"lens": "notes", "files": [{"name": "x.pdf", "content": "%%", "encoding": "base64"}]},
                          headers=write)
    assert not_b64.status_code == 400 and "base64" in not_b64.json()["detail"]


# -- the browser, sizes and bad input -------------------------------------------------------------


def test_host_and_origin(site: tuple[Site, httpx.Client]) -> None:
    _, client = site
    rebound = client.get("/health", headers={"Host": "attacker.example:8000"})
    assert rebound.status_code == 421 and "server.trusted_hosts" in rebound.json()["detail"]
    assert client.get("/health", headers={"Host": "localhost:1234"}).status_code == 200
    cross = client.get("/health", headers={"Origin": "https://attacker.example"})
    assert cross.status_code == 403 and "server.cors_origins" in cross.json()["detail"]
    same = client.get("/health", headers={"Origin": str(client.base_url).rstrip("/")})
    assert same.status_code == 200 and "access-control-allow-origin" not in same.headers


def test_cors_for_a_listed_origin(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"server.cors_origins": ["https://app.example"]}),
                    embedder=HashingEmbedder())
    with ThreadedServer(create_app(engine, warm=False)) as server, httpx.Client(base_url=server.url) as client:
        allowed = client.get("/health", headers={"Origin": "https://app.example"})
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        preflight = client.options("/query", headers={"Origin": "https://app.example",
                                                      "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 204 and "authorization" in preflight.headers["access-control-allow-headers"]
        assert client.get("/health", headers={"Origin": "https://other.example"}).status_code == 403


@pytest.mark.parametrize(("body", "field"), [
    ({"text": "x", "k": 10**8}, "body.k"), ({"text": "x", "k": 10**30}, "body.k"), ({"text": "x", "k": True}, "body.k"),
    ({"text": "x", "budget": 10**30}, "body.budget"), ({"text": "x" * 20_001}, "body.text"),
    ({"text": "x", "lenses": ["l"] * 101}, "body.lenses"), ({"text": "x", "options": {"window": 10**9}}, "options"),
])
def test_bounds_are_a_422_naming_the_field(site: tuple[Site, httpx.Client], body: dict[str, Any], field: str) -> None:
    s, client = site
    response = client.post("/query", json=body, headers=s.auth(s.key["read"]))
    assert response.status_code == 422 and field in response.json()["detail"], response.text
    assert len(response.content) < 5_000  # the input is not echoed back


def test_a_lone_surrogate_is_a_422_and_the_connection_lives_on(site: tuple[Site, httpx.Client]) -> None:
    s, client = site
    key = s.key["read"]
    for path, body, field in (("/query", b'{"text": "\\ud800"}', "body.text"),
                              ("/ask", b'{"question": "a \\udfff b"}', "body.question"),
                              ("/query", b'{"text": "x", "options": {"\\ud800": 1}}', "options"),
                              ("/query", b'{"text": "x", "options": {"w": ["\\udfff"]}}', "options")):
        response = client.post(path, content=body, headers={**s.auth(key), "content-type": "application/json"})
        assert response.status_code == 422 and field in response.json()["detail"], response.text
    generated = client.post("/generate", json={"queries": ["x"] * 21}, headers=s.auth(s.key["write"]))
    assert generated.status_code == 422 and "body.queries" in generated.json()["detail"]


def test_a_body_too_large_is_refused_before_it_is_read(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"server.max_body_mb": 0.01}),
                    embedder=HashingEmbedder())
    with ThreadedServer(create_app(engine, warm=False)) as server, httpx.Client(base_url=server.url) as client:
        declared = client.post("/query", content=b"x" * 20_000, headers={"content-type": "application/json"})
        assert declared.status_code == 413 and "server.max_body_mb" in declared.json()["detail"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"text": "'
            for _ in range(40):
                yield b"y" * 1024
            yield b'"}'

        streamed = client.post("/query", content=chunks(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413
        assert client.get("/health").status_code == 200


def _raw(port: int, requests: list[bytes]) -> list[bytes]:
    """Send ``requests`` on one keep-alive connection; the status line of each answer."""
    lines = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        reader = sock.makefile("rb")
        for request in requests:
            sock.sendall(request)
            status = reader.readline()
            length = 0
            while (header := reader.readline()) not in (b"\r\n", b""):
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            reader.read(length)
            lines.append(status)
    return lines


def test_a_bug_keeps_the_connection(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    app = create_app(engine, warm=False)

    def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/broken", broken)
    with ThreadedServer(app) as server:
        port = int(server.url.rsplit(":", 1)[1])
        get = b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        statuses = _raw(port, [get % b"/broken", get % b"/health", get % b"/broken", get % b"/health"])
    assert [s.split()[1] for s in statuses] == [b"500", b"200", b"500", b"200"]


def test_health_is_cheap(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    (tmp_path / "n.md").write_text(_note("cheap", 1), encoding="utf-8")
    engine.ingest(tmp_path / "n.md", lens="notes")

    def no_chunks(*_: object, **__: object) -> None:
        raise AssertionError("/health read the chunks")

    engine.store.chunks = no_chunks  # type: ignore[method-assign]
    with ThreadedServer(create_app(engine, warm=False)) as server:
        assert httpx.get(f"{server.url}/health").json()["documents"] == 1


def test_binding_beyond_loopback_needs_keys_or_insecure(tmp_path: Path) -> None:
    assert exposure("127.0.0.1", False, False, what="ragloom serve") == []
    assert exposure("::1", False, False, what="ragloom serve") == []
    with pytest.raises(ConfigError, match="ragloom keys create.*--insecure"):
        exposure("0.0.0.0", False, False, what="ragloom serve")
    assert "WARNING" in exposure("0.0.0.0", False, True, what="ragloom serve")[0]
    assert "API key" in exposure("192.168.1.5", True, False, what="ragloom serve")[0]

    from typer.testing import CliRunner

    from ragloom.cli import app

    env = {"RAGLOOM_EMBEDDING__MODEL": "hashing", **{k: v for k, v in os.environ.items() if k == "PATH"}}
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "0", "--workspace",
                                      str(tmp_path / "ws")], env=env)
    assert result.exit_code == 2 and "--insecure" in result.output


def test_keys_commands(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragloom.cli import app

    ws = str(tmp_path / "ws")
    made = CliRunner().invoke(app, ["keys", "create", "--tenant", "acme", "--role", "write", "--name", "ci",
                                    "--json", "--workspace", ws])
    assert made.exit_code == 0, made.output
    import json

    key = json.loads(made.output)["key"]
    assert Keys(tmp_path / "ws").verify(key).role == "write"  # type: ignore[union-attr]
    listed = CliRunner().invoke(app, ["keys", "list", "--workspace", ws])
    assert "ci" in listed.output and "acme" in listed.output and key not in listed.output
    assert CliRunner().invoke(app, ["keys", "revoke", "ci", "--workspace", ws]).exit_code == 0
    assert Keys(tmp_path / "ws").verify(key) is None
    bad = CliRunner().invoke(app, ["keys", "create", "--role", "root", "--workspace", ws])
    assert bad.exit_code != 0 and "--role 'root'" in bad.output
