"""The Ray runner: ingest's own stage objects on a Ray cluster (``ragloom ingest PATH --runner ray``).

============================  ===========================================================
where                         what
============================  ===========================================================
driver (this process)         lists the files; under the write lock, reads what the store
                              knows of each file's document (its current row, whether whole)
Ray read tasks (CPU)          the document stages: load, parse, chunk, enrich, [context],
                              version, over a Ray dataset of the work items (a few files per
                              task; each worker process builds the components once)
Ray embedding actors          the batch stages before ``store``: embed, quality; one model
                              load per actor, a GPU each where the cluster has GPUs and the
                              embedder is a torch one (sentence-transformers)
driver                        ``store`` in batches of ``ingest.batch_chunks`` rows (one
                              commit each, through LanceDB's own writers), then ``graph``
============================  ===========================================================

Every stage is the pipeline's own object, sent to the workers (a stage inserted with
``engine.pipeline.insert`` goes too), and each batch goes through
:meth:`~ragloom.ingest.pipeline.IngestPipeline.run_document` as in a local run, so
versions, hashes, the sentence index, entity mentions and the graph come out as a local
ingest makes them, and a failure stays with its file. Writes happen only on the driver, under
the write lock, batch by batch as a local ingest writes them: a job that fails (a worker that
dies more than :data:`RETRIES` times, a cluster that goes away) leaves what a local crash
leaves: whole documents, the interrupted write rolled back, a re-run that completes it.

The read tasks open the store read-only (the version stage reads the previous version's
rows), so on a cluster of several machines the workspace must be on object storage (or a
shared mount) and the files must be at the same paths on every node (a shared mount).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import re
import threading
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ragloom.errors import DistributedIngestError, InvalidParameterError, MissingExtraError, RagloomError
from ragloom.ingest.report import IngestReport, Progress
from ragloom.ingest.work import IngestRun, Work

if TYPE_CHECKING:
    from ragloom.components import Components
    from ragloom.config import Settings
    from ragloom.embed import Embedder
    from ragloom.ingest.pipeline import IngestPipeline
    from ragloom.ingest.stages import Stage

#: Files per read task: few, so that one slow file holds up little.
READ_BATCH = 4
#: Documents per call to an embedding actor (the embed stage splits them into model calls).
EMBED_BATCH = 8
#: How often a read task or an embedding actor is tried again after its worker died.
RETRIES = 3
#: Object store of a local Ray: the dataset streams through it, so it need not hold the corpus.
LOCAL_OBJECT_STORE = 2 * 1024**3
#: Environment variables the workers get from the driver: what reaches a workspace on object
#: storage, and where the caches are.
FORWARDED = ("AWS_", "GOOGLE_", "AZURE_", "RAGLOOM_CACHE_DIR")


def _ray() -> Any:  # noqa: ANN401 - the ray module
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise MissingExtraError("ray", "distributed", "ingest with --runner ray") from exc
    return ray


@dataclass(frozen=True)
class _Spec:
    """What a worker needs to build the engine's components and stages (all picklable)."""

    key: str  # one per run: a worker process builds its components once per run
    workspace: str
    settings: Settings
    embedder: Embedder | None
    stages: bytes  # the pipeline's stage objects, pickled before any of them prepared
    at: datetime
    relay: Any  # noqa: ANN401 - the progress relay actor, or None


_BUILT: dict[str, tuple[Components, IngestPipeline]] = {}


def _worker(spec: _Spec) -> tuple[Components, IngestPipeline]:
    """The components and the pipeline in this worker process, built once per run."""
    if spec.key not in _BUILT:
        from ragloom.components import Components
        from ragloom.ingest.pipeline import IngestPipeline
        from ragloom.workspace import Workspace

        _BUILT.clear()
        components = Components(Workspace(spec.workspace), spec.settings, embedder=spec.embedder)
        _BUILT[spec.key] = (components, IngestPipeline(components, pickle.loads(spec.stages)))
    return _BUILT[spec.key]


