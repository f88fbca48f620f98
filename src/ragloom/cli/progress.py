"""The progress bars, on standard error: one bar per stage of a long operation, and the one
bar of an ingest (or reindex) with its rate and the time left."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

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
from rich.text import Text

from ragloom.cli.common import err
from ragloom.ingest.report import CONTEXT_STAGE
from ragloom.ingest.report import Progress as EngineProgress


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
def stage_progress(enabled: bool = True) -> Iterator[_RichProgress | None]:
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


class IngestProgress(_RichProgress):
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
def ingest_progress(enabled: bool = True, label: str = "Ingesting") -> Iterator[IngestProgress | None]:
    if not enabled:
        yield None
        return
    compact = err.width < WIDE_BAR
    with Progress(*_ingest_columns(compact), console=err, transient=False) as bar:
        yield IngestProgress(bar, label, compact=compact, width=err.width)
