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

import base64
import binascii
import copy
import json
import logging
import re
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator

from ragloom.access import Grant, Keys, Role, allows
from ragloom.config import Settings
from ragloom.errors import (
    AccessDeniedError,
    ConfigError,
    InvalidParameterError,
    LLMError,
    LoadError,
    MissingExtraError,
    RagloomError,
    UnknownChunkError,
    WorkspaceLockedError,
)
from ragloom.ingest.uploads import ingest_uploads, upload_names
from ragloom.load import NAME_PATTERN, validate_name
from ragloom.load.scan import inside
from ragloom.query.request import Query as RagQuery  # fastapi.Query is a query-string parameter

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ragloom.engine import Engine

__all__ = ["AskBody", "Bodies", "GenerateBody", "IngestBody", "QueryBody", "UploadBody", "bodies", "create_app",
           "error_status", "serve"]

log = logging.getLogger("ragloom.server")

#: The port ``ragloom serve`` listens on unless told otherwise.
DEFAULT_PORT = 8000
def _check_extra() -> None:
    MissingExtraError.require("serve", "ragloom serve", {"fastapi": "fastapi", "uvicorn": "uvicorn"})


# -- request bodies (pydantic at the edge) -------------------------------------------------------


class _Body(BaseModel):
    # A misspelt field is an error (422), not silently ignored.
    model_config = ConfigDict(extra="forbid")

    @field_validator("options", mode="after", check_fields=False)
    @classmethod
    def _unicode(cls, value: Any, info: ValidationInfo) -> Any:  # noqa: ANN401 - any option
        # JSON may carry a lone surrogate ("\\ud800"): Python takes it, UTF-8 (LanceDB, the
        # tokenizer, the reply) does not. A str field refuses it itself (pydantic); the values of
        # `options` are Any, so they are walked here: a 422 naming the field, not a 500 later.
        problem = _bad_text(value)
        if problem:
            raise ValueError(f"{info.field_name}: {problem}")
        return value


def _bad_text(value: Any, depth: int = 0) -> str | None:  # noqa: ANN401
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "holds a lone surrogate (like \\ud800), which is not Unicode text; send valid UTF-8"
        return None
    if depth > 32:
        return "is nested too deeply"
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value if isinstance(value, list) else ()
    return next((p for p in (_bad_text(v, depth + 1) for v in items) if p), None)


_LENS_EXAMPLE = ["meetings", "policies"]
_AS_OF = "The workspace as it was at this moment of its own history, ISO 8601 (`2026-03-01T00:00:00Z`): what " \
         "had been ingested by then; none: now."
_MODEL = "The model to write with (over `llm.model`); none: the configured writer."
_STRONGEST = "Write with the strongest configured model (`llm.strongest_model`)."


#: Some character that is not white space (as Python's ``str.strip`` sees it: JSON Schema's
#: ``\s`` leaves out \x1c-\x1f and \x85).
_NOT_BLANK = r"[^\s\x1c-\x1f\x85]"


def _whole(value: Any) -> Any:  # noqa: ANN401 - what JSON gave
    """A JSON integer: ``3`` or ``3.0`` (JSON Schema's integer), never ``true`` or ``"3"``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a whole number")
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _file_names(extensions: tuple[str, ...]) -> str:
    """A JSON Schema pattern (ECMA 262: no inline flags) for a plain, visible file name with one of
    ``extensions``, in any case."""
    def anycase(ext: str) -> str:
        return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in ext)

    # No control character (Unicode's Cc: \x00-\x1f, \x7f-\x9f), no folder, not hidden.
    return rf"^[^./\\\x00-\x1f\x7f-\x9f ][^/\\\x00-\x1f\x7f-\x9f]*({'|'.join(anycase(e) for e in extensions)})$"


@dataclass(frozen=True)
class Bodies:
    """The request bodies, with the bounds of one server's ``[server]`` settings."""

    # Any: FastAPI reads these classes from the endpoints' annotations; mypy cannot follow.
    ingest: Any
    upload: Any
    query: Any
    ask: Any
    generate: Any