class _RelayedProgress(Progress):
    """Progress heard in a worker, sent to the driver's relay (fire and forget, flushed at the
    end of each batch so that the driver has heard all of it before it sees the batch)."""

    def __init__(self, relay: Any) -> None:  # noqa: ANN401 - an actor handle
        self.relay = relay
        self.last: Any = None

    def _send(self, *event: object) -> None:
        self.last = self.relay.put.remote(event)

    def stage(self, name: str, total: int | None) -> None:
        self._send("stage", name, total)

    def advance(self, name: str, amount: int = 1) -> None:
        self._send("advance", name, amount)

    def message(self, text: str) -> None:
        self._send("message", text)

    def note(self, text: str) -> None:
        self._send("note", text)

    def flush(self) -> None:
        if self.last is not None:
            _ray().get(self.last)
            self.last = None


class _Relay:
    """An actor that holds the workers' progress events until the driver collects them."""

    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []

    def put(self, event: tuple[object, ...]) -> None:
        self.events.append(event)

    def drain(self) -> list[tuple[object, ...]]:
        events, self.events = self.events, []
        return events


def _progress(spec: _Spec) -> Progress:
    return _RelayedProgress(spec.relay) if spec.relay is not None else Progress()


def _table(works: Sequence[bytes], reports: Sequence[bytes]) -> Any:  # noqa: ANN401 - a pyarrow table
    """A batch of rows for the next step: one per work item, one per report part."""
    import pyarrow as pa

    return pa.table({"work": pa.array([*works, *[None] * len(reports)], pa.binary()),
                     "report": pa.array([*[None] * len(works), *reports], pa.binary())})


def _rows(batch: Any) -> Iterator[tuple[bytes | None, bytes | None]]:  # noqa: ANN401 - a pyarrow table
    works = batch.column("work").to_pylist()
    reports = batch.column("report").to_pylist() if "report" in batch.column_names else [None] * len(works)
    return zip(works, reports, strict=True)


def _read(batch: Any, spec: _Spec) -> Any:  # noqa: ANN401 - pyarrow tables
    """A read task: the document stages, file by file, as the local pipeline runs them."""
    components, pipeline = _worker(spec)
    progress = _progress(spec)
    run = IngestRun(components, IngestReport(), progress, spec.at)
    works: list[bytes] = []
    reports: list[bytes] = []
    try:
        for blob, report in _rows(batch):
            if report is not None:
                reports.append(report)
            if blob is None:
                continue
            item, facts = pickle.loads(blob)
            run.learn(item.tenant, _document_id(item), facts)
            works.extend(pickle.dumps(ready) for ready in pipeline.run_document(item, run))
            progress.advance("Reading")
    finally:
        for stage in pipeline.stages:  # a converter process started for this batch stops with it
            close = getattr(stage, "close", None)
            if callable(close):
                close()
    if isinstance(progress, _RelayedProgress):
        progress.flush()
    return _table(works, [*reports, pickle.dumps(run.report)])


class _Embedding:
    """An embedding actor: the embedder loaded once; the batch stages before ``store`` on each
    batch of documents (a batch that fails is tried one document at a time, as locally)."""

    def __init__(self, spec: _Spec, stages: Sequence[int], threads: int | None) -> None:
        self.spec = spec
        self.components, self.pipeline = _worker(spec)
        self.stages = [self.pipeline.stages[i] for i in stages]  # positions in the pipeline
        if threads is not None:
            _limit_threads(self.components.embedder, threads)
        self.components.embedder.embed(["load the model now, once per actor"])

    def __call__(self, batch: Any) -> Any:  # noqa: ANN401 - pyarrow tables
        items: list[Work] = []
        reports: list[bytes] = []
        for blob, report in _rows(batch):
            if report is not None:
                reports.append(report)
            if blob is not None:
                items.append(pickle.loads(blob))
        progress = _progress(self.spec)
        run = IngestRun(self.components, IngestReport(), progress, self.spec.at)
        done = self.pipeline.run_batch(self.stages, items, run) if items else []
        if isinstance(progress, _RelayedProgress):
            progress.flush()
        return _table([pickle.dumps(item) for item in done], [*reports, pickle.dumps(run.report)])


