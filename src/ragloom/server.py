"""The HTTP API: ``ragloom serve`` keeps one :class:`~ragloom.engine.Engine` warm in a process
and answers JSON over HTTP (FastAPI on uvicorn, the ``serve`` extra).

Every body is what the CLI's ``--json`` prints for the same operation, written by the same
``json.dumps(..., default=str)``, so a client can switch between the two. Endpoints are plain
(sync) functions: FastAPI runs them in its thread pool, so a long ingest never blocks the event
loop, and the store serialises writers itself (threads and processes alike).

Errors are ``{"error": "<type>", "detail": "<message>"}``: a ragloom user error is 400, an
unknown chunk 404, a workspace held by another writer 503, a failed LLM provider 502; a bug is
a 500 with the same shape, its traceback in the server's log only.

This module imports FastAPI and uvicorn only inside :func:`create_app` and :func:`serve`, so
``import ragloom`` and the CLI work without the extra.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the endpoints' annotations at
# definition time, and they name classes imported inside create_app.

import json
import logging
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ragloom.errors import (
    ConfigError,
    InvalidParameterError,
    LLMError,
    LoadError,
    MissingExtraError,
    RagloomError,
    UnknownChunkError,
    WorkspaceLockedError,
)

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ragloom.engine import Engine

__all__ = ["AskBody", "GenerateBody", "IngestBody", "QueryBody", "create_app", "error_status", "serve"]

log = logging.getLogger("ragloom.server")

#: The port ``ragloom serve`` listens on unless told otherwise.
DEFAULT_PORT = 8000
#: The parameters of Engine.query and Engine.ask that ``options`` must not repeat (a mode
#: option named ``k`` would otherwise reach Python as a duplicate keyword, a TypeError).
_NAMED = frozenset({"text", "question", "k", "mode", "lenses", "tenant", "as_of", "budget", "organize", "optimize",
                    "writer", "on_text", "dated_from", "dated_to"})


def _check_extra() -> None:
    import importlib.util

    for package, module in (("fastapi", "fastapi"), ("uvicorn", "uvicorn")):
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(package, "serve", "ragloom serve")


# -- request bodies (pydantic at the edge) -------------------------------------------------------


class _Body(BaseModel):
    # A misspelt field is an error (422), not silently ignored.
    model_config = ConfigDict(extra="forbid")


_LENSES = Field(None, description="Only these lenses (none: every lens).", examples=[["meetings", "policies"]])
_TENANT = Field(None, description="Tenant (default: the `tenant` setting).")
_AS_OF = Field(None, description="The workspace as it was at this moment of its own history, ISO 8601 "
               "(`2026-03-01T00:00:00Z`): what had been ingested by then; none: now.")
_DATED_FROM = Field(None, description="Only documents dated on or after this day (their own date: front matter or "
                    "file name), like `2025-01-01`.")
_DATED_TO = Field(None, description="Only documents dated on or before this day.")
_MODEL = Field(None, description="The model to write with (over `llm.model`); none: the configured writer.")
_STRONGEST = Field(False, description="Write with the strongest configured model (`llm.strongest_model`).")


class IngestBody(_Body):
    """What ``POST /ingest`` reads: files on the server's disk, under one lens."""

    paths: list[str] = Field(min_length=1, description="Files or folders on the server's disk (folders are read "
                             "recursively; relative paths are relative to the server's working folder).",
                             examples=[["examples/materials/engineering"]])
    lens: str = Field(description="The perspective these documents speak from.", examples=["engineering"])
    tenant: str | None = _TENANT
    sync: bool = Field(False, description="Mark documents of this lens under the given folders whose files are "
                       "gone as deleted.")


class QueryBody(_Body):
    """What ``POST /query`` reads: ``ragloom query``'s arguments."""

    text: str = Field(description="What to look for.", examples=["When will the QuickBooks integration ship?"])
    k: int | None = Field(None, description="Number of results (at least 1; default: retrieval.k, or "
                          "context_optimization.candidates when a context is built).")
    mode: str | None = Field(None, description="vector, bm25, hybrid, balanced, graph, window, dynamic or an "
                             "installed mode (default: retrieval.mode).", examples=["hybrid"])
    lenses: list[str] | None = _LENSES
    tenant: str | None = _TENANT
    as_of: str | None = _AS_OF
    dated_from: str | None = _DATED_FROM
    dated_to: str | None = _DATED_TO
    budget: int | None = Field(None, description="Build the optimised context window for this many tokens.")
    organize: str | None = Field(None, description="Build the optimised context window organised by relevance, "
                                 "temporal, topical, hierarchical, edges, lens or auto.")
    optimize: bool = Field(False, description="Build the optimised context window with the default budget "
                           "(`context` in the result; the CLI's --show-context).")
    options: dict[str, Any] = Field(default_factory=dict, description="The mode's own options, e.g. "
                                    "`{\"threshold\": 0.7}` for dynamic, `{\"chunks_per_lens\": 2}` for balanced; an "
                                    "option the mode does not have is a 400 naming the valid ones.")