def bodies(settings: Settings) -> Bodies:  # noqa: C901 - one class per endpoint
    """The request bodies of a server with these settings: bounded by ``[server]``, each field as
    narrow as the engine takes it, so that a body the schema allows is one the engine accepts
    (but for what only the workspace can say: a lens it lacks, an LLM it is not configured for)."""
    from ragloom.context.organize import strategy_names
    from ragloom.retrieve import mode_names

    limits = settings.server
    max_text = limits.max_text_chars
    Name = Annotated[str, Field(min_length=1, max_length=64, pattern=NAME_PATTERN)]  # noqa: N806 - a type
    DiskPath = Annotated[str, Field(min_length=1, max_length=4096, pattern=r"^[^\x00]+$")]  # noqa: N806
    Short = Annotated[str, Field(max_length=100)]  # noqa: N806
    Mode: Any = Literal[tuple(mode_names())]  # noqa: N806
    Organize: Any = Literal[tuple(strategy_names())]  # noqa: N806
    AsOf = Annotated[str, Field(max_length=40, json_schema_extra={"format": "date-time"})]  # noqa: N806
    Day = Annotated[str, Field(max_length=10, json_schema_extra={"format": "date"})]  # noqa: N806
    # The validator after the bounds: before them, pydantic writes them as "ge"/"le" in the schema.
    K = Annotated[int, Field(ge=1, le=limits.max_k), BeforeValidator(_whole)]  # noqa: N806
    Budget = Annotated[int, Field(ge=settings.context_optimization.reserve_tokens + 1,  # noqa: N806
                                  le=limits.max_budget), BeforeValidator(_whole)]

    def lenses_field() -> Any:  # noqa: ANN401 - a pydantic field
        return Field(None, max_length=100, description="Only these lenses (none: every lens).",
                     examples=[_LENS_EXAMPLE])

    def tenant_field() -> Any:  # noqa: ANN401
        return Field(None, description="Tenant (default: the `tenant` setting; with an API key, the key's tenant, "
                                       "and no other).")

    def as_of_field() -> Any:  # noqa: ANN401
        return Field(None, description=_AS_OF)

    def dated_field(which: str) -> Any:  # noqa: ANN401
        return Field(None, description=f"Only documents dated on or {which} this day (their own date: front matter "
                                       "or file name), like `2025-01-01`.")

    def bounded(value: dict[str, Any]) -> dict[str, Any]:
        for name, option in value.items():
            whole = isinstance(option, int) and not isinstance(option, bool) or \
                isinstance(option, float) and option.is_integer()
            if whole and abs(option) > limits.max_k:
                raise ValueError(f"options.{name[:100]} ({option}) is beyond server.max_k (±{limits.max_k})")
        return value

    # The schema says it too: a whole number among the options is within ±max_k.
    option_value = {"anyOf": [{"type": "integer", "minimum": -limits.max_k, "maximum": limits.max_k},
                              {"not": {"type": "integer"}}]}

    BoundedOptions = Annotated[dict[Annotated[str, Field(max_length=100)], Any], Field(  # noqa: N806
        max_length=50, json_schema_extra={"additionalProperties": option_value},
        description="The mode's own options, e.g. `{\"threshold\": 0.7}` for dynamic, `{\"chunks_per_lens\": 2}` "
                    "for balanced; an option the mode does not have is a 400 naming the valid ones."),
        AfterValidator(bounded)]


    class IngestBody(_Body):
        """What ``POST /ingest`` reads: files on the server's disk, under one lens (an admin key, and
        only under the folders the operator lists in `server.ingest_roots`)."""

        paths: list[DiskPath] = Field(min_length=1, max_length=limits.max_paths,
                                  description="Files or folders on the server's disk under `server.ingest_roots` "
                                  "(folders are read recursively; links are resolved before the check).",
                                  examples=[["/srv/documents/meetings"]])
        lens: Name = Field(description="The perspective these documents speak from.", examples=["meetings"])
        tenant: Name | None = tenant_field()
        sync: bool = Field(False, description="Mark documents of this lens under the given folders whose files are "
                           "gone as deleted.")

    class UploadedFile(_Body):
        """One uploaded file: its name and its content (text, or base64 for PDF and DOCX)."""

        name: str = Field(min_length=1, max_length=255, pattern=_file_names(settings.ingest.extensions),
                          description="The file's name (no folders), with a supported extension.",
                          examples=["2026-03-01-minutes.md"])
        content: str = Field(description="The file's text (Markdown, plain text, HTML), or its bytes in base64 "
                             "(PDF, DOCX) with `encoding` base64.")
        encoding: Literal["text", "base64"] = Field("text", description="How `content` holds the file.")

    class UploadBody(_Body):
        """What ``POST /documents`` reads: files sent in the request, stored under the workspace's
        `uploads/<tenant>/<lens>/` and ingested; a name sent again is a new version of that document."""

        files: list[UploadedFile] = Field(min_length=1, max_length=limits.max_paths)
        lens: Name = Field(description="The perspective these documents speak from.", examples=["meetings"])
        tenant: Name | None = tenant_field()

    class QueryBody(_Body):
        """What ``POST /query`` reads: ``ragloom query``'s arguments."""

        text: str = Field(min_length=1, max_length=max_text, description="What to look for.",
                          examples=["When will the integration ship?"])
        k: K | None = Field(None, description="Number of results (default: retrieval.k, or "
                            "context_optimization.candidates when a context is built).")
        mode: Mode | None = Field(None, description="vector, bm25, hybrid, balanced, graph, window, dynamic or an "
                                  "installed mode (default: retrieval.mode).", examples=["hybrid"])
        lenses: list[Name] | None = lenses_field()
        tenant: Name | None = tenant_field()
        as_of: AsOf | None = as_of_field()
        dated_from: Day | None = dated_field("after")
        dated_to: Day | None = dated_field("before")
        budget: Budget | None = Field(None, description="Build the optimised context window for this many tokens.")
        organize: Organize | None = Field(None, description="Build the optimised context window organised by "
                                       "relevance, temporal, topical, hierarchical, edges, lens or auto.")
        optimize: bool = Field(False, description="Build the optimised context window with the default budget "
                               "(`context` in the result; the CLI's --show-context).")
        options: BoundedOptions = Field(default_factory=dict)

    class AskBody(_Body):
        """What ``POST /ask`` reads: ``ragloom ask``'s arguments."""

        question: str = Field(min_length=1, max_length=max_text, pattern=_NOT_BLANK, description="The question.",
                              examples=["What blocks the integration?"])
        k: K | None = Field(None, description="Candidates retrieved before the context is optimised.")
        mode: Mode | None = Field(None, description="The retrieval mode (default: retrieval.mode).")
        lenses: list[Name] | None = lenses_field()
        tenant: Name | None = tenant_field()
        as_of: AsOf | None = as_of_field()
        dated_from: Day | None = dated_field("after")
        dated_to: Day | None = dated_field("before")
        budget: Budget | None = Field(None, description="Tokens of context the writer reads.")
        model: Short | None = Field(None, description=_MODEL)
        strongest: bool = Field(False, description=_STRONGEST)
        options: BoundedOptions = Field(default_factory=dict)

    class GenerateBody(_Body):
        """What ``POST /generate`` reads: ``ragloom generate``'s arguments."""

        context: str = Field("", max_length=max_text, description="What the report should keep in mind (a focus, a "
                             "goal); asked as one more query.")
        queries: list[Annotated[str, Field(min_length=1, max_length=max_text)]] | None = Field(
            None, max_length=limits.max_queries, description="The report's queries (default: six broad ones: "
            "strategy, priorities and timeline, architecture, needs, constraints, risks).")
        title: Annotated[str, Field(max_length=300)] | None = Field(None, description="The report's title.")
        lenses: list[Name] | None = lenses_field()
        tenant: Name | None = tenant_field()
        as_of: AsOf | None = as_of_field()
        budget: Budget | None = Field(None, description="Tokens of context per section.")
        model: Short | None = Field(None, description=_MODEL)
        strongest: bool = Field(False, description=_STRONGEST)

    return Bodies(IngestBody, UploadBody, QueryBody, AskBody, GenerateBody)


