"""Searching and answering: ``query``, ``ask`` and ``chat``, and how their results print."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ragloom.cli.common import (
    AsOfOpt,
    ConfigOpt,
    DatedFromOpt,
    DatedToOpt,
    JsonOpt,
    LensesOpt,
    ModelOpt,
    ModeOpt,
    ModeOptionOpt,
    OpusOpt,
    StreamOpt,
    TenantOpt,
    WorkspaceOpt,
    console,
    err,
    mode_options,
    open_engine,
    print_json,
    print_warnings,
    reported_errors,
    shown_path,
    streamer,
)
from ragloom.errors import ConfigError, RagloomError
from ragloom.ids import short_id
from ragloom.query.request import Query
from ragloom.types import count_of, join_path

if TYPE_CHECKING:
    from ragloom.attach import Served
    from ragloom.engine import Engine


LocalOpt = Annotated[bool, typer.Option("--local", help="Answer in this process even when a 'ragloom serve' or "
                                         "'ragloom chat' on the workspace is running (it answers otherwise).")]


def query(
    text: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int | None, typer.Option("-k", help="Number of results.")] = None,
    lens: LensesOpt = None,
    mode: ModeOpt = None,
    option: ModeOptionOpt = None,
    as_of: AsOfOpt = None,
    budget: Annotated[int | None, typer.Option("--budget", help="Optimise the context for this many tokens.")] = None,
    organize: Annotated[str | None, typer.Option(
        "--organize", help="relevance, temporal, topical, hierarchical, edges, lens or auto.")] = None,
    show_context: Annotated[bool, typer.Option("--show-context", help="Print the optimised context itself.")] = False,
    dated_from: DatedFromOpt = None,
    dated_to: DatedToOpt = None,
    tenant: TenantOpt = None,
    local: LocalOpt = False,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Search the workspace; with --budget or --organize, build the optimised context window."""
    with reported_errors():
        request = Query.build(text, k=k, mode=mode, lenses=lens, tenant=tenant, as_of=as_of, budget=budget,
                              organize=organize, optimize=show_context, dated_from=dated_from, dated_to=dated_to,
                              options=mode_options(option, "threshold=0.6"))
        served = None if local else _attached("query", request, workspace, config)
        result = served.result if served else open_engine(workspace, config).query(request).to_dict()
    if as_json:
        print_json({**result, "served_by": served.by} if served else result)
        return
    print_warnings(result["warnings"])
    for note in result["notes"]:
        err.print(f"[dim]note:[/] {escape(note)}")
    if result["context"] is None:
        print_results(result, served.by if served else None)
        return
    c = result["context"]
    stats = c["deduplication_stats"]
    # With --show-context, standard output is the context exactly as the model gets it
    # (never wrapped, so that "> prompt.txt" equals context.formatted); the summary goes to
    # standard error.
    out = err if show_context else console
    out.print(f"[bold]{escape(result['query'])}[/]  [dim]({result['mode']}, {len(result['results'])} candidates → "
              f"{len(c['chunks'])} in the context, {c['total_tokens']} of {c['budget']} tokens{_by(served.by if served else None)})[/]")
    out.print(f"  organised by [cyan]{c['strategy']}[/]: {escape(c['strategy_reason'])}")
    out.print(f"  de-duplication: {stats.get('removed_count', 0)} removed, {stats.get('merged_count', 0)} merged; "
              f"{len(c['relationships'])} relationships")
    reasons: dict[str, int] = {}
    for removed in c["removed"]:
        reason = removed["reason"]
        key = reason.split(" ", 2)[0] if reason.startswith(("duplicate", "trimmed")) else reason
        reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        out.print("  left out or cut: " + ", ".join(f"{n} {escape(r)}" for r, n in sorted(reasons.items())))
    for i, chunk in enumerate(c["chunks"], start=1):
        out.print(f"  [bold cyan]Source {i}[/] [dim]\\[{escape(short_id(chunk['chunk_id']))}][/] "
                  f"[magenta]{escape(chunk['lens'])}[/] {escape(shown_path(chunk['source_path']))} › "
                  f"{escape(join_path(tuple(chunk['section_path'])))} [dim]{chunk['start']}–{chunk['end']}[/]")
    if show_context:
        sys.stdout.write(c["formatted"])
        sys.stdout.flush()


