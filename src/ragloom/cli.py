"""The ``ragloom`` command line. It calls the :class:`~ragloom.engine.Engine` facade only."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from ragloom.enrich.llm_context import STAGE as CONTEXT_STAGE
from ragloom.errors import ConfigError, NoWorkspaceError, RagloomError, WorkspaceMismatchWarning
from ragloom.ids import short_id
from ragloom.ingest.report import Progress as EngineProgress
from ragloom.types import count_of

if TYPE_CHECKING:
    from ragloom.engine import Engine

app = typer.Typer(
    name="ragloom",
    help="A local-first context engine for retrieval-augmented generation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
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


def _engine(workspace: Path | None, config: Path | None = None, *, create: bool = False) -> Engine:
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
def _errors() -> Iterator[None]:
    """Turn ragloom errors into one red line and exit status 2."""
    try:
        yield
    except RagloomError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)  # one line, even when piped
        raise typer.Exit(2) from None


def _print_json(data: Any) -> None:  # noqa: ANN401 - anything json can write
    """``--json`` output: indented, UTF-8 as is, dates and paths as strings, no colour."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


_printed: set[str] = set()


def _print_warnings(warnings: list[str]) -> None:
    """Each warning once per process, however many operations report it."""
    for warning in warnings:
        if warning not in _printed:
            _printed.add(warning)
            err.print(f"[yellow]warning:[/] {escape(warning)}")