_DEFAULT = bodies(Settings())
#: The bodies with the default bounds (a server builds its own from its settings).
IngestBody, UploadBody, QueryBody, AskBody, GenerateBody = (
    _DEFAULT.ingest, _DEFAULT.upload, _DEFAULT.query, _DEFAULT.ask, _DEFAULT.generate)


# -- errors and JSON --------------------------------------------------------------------------------


def error_status(exc: RagloomError) -> int:
    """The HTTP status for a ragloom error."""
    if isinstance(exc, UnknownChunkError):  # before InvalidParameterError, its base
        return 404
    if isinstance(exc, AccessDeniedError):
        return 403
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


@dataclass(frozen=True)
class Caller:
    """Who sent a request: the grant of its API key, or None on a server without keys."""

    grant: Grant | None

    def tenant(self, requested: str | None) -> str | None:
        """The tenant the request reads and writes: the key's own (naming another is a 403)."""
        if self.grant is None:
            return requested
        if requested is not None and requested != self.grant.tenant:
            from starlette.exceptions import HTTPException

            raise HTTPException(403, f"tenant {requested[:64]!r}: this API key belongs to another tenant and sees "
                                     "only its own; leave tenant out or use a key of that tenant")
        return self.grant.tenant


def _uploads(files: list[Any]) -> list[tuple[str, bytes]]:  # noqa: ANN401 - UploadedFile bodies
    """The stored name and bytes of each uploaded file (see :mod:`ragloom.ingest.uploads`: a
    second file of one name is kept as ``name (2).ext``); a refused name is a 400 naming it."""
    names = upload_names([f.name for f in files])
    refused = [n.refused for n in names if n.refused]
    if refused:
        raise InvalidParameterError("; ".join(refused[:5]) + ("" if len(refused) <= 5 else f"; and {len(refused) - 5} "
                                                              "more") + ": rename the files and send them again")
    contents = []
    for f in files:
        if f.encoding == "text":
            contents.append(f.content.encode("utf-8"))
            continue
        try:
            contents.append(base64.b64decode(f.content, validate=True))
        except (binascii.Error, ValueError):
            raise InvalidParameterError(f"upload {f.name[:80]!r}: content is not base64 (encoding base64); encode "
                                        "the file's bytes as standard base64") from None
    return [(n.name, c) for n, c in zip(names, contents, strict=True)]