def _limit_threads(embedder: object, threads: int) -> None:
    """An ONNX embedder inside the wrappers (cache, windows) runs ``threads`` sessions: the CPUs
    its actor holds, not every core of the machine (it reads ``os.cpu_count()``)."""
    seen = 0
    while embedder is not None and seen < 8:
        if hasattr(embedder, "threads") and not getattr(embedder, "_sessions", True):
            embedder.threads = threads
            return
        embedder = getattr(embedder, "inner", None)
        seen += 1


def _document_id(item: Work) -> str:
    from ragloom.load import document_id
    from ragloom.load.scan import real_path

    if item.document is not None:
        return item.document.document_id
    assert item.path is not None, "a work item has a path or a document"
    return document_id(item.tenant, real_path(item.path))


def merge_report(into: IngestReport, part: IngestReport) -> None:
    """Add what one worker's part of a run reports (counts, failures, lines, stage seconds)."""
    for name in ("added", "updated", "unchanged", "deleted", "chunks_written", "chunks_embedded", "chunks_reused",
                 "sentences_written", "sentences_embedded", "sentences_reused", "mentions_written", "relationships"):
        setattr(into, name, getattr(into, name) + getattr(part, name))
    into.failed.extend(part.failed)
    into.documents.extend(part.documents)
    for stage, seconds in part.timings.items():
        into.add_time(stage, seconds)


def _replay(events: Iterable[tuple[object, ...]], progress: Progress) -> None:
    for kind, *args in events:
        method: Callable[..., None] = getattr(progress, str(kind))
        method(*args)


@contextlib.contextmanager
def _relaying(ray: Any, progress: Progress) -> Iterator[Any]:  # noqa: ANN401
    """The relay actor, and a thread that passes its events to ``progress`` while the job runs
    (none when nobody listens: the base ``Progress`` ignores everything)."""
    if type(progress) is Progress:
        yield None
        return
    relay = ray.remote(num_cpus=0)(_Relay).remote()
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.25):
            with contextlib.suppress(Exception):  # a slow or gone actor: the final drain says the rest
                _replay(ray.get(relay.drain.remote(), timeout=5), progress)

    thread = threading.Thread(target=poll, name="ragloom-ray-progress", daemon=True)
    thread.start()
    try:
        yield relay
    finally:
        stop.set()
        thread.join()
        with contextlib.suppress(Exception):
            _replay(ray.get(relay.drain.remote(), timeout=30), progress)
        with contextlib.suppress(Exception):
            ray.kill(relay)


