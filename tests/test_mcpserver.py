"""``ragloom mcp``: the Model Context Protocol server, driven by the SDK's own client over stdio
(the command started as a desktop client starts it) and over streamable HTTP (the command
started on a free port), on a workspace with the sample materials and two more tenants."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from ragloom.access import Keys
from ragloom.demo import install_samples
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import MissingExtraError
from ragloom.types import SECTION_SEPARATOR
from tests.conftest import MATERIALS, fast_settings, sample_settings

pytest.importorskip("mcp", reason="ragloom mcp needs the mcp extra: pip install 'ragloom[mcp]'")

import httpx2  # noqa: E402 - the SDK's HTTP client, installed with it
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

FAST = {"RAGLOOM_EMBEDDING__MODEL": "hashing", "RAGLOOM_EMBEDDING__CACHE": "false"}
QUESTION = "When will the QuickBooks catalog integration ship?"
#: Every built-in mode, with one of its own options where it has some.
MODES: dict[str, dict[str, Any]] = {
    "vector": {}, "bm25": {}, "hybrid": {"fusion_weights": {"vector": 1.0, "bm25": 0.5}},
    "balanced": {"chunks_per_lens": 2}, "graph": {}, "window": {"window": 2}, "dynamic": {"threshold": 0.6},
}
TOOLS = {"search", "ask", "report", "decisions", "timeline", "contradictions", "stats"}
#: Each tenant's own text: what the other tenant must never see.
TENANTS = {
    "acme": ("Bluefin", "# Acme launch notes\n\nThe Acme launch codename is Bluefin. Bluefin ships on 2025-09-01 "
                        "after the pricing review.\n\nThe Bluefin beta is closed to partners.\n"),
    "globex": ("Marlin", "# Globex launch notes\n\nThe Globex launch codename is Marlin. Marlin ships on 2025-10-15 "
                         "after the security audit.\n\nThe Marlin beta is open to everyone.\n"),
}
#: The [server] limits of the test workspace (lower than the defaults, to see they are read).
LIMITS = {"max_k": 50, "max_text_chars": 2000, "max_queries": 3, "max_budget": 6000}
STARTUP = 120.0


@dataclass
class Space:
    path: Path
    local: Engine
    keys: dict[str, str]  # "acme-read" -> the key


def _env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")} | FAST | extra


def _ragloom() -> list[str]:
    script = Path(sys.executable).with_name("ragloom")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "ragloom.cli"]


@pytest.fixture(scope="module")
def space(tmp_path_factory: pytest.TempPathFactory) -> Space:
    """The sample materials (tenant default), one document each for tenants acme and globex,
    [server] limits in the workspace's settings, and API keys for acme and globex."""
    root = tmp_path_factory.mktemp("mcp")
    ws = root / "ws"
    install_samples(MATERIALS, ws)
    with (ws / "ragloom.toml").open("a", encoding="utf-8") as settings:
        settings.write("\n[server]\n" + "".join(f"{k} = {v}\n" for k, v in LIMITS.items()))
    local = Engine(ws, settings=sample_settings(), embedder=HashingEmbedder())
    for lens in sorted(p.name for p in MATERIALS.iterdir() if p.is_dir()):
        assert local.ingest(MATERIALS / lens, lens=lens).ok
    for tenant, (_, text) in TENANTS.items():
        folder = root / tenant
        folder.mkdir()
        (folder / f"{tenant}-launch.md").write_text(text, encoding="utf-8")
        assert local.ingest(folder, lens="notes", tenant=tenant).ok
    keys = Keys(ws)
    made = {f"{t}-{r}": keys.create(tenant=t, role=r)[1] for t in TENANTS for r in ("read", "write")}
    return Space(ws, local, made)


def run(body: Callable[[], Awaitable[None]]) -> None:
    anyio.run(body)


def stdio(space: Space, *args: str, **env: str) -> Client:
    """A client of ``ragloom mcp`` over stdio on ``space``, started as a desktop client starts it."""
    params = StdioServerParameters(command=_ragloom()[0], args=[*_ragloom()[1:], "mcp", "--workspace",
                                                                 str(space.path), *args], env=_env(**env))
    return Client(params, read_timeout_seconds=STARTUP)