def create_app(engine: "Engine", *, warm: bool = True, host: str = "127.0.0.1") -> "FastAPI":
    """The HTTP API over ``engine`` (one engine for the app's lifetime), for a server bound to
    ``host`` (the Host names it answers; docs/security.md).

    With ``warm``, the embedding model is loaded in a background thread when the app starts, so
    that the first question does not pay for it; ``GET /health`` says when it is loaded.
    """
    _check_extra()
    from fastapi import Depends, FastAPI, Query, Security
    from fastapi import Path as FastPath
    from fastapi.exceptions import RequestValidationError
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse, JSONResponse
    from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
    from starlette.exceptions import HTTPException
    from starlette.requests import Request

    from ragloom import __version__
    from ragloom.httpguard import Guard, host_names

    limits = engine.settings.server
    body = bodies(engine.settings)
    keys = Keys(engine.workspace.path)

    class JSON(JSONResponse):
        def render(self, content: Any) -> bytes:  # noqa: ANN401
            return _dumps(content)

    def failure(status: int, error: str, detail: str, headers: dict[str, str] | None = None,
                **extra: Any) -> JSON:  # noqa: ANN401
        headers = {**(headers or {}), **({"Retry-After": "5"} if status == 503 else {})}
        return JSON({"error": error, "detail": detail, **extra}, status_code=status, headers=headers or None)

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
                    "operation. Errors are `{\"error\": type, \"detail\": message}`: 400 for bad input, 401 without "
                    "a valid API key (when the workspace has keys), 403 for what the key may not do, 404 for an "
                    "unknown chunk, 413 for a body over `server.max_body_mb`, 422 for a body that breaks its "
                    "schema, 503 while another process writes the workspace.",
        default_response_class=JSON,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.engine = engine
    app.state.warmth = warmth
    app.add_middleware(Guard, hosts=host_names(host, limits.trusted_hosts), origins=limits.cors_origins,
                       max_body=int(limits.max_body_mb * 2**20))

    @app.exception_handler(RagloomError)
    async def ragloom_error(_: Request, exc: RagloomError) -> JSON:
        return failure(error_status(exc), type(exc).__name__, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_body(_: Request, exc: RequestValidationError) -> JSON:
        errors = exc.errors()
        lines = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in errors]
        return failure(422, "RequestValidationError", "; ".join(lines)[:2000],
                       errors=[{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))[:500],
                                "type": str(e.get("type", ""))} for e in errors[:50]])

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSON:
        try:  # 404 NotFound, 405 MethodNotAllowed: the same shape as every other error
            name = HTTPStatus(exc.status_code).phrase.replace(" ", "").replace("-", "")
        except ValueError:
            name = "HTTPException"
        return failure(exc.status_code, name, str(exc.detail), headers=getattr(exc, "headers", None))

    bearer = HTTPBearer(auto_error=False, description="An API key from `ragloom keys create` (needed when the "
                        "workspace has keys): `Authorization: Bearer rlk_...`.")

    def caller(needed: Role) -> Callable[..., Caller]:
        def check(credentials: HTTPAuthorizationCredentials | None = Security(bearer)) -> Caller:  # noqa: B008
            if not keys.configured:
                return Caller(None)
            grant = keys.verify(credentials.credentials if credentials else None)
            if grant is None:
                raise HTTPException(401, "this server needs an API key: send `Authorization: Bearer <key>` with a "
                                         "key from `ragloom keys create`" if credentials is None else
                                         "the API key is not valid (revoked, mistyped or of another workspace)",
                                    headers={"WWW-Authenticate": "Bearer"})
            if not allows(grant.role, needed):
                raise HTTPException(403, f"the API key {grant.name!r} has the role {grant.role}; this needs "
                                         f"{needed}: ask the operator for a key with that role")
            return Caller(grant)
        return check

    # The bodies of this server's bounds, as types FastAPI reads (mypy sees only Any).
    Ingest, Upload, Query_, Ask, Generate = body.ingest, body.upload, body.query, body.ask, body.generate  # noqa: N806
    reader, writer_role, admin = Depends(caller("read")), Depends(caller("write")), Depends(caller("admin"))

    def reply(data: Any) -> JSON:  # noqa: ANN401
        return JSON(data)

    def writer(model: str | None, strongest: bool) -> Any:  # noqa: ANN401 - a Writer
        return engine.writing.writer(model=model, strongest=strongest)

    error: dict[str, Any] = {"model": ErrorBody, "description": "An error: `{\"error\": type, \"detail\": message}`."}
    common: dict[int | str, dict[str, Any]] = {code: {**error, "description": why} for code, why in (
        (400, "Bad input the schema cannot say (an unknown mode or lens, a bad date)."),
        (401, "No valid API key, on a server whose workspace has keys."),
        (403, "The key's role or tenant does not allow this; or a browser page of another origin."),
        (413, "The body is larger than `server.max_body_mb`."),
        (421, "The Host header is not a name of this server (`server.trusted_hosts`)."),
        (422, "The body or a parameter breaks the schema; `errors` lists each problem with its field."),
        (500, "A bug; the server's log has the traceback."),
        (503, "Another process writes the workspace; try again after `Retry-After` seconds."))}
    chunk: dict[int | str, dict[str, Any]] = {**common, 404: {**error, "description": "No chunk has this id."}}
    writes: dict[int | str, dict[str, Any]] = {**common, 501: {**error, "description": "An extra this needs is not installed."},
              502: {**error, "description": "The LLM provider failed."}}

    # Query strings are bounded so that a URL stays within what the HTTP server reads (16 KiB of
    # request line and headers, at up to 12 bytes a character once percent-encoded).
    lens_query = Query(None, alias="lens", max_length=20, description="Only these lenses (repeat: ?lens=a&lens=b).")
    tenant_query = Query(None, max_length=64, pattern=NAME_PATTERN, description="Tenant (default: the `tenant` setting; with an API key, "
                         "the key's tenant).")

    def count(default: int | None, description: str) -> Any:  # noqa: ANN401 - a FastAPI parameter
        return Query(default, ge=1, le=limits.max_k, description=description)

    LensName = Annotated[str, Field(max_length=64, pattern=NAME_PATTERN)]  # noqa: N806

    docs_assets = _docs_assets()
    if docs_assets is not None:
        from starlette.staticfiles import StaticFiles

        app.mount("/docs-assets", StaticFiles(directory=docs_assets), name="docs-assets")

        @app.get("/docs", include_in_schema=False)
        def docs() -> HTMLResponse:
            return get_swagger_ui_html(openapi_url="/openapi.json", title="ragloom API",
                                       swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                       swagger_css_url="/docs-assets/swagger-ui.css",
                                       swagger_favicon_url="/docs-assets/favicon.png")

    @app.get("/health", tags=["server"], responses={421: common[421], 500: common[500]})
    def health() -> JSON:
        """Whether the server is up and the embedding model loaded (`status`: `ok`, `loading` while it
        loads, `error` if it failed); cheap, and open without a key. On a server without keys it also
        names the workspace and counts the default tenant's documents."""
        data: dict[str, Any] = {"status": warmth.status(), "model_loaded": warmth.loaded.is_set(),
                                "model_error": warmth.error, "embedder": engine.components.embedder_name,
                                "version": __version__}
        if not keys.configured:
            data = {"status": data["status"], "workspace": str(engine.workspace.path),
                    "documents": engine.store.document_count(engine.components.tenant(None)), **data}
        return reply(data)

    @app.post("/ingest", tags=["write"], responses=common)
    def ingest(request: Ingest, who: Caller = admin) -> JSON:  # type: ignore[valid-type]
        """Read files or folders on the server's disk into the workspace under a lens (as
        `ragloom ingest --json`): only under the folders in `server.ingest_roots` (none by default:
        upload with `POST /documents` instead), with an admin key where the workspace has keys. A
        file that fails is listed in `failed`, the others land."""
        r: Any = request
        roots = limits.ingest_roots
        if not roots:
            raise HTTPException(403, "this server reads no folders of its disk (server.ingest_roots is empty); send "
                                     "the files with POST /documents, or ask the operator to list a folder")
        outside = [p for p in r.paths if not inside(p, roots)]
        if outside:
            raise HTTPException(403, f"{outside[0][:200]!r} is outside the folders this server may read "
                                     f"(server.ingest_roots: {', '.join(roots)}); links are resolved first")
        report = engine.ingest(r.paths, lens=r.lens, tenant=who.tenant(r.tenant),
                               sync=r.sync, within=roots)
        return reply(report.to_dict())

    @app.post("/documents", tags=["write"], responses=common)
    def upload(request: Upload, who: Caller = writer_role) -> JSON:  # type: ignore[valid-type]
        """Upload files and ingest them under a lens (as `ragloom ingest --json`): each is kept under
        the workspace's `uploads/<tenant>/<lens>/` and is a document there; the same name sent again
        is a new version of it, and a second file of one name in a request is kept as `name (2).ext`.
        A file the ingest refuses is removed again (an earlier file of its name put back) and
        listed in `failed`."""
        r: Any = request
        files = _uploads(r.files)
        tenant = engine.components.tenant(who.tenant(r.tenant))
        report = ingest_uploads(engine, files, lens=validate_name("lens", r.lens), tenant=tenant)
        return reply(report.to_dict())

    @app.post("/query", tags=["read"], responses=common)
    def query(request: Query_, who: Caller = reader) -> JSON:  # type: ignore[valid-type]
        """Search the workspace (as `ragloom query --json`); with `budget`, `organize` or
        `optimize`, `context` holds the optimised context window."""
        r: Any = request
        result = engine.query(RagQuery.build(r.text, k=r.k, mode=r.mode, lenses=r.lenses, tenant=who.tenant(r.tenant),
                                          as_of=r.as_of, budget=r.budget, organize=r.organize, optimize=r.optimize,
                                          dated_from=r.dated_from, dated_to=r.dated_to, options=r.options))
        return reply(result.to_dict())

    @app.post("/ask", tags=["read"], responses=writes)
    def ask(request: Ask, who: Caller = reader) -> JSON:  # type: ignore[valid-type]
        """A written answer citing its sources as [n], every citation checked (as `ragloom ask
        --json`); the offline extractive writer unless `[llm]` names a model."""
        r: Any = request
        question = RagQuery.build(r.question, k=r.k, mode=r.mode, lenses=r.lenses, tenant=who.tenant(r.tenant),
                               as_of=r.as_of, budget=r.budget, dated_from=r.dated_from, dated_to=r.dated_to,
                               options=r.options)
        result = engine.ask(question, writer=writer(r.model, r.strongest))
        return reply(result.to_dict())

    @app.post("/generate", tags=["write"], responses=writes)
    def generate(request: Generate, who: Caller = writer_role) -> JSON:  # type: ignore[valid-type]
        """The multi-lens synthesis report (as `ragloom generate --json`); also saved under the
        workspace's `reports/`."""
        r: Any = request
        report = engine.generate(context=r.context, queries=r.queries, title=r.title, tenant=who.tenant(r.tenant),
                                 lenses=r.lenses, as_of=r.as_of, budget=r.budget, writer=writer(r.model, r.strongest))
        return reply(report.to_dict())

    @app.get("/stats", tags=["read"], responses=common)
    def stats(tenant: str | None = tenant_query, who: Caller = reader) -> JSON:
        """Documents, chunks and tokens per lens, and how the index was built (as `ragloom stats --json`)."""
        return reply(engine.stats(tenant=who.tenant(tenant)))

    @app.get("/graph/stats", tags=["graph"], responses=common)
    def graph_stats(tenant: str | None = tenant_query, who: Caller = reader) -> JSON:
        """Nodes, edges by type, density, connected components (as `ragloom graph stats --json`)."""
        return reply(engine.graph(tenant=who.tenant(tenant)).stats())

    @app.get("/graph/chunks/{chunk_id}", tags=["graph"], responses=chunk)
    def graph_show(chunk_id: str = FastPath(max_length=200), tenant: str | None = tenant_query,
                   limit: int = Query(15, ge=0, le=limits.max_k,
                                      description="Relations to list, strongest first."),
                   who: Caller = reader) -> JSON:
        """A chunk's attributes and its relations (as `ragloom graph show --json`); 404 for an unknown id."""
        return reply(engine.graph(tenant=who.tenant(tenant)).show(chunk_id, limit=limit))

    @app.get("/backrefs/{chunk_id}", tags=["read"], responses=chunk)
    def backrefs(chunk_id: str = FastPath(max_length=200), tenant: str | None = tenant_query,
                 limit: int | None = count(None, "Other chunks per entity."),
                 who: Caller = reader) -> JSON:
        """For each entity the chunk mentions, the other chunks that mention it (as `ragloom backrefs --json`)."""
        return reply([r.to_dict() for r in engine.back_references(chunk_id, tenant=who.tenant(tenant), limit=limit)])

    @app.get("/contradictions", tags=["read"], responses=common)
    def contradictions(topic: str | None = Query(None, max_length=500,
                                                 description="Only what the chunks about this topic say."),
                       lens: list[LensName] | None = lens_query,
                       limit: int = count(20, "At most this many."),
                       tenant: str | None = tenant_query, who: Caller = reader) -> JSON:
        """Statements that disagree: dates, numbers, negations, between lenses and over time (as
        `ragloom contradictions --json`)."""
        found = engine.contradictions(topic=topic, tenant=who.tenant(tenant), limit=limit, lenses=lens)
        return reply([c.to_dict() for c in found])

    @app.get("/history", tags=["read"], responses=common)
    def history(path: str = Query(max_length=1000, pattern=r"^[^\x00]+$", description="A document's file path as "
                                  "ingested (on the server's disk)."),
                tenant: str | None = tenant_query, who: Caller = reader) -> JSON:
        """Every version of a document with its change summary, oldest first (as `ragloom history --json`)."""
        return reply(engine.history(path, tenant=who.tenant(tenant)))

    @app.get("/entities", tags=["read"], responses=common)
    def entities(type: str | None = Query(None, max_length=100, description="Only this entity type."),  # noqa: A002
                 lens: str | None = Query(None, max_length=64, pattern=NAME_PATTERN, description="Only this lens."),
                 limit: int = count(30, "At most this many, most mentioned first."),
                 tenant: str | None = tenant_query, who: Caller = reader) -> JSON:
        """The entities mentioned in the workspace, most mentioned first (as `ragloom entities --json`)."""
        return reply(engine.entities(tenant=who.tenant(tenant), lens=lens, type=type)[:limit])

    @app.get("/quality", tags=["read"], responses=common)
    def quality(lens: str | None = Query(None, max_length=64, pattern=NAME_PATTERN, description="Only this lens."),
                worst: int = Query(10, ge=0, le=limits.max_k,
                                   description="How many of the worst chunks to list."),
                tenant: str | None = tenant_query, who: Caller = reader) -> JSON:
        """The distribution of chunk quality scores and the worst chunks (as `ragloom quality --json`)."""
        return reply(engine.quality(tenant=who.tenant(tenant), lens=lens, worst=worst))

    document = app.openapi

    def openapi() -> dict[str, Any]:
        # A workspace without keys answers without one: the document says the key is optional
        # (`{}` among the ways to authenticate), so that generated clients do not demand it.
        spec = document()
        if keys.configured:
            return spec
        optional = copy.deepcopy(spec)
        for operation in (op for item in optional.get("paths", {}).values() for op in item.values()):
            if isinstance(operation, dict) and operation.get("security"):
                operation["security"] = [{}, *operation["security"]]
        return optional

    app.openapi = openapi  # type: ignore[method-assign]
    return app