def _attached(op: str, request: Query, workspace: Path | None, config: Path | None, *,
              on_text: Any = None, **extra: Any) -> Served | None:  # noqa: ANN401 - a text callback, JSON values
    """The answer of a running ``serve`` or ``chat`` on the workspace, or None to answer here
    (a note says why, when one is running and left it to this process)."""
    from ragloom import attach
    from ragloom.config import Settings
    from ragloom.workspace import Workspace, workspace_location

    def settings() -> Settings:  # only when something listens: loading them costs a tenth of a second
        return Settings.given(None, Workspace(workspace).path, config_file=config)

    reply = attach.call(workspace_location(workspace), settings, op, {"query": request.to_dict(), **extra},
                        on_text=on_text)
    if isinstance(reply, str):
        err.print(f"[dim]note: answered in this process: {escape(reply)}[/]")
        return None
    return reply


def _by(by: Mapping[str, Any] | None) -> str:
    """Who answered, for a summary line: nothing when this process did."""
    return f"; answered by {by.get('process', 'a running ragloom')} (pid {by.get('pid')})" if by else ""


def print_results(result: Mapping[str, Any], by: Mapping[str, Any] | None = None) -> None:
    """A query's results as ``--json`` holds them (``QueryResult.to_dict``), one paragraph each;
    ``by`` names the running process that answered, if one did."""
    console.print(f"[bold]{escape(result['query'])}[/]  [dim]({result['mode']}, "
                  f"{count_of(len(result['results']), 'result')}, {result['seconds'] * 1000:.0f} ms{_by(by)})[/]")
    if not result["results"]:
        console.print("  [dim]no results[/]")
    for rank, r in enumerate(result["results"], start=1):
        section = f" › {escape(join_path(tuple(r['section_path'])))}" if r["section_path"] else ""
        console.print(f"  [bold cyan]{rank}.[/] [green]{r['relevance']:.2f}[/] [dim]\\[{escape(short_id(r['chunk_id']))}][/] "
                      f"[magenta]{escape(r['lens'])}[/] {escape(shown_path(r['source_path']))}{section} "
                      f"[dim]{r['start']}–{r['end']}[/]")
        if via := r.get("via"):
            console.print(f"     [dim]via {escape(via.get('edge', ''))} from "
                          f"{escape(short_id(str(via.get('seed', ''))))} (weight {via.get('weight', 0):.2f})[/]")
        snippet = " ".join(r["text"].split())
        console.print(f"     {escape(snippet[:240])}{'…' if len(snippet) > 240 else ''}")


def _print_sources(sources: list[Mapping[str, Any]], cited: set[int]) -> None:
    """The cited sources, and how many others the writer read."""
    for s in sources:
        if s["number"] in cited:
            console.print(f"  [bold cyan][{s['number']}][/] [magenta]{escape(s['lens'])}[/] "
                          f"{escape(shown_path(s['source_path']))}"
                          f"{' › ' + escape(s['section_path']) if s['section_path'] else ''} "
                          f"[dim][{s['start']}:{s['end']}][/]")
    others = sum(1 for s in sources if s["number"] not in cited)
    if others:
        console.print(f"  [dim]and {others} more in the context, not cited (--json lists them all)[/]")


