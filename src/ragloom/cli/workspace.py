"""The workspace itself: ``stats``, ``history``, ``quality``, ``init`` and ``config show``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragloom.cli.common import (
    ConfigOpt,
    JsonOpt,
    TenantOpt,
    WorkspaceOpt,
    console,
    open_engine,
    print_json,
    print_warnings,
    reported_errors,
    shown_path,
)
from ragloom.errors import NoWorkspaceError


def stats(as_json: JsonOpt = False, tenant: TenantOpt = None, workspace: WorkspaceOpt = None,
          config: ConfigOpt = None) -> None:
    """Documents, chunks and tokens per lens, and how the index was built."""
    with reported_errors():
        data = open_engine(workspace, config).stats(tenant=tenant)
    if as_json:
        print_json(data)
        return
    print_warnings(data["warnings"])
    if not data["documents"]:
        console.print(f"the workspace {escape(data['workspace'])} is empty (tenant {escape(data['tenant'])}): "
                      "ingest documents with 'ragloom ingest PATH --lens NAME'")
        return
    console.print(f"[bold]{escape(data['workspace'])}[/] (tenant {escape(data['tenant'])}): {data['documents']} documents, "
                  f"{data['chunks']} chunks, {data['tokens']} tokens; {data['chunk_versions_stored']} chunk "
                  f"versions stored; embedder {data['embedder']}, embedding {data['embedded_text']} text")
    table = Table()
    for column in ("lens", "documents", "chunks", "tokens"):
        table.add_column(column, justify="right" if column != "lens" else "left")
    for lens_name, entry in data["lenses"].items():
        table.add_row(escape(lens_name), str(entry["documents"]), str(entry["chunks"]), str(entry["tokens"]))
    console.print(table)


def history(path: Annotated[Path, typer.Argument(help="A document's file path.")], tenant: TenantOpt = None,
            as_json: JsonOpt = False, workspace: WorkspaceOpt = None, config: ConfigOpt = None) -> None:
    """List a document's versions with their change summaries."""
    with reported_errors():
        rows = open_engine(workspace, config).history(path, tenant=tenant)
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print(f"no versions of {escape(str(path))} in this workspace")
        raise typer.Exit(1)
    table = Table(title=escape(str(path)))
    for column in ("version", "as of", "change", "summary", "chunks"):
        table.add_column(column)
    for row in rows:
        table.add_row(str(row["version_sequence"]), row["as_of"].isoformat(timespec="seconds"), row["change_type"],
                      escape(row["change_summary"] or ""), str(row["chunk_count"]))
    console.print(table)


def quality(
    lens: Annotated[str | None, typer.Option("--lens", "-l", help="Only this lens.")] = None,
    worst: Annotated[int, typer.Option("--worst", help="How many of the worst chunks to list.")] = 10,
    tenant: TenantOpt = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """The distribution of chunk quality scores and the worst chunks with their issues."""
    with reported_errors():
        report = open_engine(workspace, config).quality(tenant=tenant, lens=lens, worst=worst)
    if as_json:
        print_json(report)
        return
    if not report["scored"]:
        console.print("no scored chunks: ingest something first")
        return
    console.print(f"[bold]{report['scored']}[/] chunks: mean {report['mean']:.2f}, median {report['median']:.2f}, "
                  f"10th percentile {report['p10']:.2f}")
    peak = max(report["histogram"].values()) or 1
    for bucket, count in report["histogram"].items():
        console.print(f"  {bucket}  {'█' * round(30 * count / peak):<30} {count}")
    for kind, severities in sorted(report["issues"].items()):
        console.print(f"  [yellow]{kind}[/]: " + ", ".join(f"{n} {sev}" for sev, n in sorted(severities.items())))
    table = Table(title=f"the {len(report['worst'])} lowest-scoring chunks")
    for column in ("score", "lens", "where", "issues"):
        table.add_column(column, overflow="fold")
    for w in report["worst"]:
        where = f"{shown_path(w['source_path'])} › {w['section_path']} [{w['start']}:{w['end']}]"
        issues = "; ".join(f"{i['kind']} ({i['severity']}): {i['description']}" for i in w.get("issues", []))
        table.add_row(f"{w['score']:.2f}", escape(w["lens"]), escape(where), escape(issues))
    console.print(table)


def init(
    path: Annotated[Path | None, typer.Argument(help="The workspace folder (default: --workspace, "
                                                 "RAGLOOM_WORKSPACE or ./ragloom-data).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing ragloom.toml.")] = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Make a workspace with a commented ragloom.toml: every setting at its default, with what it does."""
    from ragloom.configfile import init_workspace
    from ragloom.store.remote import is_remote
    from ragloom.workspace import resolve_workspace

    with reported_errors():
        if is_remote(path or workspace):
            raise NoWorkspaceError(f"ragloom init writes a local folder; a workspace on object storage reads its "
                                   f"settings from {path or workspace}/ragloom.toml: write one with 'ragloom init "
                                   "FOLDER' and upload it there")
        written = init_workspace(resolve_workspace(path or workspace), force=force)
    console.print(f"wrote {escape(str(written))}: uncomment a line to set it; then "
                  f"'ragloom ingest PATH --lens NAME --workspace {escape(str(written.parent))}'")


config_app = typer.Typer(help="The settings: 'ragloom config show' prints them with where each came from.",
                         no_args_is_help=True)


@config_app.command("show")
def config_show(
    changed: Annotated[bool, typer.Option("--changed", help="Only the settings that are not at their default.")]
    = False,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Every effective setting as TOML (save it as a ragloom.toml), each value set by a file or a
    variable followed by where it came from; a setting that is not set is commented out."""
    from ragloom.configfile import effective_settings, settings_toml
    from ragloom.workspace import resolve_workspace

    with reported_errors():
        folder = resolve_workspace(workspace)
        rows = effective_settings(folder, config_file=config)
    if changed:
        rows = [r for r in rows if r.source != "default"]
    if as_json:
        print_json([r.to_dict() for r in rows])
        return
    heading = [f"ragloom settings in effect for the workspace {folder}"
               + (", only those a file or a variable sets" if changed else "") + ".",
               "A value a file or a variable sets says which; a setting not set is commented out.",
               "This is TOML that ragloom reads: save it as ragloom.toml to keep these settings."]
    # Written as is: rich would read [chunking] as markup, and wrap long values.
    sys.stdout.write(settings_toml(rows, heading=heading))
