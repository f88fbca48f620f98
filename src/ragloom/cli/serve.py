"""Serving the workspace: ``ui`` (the web app), ``serve`` (the HTTP API), ``mcp`` (the Model
Context Protocol), and the API keys the servers honour (``keys``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from ragloom.cli.common import (
    ConfigOpt,
    JsonOpt,
    WorkspaceOpt,
    console,
    open_engine,
    print_json,
    print_warnings,
    reported_errors,
)


def ui(
    port: Annotated[int, typer.Option("--port", "-p", help="Port to serve on.")] = 8501,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (127.0.0.1: this machine only).")]
    = "127.0.0.1",
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="Allow a --host beyond this machine: the app has no login, so anyone who can reach the "
                           "port can read every document.")] = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Open the web app (Streamlit) on the workspace: dashboard, ingest, ask, graph, report, settings."""
    from ragloom.ui import launch

    with reported_errors():
        code = launch(workspace, config=config, port=port, host=host, insecure=insecure)
    raise typer.Exit(code)


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on (127.0.0.1: this machine only; "
                                      "0.0.0.0: every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="Port to listen on (0: any free port).")] = 8000,
    insecure: Annotated[bool, typer.Option("--insecure", help="Listen beyond this machine without API keys: "
                                           "anyone who reaches the port reads every tenant (docs/security.md).")]
    = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the HTTP API with one warm engine (the model loads once): query, ask, upload, ingest,
    generate, stats, graph, contradictions, history, entities. API docs at /docs; keys: 'ragloom keys'."""
    from ragloom.server import serve as serve_api

    with reported_errors():
        engine = open_engine(workspace, config, create=True)
        print_warnings(engine.warnings)
        serve_api(engine=engine, host=host, port=port, insecure=insecure)


def mcp(
    transport: Annotated[str, typer.Option("--transport", help="stdio (the client starts this command: Claude "
                                           "Desktop, Claude Code) or http (streamable HTTP at /mcp on --host and "
                                           "--port).")] = "stdio",
    host: Annotated[str, typer.Option("--host", help="http: the address to listen on (127.0.0.1: this machine "
                                      "only; any other needs API keys in the workspace, or --insecure).")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="http: the port to listen on (0: any free port).")] = 8765,
    key: Annotated[str | None, typer.Option("--key", envvar="RAGLOOM_API_KEY", show_default=False,
                                            help="stdio: serve as this API key (its tenant only, its role); over "
                                            "http every request brings its own key.")] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", "-t", help="Serve this tenant only (default: the tenant "
                                               "setting, or the tenant a call names).")] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help="http: listen beyond this machine without API keys "
                                           "(every caller reads everything).")] = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the workspace to agents over the Model Context Protocol (the mcp extra): tools search,
    ask, report, decisions, timeline, contradictions, stats; its documents and chunks as resources."""
    import os

    from ragloom.mcpserver import serve as serve_mcp

    # The key is a credential, not a setting: out of the environment before the settings read it
    # (they take every RAGLOOM_* variable for one), and so out of any child process's.
    os.environ.pop("RAGLOOM_API_KEY", None)
    with reported_errors():
        engine = open_engine(workspace, config)
        print_warnings(engine.warnings)
        serve_mcp(engine, transport=transport, host=host, port=port, key=key, tenant=tenant, insecure=insecure)


keys_app = typer.Typer(help="API keys for 'ragloom serve' and 'ragloom mcp': each bound to one tenant and one role "
                       "(read, write, admin). With no key the servers answer on this machine only.",
                       no_args_is_help=True)


def _keys(workspace: Path | None) -> Any:  # noqa: ANN401 - a Keys
    from ragloom.access import Keys
    from ragloom.workspace import Workspace

    return Keys(Workspace(workspace).path)


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", help="The only tenant requests with this key read and write.")]
    = "default",
    role: Annotated[str, typer.Option("--role", help="read (search, ask, stats), write (also upload and reports) "
                                      "or admin (also ingest from server.ingest_roots).")] = "read",
    name: Annotated[str | None, typer.Option("--name", help="A name to know it by (default: tenant-role-id).")]
    = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Create an API key; it is shown once, only its hash is kept (in the workspace's keys.json)."""
    with reported_errors():
        grant, key = _keys(workspace).create(tenant=tenant, role=role, name=name)
    if as_json:
        print_json({**grant.to_dict(), "key": key})
        return
    console.print(f"created {escape(grant.name)} (id {grant.id}): tenant {escape(grant.tenant)}, role {grant.role}")
    console.print("the key (shown this once; send it as 'Authorization: Bearer KEY'):")
    print(key, flush=True)


@keys_app.command("list")
def keys_list(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Every API key of the workspace: id, name, tenant, role, when it was made (never the key)."""
    with reported_errors():
        grants = _keys(workspace).list()
    if as_json:
        print_json([g.to_dict() for g in grants])
        return
    if not grants:
        console.print("no API keys: 'ragloom serve' and 'ragloom mcp' answer on this machine only "
                      "('ragloom keys create' makes one)")
    for g in grants:
        console.print(f"{g.id}  {escape(g.name)}  tenant {escape(g.tenant)}  {g.role}  {g.created}")


@keys_app.command("revoke")
def keys_revoke(key: Annotated[str, typer.Argument(help="The key's id or name (ragloom keys list).")],
                workspace: WorkspaceOpt = None) -> None:
    """Revoke an API key: a running server refuses it from its next request."""
    with reported_errors():
        grant = _keys(workspace).revoke(key)
    console.print(f"revoked {escape(grant.name)} (id {grant.id}, tenant {escape(grant.tenant)}, {grant.role})")
