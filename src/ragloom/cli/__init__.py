"""The ``ragloom`` command line. It calls the :class:`~ragloom.engine.Engine` facade only.

This module makes the Typer app and registers its commands, in the order ``ragloom --help``
lists them. The commands live by family in the modules beside it: ``ingest`` (documents in
and out), ``query`` (query, ask, chat), ``report``, ``graph``, ``workspace``, ``serve``,
``evaluate`` and ``demo``; what they share is in ``common`` and ``progress``."""

from __future__ import annotations

from typing import Annotated

import typer

from ragloom.cli import demo, evaluate, graph, ingest, query, report, serve, workspace
from ragloom.cli.common import FileArguments, console
from ragloom.errors import WorkspaceMismatchWarning

__all__ = ["app", "main"]

app = typer.Typer(
    name="ragloom",
    help="A local-first context engine for retrieval-augmented generation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# The order of 'ragloom --help' (Typer lists the command groups after the commands).
app.command(cls=FileArguments)(ingest.ingest)
app.command()(ingest.chunk)
app.command()(query.query)
app.command()(query.ask)
app.command()(report.generate)
app.command()(workspace.stats)
app.command()(ingest.clear)
app.command(cls=FileArguments)(ingest.delete)
app.command()(ingest.reindex)
app.command()(workspace.history)
app.command()(workspace.quality)
app.command()(graph.entities)
app.command()(graph.backrefs)
app.command()(report.contradictions)
app.command()(report.decisions)
app.command("eval")(evaluate.eval_)
app.command()(serve.ui)
app.command()(serve.serve)
app.command()(serve.mcp)
app.command()(query.chat)
app.command()(workspace.init)
app.command()(demo.demo)
app.add_typer(graph.graph_app, name="graph")
app.add_typer(workspace.config_app, name="config")
app.add_typer(serve.keys_app, name="keys")


def _version(value: bool) -> None:
    if value:
        from ragloom import __version__

        console.print(f"ragloom {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """A local-first context engine for retrieval-augmented generation."""
    import warnings

    # The engine also raises its warnings as Python warnings for library users; the command
    # line prints each once, as a sentence, without Python's source line.
    warnings.simplefilter("ignore", WorkspaceMismatchWarning)


def main() -> None:
    app()
