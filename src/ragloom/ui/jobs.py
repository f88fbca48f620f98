"""Long work (ingest, re-index, report) in background threads, so the page never freezes and a
job outlives the page that started it: the registry belongs to the server process (one per
workspace, kept by ``st.cache_resource``), the pages only read it.

Nothing here imports Streamlit: the threads never touch the page, they record progress in their
:class:`Job`, and a fragment of the page polls it.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragloom.errors import RagloomError
from ragloom.ingest.report import Progress

log = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
#: Finished jobs kept per registry (the newest ones); running jobs are always kept.
KEEP = 50


@dataclass
class StageProgress:
    name: str
    total: int | None
    done: int = 0

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, self.done / self.total)


@dataclass
class Job:
    """One piece of long work and everything the page shows about it."""

    id: int
    kind: str  # ingest | reindex | generate | ...
    title: str
    writes: bool = False
    status: str = QUEUED
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    stages: dict[str, StageProgress] = field(default_factory=dict)
    current: str = ""
    messages: list[str] = field(default_factory=list)
    text: str = ""  # streamed output (a report being written)
    result: Any = None
    error: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    detail: str = ""  # what the current step is about (a report's query)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- written by the worker thread --------------------------------------------------------

    def stage(self, name: str, total: int | None) -> None:
        with self._lock:
            self.stages[name] = StageProgress(name, total)
            self.current = name

    def advance(self, name: str, amount: int = 1) -> None:
        with self._lock:
            stage = self.stages.setdefault(name, StageProgress(name, None))
            stage.done += amount
            self.current = name

    def step(self, what: str, done: int, total: int) -> None:
        """``(what, done, total)`` progress (the report writer's callback)."""
        name = what.split(":", 1)[0].strip().capitalize() or "Working"
        with self._lock:
            self.stages[name] = StageProgress(name, total, done)
            self.current = name
            self.detail = what

    def message(self, text: str) -> None:
        with self._lock:
            self.messages.append(text)

    def write(self, delta: str) -> None:
        with self._lock:
            self.text += delta

    # -- read by the page --------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.status in (QUEUED, RUNNING)

    @property
    def seconds(self) -> float:
        if self.started_at is None:
            return 0.0
        return (self.finished_at or time.time()) - self.started_at

    def snapshot(self) -> tuple[list[StageProgress], str, list[str], str]:
        """(stages, current stage, messages, streamed text), copied under the lock."""
        with self._lock:
            stages = [StageProgress(s.name, s.total, s.done) for s in self.stages.values()]
            return stages, self.current, list(self.messages), self.text

    def fraction(self) -> float | None:
        """How far the current stage is (None when its size is unknown)."""
        with self._lock:
            stage = self.stages.get(self.current)
            return stage.fraction if stage is not None else None

    def describe(self) -> str:
        """One line: what it is doing now."""
        stages, current, _, _ = self.snapshot()
        if self.status == QUEUED:
            return f"{self.title}: waiting for another job that writes to the workspace"
        stage = next((s for s in stages if s.name == current), None)
        if stage is None:
            return f"{self.title}: starting"
        detail = self.detail or stage.name
        count = f" {stage.done}/{stage.total}" if stage.total else (f" {stage.done}" if stage.done else "")
        return f"{self.title}: {detail}{count}"


class JobProgress(Progress):
    """The engine's :class:`~ragloom.ingest.Progress` callbacks, recorded in a :class:`Job`."""

    def __init__(self, job: Job) -> None:
        self.job = job

    def stage(self, name: str, total: int | None) -> None:
        self.job.stage(name, total)

    def advance(self, name: str, amount: int = 1) -> None:
        self.job.advance(name, amount)

    def message(self, text: str) -> None:
        self.job.message(text)


class JobRegistry:
    """The jobs of one workspace. Jobs that write run one at a time, in the order submitted
    (the store has one writer anyway); the others run at once."""

    def __init__(self) -> None:
        self._jobs: list[Job] = []
        self._lock = threading.Lock()
        self._write = threading.Lock()
        self._ids = itertools.count(1)

    def submit(self, kind: str, title: str, work: Callable[[Job], Any], *, writes: bool = False,
               params: dict[str, Any] | None = None) -> Job:
        """Start ``work(job)`` in a background thread; its return value becomes ``job.result``."""
        job = Job(next(self._ids), kind, title, writes=writes, params=dict(params or {}))
        with self._lock:
            self._jobs.append(job)
            finished = [j for j in self._jobs if not j.active]
            for old in finished[:-KEEP]:
                self._jobs.remove(old)
        thread = threading.Thread(target=self._run, args=(job, work), name=f"ragloom-{kind}-{job.id}", daemon=True)
        thread.start()
        return job

    def _run(self, job: Job, work: Callable[[Job], Any]) -> None:
        lock = self._write if job.writes else None
        if lock is not None:
            lock.acquire()
        try:
            job.status = RUNNING
            job.started_at = time.time()
            job.result = work(job)
            job.status = DONE
        except RagloomError as exc:
            job.error = str(exc)
            job.status = FAILED
        except Exception as exc:  # noqa: BLE001 - a job must end with a message, whatever went wrong
            log.exception("job %s (%s) failed", job.id, job.title)
            job.error = f"{type(exc).__name__}: {exc}"
            job.status = FAILED
        finally:
            job.finished_at = time.time()
            if lock is not None:
                lock.release()

    def jobs(self, kind: str | None = None) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs if kind is None or j.kind == kind]

    def latest(self, kind: str) -> Job | None:
        found = self.jobs(kind)
        return found[-1] if found else None

    def active(self) -> list[Job]:
        return [j for j in self.jobs() if j.active]

    def writing(self) -> Job | None:
        """A job that writes and has not finished, if any."""
        return next((j for j in self.active() if j.writes), None)

    def wait(self, job: Job, timeout: float | None = None) -> bool:
        """Block until ``job`` ends (for tests and scripts); returns whether it did."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while job.active:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True
