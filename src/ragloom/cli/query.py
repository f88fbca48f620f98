"""Searching and answering: ``query``, ``ask`` and ``chat``, and how their results print."""

from __future__ import annotations

import sys
from dataclasses import replace
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
from ragloom.types import count_of

if TYPE_CHECKING:
    from ragloom.engine import Engine


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
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Search the workspace; with --budget or --organize, build the optimised context window."""
    with reported_errors():
        engine = open_engine(workspace, config)
        result = engine.query(Query.build(text, k=k, mode=mode, lenses=lens, tenant=tenant, as_of=as_of, budget=budget,
                                          organize=organize, optimize=show_context, dated_from=dated_from,
                                          dated_to=dated_to, options=mode_options(option, "threshold=0.6")))
    if as_json:
        print_json(result.to_dict())
        return
    print_warnings(result.warnings)
    for note in result.notes:
        err.print(f"[dim]note:[/] {escape(note)}")
    if result.context is None:
        print_results(result)
        return
    c = result.context
    stats = c.deduplication_stats
    # With --show-context, standard output is the context exactly as the model gets it
    # (never wrapped, so that "> prompt.txt" equals context.formatted); the summary goes to
    # standard error.
    out = err if show_context else console
    out.print(f"[bold]{escape(result.query)}[/]  [dim]({result.mode}, {len(result)} candidates → "
              f"{len(c.chunks)} in the context, {c.total_tokens} of {c.budget} tokens)[/]")
    out.print(f"  organised by [cyan]{c.strategy}[/]: {escape(c.strategy_reason)}")
    out.print(f"  de-duplication: {stats.get('removed_count', 0)} removed, {stats.get('merged_count', 0)} merged; "
              f"{len(c.relationships)} relationships")
    reasons: dict[str, int] = {}
    for _, reason in c.removed:
        key = reason.split(" ", 2)[0] if reason.startswith(("duplicate", "trimmed")) else reason
        reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        out.print("  left out or cut: " + ", ".join(f"{n} {escape(r)}" for r, n in sorted(reasons.items())))
    for i, chunk in enumerate(c.chunks, start=1):
        out.print(f"  [bold cyan]Source {i}[/] [dim]\\[{escape(short_id(chunk.chunk_id))}][/] "
                  f"[magenta]{escape(chunk.lens)}[/] {escape(shown_path(chunk.source_path))} › "
                  f"{escape(chunk.section_path_str)} [dim]{chunk.start}–{chunk.end}[/]")
    if show_context:
        sys.stdout.write(c.formatted)
        sys.stdout.flush()


def print_results(result: Any) -> None:  # noqa: ANN401 - a QueryResult
    console.print(f"[bold]{escape(result.query)}[/]  [dim]({result.mode}, {count_of(len(result), 'result')}, "
                  f"{result.seconds * 1000:.0f} ms)[/]")
    if not result.results:
        console.print("  [dim]no results[/]")
    for rank, r in enumerate(result, start=1):
        section = f" › {escape(r.section_path_str)}" if r.section_path else ""
        console.print(f"  [bold cyan]{rank}.[/] [green]{r.relevance:.2f}[/] [dim]\\[{escape(short_id(r.chunk_id))}][/] "
                      f"[magenta]{escape(r.lens)}[/] {escape(shown_path(r.source_path))}{section} "
                      f"[dim]{r.start}–{r.end}[/]")
        if r.via:
            console.print(f"     [dim]via {escape(r.via.get('edge', ''))} from "
                          f"{escape(short_id(str(r.via.get('seed', ''))))} (weight {r.via.get('weight', 0):.2f})[/]")
        snippet = " ".join(r.text.split())
        console.print(f"     {escape(snippet[:240])}{'…' if len(snippet) > 240 else ''}")


def _print_sources(sources: Any, cited: set[int]) -> None:  # noqa: ANN401 - Source values
    """The cited sources, and how many others the writer read."""
    for s in sources:
        if s.number in cited:
            console.print(f"  [bold cyan][{s.number}][/] [magenta]{escape(s.lens)}[/] "
                          f"{escape(shown_path(s.source_path))}"
                          f"{' › ' + escape(s.section_path) if s.section_path else ''} [dim][{s.start}:{s.end}][/]")
    others = sum(1 for s in sources if s.number not in cited)
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
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Answer a question from the workspace, citing its sources as \\[n]; every citation is checked."""
    with reported_errors():
        engine = open_engine(workspace, config)
        writer = engine.writing.writer(model=model, strongest=opus)
        request = Query.build(question, k=k, mode=mode, lenses=lens, tenant=tenant, as_of=as_of, budget=budget,
                              dated_from=dated_from, dated_to=dated_to, options=mode_options(option, "threshold=0.6"))
        result = engine.ask(request, writer=writer, on_text=streamer(stream and not as_json))
    if as_json:
        print_json(result.to_dict())
        return
    _print_answer(result, writer, streamed=stream)
    if not result.answer.citations.ok:
        raise typer.Exit(1)


def _print_answer(result: Any, writer: Any, *, streamed: bool = False) -> None:  # noqa: ANN401 - AskResult, Writer
    """A cited answer, its sources and the citation check (the text itself already printed when streamed)."""
    answer = result.answer
    if streamed:
        sys.stdout.write("\n")
    else:
        console.print(escape(answer.text), highlight=False)
    print_warnings(result.query.warnings)
    console.print()
    console.print(f"[bold]Sources[/] [dim]({result.query.mode}; {writer.name}"
                  f"{' ' + writer.model if writer.model else ''}; {result.seconds:.2f}s)[/]")
    _print_sources(answer.sources, set(answer.citations.valid))
    colour = "green" if answer.citations.ok else "red"
    console.print(f"[{colour}]citations: {escape(answer.citations.summary())}[/]")
    for sentence in answer.citations.uncited_sentences:
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
        print_results(result)
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
        _print_answer(engine.ask(replace(state.request, text=arg, k=None), writer=writer), writer)
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
    """Ask question after question with one warm engine (the model loads once); /help lists the commands."""
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