class ErrorBody(BaseModel):
    """Every error the API answers."""

    error: str = Field(description="The error's type, like `InvalidParameterError` or `Unauthorized`.")
    detail: str = Field(description="What went wrong and how to fix it.")
    errors: list[dict[str, Any]] | None = Field(None, description="422 only: each problem, with `loc` (where), "
                                                "`msg` and `type`.")


def _docs_assets() -> Path | None:
    """Swagger UI's files from the ``fastapi-offline`` package: ``/docs`` works without the internet."""
    try:
        import fastapi_offline
    except ImportError:
        log.warning("fastapi-offline is not installed: /docs is off (pip install 'ragloom[serve]')")
        return None
    folder = Path(fastapi_offline.__file__).parent / "static"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


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
          announce: Callable[[str], None] | None = None, insecure: bool = False) -> None:
    """Serve the HTTP API over ``workspace`` (or ``engine``) on ``host:port`` until Ctrl-C or SIGTERM.

    One process, one engine: its embedding model is loaded once, at start. Port 0 takes any
    free port; ``announce`` (default: print) receives the line that says which. A workspace
    without API keys is served on loopback only, unless ``insecure`` (docs/security.md).
    """
    _check_extra()
    if not 0 <= port < 65536:
        raise ConfigError(f"--port ({port}) must be between 0 and 65535 (0: any free port)")
    import uvicorn

    from ragloom.attach import Listener
    from ragloom.engine import Engine
    from ragloom.httpguard import display_host

    engine = engine or Engine(workspace, config_file=config)
    say = announce or _print
    for line in exposure(host, Keys(engine.workspace.path).configured, insecure, what="ragloom serve"):
        say(line)
    server = uvicorn.Server(uvicorn.Config(create_app(engine, host=host), log_level=log_level,
                                           timeout_graceful_shutdown=10))
    with listening(host, port) as sock, Listener(engine, "ragloom serve") as local:
        bound = sock.getsockname()[1]
        shown = display_host(host)
        say(f"ragloom serve: http://{shown}:{bound}  (workspace {engine.workspace.path}; "
            f"API docs at http://{shown}:{bound}/docs; Ctrl-C to stop)")
        if local.listening:
            say("ragloom serve: 'ragloom query' and 'ragloom ask' on this workspace, by this user, are answered here")
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn shut down gracefully, then raised the Ctrl-C again
            pass


def exposure(host: str, keyed: bool, insecure: bool, *, what: str) -> list[str]:
    """The warnings for a server on ``host``, or a ConfigError where it must not start: beyond
    loopback without API keys, only when told ``--insecure``."""
    from ragloom.httpguard import is_loopback

    if is_loopback(host):
        return []
    if keyed:
        return [f"{what}: listening on {host}; every request needs an API key (ragloom keys list). Use HTTPS in "
                "front of it (a reverse proxy) beyond a trusted network: keys travel in the clear otherwise."]
    if not insecure:
        raise ConfigError(f"--host {host}: {what} would answer anyone who can reach this machine, and the "
                          "workspace has no API keys; create one (ragloom keys create --tenant default --role read) "
                          "or, on a network you trust, pass --insecure")
    return [f"{what}: WARNING: listening on {host} with no API keys (--insecure): anyone who can reach this port "
            "can read and write every tenant's documents"]


def _print(line: str) -> None:
    print(line, flush=True)