def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    k: Annotated[int | None, typer.Option("-k", help="Candidates retrieved before the context is optimised.")] = None,
    lens: LensesOpt = None,
    mode: ModeOpt = None,
    option: ModeOptionOpt = None,
    as_of: AsOfOpt = None,
    budget: Annotated[int | None, typer.Option("--budget", help="Tokens of context the writer reads.")] = None,
    model: ModelOpt = None,
    opus: OpusOpt = False,
    stream: StreamOpt = False,
    dated_from: DatedFromOpt = None,
    dated_to: DatedToOpt = None,
    tenant: TenantOpt = None,
    local: LocalOpt = False,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Answer a question from the workspace, citing its sources as \\[n]; every citation is checked."""
    on_text = streamer(stream and not as_json)
    with reported_errors():
        request = Query.build(question, k=k, mode=mode, lenses=lens, tenant=tenant, as_of=as_of, budget=budget,
                              dated_from=dated_from, dated_to=dated_to, options=mode_options(option, "threshold=0.6"))
        served = None if local else _attached("ask", request, workspace, config, on_text=on_text, model=model,
                                              strongest=opus)
        if served:
            result = served.result
        else:
            engine = open_engine(workspace, config)
            result = engine.ask(request, writer=engine.writing.writer(model=model, strongest=opus),
                                on_text=on_text).to_dict()
    if as_json:
        print_json({**result, "served_by": served.by} if served else result)
        return
    _print_answer(result, streamed=stream, by=served.by if served else None)
    if not result["citations"]["ok"]:
        raise typer.Exit(1)


def _print_answer(result: Mapping[str, Any], *, streamed: bool = False, by: Mapping[str, Any] | None = None) -> None:
    """A cited answer as ``--json`` holds it (``AskResult.to_dict``), its sources and the citation
    check (the text itself already printed when streamed)."""
    if streamed:
        sys.stdout.write("\n")
    else:
        console.print(escape(result["text"]), highlight=False)
    print_warnings(result["warnings"])
    console.print()
    console.print(f"[bold]Sources[/] [dim]({result['mode']}; {result['writer']}"
                  f"{' ' + result['model'] if result['model'] else ''}; {result['seconds']:.2f}s{_by(by)})[/]")
    citations = result["citations"]
    _print_sources(result["sources"], set(citations["valid"]))
    colour = "green" if citations["ok"] else "red"
    console.print(f"[{colour}]citations: {escape(citations['summary'])}[/]")
    for sentence in citations["uncited_sentences"]:
        console.print(f"  [red]uncited:[/] {escape(sentence)}")


CHAT_HELP = """\
  QUESTION          search, printed like 'ragloom query'
  /ask QUESTION     a cited answer, like 'ragloom ask'
  /mode MODE        the retrieval mode: {modes}
  /k N              results per question
  /lens L [L ...]   search only these lenses (adds to the list); /lens alone: every lens again
  /option N=V ...   the mode's own options, like threshold=0.6; /option alone: none
  /help             this list and the current settings
  /quit             leave (also Ctrl-D or Ctrl-C)"""


class _ChatState:
    """What the chat's next question uses (a request without its text); /mode, /k, /lens and
    /option change it."""

    def __init__(self, request: Query) -> None:
        self.request = request

    def change(self, engine: Engine, request: Query) -> None:
        """Use ``request`` from now on, once checked: a bad mode, k, lens, option, tenant or time
        raises the query's own error (without searching) and leaves the state as it was."""
        engine.queries.request(request)
        self.request = request

    def describe(self, engine: Engine) -> str:
        retrieval, request = engine.settings.retrieval, self.request
        lenses = ", ".join([request.lenses] if isinstance(request.lenses, str) else request.lenses or []) \
            or "every lens"
        options = "".join(f", {name}={value}" for name, value in request.options.items())
        return f"mode {request.mode or retrieval.mode}{options}, k {request.k or retrieval.k}, {lenses}"