class AskBody(_Body):
    """What ``POST /ask`` reads: ``ragloom ask``'s arguments."""

    question: str = Field(description="The question.", examples=["What blocks the catalog integration?"])
    k: int | None = Field(None, description="Candidates retrieved before the context is optimised.")
    mode: str | None = Field(None, description="The retrieval mode (default: retrieval.mode).")
    lenses: list[str] | None = _LENSES
    tenant: str | None = _TENANT
    as_of: str | None = _AS_OF
    dated_from: str | None = _DATED_FROM
    dated_to: str | None = _DATED_TO
    budget: int | None = Field(None, description="Tokens of context the writer reads.")
    model: str | None = _MODEL
    strongest: bool = _STRONGEST
    options: dict[str, Any] = Field(default_factory=dict, description="The retrieval mode's own options.")


class GenerateBody(_Body):
    """What ``POST /generate`` reads: ``ragloom generate``'s arguments."""

    context: str = Field("", description="What the report should keep in mind (a focus, a goal); asked as one "
                         "more query.")
    queries: list[str] | None = Field(None, description="The report's queries (default: seed 000's six).")
    title: str | None = Field(None, description="The report's title.")
    lenses: list[str] | None = _LENSES
    tenant: str | None = _TENANT
    as_of: str | None = _AS_OF
    budget: int | None = Field(None, description="Tokens of context per section.")
    model: str | None = _MODEL
    strongest: bool = _STRONGEST


# -- errors and JSON --------------------------------------------------------------------------------


def error_status(exc: RagloomError) -> int:
    """The HTTP status for a ragloom error."""
    if isinstance(exc, UnknownChunkError):  # before InvalidParameterError, its base
        return 404
    if isinstance(exc, WorkspaceLockedError):  # another writer: try again later
        return 503
    if isinstance(exc, InvalidParameterError | ConfigError | LoadError):
        return 400
    if isinstance(exc, LLMError):  # the model's provider failed, not this server
        return 502
    if isinstance(exc, MissingExtraError):
        return 501
    return 500


def _dumps(data: Any) -> bytes:  # noqa: ANN401 - anything json can write
    # The CLI's --json writer: dates and paths as str(), UTF-8 as is.
    return json.dumps(data, ensure_ascii=False, default=str).encode("utf-8")


def _options(options: dict[str, Any]) -> dict[str, Any]:
    clash = sorted(_NAMED & options.keys())
    if clash:
        raise InvalidParameterError(f"options {', '.join(map(repr, clash))} repeat parameters of the request; "
                                    "give them as fields of the body, not inside options")
    return options


# -- the app ----------------------------------------------------------------------------------------


class _Warmth:
    """Whether the embedding model is loaded yet (the server loads it once, at start)."""

    def __init__(self) -> None:
        self.loaded = threading.Event()
        self.loading = False
        self.error: str | None = None

    def status(self) -> str:
        return "error" if self.error else "loading" if self.loading and not self.loaded.is_set() else "ok"

    def warm(self, engine: "Engine") -> None:
        try:
            engine.embedder.embed_query("warm up")  # loads the model: the seconds every CLI call pays
            engine.store  # noqa: B018 - opens the tables
        except Exception as exc:  # noqa: BLE001 - reported by /health, and again by the first query
            log.error("loading the embedding model failed: %s", exc)
            self.error = f"{type(exc).__name__}: {exc}"
            return
        self.loaded.set()


