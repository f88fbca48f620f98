"""What the commands share: the two consoles, the options most of them take, opening the
engine, a ragloom error as one red line, JSON and warnings printed, ``--option NAME=VALUE``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from ragloom.errors import ConfigError, NoWorkspaceError, RagloomError

if TYPE_CHECKING:
    from ragloom.engine import Engine


console = Console()
err = Console(stderr=True)

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", envvar="RAGLOOM_WORKSPACE", show_envvar=True,
                 help="Workspace folder (default: ./ragloom-data)."),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", envvar="RAGLOOM_CONFIG", help="Extra TOML settings file (over <workspace>/ragloom.toml)."),
]
TenantOpt = Annotated[str | None, typer.Option("--tenant", "-t", help="Tenant (default: the tenant setting).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
LensesOpt = Annotated[list[str] | None, typer.Option("--lens", "-l", help="Only these lenses (repeatable).")]
ModeOptionOpt = Annotated[list[str] | None, typer.Option("--option", "-o", help="The mode's own option, NAME=VALUE "
                                                         "(repeatable): threshold=0.6 for dynamic, chunks_per_lens=4 "
                                                         "for balanced; an unknown name lists the mode's options.")]
ModeOpt = Annotated[str | None, typer.Option("--mode", "-m", help="vector, bm25, hybrid, balanced, graph, window or "
                                             "dynamic (or an installed mode).")]
AsOfOpt = Annotated[str | None, typer.Option("--as-of", help="The workspace as it was at this moment of its own "
                                             "history (ISO 8601): what had been ingested by then.")]
DatedFromOpt = Annotated[str | None, typer.Option("--dated-from", help="Only documents dated on or after this day "
                                                  "(their own date: front matter or file name), like 2025-01-01.")]
DatedToOpt = Annotated[str | None, typer.Option("--dated-to", help="Only documents dated on or before this day.")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="The model to write with (over llm.model).")]
OpusOpt = Annotated[bool, typer.Option("--opus", help="Write with the strongest configured model (llm.strongest_model).")]
StreamOpt = Annotated[bool, typer.Option("--stream", help="Print the text as it is written.")]


def open_engine(workspace: Path | None, config: Path | None = None, *, create: bool = False) -> Engine:
    """The engine on the workspace. Only the commands that write documents (ingest, demo, init,
    the web app and the HTTP API) may bring a workspace folder into being; the others say
    that there is none rather than make an empty one."""
    from ragloom.engine import Engine  # not at the top: --help should not load the engine
    from ragloom.workspace import Workspace

    space = Workspace(workspace)  # a folder, or s3://bucket/prefix (a Path folds its // into /)
    if not create and not space.exists():
        raise NoWorkspaceError(f"there is no workspace at {space}: ingest documents into it first "
                               f"('ragloom ingest PATH --lens NAME --workspace {space}', which makes it), "
                               "or name another with --workspace or RAGLOOM_WORKSPACE")
    return Engine(space, config_file=config)


@contextmanager
def reported_errors() -> Iterator[None]:
    """Turn ragloom errors into one red line and exit status 2."""
    try:
        yield
    except RagloomError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)  # one line, even when piped
        raise typer.Exit(2) from None


def print_json(data: Any) -> None:  # noqa: ANN401 - anything json can write
    """``--json`` output: indented, UTF-8 as is, dates and paths as strings, no colour."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


_printed: set[str] = set()


def print_warnings(warnings: list[str]) -> None:
    """Each warning once per process, however many operations report it."""
    for warning in warnings:
        if warning not in _printed:
            _printed.add(warning)
            err.print(f"[yellow]warning:[/] {escape(warning)}")


def shown_path(path: str) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


class FileArguments(typer.core.TyperCommand):
    """A command whose arguments are file names. As Unix tools read them, an argument before
    ``--`` that starts with ``-`` is an option, and every one after ``--`` is a name. Without
    ``--``, an option that is also the name of a file here (a file called ``--yes``, which
    ``ragloom delete *`` passes along with the others) is refused: the user may not have typed it."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # noqa: ANN401 - typer's own click Context
        for arg in [] if "--" in args else args:  # with "--", the user has said which are options
            if arg.startswith("-") and arg != "-" and (Path(arg).exists() or Path(arg).is_symlink()):
                ctx.fail(f"{arg!r} is an option, and also a file in this folder (did a * put it there?); nothing "
                         f"was done. Put file names after '--', where every argument is a file name: "
                         f"'{ctx.command_path} [OPTIONS] -- FILE...'")
        result: list[str] = super().parse_args(ctx, args)
        return result


def streamer(enabled: bool) -> Any:  # noqa: ANN401 - a text callback or None
    if not enabled:
        return None

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    return write


def mode_options(items: Sequence[str] | None, example: str) -> dict[str, Any]:
    """``--option NAME=VALUE`` pairs, each value as TOML reads it (``threshold=0.6`` a number)."""
    options: dict[str, Any] = {}
    for item in items or ():
        key, _, value = item.partition("=")
        if not key.strip() or not value.strip():
            raise ConfigError(f"--option {item!r}: write name=value, for example {example}")
        options[key.strip()] = setting_value(value.strip())
    return options


def setting_value(text: str) -> Any:  # noqa: ANN401 - a TOML value
    """``--set`` values as TOML reads them (numbers, booleans, lists), else as text."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
