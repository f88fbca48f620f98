"""``ragloom demo``: the sample materials ingested under their lenses, searched and reported on."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ragloom.cli.common import (
    ConfigOpt,
    WorkspaceOpt,
    console,
    open_engine,
    print_warnings,
    reported_errors,
    shown_path,
)
from ragloom.cli.progress import ingest_progress
from ragloom.cli.query import print_results
from ragloom.cli.report import write_report

DEMO_QUERIES = (
    "When will the QuickBooks catalog integration ship?",
    "How many engineers does the team have, and how much capacity is planned per quarter?",
    "What are customers asking for about offline mode in the mobile app?",
)


def demo(
    materials: Annotated[Path | None, typer.Option(help="Folder with one sub-folder per lens.")] = None,
    k: Annotated[int, typer.Option("-k")] = 3,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Ingest the bundled sample materials under their lenses and answer three questions."""
    from ragloom.demo import find_materials, install_samples
    from ragloom.workspace import Workspace

    with reported_errors():
        folder = find_materials(materials)
        space = Workspace(workspace)
        if not space.remote:
            install_samples(folder, space.path)  # before the engine: it reads the settings
        engine = open_engine(workspace, config, create=True)
        print_warnings(engine.warnings)
        lenses = sorted(p for p in folder.iterdir() if p.is_dir())
        console.print(f"[bold]ragloom demo[/]: {len(lenses)} lenses from {escape(shown_path(str(folder)))} "
                      f"into {escape(str(engine.workspace.path))}")
        failed = 0
        with ingest_progress() as progress:
            for lens_dir in lenses:
                report = engine.ingest(lens_dir, lens=lens_dir.name, progress=progress)
                failed += len(report.failed)
                console.print(f"  [magenta]{lens_dir.name:<20}[/] {report.files} files, {report.added} added, "
                              f"{report.updated} updated, {report.unchanged} unchanged")
        for question in DEMO_QUERIES:
            console.print()
            print_results(engine.query(question, k=k).to_dict())
        console.print()
        console.print("[bold]The synthesis report[/] (ragloom generate):")
        write_report(engine, engine.writing.writer(), show=True, stream=False)
    if failed:
        raise typer.Exit(1)