def create_app(engine: "Engine", *, warm: bool = True) -> "FastAPI":
    """The HTTP API over ``engine`` (one engine for the app's lifetime).

    With ``warm``, the embedding model is loaded in a background thread when the app starts, so
    that the first question does not pay for it; ``GET /health`` says when it is loaded.
    """
    _check_extra()
    from fastapi import FastAPI, Query
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException
    from starlette.requests import Request

    from ragloom import __version__

    class JSON(JSONResponse):
        def render(self, content: Any) -> bytes:  # noqa: ANN401
            return _dumps(content)

    def failure(status: int, error: str, detail: str, **extra: Any) -> JSON:  # noqa: ANN401
        headers = {"Retry-After": "5"} if status == 503 else None
        return JSON({"error": error, "detail": detail, **extra}, status_code=status, headers=headers)

    warmth = _Warmth()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if warm:
            warmth.loading = True
            threading.Thread(target=warmth.warm, args=(engine,), name="ragloom-warm-up", daemon=True).start()
        yield

    app = FastAPI(
        title="ragloom",
        version=__version__,
        summary="A local-first context engine for retrieval-augmented generation, over HTTP.",
        description="One warm engine over one workspace. Bodies are what `ragloom ... --json` prints for the same "
                    "operation. Errors are `{\"error\": type, \"detail\": message}`: 400 for bad input, 404 for an "
                    "unknown chunk, 503 while another process writes the workspace.",
        default_response_class=JSON,
        lifespan=lifespan,
    )
    app.state.engine = engine
    app.state.warmth = warmth

    @app.exception_handler(RagloomError)
    async def ragloom_error(_: Request, exc: RagloomError) -> JSON:
        return failure(error_status(exc), type(exc).__name__, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_body(_: Request, exc: RequestValidationError) -> JSON:
        errors = exc.errors()
        lines = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in errors]
        return failure(422, "RequestValidationError", "; ".join(lines),
                       errors=[{k: e[k] for k in ("loc", "msg", "type") if k in e} for e in errors])

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSON:
        try:  # 404 NotFound, 405 MethodNotAllowed: the same shape as every other error
            name = HTTPStatus(exc.status_code).phrase.replace(" ", "").replace("-", "")
        except ValueError:
            name = "HTTPException"
        return failure(exc.status_code, name, str(exc.detail))

    @app.exception_handler(Exception)
    async def internal_error(_: Request, exc: Exception) -> JSON:
        # A bug, not bad input: the client gets one line; Starlette raises the exception on, and
        # uvicorn writes its traceback to the server's log.
        detail = f"internal error ({str(exc)[:300]}); the server's log has the traceback"
        return failure(500, type(exc).__name__, detail)

    def reply(data: Any) -> JSON:  # noqa: ANN401
        return JSON(data)

    def writer(model: str | None, strongest: bool) -> Any:  # noqa: ANN401 - a Writer
        return engine.writing.writer(model=model, strongest=strongest)

    lens_query = Query(None, alias="lens", description="Only these lenses (repeat: ?lens=a&lens=b).")
    tenant_query = Query(None, description="Tenant (default: the `tenant` setting).")

    @app.get("/health", tags=["server"])
    def health() -> JSON:
        """Whether the server is up, its workspace, how many documents it holds and whether the
        embedding model is loaded (`status`: `ok`, `loading` while it loads, `error` if it failed)."""
        stats = engine.stats()
        return reply({"status": warmth.status(), "workspace": str(engine.workspace.path),
                      "documents": stats["documents"], "model_loaded": warmth.loaded.is_set(),
                      "model_error": warmth.error, "embedder": engine.components.embedder_name,
                      "version": __version__})

    @app.post("/ingest", tags=["write"])
    def ingest(body: IngestBody) -> JSON:
        """Read files or folders on the server's disk into the workspace under a lens (as
        `ragloom ingest --json`); a file that fails is listed in `failed`, the others land."""
        report = engine.ingest(body.paths, lens=body.lens, tenant=body.tenant, sync=body.sync)
        return reply(report.to_dict())

    @app.post("/query", tags=["read"])
    def query(body: QueryBody) -> JSON:
        """Search the workspace (as `ragloom query --json`); with `budget`, `organize` or
        `optimize`, `context` holds the optimised context window."""
        result = engine.query(body.text, k=body.k, mode=body.mode, lenses=body.lenses, tenant=body.tenant,
                              as_of=body.as_of, budget=body.budget, organize=body.organize, optimize=body.optimize,
                              dated_from=body.dated_from, dated_to=body.dated_to, **_options(body.options))
        return reply(result.to_dict())

    @app.post("/ask", tags=["read"])
    def ask(body: AskBody) -> JSON:
        """A written answer citing its sources as [n], every citation checked (as `ragloom ask
        --json`); the offline extractive writer unless `[llm]` names a model."""
        result = engine.ask(body.question, k=body.k, mode=body.mode, lenses=body.lenses, tenant=body.tenant,
                            as_of=body.as_of, budget=body.budget, writer=writer(body.model, body.strongest),
                            dated_from=body.dated_from, dated_to=body.dated_to, **_options(body.options))
        return reply(result.to_dict())

    @app.post("/generate", tags=["write"])
    def generate(body: GenerateBody) -> JSON:
        """The multi-lens synthesis report (as `ragloom generate --json`); also saved under the
        workspace's `reports/`."""
        report = engine.generate(context=body.context, queries=body.queries, title=body.title, tenant=body.tenant,
                                 lenses=body.lenses, as_of=body.as_of, budget=body.budget,
                                 writer=writer(body.model, body.strongest))
        return reply(report.to_dict())

    @app.get("/stats", tags=["read"])
    def stats(tenant: str | None = tenant_query) -> JSON:
        """Documents, chunks and tokens per lens, and how the index was built (as `ragloom stats --json`)."""
        return reply(engine.stats(tenant=tenant))

    @app.get("/graph/stats", tags=["graph"])
    def graph_stats(tenant: str | None = tenant_query) -> JSON:
        """Nodes, edges by type, density, connected components (as `ragloom graph stats --json`)."""
        return reply(engine.graph(tenant=tenant).stats())

    @app.get("/graph/chunks/{chunk_id}", tags=["graph"])
    def graph_show(chunk_id: str, limit: int = Query(15, ge=0, description="Relations to list, strongest first."),
                   tenant: str | None = tenant_query) -> JSON:
        """A chunk's attributes and its relations (as `ragloom graph show --json`); 404 for an unknown id."""
        return reply(engine.graph(tenant=tenant).show(chunk_id, limit=limit))

    @app.get("/backrefs/{chunk_id}", tags=["read"])
    def backrefs(chunk_id: str, limit: int | None = Query(None, ge=1, description="Other chunks per entity."),
                 tenant: str | None = tenant_query) -> JSON:
        """For each entity the chunk mentions, the other chunks that mention it (as `ragloom backrefs --json`)."""
        return reply([r.to_dict() for r in engine.back_references(chunk_id, tenant=tenant, limit=limit)])

    @app.get("/contradictions", tags=["read"])
    def contradictions(topic: str | None = Query(None, description="Only what the chunks about this topic say."),
                       lens: list[str] | None = lens_query,
                       limit: int = Query(20, ge=1, description="At most this many."),
                       tenant: str | None = tenant_query) -> JSON:
        """Statements of different lenses that disagree: dates, numbers, negations (as
        `ragloom contradictions --json`)."""
        found = engine.contradictions(topic=topic, tenant=tenant, limit=limit, lenses=lens)
        return reply([c.to_dict() for c in found])

    @app.get("/history", tags=["read"])
    def history(path: str = Query(description="A document's file path as ingested (on the server's disk)."),
                tenant: str | None = tenant_query) -> JSON:
        """Every version of a document with its change summary, oldest first (as `ragloom history --json`)."""
        return reply(engine.history(path, tenant=tenant))

    @app.get("/entities", tags=["read"])
    def entities(type: str | None = Query(None, description="Only this entity type."),  # noqa: A002
                 lens: str | None = Query(None, description="Only this lens."),
                 limit: int = Query(30, ge=1, description="At most this many, most mentioned first."),
                 tenant: str | None = tenant_query) -> JSON:
        """The entities mentioned in the workspace, most mentioned first (as `ragloom entities --json`)."""
        return reply(engine.entities(tenant=tenant, lens=lens, type=type)[:limit])

    @app.get("/quality", tags=["read"])
    def quality(lens: str | None = Query(None, description="Only this lens."),
                worst: int = Query(10, ge=0, description="How many of the worst chunks to list."),
                tenant: str | None = tenant_query) -> JSON:
        """The distribution of chunk quality scores and the worst chunks (as `ragloom quality --json`)."""
        return reply(engine.quality(tenant=tenant, lens=lens, worst=worst))

    return app