class RayRunner:
    """Runs an ingest on Ray (see the module docstring).

    ``address``: a running cluster (``ray://host:10001``, ``auto``); None starts a local Ray
    for the run and stops it after (or uses the one this process already started).
    ``workers``: embedding actors (one model each); default: the GPUs of the cluster for a
    GPU embedder, else its CPUs less one, or this machine's cores for a local Ray.
    """

    def __init__(self, *, address: str | None = None, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise InvalidParameterError(f"workers ({workers}) must be at least 1")
        self.address = address
        self.workers = workers

    def execute(self, pipeline: IngestPipeline, items: Iterable[Work], run: IngestRun, limit: int,
                total: int | None) -> None:
        ray = _ray()
        work = list(items)
        stages = self._pickled(pipeline.stages)
        started = self._start(ray)
        try:
            self._execute(ray, pipeline, work, stages, run, limit, total)
        finally:
            if started:
                ray.shutdown()

    @staticmethod
    def _pickled(stages: Sequence[Stage]) -> bytes:
        import ray.cloudpickle as cloudpickle  # stages defined in a script or a test are sent by value

        try:
            data: bytes = cloudpickle.dumps(list(stages))  # type: ignore[no-untyped-call]
        except Exception as exc:  # noqa: BLE001 - whatever pickling raises, say which stage
            raise InvalidParameterError(f"the ingest stages cannot be sent to Ray workers ({type(exc).__name__}: "
                                        f"{exc}); a stage must be picklable to run with --runner ray") from exc
        return data

    def _start(self, ray: Any) -> bool:  # noqa: ANN401
        """Connect to the cluster, or start a local Ray; returns whether this call started it."""
        if ray.is_initialized():
            return False
        quiet = {"logging_level": logging.ERROR, "log_to_driver": False, "include_dashboard": False}
        with _quiet(), _environ(RAY_BACKEND_LOG_LEVEL=os.environ.get("RAY_BACKEND_LOG_LEVEL", "fatal")):
            if self.address is not None:
                ray.init(address=self.address, **quiet)
            else:
                cores = os.cpu_count() or 1
                # The cores for the embedding actors, and one slot more for the read tasks (a
                # few per cent of the work: docs/scale.md), which share the cores.
                ray.init(num_cpus=max(cores, self.workers or 1) + 1, object_store_memory=LOCAL_OBJECT_STORE,
                         _node_ip_address="127.0.0.1", **quiet)  # a local Ray talks to itself on loopback only
        return True

    def _execute(self, ray: Any, pipeline: IngestPipeline, work: list[Work], stages: bytes,  # noqa: ANN401
                 run: IngestRun, limit: int, total: int | None) -> None:
        from ray.data import ActorPoolStrategy, DataContext

        c = pipeline.c
        remote, local = pipeline.phases().away_from_writer()
        gpu = self._gpu_actors(ray, c)
        workers, cpus = self._actors(ray, gpu)
        with _quiet():
            context = DataContext.get_current()
            context.enable_progress_bars = False  # the caller's progress is the one bar
            context.print_on_execution_start = False
        run.progress.stage("Reading", total)
        if not work:
            pipeline.finish([], run)
            return
        rows = [{"work": pickle.dumps((item, run.facts(item.tenant, _document_id(item))))} for item in work]
        with _relaying(ray, run.progress) as relay, _quiet():
            spec = _Spec(uuid.uuid4().hex, str(c.workspace), c.settings, c.given_embedder, stages, run.at, relay)
            env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED)}
            where = {"runtime_env": {"env_vars": env}} if env else {}
            # Retries are bounded (Ray Data's default is forever): a file that kills its worker
            # every time fails the job after RETRIES tries instead of hanging it.
            dataset = ray.data.from_items(rows).map_batches(
                _read, fn_kwargs={"spec": spec}, batch_size=READ_BATCH, batch_format="pyarrow", num_cpus=1,
                max_retries=RETRIES, **where)
            actor: dict[str, Any] = {"num_gpus": 1} if gpu else {"num_cpus": cpus}
            dataset = dataset.map_batches(
                _Embedding, fn_constructor_kwargs={"spec": spec, "stages": [i for i, s in enumerate(pipeline.stages)
                                                              if any(s is r for r in remote)],
                                                   "threads": None if gpu else cpus},
                batch_size=EMBED_BATCH, batch_format="pyarrow", compute=ActorPoolStrategy(size=workers),
                max_restarts=RETRIES, max_task_retries=RETRIES, **actor, **where)
            done = self._collect(dataset, pipeline, run, local, limit)
        pipeline.finish(done, run)

    @staticmethod
    def _collect(dataset: Any, pipeline: IngestPipeline, run: IngestRun, local: Sequence[Stage],  # noqa: ANN401
                 limit: int) -> list[Work]:
        """The documents as the actors finish them, written in batches of about ``limit`` rows."""
        pending: list[Work] = []
        size = 0
        done: list[Work] = []
        try:
            for batch in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
                for blob, report in _rows(batch):
                    if report is not None:
                        merge_report(run.report, pickle.loads(report))
                    if blob is None:
                        continue
                    item: Work = pickle.loads(blob)
                    pending.append(item)
                    size += item.size()
                    if size >= limit:
                        done.extend(pipeline.run_batch(local, pending, run))
                        pending, size = [], 0
        except RagloomError:
            raise
        except Exception as exc:
            raise DistributedIngestError(
                f"the Ray ingest failed ({_cause(exc)}); {len(done)} documents of this run "
                "landed whole, nothing else was written; run the command again to finish (unchanged files are "
                "skipped)") from exc
        done.extend(pipeline.run_batch(local, pending, run))
        return done

    @staticmethod
    def _gpu_actors(ray: Any, c: Components) -> bool:  # noqa: ANN401
        """Embedding actors take a GPU each when the cluster has GPUs and the embedder runs on
        torch (``embedding.provider = "sentence-transformers"``, device auto or cuda); the ONNX
        embedder runs on CPUs."""
        from ragloom.embed import provider_name

        e = c.settings.embedding
        return (c.given_embedder is None and float(ray.cluster_resources().get("GPU", 0)) >= 1
                and provider_name(e) == "sentence-transformers" and e.device in ("auto", "cuda"))

    def _actors(self, ray: Any, gpu: bool) -> tuple[int, int]:  # noqa: ANN401
        """(embedding actors, CPUs each): a GPU each, or the cluster's CPUs less one for the
        read tasks, shared out (two cores and one worker: one actor running two ONNX sessions)."""
        resources: Mapping[str, float] = ray.cluster_resources()
        gpus, spare = int(resources.get("GPU", 0)), max(1, int(resources.get("CPU", 2)) - 1)
        workers = self.workers or (max(1, gpus) if gpu else spare)
        have, kind = (gpus, "GPUs") if gpu else (spare, "CPUs (one more is kept for reading)")
        if workers > have and (gpu or self.address is not None):
            raise InvalidParameterError(f"workers ({workers}) is more than the Ray cluster has {kind}: {have}; "
                                        f"use --workers {have} or fewer")
        return workers, 1 if gpu else max(1, spare // workers)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Ray's and Ray Data's routine lines (deprecations, "execution finished", a forked child
    of a process that loaded LanceDB) kept off the terminal: the ingest bar says what happens."""
    loggers = [logging.getLogger(name) for name in ("ray", "ray.data")]
    levels = [logger.level for logger in loggers]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*deprecated.*")
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels, strict=True):
                logger.setLevel(level)


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Variables set while Ray starts (its processes read them then), restored after."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _cause(exc: BaseException) -> str:
    """The innermost cause of a Ray error, in one line without terminal colours."""
    seen = 0
    while seen < 10:
        inner = exc.__cause__ or getattr(exc, "cause", None)
        if not isinstance(inner, BaseException) or inner is exc:
            break
        exc, seen = inner, seen + 1
    lines = [line for line in re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines() if line.strip()]
    line = lines[-1].strip() if lines else ""
    return f"{type(exc).__name__}: {line[:240]}{'…' if len(line) > 240 else ''}"


def runner(name: str, *, address: str | None = None, workers: int | None = None) -> RayRunner | None:
    """The runner named ``local`` (None: the pipeline's own loop) or ``ray``."""
    if name == "local":
        if address is not None or workers is not None:
            raise InvalidParameterError("address and workers are options of the ray runner (runner='ray')")
        return None
    if name == "ray":
        return RayRunner(address=address, workers=workers)
    raise InvalidParameterError(f"unknown ingest runner {name!r}; choose one of: local, ray")


__all__ = ["RayRunner", "merge_report", "runner"]