def _chat_command(engine: Engine, state: _ChatState, line: str, *, writers: dict[str, Any]) -> bool:
    """Answer one line of the chat; False to leave. Raises ragloom errors for the loop to print."""
    from ragloom.retrieve import mode_names

    if not line.startswith("/"):
        result = engine.query(replace(state.request, text=line))
        for note in result.notes:
            err.print(f"[dim]note:[/] {escape(note)}")
        print_results(result.to_dict())
        return True
    command, _, arg = line[1:].partition(" ")
    arg = arg.strip()
    command = command.lower()
    if command in ("quit", "exit", "q"):
        return False
    if command in ("help", "h", "?"):
        console.print(escape(CHAT_HELP.format(modes=", ".join(mode_names()))), highlight=False)
        console.print(f"now: {escape(state.describe(engine))}")
    elif command in ("mode", "k", "lens", "option"):
        now = state.request
        if command == "mode" and arg:
            changed = replace(now, mode=arg, options={})  # the options were the old mode's
        elif command == "k" and arg:
            if not arg.isdigit():
                raise ConfigError(f"/k {arg[:40]!r}: give a whole number of results, like /k 5")
            changed = replace(now, k=int(arg))
        elif command == "lens":
            changed = replace(now, lenses=[*(now.lenses or []), *arg.split()] if arg else None)
        elif command == "option":
            changed = Query.build(now, options=mode_options(arg.split(), "threshold=0.6")) if arg \
                else replace(now, options={})
        else:
            raise ConfigError(f"/{command} needs a value; /help lists the commands")
        state.change(engine, changed)
        console.print(f"[dim]now: {escape(state.describe(engine))}[/]")
    elif command == "ask":
        if not arg:
            raise ConfigError("/ask needs a question, like /ask When does the catalog integration ship?")
        if "writer" not in writers:
            writers["writer"] = engine.writing.writer()
        writer = writers["writer"]
        # k is the chat's results per question; an answer retrieves its own candidates to choose from.
        _print_answer(engine.ask(replace(state.request, text=arg, k=None), writer=writer).to_dict())
    else:
        raise ConfigError(f"unknown command /{command[:40]}; /help lists the commands")
    return True


def chat(
    k: Annotated[int | None, typer.Option("-k", help="Results per question.")] = None,
    lens: LensesOpt = None,
    mode: ModeOpt = None,
    option: ModeOptionOpt = None,
    as_of: AsOfOpt = None,
    tenant: TenantOpt = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Ask question after question with one warm engine (the model loads once); /help lists the commands.
    While it runs, 'ragloom query' and 'ragloom ask' on the workspace are answered by it."""
    from ragloom.attach import Listener

    with reported_errors():
        engine = open_engine(workspace, config)
        print_warnings(engine.warnings)
        state = _ChatState(Query(""))
        state.change(engine, Query.build("", k=k, mode=mode, lenses=lens or None, tenant=tenant, as_of=as_of,
                                         options=mode_options(option, "threshold=0.6")))
        with err.status("loading the embedding model"):
            engine.embedder.embed_query("warm up")
        documents = engine.stats(tenant=tenant)["documents"]
    interactive = sys.stdin.isatty()
    if interactive:
        try:
            import readline  # noqa: F401 - line editing and history for input()
        except ImportError:  # pragma: no cover - Windows
            pass
    console.print(f"[bold]ragloom chat[/] on {escape(str(engine.workspace.path))} ({documents} documents; "
                  f"{escape(state.describe(engine))}). Type a question, /help for commands, Ctrl-D to leave.")
    writers: dict[str, Any] = {}
    with Listener(engine, "ragloom chat") as local:
        if local.listening:
            err.print("[dim]While it runs, 'ragloom query' and 'ragloom ask' on this workspace are answered here.[/]")
        while True:
            try:
                line = input("ragloom> " if interactive else "").strip()
                if line and not _chat_command(engine, state, line, writers=writers):
                    break
            except RagloomError as exc:  # one red line; the chat goes on
                err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
            except (EOFError, KeyboardInterrupt):
                if interactive:
                    console.print()
                break
