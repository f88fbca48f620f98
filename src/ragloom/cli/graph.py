"""The entities and the context graph: ``entities``, ``backrefs``, and ``graph build``,
``stats``, ``show`` and ``export``."""

from __future__ import annotations

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
    err,
    open_engine,
    print_json,
    reported_errors,
    shown_path,
)
from ragloom.ids import short_id


def entities(
    type_: Annotated[str | None, typer.Option("--type", help="Only this entity type.")] = None,
    lens: Annotated[str | None, typer.Option("--lens", "-l")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0)] = 30,
    tenant: TenantOpt = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """The entities mentioned in the workspace, most mentioned first."""
    with reported_errors():
        rows = open_engine(workspace, config).entities(tenant=tenant, lens=lens, type=type_)[:limit]
    if as_json:
        print_json(rows)
        return
    table = Table()
    for column in ("entity", "type", "mentions", "documents", "lenses", "aliases seen"):
        table.add_column(column, overflow="fold")
    for e in rows:
        table.add_row(escape(e["name"]), e["type"], str(e["mentions"]), str(e["documents"]), str(len(e["lenses"])),
                      escape(", ".join(e["aliases"][:4])))
    console.print(table)


def backrefs(
    chunk_id: Annotated[str, typer.Argument(help="A chunk id, or its first characters (as 'ragloom query' shows).")],
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="Other chunks per entity.")] = None,
    tenant: TenantOpt = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """For each entity a chunk mentions, the other chunks that mention it."""
    with reported_errors():
        refs = open_engine(workspace, config).back_references(chunk_id, tenant=tenant, limit=limit)
    if as_json:
        print_json([r.to_dict() for r in refs])
        return
    if not refs:
        console.print("this chunk mentions no entity that another chunk mentions")
    for r in refs:
        console.print(f"[bold]{escape(r.entity_name)}[/] ({r.entity_type}) [green]{r.relevance_score:.2f}[/] "
                      f"{r.relationship} in [dim]\\[{short_id(r.chunk_id)}][/] [magenta]{escape(r.lens)}[/] "
                      f"{escape(shown_path(r.source_path))} › {escape(r.section_path)}")
        console.print(f"   {escape(r.context_summary)}")


graph_app = typer.Typer(help="The context graph: build, stats, show, export.", no_args_is_help=True)


@graph_app.command("build")
def graph_build(tenant: TenantOpt = None, workspace: WorkspaceOpt = None, config: ConfigOpt = None) -> None:
    """Rebuild the context graph from the current chunks."""
    with reported_errors():
        engine = open_engine(workspace, config)
        with err.status("building the context graph"):
            edges = engine.build_graph(tenant=tenant)
    console.print(f"{edges} relationships")


@graph_app.command("stats")
def graph_stats(tenant: TenantOpt = None, as_json: JsonOpt = False, workspace: WorkspaceOpt = None,
                config: ConfigOpt = None) -> None:
    """Nodes, edges, edges by type, density, connected components."""
    with reported_errors():
        stats = open_engine(workspace, config).graph(tenant=tenant).stats()
    if as_json:
        print_json(stats)
        return
    console.print(f"[bold]{stats['nodes']}[/] nodes, [bold]{stats['edges']}[/] edges, density {stats['density']:.3f}, "
                  f"{stats['components']} connected components")
    for kind, count in stats["edge_types"].items():
        console.print(f"  {kind:<18} {count}")
    for kind, groups in stats["implicit_groups"].items():
        if groups:
            console.print(f"  {kind:<18} +{stats['implicit_pairs'][kind]} implied pairs in {groups} large groups")


@graph_app.command("show")
def graph_show(chunk_id: Annotated[str, typer.Argument(help="A chunk id, or its first characters (as 'ragloom "
                                                     "query' shows).")],
               limit: Annotated[int, typer.Option("--limit", "-n")] = 15, tenant: TenantOpt = None,
               as_json: JsonOpt = False, workspace: WorkspaceOpt = None, config: ConfigOpt = None) -> None:
    """A chunk's attributes and its relations."""
    with reported_errors():
        node = open_engine(workspace, config).graph(tenant=tenant).show(chunk_id, limit=limit)
    if as_json:
        print_json(node)
        return
    console.print(f"[dim]\\[{node['short_id']}][/] [bold]{escape(node['source_name'])}[/] › "
                  f"{escape(node['section_path'])} [magenta]{node['lens']}[/] "
                  f"(chunk {node['chunk_index'] + 1} of {node['total_chunks']}, {node['token_count']} tokens)")
    console.print(f"  key terms: {escape(', '.join(node['key_terms'])) or '[dim]none[/]'}")
    console.print(f"  time references: {escape(', '.join(node['time_references'])) or '[dim]none[/]'}")
    console.print(f"  {escape(' '.join(node['content_preview'].split()))}")
    for r in node["relations"]:
        extra = r.get("shared_terms") or r.get("shared_periods") or ""
        section = f" › {escape(r['neighbour_section'])}" if r["neighbour_section"] else ""
        console.print(f"  [cyan]{r['type']:<17}[/] {r['weight']:.2f} [dim]\\[{r['neighbour_short_id']}][/] "
                      f"[magenta]{r['neighbour_lens']}[/] {escape(r['neighbour_source'])}{section}"
                      f"{' [dim](' + escape(', '.join(extra)) + ')[/]' if extra else ''}")
    console.print(f"  [dim]{node['relations_total']} stored relations; 'ragloom graph show ID' walks on[/]")


@graph_app.command("export")
def graph_export(
    output: Annotated[Path, typer.Argument(help="Where to write the graph.")],
    format_: Annotated[str, typer.Option("--format", "-f", help="json (node-link) or graphml.")] = "json",
    tenant: TenantOpt = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Export the graph as networkx node-link JSON or GraphML."""
    with reported_errors():
        path = open_engine(workspace, config).graph(tenant=tenant).export(output, format=format_)
    console.print(f"wrote {escape(str(path))}")