def tool(result: Any) -> dict[str, Any]:  # noqa: ANN401 - a CallToolResult
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == data  # the same, as text, for clients without structure
    return data


def refusal(result: Any) -> str:  # noqa: ANN401 - a CallToolResult
    assert result.is_error, result.structured_content
    text: str = result.content[0].text
    return text


async def resource(client: Client, uri: str) -> Any:  # noqa: ANN401 - JSON
    read = await client.read_resource(uri)
    assert read.contents[0].mime_type == "application/json"
    return json.loads(read.contents[0].text)


# -- stdio ----------------------------------------------------------------------------------------


def test_stdio_tools_search_ask_and_resources(space: Space) -> None:
    async def body() -> None:
        async with stdio(space) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == TOOLS
            for t in listed.values():
                assert t.description and t.input_schema["type"] == "object" and t.output_schema
            search = listed["search"].input_schema
            assert search["required"] == ["text"]
            assert {"mode", "k", "lenses", "tenant", "as_of", "dated_from", "dated_to", "budget", "organize",
                    "options"} <= set(search["properties"])
            assert "balanced" in search["properties"]["mode"]["description"]
            assert listed["stats"].annotations.read_only_hint and not listed["report"].annotations.read_only_hint

            for mode, options in MODES.items():
                data = tool(await client.call_tool("search", {"text": QUESTION, "mode": mode, "k": 4,
                                                              "options": options}))
                expected = space.local.query(QUESTION, mode=mode, k=4, **options)
                assert data["mode"] == mode
                assert [r["chunk_id"] for r in data["results"]] == [r.chunk_id for r in expected], mode
                for r in data["results"]:
                    section = f" › {SECTION_SEPARATOR.join(r['section_path'])}" if r["section_path"] else ""
                    assert r["citation"] == f"{r['source_path']}{section} [{r['start']}:{r['end']}]"
                    assert r["uri"] == f"ragloom://chunks/{r['chunk_id']}"
                    text = space.local.store.document_texts("default", [r["document_id"]])[r["document_id"]]
                    assert text[r["start"]:r["end"]] == r["text"]  # offsets are exact
                    read = await resource(client, r["uri"])  # a window's span too
                    assert read["text"] == r["text"] and read["source_path"] == r["source_path"]

            dated = tool(await client.call_tool("search", {"text": "catalog integration", "mode": "hybrid", "k": 5,
                                                           "lenses": ["team-conversational"],
                                                           "dated_from": "2025-03-01", "budget": 800}))
            assert dated["results"] and {r["lens"] for r in dated["results"]} == {"team-conversational"}
            assert all(r["document_date"] >= "2025-03-01" for r in dated["results"])
            budgeted = space.local.query("catalog integration", mode="hybrid", k=5, lenses=["team-conversational"],
                                         dated_from="2025-03-01", budget=800)
            assert budgeted.context is not None and dated["context"]["budget"] == budgeted.context.budget
            assert [c["chunk_id"] for c in dated["context"]["chunks"]] == [c.chunk_id for c in budgeted.context.chunks]
            past = tool(await client.call_tool("search", {"text": QUESTION, "as_of": "2000-01-01T00:00:00Z"}))
            assert past["results"] == [] and past["as_of"].startswith("2000-01-01")

            answer = tool(await client.call_tool("ask", {"question": QUESTION}))
            assert answer["text"] and answer["extractive"] and answer["citations"]["ok"]
            assert answer["citations"]["valid"] and answer["sources"]
            cited = {s["number"]: s for s in answer["sources"]}
            for n in answer["citations"]["valid"]:
                assert f"[{n}]" in answer["text"] and cited[n]["citation"] and cited[n]["uri"]

            documents = await resource(client, "ragloom://documents")
            assert documents["tenant"] == "default"
            assert len(documents["documents"]) == space.local.stats()["documents"]
            doc = next(d for d in documents["documents"] if d["source_path"].endswith("roadmap-2025.md"))
            chunks = await resource(client, doc["uri"])
            assert chunks["lens"] == "team-structured" and len(chunks["chunks"]) == doc["chunks"]
            full = space.local.store.document_texts("default", [doc["document_id"]])[doc["document_id"]]
            for c in chunks["chunks"]:
                one = await resource(client, c["uri"])
                assert one["text"] == c["text"] == full[one["start"]:one["end"]]
                assert (one["source_path"], one["lens"], one["section_path"]) == (doc["source_path"],
                                                                                   "team-structured", c["section_path"])
            short = await resource(client, f"ragloom://chunks/{chunks['chunks'][0]['chunk_id'][:8]}")
            assert short["chunk_id"] == chunks["chunks"][0]["chunk_id"]
            listed_resources = {str(r.uri) for r in (await client.list_resources()).resources}
            assert "ragloom://documents" in listed_resources and doc["uri"] in listed_resources
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert templates == {"ragloom://documents/{document_id}", "ragloom://chunks/{chunk_id}"}
            with pytest.raises(Exception, match="no chunk"):
                await client.read_resource("ragloom://chunks/ffffffffffffffffffff")

            decisions = tool(await client.call_tool("decisions", {"limit": 3}))["decisions"]
            assert 0 < len(decisions) <= 3 and all(d["source_path"] and d["text"] for d in decisions)
            events = tool(await client.call_tool("timeline", {"limit": 5}))["events"]
            assert 0 < len(events) <= 5 and all(e["period"] and e["source_path"] for e in events)
            found = tool(await client.call_tool("contradictions", {"topic": "catalog integration"}))
            assert found["contradictions"]
            stats = tool(await client.call_tool("stats", {}))
            assert stats["documents"] == space.local.stats()["documents"] and stats["tenant"] == "default"
            # Without a key, a stdio server serves any tenant the call names.
            assert tool(await client.call_tool("stats", {"tenant": "acme"}))["documents"] == 1

    run(body)


