"""What the workspace says across its lenses: ``generate`` (the synthesis report),
``contradictions`` and ``decisions``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ragloom.cli.common import (
    AsOfOpt,
    ConfigOpt,
    JsonOpt,
    LensesOpt,
    ModelOpt,
    OpusOpt,
    StreamOpt,
    TenantOpt,
    WorkspaceOpt,
    console,
    open_engine,
    print_json,
    print_warnings,
    reported_errors,
    shown_path,
    streamer,
)
from ragloom.cli.progress import stage_progress

if TYPE_CHECKING:
    from ragloom.engine import Engine


def generate(
    context: Annotated[str, typer.Option("--context", help="What the report should keep in mind (a focus, a goal).")] = "",
    queries: Annotated[Path | None, typer.Option("--queries", help="A file of queries, one per line "
                                                 "(default: six built in: strategy, roadmap, architecture, customers, "
                                                 "resources, risks).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the report here (.md, and .json beside it).")] = None,
    title: Annotated[str | None, typer.Option("--title")] = None,
    lens: LensesOpt = None,
    as_of: AsOfOpt = None,
    budget: Annotated[int | None, typer.Option("--budget", help="Tokens of context per section.")] = None,
    model: ModelOpt = None,
    opus: OpusOpt = False,
    stream: StreamOpt = False,
    tenant: TenantOpt = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Write the multi-lens synthesis report (a master roadmap) with contradictions called out."""
    from ragloom.writing import read_queries

    with reported_errors():
        engine = open_engine(workspace, config)
        asked = read_queries(queries) if queries is not None else None
        writer = engine.writing.writer(model=model, strongest=opus)
        print_warnings(engine.warnings)
        report = write_report(engine, writer, context=context, queries=asked, out=out, title=title, lenses=lens,
                           as_of=as_of, budget=budget, tenant=tenant, stream=stream and not as_json,
                           show=not as_json)
    if as_json:
        print_json(report.to_dict())
    if not report.citations.ok:
        raise typer.Exit(1)


def write_report(engine: Engine, writer: Any, *, show: bool, stream: bool, **kwargs: Any) -> Any:  # noqa: ANN401
    """Run ``generate`` with a progress bar, then print where the report went and what it holds."""
    with stage_progress(show and not stream) as bar:
        def progress(what: str, done: int, total: int) -> None:
            if bar is None:
                if stream and what.startswith("writing: "):
                    sys.stdout.write(f"\n\n## {what[len('writing: '):]}\n\n")
                return
            label = "Retrieving" if what.startswith("retrieving") else "Writing"
            if done == 0:
                bar.stage(label, total)
            else:
                bar.advance(label)

        report = engine.generate(writer=writer, progress=progress, on_text=streamer(stream), **kwargs)
    if show:
        heard = sorted({lens for s in report.sections for lens in s.lenses_heard})
        console.print(f"[bold]{escape(report.title)}[/]: {len(report.sections)} sections, "
                      f"{len(report.citations.valid)} of {len(report.sources)} sources cited, lenses heard: "
                      f"{escape(', '.join(heard) or 'none')}; {len(report.contradictions)} contradictions, "
                      f"{len(report.open_questions)} open questions "
                      f"[dim]({'extractive' if report.extractive else writer.name}, {report.stats.get('seconds', 0):.1f}s)[/]")
        colour = "green" if report.citations.ok else "red"
        console.print(f"  [{colour}]citations: {escape(report.citations.summary())}[/]")
        for saved in (p for p in report.saved if p.suffix == ".md"):
            console.print(f"  wrote {escape(shown_path(str(saved)))} and its .json")
    return report


def contradictions(
    topic: Annotated[str | None, typer.Option("--topic", help="Only what the chunks about this topic say.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 20,
    lens: LensesOpt = None,
    tenant: TenantOpt = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Statements of different lenses that disagree: dates, numbers, negations."""
    with reported_errors():
        found = open_engine(workspace, config).contradictions(topic=topic, tenant=tenant, limit=limit, lenses=lens)
    if as_json:
        print_json([c.to_dict() for c in found])
        return
    if not found:
        console.print("no contradictions found")
    for c in found:
        console.print(f"[bold yellow]{escape(c.topic)}[/] ({c.kind}, {c.type}): [bold]{escape(c.difference)}[/] "
                      f"[dim]certainty {c.certainty:.2f}, score {c.score:.2f}[/]")
        for st in c.statements:
            console.print(f"   [magenta]{st.lens:<20}[/] {escape(shown_path(st.source_path))} [{st.start}:{st.end}]")
            console.print(f"   {'':<20} “{escape(' '.join(st.text.split()))}”")
        console.print(f"   [dim]{escape(c.note)}[/]")


def decisions(
    since: Annotated[str | None, typer.Option("--since", help="Only decisions dated on or after this day, "
                                              "like 2025-01-01.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="At most this many, newest first.")] = None,
    lens: LensesOpt = None,
    tenant: TenantOpt = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Decisions, votes, approvals and commitments the documents record, newest first, each with
    its date (the document's own), lens and source."""
    with reported_errors():
        found = open_engine(workspace, config).decisions(since=since, tenant=tenant, lenses=lens, limit=limit)
    if as_json:
        print_json([d.to_dict() for d in found])
        return
    if not found:
        console.print("no decisions found" + (f" since {since}" if since else ""))
    for d in found:
        when = d.date.isoformat() if d.date else "undated"
        where = shown_path(d.source_path) + (f" › {d.section}" if d.section else "")
        console.print(f"[bold]{when}[/] [magenta]{escape(d.lens)}[/] [dim]{d.kind} · {escape(where)}[/]")
        console.print(f"   “{escape(d.flat)}”")
