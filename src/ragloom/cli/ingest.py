"""Documents into and out of the workspace: ``ingest``, ``chunk``, ``clear``, ``delete``, ``reindex``."""

from __future__ import annotations

import json
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
    err,
    open_engine,
    print_json,
    print_warnings,
    reported_errors,
)
from ragloom.cli.progress import ingest_progress
from ragloom.types import count_of


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (read recursively).")],
    lens: Annotated[str, typer.Option("--lens", "-l", help="The perspective these documents speak from.")],
    tenant: TenantOpt = None,
    sync: Annotated[bool, typer.Option("--sync", help="Mark documents whose files are gone as deleted.")] = False,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    runner: Annotated[str, typer.Option("--runner", help=escape(  # rich reads [distributed] as markup
        "local (this process) or ray (the same stages on a Ray cluster; pip install 'ragloom[distributed]').")
    )] = "local",
    address: Annotated[str | None, typer.Option("--address", help="With --runner ray: the cluster (ray://host:10001 "
                                                "or auto); default: a local Ray on this machine's cores.")] = None,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="With --runner ray: embedding actors, one "
                                                "model each (default: the cores, or the cluster's GPUs).")] = None,
) -> None:
    """Read documents into the workspace under a lens. Exit status 1 if any file failed."""
    with reported_errors():
        engine = open_engine(workspace, config, create=True)
        print_warnings(engine.warnings)
        with ingest_progress(not as_json) as progress:
            report = engine.ingest(paths, lens=lens, tenant=tenant, sync=sync, progress=progress, runner=runner,
                                   address=address, workers=workers)
    if as_json:
        print_json(report.to_dict())
    else:
        console.print(escape(report.summary()), style="red" if report.failed else None, highlight=False)
    if report.failed:
        raise typer.Exit(1)


def chunk(
    file: Annotated[Path, typer.Argument(help="One document.")],
    strategy: Annotated[str | None, typer.Option("--strategy", "-s", help="token, boundary or sentence.")] = None,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="One JSON object per chunk.")] = False,
    lens: Annotated[str, typer.Option("--lens", "-l")] = "default",
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Chunk one file and print the chunks (no store needed)."""
    with reported_errors():
        engine = open_engine(workspace, config, create=True)
        document, chunks = engine.chunk_file(file, strategy=strategy, lens=lens)
    if jsonl:
        for c in chunks:
            sys.stdout.write(json.dumps({
                "chunk_id": c.chunk_id, "chunk_index": c.chunk_index, "start_char": c.start, "end_char": c.end,
                "text": c.text, "contextualized_text": c.contextualized_text, "token_count": c.token_count,
                "section_path": list(c.section_path), "strategy": c.strategy,
            }, ensure_ascii=False) + "\n")
        return
    table = Table(title=f"{document.title} — {len(chunks)} chunks ({chunks[0].strategy if chunks else ''})")
    for column in ("#", "chars", "tokens", "section", "text"):
        table.add_column(column, overflow="fold")
    for c in chunks:
        preview = " ".join(c.text.split())
        table.add_row(str(c.chunk_index), f"{c.start}-{c.end}", str(c.token_count), escape(c.section_path_str),
                      escape(preview[:120] + ("…" if len(preview) > 120 else "")))
    console.print(table)


def clear(
    lens: Annotated[str | None, typer.Option("--lens", "-l", help="Only this lens.")] = None,
    tenant: TenantOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (needed when input is not a terminal).")] = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Delete documents (all, or one lens) with all their versions. Asks first unless --yes."""
    what = f"every document of lens {lens!r}" if lens else "every document"
    if not yes:
        if not sys.stdin.isatty():  # nobody to ask: a script must say --yes
            err.print(f"[bold red]error:[/] 'ragloom clear' deletes {escape(what)} with its history and cannot ask "
                      "(standard input is not a terminal); pass --yes to confirm")
            raise typer.Exit(2)
        if not typer.confirm(f"Delete {what} from the workspace, with all versions?"):
            err.print("nothing deleted")
            raise typer.Exit(1)
    with reported_errors():
        removed = open_engine(workspace, config).clear(lens=lens, tenant=tenant)
    console.print(f"removed {removed} documents")


def delete(
    documents: Annotated[list[str], typer.Argument(help="File paths (as ingested), folders (every document under "
                                                   "them) or document ids.", show_default=False)],
    tenant: TenantOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (needed when input is not a terminal).")] = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Mark documents deleted: they leave every search; their history stays ('ragloom history PATH',
    --as-of). Ingesting the file again restores it. Asks first unless --yes."""
    shown = ", ".join(documents[:3]) + (f" and {len(documents) - 3} more" if len(documents) > 3 else "")
    if not yes:
        if not sys.stdin.isatty():
            err.print(f"[bold red]error:[/] 'ragloom delete' would delete {escape(shown)} and cannot ask "
                      "(standard input is not a terminal); pass --yes to confirm")
            raise typer.Exit(2)
        if not typer.confirm(f"Delete {shown}?"):
            err.print("nothing deleted")
            raise typer.Exit(1)
    with reported_errors():
        deleted = open_engine(workspace, config).delete(documents, tenant=tenant)
    if not deleted:
        err.print(f"[bold red]error:[/] no current document matches {escape(shown)}; nothing deleted "
                  "(give paths as ingested, or ids from 'ragloom query --json')")
        raise typer.Exit(1)
    console.print(f"deleted {count_of(deleted, 'document')} (history kept)")


def reindex(workspace: WorkspaceOpt = None, config: ConfigOpt = None) -> None:
    """Rebuild all chunks with the current settings, from the stored documents and their history."""
    with reported_errors():
        engine = open_engine(workspace, config)
        with ingest_progress(label="Re-indexing") as progress:
            report = engine.reindex(progress=progress)
    console.print(f"reindexed {count_of(report.files, 'document')}: {count_of(report.chunks_embedded, 'chunk')} and "
                  f"{count_of(report.sentences_embedded, 'sentence')} embedded in {report.seconds:.1f}s")