def test_stdio_limits_name_the_parameter(space: Space) -> None:
    async def body() -> None:
        async with stdio(space) as client:
            async def refused(name: str, arguments: dict[str, Any]) -> str:
                return refusal(await client.call_tool(name, arguments))

            assert "k (51) is more than server.max_k (50)" in await refused("search", {"text": "x", "k": 51})
            assert "limit (51) is more than server.max_k (50)" in await refused("decisions", {"limit": 51})
            assert "text (2001 characters) is longer than server.max_text_chars (2000)" in await refused(
                "search", {"text": "x" * 2001})
            assert "question (2001 characters)" in await refused("ask", {"question": "y" * 2001})
            assert "budget (6001) is more than server.max_budget (6000)" in await refused(
                "search", {"text": "x", "budget": 6001})
            assert "queries (4) are more than server.max_queries (3)" in await refused(
                "report", {"queries": ["a", "b", "c", "d"]})
            assert "options.chunks_per_lens (51)" in await refused(
                "search", {"text": "x", "mode": "balanced", "options": {"chunks_per_lens": 51}})
            assert "option 'k' is a parameter of the request itself" in await refused("search", {"text": "x", "options": {"k": 3}})
            assert "k" in await refused("search", {"text": "x", "k": 0})  # the schema's own bound
            unknown = await refused("search", {"text": "x", "mode": "psychic"})
            assert "psychic" in unknown and "hybrid" in unknown  # the valid names, from the registry
            assert "lens" in await refused("search", {"text": "x", "lenses": ["no-such-lens"]})

    run(body)


def test_stdio_with_a_key_sees_its_tenant_only(space: Space) -> None:
    async def body(client: Client, tenant: str) -> None:
        own, _ = TENANTS[tenant]
        other = next(word for t, (word, _) in TENANTS.items() if t != tenant)
        for mode in ("bm25", "hybrid", "vector"):
            data = tool(await client.call_tool("search", {"text": f"launch codename {own} {other}", "mode": mode}))
            assert data["tenant"] == tenant and data["results"]
            assert all(other not in r["text"] for r in data["results"]) and own in data["results"][0]["text"]
        answer = tool(await client.call_tool("ask", {"question": f"What is the launch codename? {other}"}))
        assert answer["sources"] and other not in json.dumps([answer["text"], answer["sources"]])  # asked, never seen
        assert "reads tenant" in refusal(await client.call_tool("search", {"text": "codename",
                                                                          "tenant": other_t(tenant)}))
        assert "'write' role" in refusal(await client.call_tool("report", {}))
        documents = await resource(client, "ragloom://documents")
        assert [d["source_path"].rsplit("/", 1)[-1] for d in documents["documents"]] == [f"{tenant}-launch.md"]

    async def both() -> None:
        async with stdio(space, "--key", space.keys["acme-read"]) as client:  # the flag
            await body(client, "acme")
        async with stdio(space, RAGLOOM_API_KEY=space.keys["globex-read"]) as client:  # the variable
            await body(client, "globex")
        async with stdio(space, "--tenant", "acme") as client:  # no key: one tenant, every role
            assert tool(await client.call_tool("stats", {}))["tenant"] == "acme"
            assert "this server (--tenant) reads tenant 'acme' only" in refusal(
                await client.call_tool("stats", {"tenant": "globex"}))

    run(both)