# -- the launcher -----------------------------------------------------------------------------------


@contextmanager
def listening(host: str, port: int) -> Iterator[socket.socket]:
    """A socket bound to ``host:port``, or a ConfigError that says why not (before any model loads)."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r} is not an address of this machine ({exc}); use 127.0.0.1 or 0.0.0.0") \
            from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); is another server there? "
                          "pick another --port") from None
    try:
        yield sock
    finally:
        sock.close()


def serve(workspace: str | Path | None = None, *, config: str | Path | None = None, host: str = "127.0.0.1",
          port: int = DEFAULT_PORT, engine: "Engine | None" = None, log_level: str = "info",
          announce: Callable[[str], None] | None = None) -> None:
    """Serve the HTTP API over ``workspace`` (or ``engine``) on ``host:port`` until Ctrl-C or SIGTERM.

    One process, one engine: its embedding model is loaded once, at start. Port 0 takes any
    free port; ``announce`` (default: print) receives the line that says which.
    """
    _check_extra()
    if not 0 <= port < 65536:
        raise ConfigError(f"--port ({port}) must be between 0 and 65535 (0: any free port)")
    import uvicorn

    from ragloom.engine import Engine

    engine = engine or Engine(workspace, config_file=config)
    server = uvicorn.Server(uvicorn.Config(create_app(engine), log_level=log_level, timeout_graceful_shutdown=10))
    with listening(host, port) as sock:
        bound = sock.getsockname()[1]
        shown = "localhost" if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host
        (announce or _print)(f"ragloom serve: http://{shown}:{bound}  (workspace {engine.workspace.path}; "
                             f"API docs at http://{shown}:{bound}/docs; Ctrl-C to stop)")
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn shut down gracefully, then raised the Ctrl-C again
            pass


def _print(line: str) -> None:
    print(line, flush=True)