class _RichProgress(EngineProgress):
    """Draws one bar per stage of a long operation."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, Any] = {}

    def stage(self, name: str, total: int | None) -> None:
        if name in self.tasks:
            self.progress.update(self.tasks[name], total=total, completed=0, visible=True)
        else:
            self.tasks[name] = self.progress.add_task(name, total=total)

    def advance(self, name: str, amount: int = 1) -> None:
        if name in self.tasks:
            self.progress.advance(self.tasks[name], amount)

    def describe(self, name: str, text: str) -> None:
        """Show ``text`` as the description of stage ``name`` (started if need be)."""
        if name not in self.tasks:
            self.stage(name, None)
        self.progress.update(self.tasks[name], description=escape(text))

    def message(self, text: str) -> None:
        self.progress.console.print(f"[red]✗[/] {escape(text)}")

    def note(self, text: str) -> None:
        self.progress.console.print(f"[yellow]![/] {escape(text)}")


@contextmanager
def _progress(enabled: bool = True) -> Iterator[_RichProgress | None]:
    if not enabled:
        yield None
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=False) as bar:
        yield _RichProgress(bar)


#: Terminal columns below which the ingest bar draws its compact form (fits 80 columns).
WIDE_BAR = 120
#: What the ingest bar's other columns take, its label aside, wide and compact: the spinner, the
#: bar (40, or 12 that rich narrows to 6 before it cuts any text), the percentage (wide), the
#: rate (6: "8.3/s", "210/s", "1.2k/s"), the elapsed time (wide), "ETA" and the time left, the
#: spaces between them, and (wide) two to spare.
_WIDE_COLUMNS = 78
_COMPACT_COLUMNS = 29


def _short_count(n: int) -> str:
    """A count in at most six characters: 9,999, 12k, 612k, 1.2M."""
    if n < 10_000:
        return f"{n:,}"
    if n < 1_000_000:
        return f"{n // 1000}k"
    return f"{n / 1_000_000:.1f}M"


class _IngestProgress(_RichProgress):
    """One bar for a whole ingest (or reindex): documents read, and the chunks and sentences
    they need embedded, with the texts embedded per second and the time left.

    The bar counts one unit per document and one per text to embed, so its ETA follows the
    embedding, where the time goes. Documents are embedded in batches as they are read, so
    the texts still to come are estimated from the documents read so far (shown with ≈). The
    time left is the time so far times the share of the units still to do, from the first
    document read (before any text is known, from the documents alone, and the embedding to
    come raises it); rich's own estimate starts again whenever the total changes, which it does
    at every batch, and so showed -:--:-- for most of a run.
    """

    def __init__(self, progress: Progress, label: str, *, compact: bool = False, width: int | None = None) -> None:
        super().__init__(progress)
        # Shown, and its clock started, once work starts (not while the workspace is opened).
        self.task = progress.add_task(label, total=None, counts="", embedded=0, embedding_since=None, visible=False,
                                      start=False)
        self.started = False
        self.embedding_since: float | None = None  # when the first batch started embedding
        self.compact = compact  # counts short enough for an 80-column terminal
        #: Characters the counts may take on one line of a ``width``-column terminal (None: any).
        self.room = None if width is None else width - len(label) - (_COMPACT_COLUMNS if compact else _WIDE_COLUMNS)
        self.documents: int | None = None  # documents to read, once known
        self.read = 0
        self.declared = 0  # texts the batches so far said they would embed
        self.embedded = 0
        self.read_at_batch = 0  # documents read when the last batch started embedding
        self.contexts = [0, 0]  # chunk contexts written by the model and asked for ([prefix] llm_context)

    def stage(self, name: str, total: int | None) -> None:
        if name == "Reading":  # a reindex reads every generation of versions in turn
            self.documents = (self.documents or 0) + (total or 0) if self.read else total
        elif name == "Embedding":
            self.declared += total or 0
            self.read_at_batch = self.read
            if self.embedding_since is None:
                self.embedding_since = self.progress.get_time()
        elif name == CONTEXT_STAGE:
            self.contexts[1] += total or 0
        self._draw()

    def advance(self, name: str, amount: int = 1) -> None:
        if name == "Reading":
            self.read += amount
        elif name == "Embedding":
            self.embedded += amount
        elif name == CONTEXT_STAGE:
            self.contexts[0] += amount
        self._draw()

    def _draw(self) -> None:
        if not self.started:
            self.started = True
            self.progress.start_task(self.task)
        documents = max(self.documents or 0, self.read)
        expected = self.declared
        if self.read_at_batch and documents > self.read_at_batch:
            expected = max(expected, round(self.declared * documents / self.read_at_batch))
        written, asked = self.contexts
        # The longest form that fits: numbers and words in full, short numbers (12k), short words,
        # and last, where a model writes chunk contexts (they take the time), no documents read
        # (the bar still counts them).
        forms = [(True, True, True), (True, True, False)]
        for short, words, read in forms if self.compact else [(False, False, True), (True, False, True), *forms]:
            counts = self._counts(documents, expected, short=short, words=words, read=read)
            if self.room is None or len(counts) <= self.room:
                break
        self.progress.update(self.task, completed=self.read + self.embedded + written,
                             total=documents + expected + asked, counts=counts, visible=True,
                             embedded=self.embedded, embedding_since=self.embedding_since)

    def _counts(self, documents: int, expected: int, *, short: bool, words: bool, read: bool) -> str:
        """The counts, with numbers in ``short`` form (12k), ``words`` for 80 columns, and the
        documents ``read`` (left out only while chunk contexts are written)."""
        n = _short_count if short else "{:,}".format
        written, asked = self.contexts
        parts = [] if asked and not read else [f"{n(self.read)}/{n(documents)} documents" + ("" if words else " read")]
        if expected:
            about = "≈" if expected > self.declared else ""
            parts.append(f"{n(self.embedded)}/{about}{n(expected)} " + ("embedded" if words else "chunks and sentences embedded"))
        if asked:
            parts.append(f"{n(written)}/{n(asked)} " + ("contexts" if words else "chunk contexts written"))
        return ", ".join(parts)


def _clock(seconds: float) -> str:
    """Seconds as h:mm:ss, rounded up (rich's way)."""
    minutes, secs = divmod(math.ceil(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _now(task: Task) -> float:
    """The task's present: when it finished, once it has (its rate and time left then stay put)."""
    if task.finished and task.start_time is not None and task.finished_time is not None:
        return task.start_time + task.finished_time
    return task.get_time()


class _TimeLeftColumn(ProgressColumn):
    """The time so far times the share of the work still to do: drawn at each refresh, so it
    moves while a long batch embeds; -:--:-- until something is done."""

    def render(self, task: Task) -> Text:
        if task.finished:
            return Text("0:00:00", style="progress.remaining")
        if task.start_time is None or not task.completed or task.total is None:
            return Text("-:--:--", style="progress.remaining")
        elapsed = _now(task) - task.start_time
        return Text(_clock(elapsed * max(0.0, task.total - task.completed) / task.completed),
                    style="progress.remaining")


class _RateColumn(ProgressColumn):
    """Chunks and sentences embedded per second since the first batch began (blank before),
    in at most six characters: 8.3/s, 210/s, 1.2k/s, 12k/s."""

    def render(self, task: Task) -> Text:
        since, embedded = task.fields.get("embedding_since"), task.fields.get("embedded", 0)
        seconds = _now(task) - since if since is not None else 0.0
        if not embedded or seconds <= 0:
            return Text("")
        return Text(_per_second(embedded / seconds), style="progress.data.speed")


def _per_second(rate: float) -> str:
    """A rate in at most six characters: 8.3/s, 210/s, 1.2k/s, 12k/s, 3.4M/s."""
    for unit, scale in (("", 1.0), ("k", 1e3), ("M", 1e6)):
        if rate / scale < 9.95:
            return f"{rate / scale:.1f}{unit}/s"
        if rate / scale < 999.5:
            return f"{rate / scale:.0f}{unit}/s"
    return f"{rate / 1e9:.1f}G/s"


def _ingest_columns(compact: bool) -> list[ProgressColumn]:
    """The ingest bar's columns: compact for a narrow terminal (a short bar and counts, no
    percentage or elapsed time)."""
    return [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=12 if compact else 40),
            *([] if compact else [TaskProgressColumn()]), TextColumn("{task.fields[counts]}"), _RateColumn(),
            *([] if compact else [TimeElapsedColumn()]), TextColumn("ETA"), _TimeLeftColumn()]


@contextmanager
def _ingest_progress(enabled: bool = True, label: str = "Ingesting") -> Iterator[_IngestProgress | None]:
    if not enabled:
        yield None
        return
    compact = err.width < WIDE_BAR
    with Progress(*_ingest_columns(compact), console=err, transient=False) as bar:
        yield _IngestProgress(bar, label, compact=compact, width=err.width)


def _display_path(path: str) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


class _FileArguments(typer.core.TyperCommand):
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


# -- commands ----------------------------------------------------------------------------------


@app.command(cls=_FileArguments)
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
    with _errors():
        engine = _engine(workspace, config, create=True)
        _print_warnings(engine.warnings)
        with _ingest_progress(not as_json) as progress:
            report = engine.ingest(paths, lens=lens, tenant=tenant, sync=sync, progress=progress, runner=runner,
                                   address=address, workers=workers)
    if as_json:
        _print_json(report.to_dict())
    else:
        console.print(escape(report.summary()), style="red" if report.failed else None, highlight=False)
    if report.failed:
        raise typer.Exit(1)


@app.command()
def chunk(
    file: Annotated[Path, typer.Argument(help="One document.")],
    strategy: Annotated[str | None, typer.Option("--strategy", "-s", help="token, boundary or sentence.")] = None,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="One JSON object per chunk.")] = False,
    lens: Annotated[str, typer.Option("--lens", "-l")] = "default",
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Chunk one file and print the chunks (no store needed)."""
    with _errors():
        engine = _engine(workspace, config, create=True)
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


@app.command()
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
    with _errors():
        engine = _engine(workspace, config)
        result = engine.query(text, k=k, mode=mode, lenses=lens, tenant=tenant, as_of=as_of, budget=budget,
                              organize=organize, optimize=show_context, dated_from=dated_from, dated_to=dated_to,
                              **_options(option, "threshold=0.6"))
    if as_json:
        _print_json(result.to_dict())
        return
    _print_warnings(result.warnings)
    for note in result.notes:
        err.print(f"[dim]note:[/] {escape(note)}")
    if result.context is None:
        _print_results(result)
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
                  f"[magenta]{escape(chunk.lens)}[/] {escape(_display_path(chunk.source_path))} › "
                  f"{escape(chunk.section_path_str)} [dim]{chunk.start}–{chunk.end}[/]")
    if show_context:
        sys.stdout.write(c.formatted)
        sys.stdout.flush()


def _print_results(result: Any) -> None:  # noqa: ANN401 - a QueryResult
    console.print(f"[bold]{escape(result.query)}[/]  [dim]({result.mode}, {count_of(len(result), 'result')}, "
                  f"{result.seconds * 1000:.0f} ms)[/]")
    if not result.results:
        console.print("  [dim]no results[/]")
    for rank, r in enumerate(result, start=1):
        section = f" › {escape(r.section_path_str)}" if r.section_path else ""
        console.print(f"  [bold cyan]{rank}.[/] [green]{r.relevance:.2f}[/] [dim]\\[{escape(short_id(r.chunk_id))}][/] "
                      f"[magenta]{escape(r.lens)}[/] {escape(_display_path(r.source_path))}{section} "
                      f"[dim]{r.start}–{r.end}[/]")
        if r.via:
            console.print(f"     [dim]via {escape(r.via.get('edge', ''))} from "
                          f"{escape(short_id(str(r.via.get('seed', ''))))} (weight {r.via.get('weight', 0):.2f})[/]")
        snippet = " ".join(r.text.split())
        console.print(f"     {escape(snippet[:240])}{'…' if len(snippet) > 240 else ''}")


ModelOpt = Annotated[str | None, typer.Option("--model", help="The model to write with (over llm.model).")]
OpusOpt = Annotated[bool, typer.Option("--opus", help="Write with the strongest configured model (llm.strongest_model).")]
StreamOpt = Annotated[bool, typer.Option("--stream", help="Print the text as it is written.")]


def _stream(enabled: bool) -> Any:  # noqa: ANN401 - a text callback or None
    if not enabled:
        return None

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    return write


def _print_sources(sources: Any, cited: set[int]) -> None:  # noqa: ANN401 - Source values
    """The cited sources, and how many others the writer read."""
    for s in sources:
        if s.number in cited:
            console.print(f"  [bold cyan][{s.number}][/] [magenta]{escape(s.lens)}[/] "
                          f"{escape(_display_path(s.source_path))}"
                          f"{' › ' + escape(s.section_path) if s.section_path else ''} [dim][{s.start}:{s.end}][/]")
    others = sum(1 for s in sources if s.number not in cited)
    if others:
        console.print(f"  [dim]and {others} more in the context, not cited (--json lists them all)[/]")


@app.command()
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
    with _errors():
        engine = _engine(workspace, config)
        writer = engine.writing.writer(model=model, strongest=opus)
        result = engine.ask(question, k=k, mode=mode, lenses=lens, tenant=tenant, as_of=as_of, budget=budget,
                            writer=writer, on_text=_stream(stream and not as_json), dated_from=dated_from,
                            dated_to=dated_to, **_options(option, "threshold=0.6"))
    if as_json:
        _print_json(result.to_dict())
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
    _print_warnings(result.query.warnings)
    console.print()
    console.print(f"[bold]Sources[/] [dim]({result.query.mode}; {writer.name}"
                  f"{' ' + writer.model if writer.model else ''}; {result.seconds:.2f}s)[/]")
    _print_sources(answer.sources, set(answer.citations.valid))
    colour = "green" if answer.citations.ok else "red"
    console.print(f"[{colour}]citations: {escape(answer.citations.summary())}[/]")
    for sentence in answer.citations.uncited_sentences:
        console.print(f"  [red]uncited:[/] {escape(sentence)}")


@app.command()
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

    with _errors():
        engine = _engine(workspace, config)
        asked = read_queries(queries) if queries is not None else None
        writer = engine.writing.writer(model=model, strongest=opus)
        _print_warnings(engine.warnings)
        report = _generate(engine, writer, context=context, queries=asked, out=out, title=title, lenses=lens,
                           as_of=as_of, budget=budget, tenant=tenant, stream=stream and not as_json,
                           show=not as_json)
    if as_json:
        _print_json(report.to_dict())
    if not report.citations.ok:
        raise typer.Exit(1)


def _generate(engine: Engine, writer: Any, *, show: bool, stream: bool, **kwargs: Any) -> Any:  # noqa: ANN401
    """Run ``generate`` with a progress bar, then print where the report went and what it holds."""
    with _progress(show and not stream) as bar:
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

        report = engine.generate(writer=writer, progress=progress, on_text=_stream(stream), **kwargs)
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
            console.print(f"  wrote {escape(_display_path(str(saved)))} and its .json")
    return report


@app.command()
def stats(as_json: JsonOpt = False, tenant: TenantOpt = None, workspace: WorkspaceOpt = None,
          config: ConfigOpt = None) -> None:
    """Documents, chunks and tokens per lens, and how the index was built."""
    with _errors():
        data = _engine(workspace, config).stats(tenant=tenant)
    if as_json:
        _print_json(data)
        return
    _print_warnings(data["warnings"])
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


@app.command()
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
    with _errors():
        removed = _engine(workspace, config).clear(lens=lens, tenant=tenant)
    console.print(f"removed {removed} documents")


@app.command(cls=_FileArguments)
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
    with _errors():
        deleted = _engine(workspace, config).delete(documents, tenant=tenant)
    if not deleted:
        err.print(f"[bold red]error:[/] no current document matches {escape(shown)}; nothing deleted "
                  "(give paths as ingested, or ids from 'ragloom query --json')")
        raise typer.Exit(1)
    console.print(f"deleted {count_of(deleted, 'document')} (history kept)")


@app.command()
def reindex(workspace: WorkspaceOpt = None, config: ConfigOpt = None) -> None:
    """Rebuild all chunks with the current settings, from the stored documents and their history."""
    with _errors():
        engine = _engine(workspace, config)
        with _ingest_progress(label="Re-indexing") as progress:
            report = engine.reindex(progress=progress)
    console.print(f"reindexed {count_of(report.files, 'document')}: {count_of(report.chunks_embedded, 'chunk')} and "
                  f"{count_of(report.sentences_embedded, 'sentence')} embedded in {report.seconds:.1f}s")


@app.command()
def history(path: Annotated[Path, typer.Argument(help="A document's file path.")], tenant: TenantOpt = None,
            as_json: JsonOpt = False, workspace: WorkspaceOpt = None, config: ConfigOpt = None) -> None:
    """List a document's versions with their change summaries."""
    with _errors():
        rows = _engine(workspace, config).history(path, tenant=tenant)
    if as_json:
        _print_json(rows)
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


@app.command()
def quality(
    lens: Annotated[str | None, typer.Option("--lens", "-l", help="Only this lens.")] = None,
    worst: Annotated[int, typer.Option("--worst", help="How many of the worst chunks to list.")] = 10,
    tenant: TenantOpt = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """The distribution of chunk quality scores and the worst chunks with their issues."""
    with _errors():
        report = _engine(workspace, config).quality(tenant=tenant, lens=lens, worst=worst)
    if as_json:
        _print_json(report)
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
        where = f"{_display_path(w['source_path'])} › {w['section_path']} [{w['start']}:{w['end']}]"
        issues = "; ".join(f"{i['kind']} ({i['severity']}): {i['description']}" for i in w.get("issues", []))
        table.add_row(f"{w['score']:.2f}", escape(w["lens"]), escape(where), escape(issues))
    console.print(table)


@app.command()
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
    with _errors():
        rows = _engine(workspace, config).entities(tenant=tenant, lens=lens, type=type_)[:limit]
    if as_json:
        _print_json(rows)
        return
    table = Table()
    for column in ("entity", "type", "mentions", "documents", "lenses", "aliases seen"):
        table.add_column(column, overflow="fold")
    for e in rows:
        table.add_row(escape(e["name"]), e["type"], str(e["mentions"]), str(e["documents"]), str(len(e["lenses"])),
                      escape(", ".join(e["aliases"][:4])))
    console.print(table)


@app.command()
def backrefs(
    chunk_id: Annotated[str, typer.Argument(help="A chunk id, or its first characters (as 'ragloom query' shows).")],
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="Other chunks per entity.")] = None,
    tenant: TenantOpt = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """For each entity a chunk mentions, the other chunks that mention it."""
    with _errors():
        refs = _engine(workspace, config).back_references(chunk_id, tenant=tenant, limit=limit)
    if as_json:
        _print_json([r.to_dict() for r in refs])
        return
    if not refs:
        console.print("this chunk mentions no entity that another chunk mentions")
    for r in refs:
        console.print(f"[bold]{escape(r.entity_name)}[/] ({r.entity_type}) [green]{r.relevance_score:.2f}[/] "
                      f"{r.relationship} in [dim]\\[{short_id(r.chunk_id)}][/] [magenta]{escape(r.lens)}[/] "
                      f"{escape(_display_path(r.source_path))} › {escape(r.section_path)}")
        console.print(f"   {escape(r.context_summary)}")


graph_app = typer.Typer(help="The context graph: build, stats, show, export.", no_args_is_help=True)
app.add_typer(graph_app, name="graph")


@graph_app.command("build")
def graph_build(tenant: TenantOpt = None, workspace: WorkspaceOpt = None, config: ConfigOpt = None) -> None:
    """Rebuild the context graph from the current chunks."""
    with _errors():
        engine = _engine(workspace, config)
        with err.status("building the context graph"):
            edges = engine.build_graph(tenant=tenant)
    console.print(f"{edges} relationships")


@graph_app.command("stats")
def graph_stats(tenant: TenantOpt = None, as_json: JsonOpt = False, workspace: WorkspaceOpt = None,
                config: ConfigOpt = None) -> None:
    """Nodes, edges, edges by type, density, connected components."""
    with _errors():
        stats = _engine(workspace, config).graph(tenant=tenant).stats()
    if as_json:
        _print_json(stats)
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
    with _errors():
        node = _engine(workspace, config).graph(tenant=tenant).show(chunk_id, limit=limit)
    if as_json:
        _print_json(node)
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
    with _errors():
        path = _engine(workspace, config).graph(tenant=tenant).export(output, format=format_)
    console.print(f"wrote {escape(str(path))}")


@app.command()
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
    with _errors():
        found = _engine(workspace, config).contradictions(topic=topic, tenant=tenant, limit=limit, lenses=lens)
    if as_json:
        _print_json([c.to_dict() for c in found])
        return
    if not found:
        console.print("no contradictions found")
    for c in found:
        console.print(f"[bold yellow]{escape(c.topic)}[/] ({c.kind}, {c.type}): [bold]{escape(c.difference)}[/] "
                      f"[dim]certainty {c.certainty:.2f}, score {c.score:.2f}[/]")
        for st in c.statements:
            console.print(f"   [magenta]{st.lens:<20}[/] {escape(_display_path(st.source_path))} [{st.start}:{st.end}]")
            console.print(f"   {'':<20} “{escape(' '.join(st.text.split()))}”")
        console.print(f"   [dim]{escape(c.note)}[/]")


@app.command()
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
    with _errors():
        found = _engine(workspace, config).decisions(since=since, tenant=tenant, lenses=lens, limit=limit)
    if as_json:
        _print_json([d.to_dict() for d in found])
        return
    if not found:
        console.print("no decisions found" + (f" since {since}" if since else ""))
    for d in found:
        when = d.date.isoformat() if d.date else "undated"
        where = _display_path(d.source_path) + (f" › {d.section}" if d.section else "")
        console.print(f"[bold]{when}[/] [magenta]{escape(d.lens)}[/] [dim]{d.kind} · {escape(where)}[/]")
        console.print(f"   “{escape(d.flat)}”")


@app.command("eval")
def eval_(
    suite: Annotated[str, typer.Argument(help="chunking, contextual, multihop, ab or windows.")],
    out: Annotated[Path, typer.Option("--out", help="Where the JSON, Markdown and PNG files go.")] = Path("eval-out"),
    data: Annotated[Path | None, typer.Option("--data", help="The evaluation data (default: ../shared/data).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Use only the first N questions.")] = None,
    cache: Annotated[Path | None, typer.Option("--cache", help="Embedding cache folder.")] = None,
    provider: Annotated[str | None, typer.Option("--provider", help="Embedding provider to measure "
                                                 "(onnx, sentence-transformers, static, ...).")] = None,
    precision: Annotated[str | None, typer.Option("--precision", help="onnx: fp32 or int8.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Embedding model (minilm-static, a folder).")] = None,
    setting: Annotated[list[str] | None, typer.Option("--set", help="A setting over the suite's own, "
                                                      "section.key=value (repeatable; every suite but chunking).")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", help="The suite's own option, name=value "
                                                     "(repeatable): contextual split=tune, report, all or several, "
                                                     "comma-separated (default report,all).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure a technique against its baseline; embeddings are cached, so a second run takes seconds."""
    from ragloom.config import EmbeddingSettings
    from ragloom.evaluate import run_suite
    from ragloom.evaluate.context import STEPS
    from ragloom.evaluate.datasets import shared_data

    with _errors():
        root = shared_data(data)
        chosen = {k: v for k, v in {"provider": provider, "precision": precision, "model": model}.items() if v}
        embedding = EmbeddingSettings.model_validate(chosen) if chosen else None
        overrides = {}
        for item in setting or ():
            key, _, value = item.partition("=")
            if not value:
                raise ConfigError(f"--set {item!r}: write section.key=value, for example sentences.vectors=derived")
            overrides[key.strip()] = _setting_value(value.strip())
        options = _options(option, "split=report")
        with _progress(not as_json) as bars:
            def say(message: str) -> None:
                if bars is not None:
                    bars.describe(STEPS, f"{suite}: {message}")

            result, paths = run_suite(suite, data=root, out=out, cache=cache, limit=limit, embedding=embedding,
                                      overrides=overrides, options=options, progress=say, tracker=bars)
    if as_json:
        _print_json(result.to_dict())
        return
    sys.stdout.write(result.table() + "\n")
    for note in result.notes:
        console.print(f"- {escape(note)}")
    console.print(f"[dim]{result.seconds:.1f}s; wrote {', '.join(str(p) for p in paths.values())}"
                  f"{', ' + ', '.join(result.plots) if result.plots else ''}[/]")


@app.command()
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

    with _errors():
        code = launch(workspace, config=config, port=port, host=host, insecure=insecure)
    raise typer.Exit(code)


@app.command()
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

    with _errors():
        engine = _engine(workspace, config, create=True)
        _print_warnings(engine.warnings)
        serve_api(engine=engine, host=host, port=port, insecure=insecure)


@app.command()
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
    with _errors():
        engine = _engine(workspace, config)
        _print_warnings(engine.warnings)
        serve_mcp(engine, transport=transport, host=host, port=port, key=key, tenant=tenant, insecure=insecure)


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
    """What the chat's next question uses; /mode, /k, /lens and /option change it."""

    def __init__(self, k: int | None, mode: str | None, lenses: list[str], options: dict[str, Any]) -> None:
        self.k, self.mode, self.lenses, self.options = k, mode, lenses, options

    def check(self, engine: Engine, tenant: str | None, as_of: str | None) -> None:
        """Raise the query's own error for a bad mode, k, lens, option, tenant or time, without searching."""
        engine.queries.request("", k=self.k, mode=self.mode, lenses=self.lenses or None, tenant=tenant, as_of=as_of,
                               **self.options)

    def describe(self, engine: Engine) -> str:
        retrieval = engine.settings.retrieval
        lenses = ", ".join(self.lenses) if self.lenses else "every lens"
        options = "".join(f", {name}={value}" for name, value in self.options.items())
        return f"mode {self.mode or retrieval.mode}{options}, k {self.k or retrieval.k}, {lenses}"


def _chat_command(engine: Engine, state: _ChatState, line: str, *, tenant: str | None, as_of: str | None,
                  writers: dict[str, Any]) -> bool:
    """Answer one line of the chat; False to leave. Raises ragloom errors for the loop to print."""
    from ragloom.retrieve import mode_names

    if not line.startswith("/"):
        result = engine.query(line, k=state.k, mode=state.mode, lenses=state.lenses or None, tenant=tenant,
                              as_of=as_of, **state.options)
        for note in result.notes:
            err.print(f"[dim]note:[/] {escape(note)}")
        _print_results(result)
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
        if command == "mode" and arg:
            changed = _ChatState(state.k, arg, state.lenses, {})  # the options were the old mode's
        elif command == "k" and arg:
            if not arg.isdigit():
                raise ConfigError(f"/k {arg[:40]!r}: give a whole number of results, like /k 5")
            changed = _ChatState(int(arg), state.mode, state.lenses, state.options)
        elif command == "lens":
            changed = _ChatState(state.k, state.mode, [*state.lenses, *arg.split()] if arg else [], state.options)
        elif command == "option":
            options = {**state.options, **_options(arg.split(), "threshold=0.6")} if arg else {}
            changed = _ChatState(state.k, state.mode, state.lenses, options)
        else:
            raise ConfigError(f"/{command} needs a value; /help lists the commands")
        changed.check(engine, tenant, as_of)  # a bad value leaves the settings as they were
        state.k, state.mode, state.lenses, state.options = changed.k, changed.mode, changed.lenses, changed.options
        console.print(f"[dim]now: {escape(state.describe(engine))}[/]")
    elif command == "ask":
        if not arg:
            raise ConfigError("/ask needs a question, like /ask When does the catalog integration ship?")
        if "writer" not in writers:
            writers["writer"] = engine.writing.writer()
        writer = writers["writer"]
        _print_answer(engine.ask(arg, mode=state.mode, lenses=state.lenses or None, tenant=tenant, as_of=as_of,
                                 writer=writer, **state.options), writer)
    else:
        raise ConfigError(f"unknown command /{command[:40]}; /help lists the commands")
    return True


@app.command()
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
    with _errors():
        engine = _engine(workspace, config)
        _print_warnings(engine.warnings)
        state = _ChatState(k, mode, list(lens or []), _options(option, "threshold=0.6"))
        state.check(engine, tenant, as_of)
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
            if line and not _chat_command(engine, state, line, tenant=tenant, as_of=as_of, writers=writers):
                break
        except RagloomError as exc:  # one red line; the chat goes on
            err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
        except (EOFError, KeyboardInterrupt):
            if interactive:
                console.print()
            break


@app.command()
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

    with _errors():
        if is_remote(path or workspace):
            raise NoWorkspaceError(f"ragloom init writes a local folder; a workspace on object storage reads its "
                                   f"settings from {path or workspace}/ragloom.toml: write one with 'ragloom init "
                                   "FOLDER' and upload it there")
        written = init_workspace(resolve_workspace(path or workspace), force=force)
    console.print(f"wrote {escape(str(written))}: uncomment a line to set it; then "
                  f"'ragloom ingest PATH --lens NAME --workspace {escape(str(written.parent))}'")


config_app = typer.Typer(help="The settings: 'ragloom config show' prints them with where each came from.",
                         no_args_is_help=True)
app.add_typer(config_app, name="config")


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

    with _errors():
        folder = resolve_workspace(workspace)
        rows = effective_settings(folder, config_file=config)
    if changed:
        rows = [r for r in rows if r.source != "default"]
    if as_json:
        _print_json([r.to_dict() for r in rows])
        return
    heading = [f"ragloom settings in effect for the workspace {folder}"
               + (", only those a file or a variable sets" if changed else "") + ".",
               "A value a file or a variable sets says which; a setting not set is commented out.",
               "This is TOML that ragloom reads: save it as ragloom.toml to keep these settings."]
    # Written as is: rich would read [chunking] as markup, and wrap long values.
    sys.stdout.write(settings_toml(rows, heading=heading))


keys_app = typer.Typer(help="API keys for 'ragloom serve' and 'ragloom mcp': each bound to one tenant and one role "
                       "(read, write, admin). With no key the servers answer on this machine only.",
                       no_args_is_help=True)
app.add_typer(keys_app, name="keys")


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
    with _errors():
        grant, key = _keys(workspace).create(tenant=tenant, role=role, name=name)
    if as_json:
        _print_json({**grant.to_dict(), "key": key})
        return
    console.print(f"created {escape(grant.name)} (id {grant.id}): tenant {escape(grant.tenant)}, role {grant.role}")
    console.print("the key (shown this once; send it as 'Authorization: Bearer KEY'):")
    print(key, flush=True)


@keys_app.command("list")
def keys_list(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Every API key of the workspace: id, name, tenant, role, when it was made (never the key)."""
    with _errors():
        grants = _keys(workspace).list()
    if as_json:
        _print_json([g.to_dict() for g in grants])
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
    with _errors():
        grant = _keys(workspace).revoke(key)
    console.print(f"revoked {escape(grant.name)} (id {grant.id}, tenant {escape(grant.tenant)}, {grant.role})")


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


def _options(items: Sequence[str] | None, example: str) -> dict[str, Any]:
    """``--option NAME=VALUE`` pairs, each value as TOML reads it (``threshold=0.6`` a number)."""
    options: dict[str, Any] = {}
    for item in items or ():
        key, _, value = item.partition("=")
        if not key.strip() or not value.strip():
            raise ConfigError(f"--option {item!r}: write name=value, for example {example}")
        options[key.strip()] = _setting_value(value.strip())
    return options


def _setting_value(text: str) -> Any:  # noqa: ANN401 - a TOML value
    """``--set`` values as TOML reads them (numbers, booleans, lists), else as text."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


DEMO_QUERIES = (
    "When will the QuickBooks catalog integration ship?",
    "How many engineers does the team have, and how much capacity is planned per quarter?",
    "What are customers asking for about offline mode in the mobile app?",
)


@app.command()
def demo(
    materials: Annotated[Path | None, typer.Option(help="Folder with one sub-folder per lens.")] = None,
    k: Annotated[int, typer.Option("-k")] = 3,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Ingest the bundled sample materials under their lenses and answer three questions."""
    from ragloom.demo import find_materials, install_samples
    from ragloom.workspace import Workspace

    with _errors():
        folder = find_materials(materials)
        space = Workspace(workspace)
        if not space.remote:
            install_samples(folder, space.path)  # before the engine: it reads the settings
        engine = _engine(workspace, config, create=True)
        _print_warnings(engine.warnings)
        lenses = sorted(p for p in folder.iterdir() if p.is_dir())
        console.print(f"[bold]ragloom demo[/]: {len(lenses)} lenses from {escape(_display_path(str(folder)))} "
                      f"into {escape(str(engine.workspace.path))}")
        failed = 0
        with _ingest_progress() as progress:
            for lens_dir in lenses:
                report = engine.ingest(lens_dir, lens=lens_dir.name, progress=progress)
                failed += len(report.failed)
                console.print(f"  [magenta]{lens_dir.name:<20}[/] {report.files} files, {report.added} added, "
                              f"{report.updated} updated, {report.unchanged} unchanged")
        for question in DEMO_QUERIES:
            console.print()
            _print_results(engine.query(question, k=k))
        console.print()
        console.print("[bold]The synthesis report[/] (ragloom generate):")
        _generate(engine, engine.writing.writer(), show=True, stream=False)
    if failed:
        raise typer.Exit(1)


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