def other_t(tenant: str) -> str:
    return next(t for t in TENANTS if t != tenant)


def test_stdio_refuses_a_key_it_does_not_know(space: Space) -> None:
    from typer.testing import CliRunner

    from ragloom.cli import app

    bad = "rlk_000000000000_" + "A" * 43
    result = CliRunner().invoke(app, ["mcp", "--key", bad, "--workspace", str(space.path)], env=FAST)
    assert result.exit_code == 2 and "is not an API key of the workspace" in result.output
    result = CliRunner().invoke(app, ["mcp", "--key", space.keys["acme-read"], "--tenant", "globex", "--workspace",
                                      str(space.path)], env=FAST)
    assert result.exit_code == 2 and "--tenant 'globex' and --key disagree" in result.output
    result = CliRunner().invoke(app, ["mcp", "--transport", "sse", "--workspace", str(space.path)], env=FAST)
    assert result.exit_code == 2 and "use one of stdio, http" in result.output


# -- streamable HTTP ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http(space: Space) -> Iterator[str]:
    """``ragloom mcp --transport http`` on a free port of 127.0.0.1; its endpoint's URL."""
    port = _free_port()
    process = subprocess.Popen([*_ragloom(), "mcp", "--transport", "http", "--port", str(port), "--workspace",
                                str(space.path)], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + STARTUP
        while True:  # up once it answers (a 401: no key)
            assert process.poll() is None, process.communicate()[0]
            assert time.monotonic() < deadline, "ragloom mcp --transport http did not start"
            try:
                httpx.post(url, json={}, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: a graceful stop
        try:
            output = process.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            process.kill()
            output = process.communicate()[0]
    assert process.returncode == 0, output
    assert f"ragloom mcp: http://127.0.0.1:{port}/mcp" in output and "API keys required" in output


def over_http(url: str, key: str | None, *, mode: str = "auto") -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=120))
    return Client(transport, mode=mode)


def test_http_refuses_a_missing_or_invalid_key(space: Space, http: str) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "0"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Bearer rlk_000000000000_" + "A" * 43},
                    {"Authorization": space.keys["acme-read"]},  # no scheme
                    {"Authorization": "Basic " + space.keys["acme-read"]}):
        response = httpx.post(http, json=initialize, headers=accept | headers, timeout=30)
        assert response.status_code == 401, response.text
        assert response.json()["error"] == "Unauthorized" and response.headers["www-authenticate"].startswith("Bearer")
    valid = accept | {"Authorization": f"Bearer {space.keys['acme-read']}"}
    assert httpx.post(http, json=initialize, headers=valid, timeout=30).status_code == 200
    # Another site's name for this machine (DNS rebinding) is refused, key or not.
    assert httpx.post(http, json=initialize, headers=valid | {"Host": "evil.example"}, timeout=30).status_code == 421

    async def body() -> None:
        with pytest.raises(Exception):  # noqa: B017 - the SDK reports the 401 as its own error
            async with over_http(http, None) as client:
                await client.list_tools()
        with pytest.raises(Exception):  # noqa: B017
            async with over_http(http, "rlk_000000000000_" + "A" * 43) as client:
                await client.list_tools()

    run(body)


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # legacy: the initialize handshake desktop clients use
def test_http_a_key_sees_its_tenant_only(space: Space, http: str, mode: str) -> None:
    async def body() -> None:
        seen: dict[str, set[str]] = {}
        for tenant, (own, _) in TENANTS.items():
            other = TENANTS[other_t(tenant)][0]
            async with over_http(http, space.keys[f"{tenant}-read"], mode=mode) as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                for search_mode in ("bm25", "hybrid", "balanced"):
                    data = tool(await client.call_tool("search", {"text": f"launch codename {own} {other}",
                                                                  "mode": search_mode}))
                    assert data["tenant"] == tenant and data["results"], search_mode
                    assert all(other not in r["text"] for r in data["results"])
                answer = tool(await client.call_tool("ask", {"question": f"Which codename ships? {other}"}))
                assert own in answer["text"] and other not in json.dumps([answer["text"], answer["sources"]])
                assert tool(await client.call_tool("stats", {}))["documents"] == 1
                assert "reads tenant" in refusal(await client.call_tool("stats", {"tenant": other_t(tenant)}))
                assert "reads tenant" in refusal(await client.call_tool("search", {"text": "x", "tenant": "default"}))
                documents = (await resource(client, "ragloom://documents"))["documents"]
                assert [d["source_path"].rsplit("/", 1)[-1] for d in documents] == [f"{tenant}-launch.md"]
                listed = {str(r.uri) for r in (await client.list_resources()).resources}
                assert listed == {"ragloom://documents", documents[0]["uri"]}
                chunks = (await resource(client, documents[0]["uri"]))["chunks"]
                seen[tenant] = {c["uri"] for c in chunks}
                assert own in (await resource(client, chunks[0]["uri"]))["text"]
        # A chunk of the other tenant, by its exact uri, is not there for this key.
        async with over_http(http, space.keys["acme-read"], mode=mode) as client:
            for uri in seen["globex"]:
                with pytest.raises(Exception, match="no chunk"):
                    await client.read_resource(uri)

    run(body)


def test_http_roles_gate_the_report(space: Space, http: str) -> None:
    async def body() -> None:
        async with over_http(http, space.keys["acme-read"]) as client:
            message = refusal(await client.call_tool("report", {"queries": ["launch"]}))
            assert "report needs a key with the 'write' role" in message and "'read' role" in message
        async with over_http(http, space.keys["acme-write"], mode="legacy") as client:
            written = tool(await client.call_tool("report", {"queries": ["launch codename"], "title": "Acme",
                                                             "markdown": True}))
            assert written["title"] == "Acme" and written["citations"]["ok"] and "Bluefin" in written["markdown"]
            assert "Marlin" not in json.dumps(written)
            saved = [Path(p) for p in written["saved"]]
            assert saved and all(p.is_file() and p.parent == space.path / "reports" for p in saved)
            assert "k (51) is more than server.max_k (50)" in refusal(
                await client.call_tool("search", {"text": "x", "k": 51}))

    run(body)


def test_http_without_keys_listens_only_on_this_machine(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragloom.cli import app

    ws = tmp_path / "ws"
    Engine(ws, settings=fast_settings(), embedder=HashingEmbedder()).ingest(MATERIALS / "engineering",
                                                                             lens="engineering")
    result = CliRunner().invoke(app, ["mcp", "--transport", "http", "--host", "0.0.0.0", "--port", "0",
                                      "--workspace", str(ws)], env=FAST)
    assert result.exit_code == 2 and "no API keys" in result.output and "--insecure" in result.output
    result = CliRunner().invoke(app, ["mcp", "--transport", "http", "--port", "70000", "--workspace", str(ws)],
                                env=FAST)
    assert result.exit_code == 2 and "--port (70000)" in result.output


# -- without the extra ----------------------------------------------------------------------------


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from ragloom.mcpserver import create_server

    monkeypatch.setitem(sys.modules, "mcp", None)  # as if not installed: find_spec gives None
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    with pytest.raises(MissingExtraError, match=r"pip install 'ragloom\[mcp\]'"):
        create_server(engine)


def test_the_core_imports_without_the_sdk() -> None:
    code = ("import sys; import ragloom, ragloom.cli, ragloom.mcpserver; "
            "assert not {'mcp', 'uvicorn', 'starlette'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
