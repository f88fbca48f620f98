"""The Model Context Protocol server: ``ragloom mcp`` keeps one :class:`~ragloom.engine.Engine`
warm and offers it to agents and desktop clients (Claude Desktop, Claude Code) as MCP tools and
resources, with the official ``mcp`` SDK (the ``mcp`` extra).

Two transports: **stdio** (the client starts the process and talks over its standard input and
output) and **streamable HTTP** (``--transport http``, on its own port, at ``/mcp``).

Tools (each returns what the CLI's ``--json`` prints for the same operation, as structured
content; search results and sources also carry a ``citation`` and a ``uri`` to read):
``search``, ``ask``, ``report``, ``decisions``, ``timeline``, ``contradictions``, ``stats``.
Resources: ``ragloom://documents`` (the tenant's documents), ``ragloom://documents/{id}`` (one
document's chunks) and ``ragloom://chunks/{chunk_id}`` (one chunk: its exact text and where it
comes from).

Keys and tenants are those of ``ragloom serve`` (:mod:`ragloom.access`). Over HTTP, once the
workspace has API keys, every request needs ``Authorization: Bearer <key>``: the key's tenant is
the only tenant its calls see, and its role gates the tools (``read``: everything but ``report``,
which saves a file and needs ``write``). Without keys, HTTP listens only on this machine unless
``--insecure``. Over stdio the user starts the process: ``--key`` (or ``RAGLOOM_API_KEY``) binds
it to a key's tenant and role the same way; else ``--tenant`` binds it to one tenant; else calls
see the ``tenant`` setting, or the tenant a call names. The ``[server]`` limits (``max_k``,
``max_text_chars``, ``max_queries``, ``max_budget``) hold on both transports.

This module is not ``mcp.py``, which would shadow the SDK; it imports the SDK only inside its
functions, so ``import ragloom`` and the CLI work without the extra.
"""

# No ``from __future__ import annotations`` here: the SDK reads the tools' annotations to build
# their JSON schemas, and some of them are made inside create_server from the [server] limits.

import contextvars
import json
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ragloom.access import Grant, Keys, Role, allows
from ragloom.errors import (
    AccessDeniedError,
    ConfigError,
    InvalidParameterError,
    MissingExtraError,
    RagloomError,
    UnknownChunkError,
)
from ragloom.httpguard import error_body
from ragloom.query.request import Query
from ragloom.types import SECTION_SEPARATOR

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ragloom.config import ServerSettings
    from ragloom.engine import Engine

__all__ = ["DEFAULT_PORT", "PATH", "TRANSPORTS", "AccessDeniedError", "Binding", "Caller", "create_server", "serve"]

log = logging.getLogger("ragloom.mcp")

#: The port ``ragloom mcp --transport http`` listens on unless told otherwise.
DEFAULT_PORT = 8765
#: Where the streamable HTTP endpoint answers.
PATH = "/mcp"
#: The transports, by the names ``--transport`` takes.
TRANSPORTS = ("stdio", "http")
#: Documents listed in resources/list (``ragloom://documents`` lists them all).
LISTED_DOCUMENTS = 1000
_WINDOW_ID = re.compile(r"^([0-9a-f]{20}):(\d+)-(\d+)$")


def _check_extra() -> None:
    MissingExtraError.require("mcp", "ragloom mcp", {"mcp": "mcp", "uvicorn": "uvicorn"})


# -- who is calling ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    """Who makes a call: the one tenant its calls see (None: any, the ``tenant`` setting unless
    the call names one), its role, and the name of its key (None: no key)."""

    tenant: str | None
    role: Role
    key: str | None = None

    @classmethod
    def of(cls, grant: Grant) -> "Caller":
        return cls(grant.tenant, grant.role, grant.name)

    def tenant_for(self, asked: str | None) -> str | None:
        """The tenant a call reads: the bound one, or the one it asks for (None: the setting)."""
        if self.tenant is None:
            return asked
        if asked is not None and asked != self.tenant:
            who = f"the API key {self.key!r}" if self.key else "this server (--tenant)"
            raise AccessDeniedError(f"tenant {asked[:80]!r}: {who} reads tenant {self.tenant!r} only; leave tenant "
                                    "out")
        return self.tenant

    def require(self, needed: Role, action: str) -> None:
        if not allows(self.role, needed):
            raise AccessDeniedError(f"{action} needs a key with the {needed!r} role (or stronger); the API key "
                                    f"{self.key!r} has the {self.role!r} role")


@dataclass(frozen=True)
class Binding:
    """How a server knows its callers: the transport, the workspace's keys, and for stdio the key
    it was started with (``--key``) or the one tenant it serves (``--tenant``)."""

    transport: str
    keys: Keys
    key: str | None = field(default=None, repr=False)  # a secret: never in a log line
    tenant: str | None = None

    def caller(self, headers: Mapping[str, str] | None) -> Caller:
        """The caller of one request, from its ``Authorization`` header (HTTP) or the binding (stdio)."""
        if self.transport == "http":
            if headers is None:  # every HTTP call rides a request; never fall back to the binding
                raise AccessDeniedError("this call came without its HTTP request; refused")
            if not self.keys.configured:
                return Caller(self.tenant, "admin")
            grant = self.keys.verify(_bearer(headers.get("authorization")))
            if grant is None:
                raise AccessDeniedError("this call needs a valid API key (Authorization: Bearer <key>)")
            return Caller.of(grant)
        if self.key is not None:
            grant = self.keys.verify(self.key)
            if grant is None:  # revoked since the server started
                raise AccessDeniedError("the API key this server was started with (--key or RAGLOOM_API_KEY) is no "
                                        "longer valid (revoked?); restart it with another")
            return Caller.of(grant)
        return Caller(self.tenant, "admin")


def _bearer(value: str | None) -> str | None:
    scheme, _, token = (value or "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


#: The headers of the HTTP request that carries the message being handled (None: stdio).
_headers: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("ragloom_mcp_headers",
                                                                                    default=None)


class _Bind:
    """SDK middleware: makes the headers of the request being handled visible to the tool, the
    resource and the resource listing it runs (they run within this call, threads included)."""

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:  # noqa: ANN401 - SDK types
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        token = _headers.set(headers)
        try:
            return await call_next(ctx)
        finally:
            _headers.reset(token)


# -- limits and results -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Limits:
    """The ``[server]`` bounds, each refusal naming the parameter and the setting."""

    settings: "ServerSettings"

    def text(self, name: str, value: str | None) -> None:
        if value is None:
            return
        bound = self.settings.max_text_chars
        if len(value) > bound:
            raise InvalidParameterError(f"{name} ({len(value)} characters) is longer than server.max_text_chars "
                                        f"({bound}); shorten it")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParameterError(f"{name} holds a lone surrogate (like \\ud800), which is not Unicode "
                                        "text; send valid UTF-8") from None

    def count(self, name: str, value: int | None) -> None:
        bound = self.settings.max_k
        if value is not None and value > bound:
            raise InvalidParameterError(f"{name} ({value}) is more than server.max_k ({bound}); ask for fewer")

    def budget(self, value: int | None) -> None:
        bound = self.settings.max_budget
        if value is not None and value > bound:
            raise InvalidParameterError(f"budget ({value}) is more than server.max_budget ({bound}) tokens; ask for "
                                        "fewer")

    def queries(self, value: Sequence[str] | None) -> None:
        if value is None:
            return
        bound = self.settings.max_queries
        if len(value) > bound:
            raise InvalidParameterError(f"queries ({len(value)}) are more than server.max_queries ({bound}); send "
                                        "fewer")
        for i, query in enumerate(value):
            self.text(f"queries[{i}]", query)

    def lenses(self, value: Sequence[str] | None) -> None:
        for i, lens in enumerate(value or ()):
            if len(lens) > 64:
                raise InvalidParameterError(f"lenses[{i}] ({len(lens)} characters) is not a lens name (at most 64)")

    def options(self, value: Mapping[str, Any] | None) -> dict[str, Any]:
        options = dict(value or {})  # one that repeats a parameter is refused by Query.build
        for name, option in options.items():
            if isinstance(option, int) and not isinstance(option, bool):
                self.count(f"options.{name}", abs(option))
        return options


def _plain(data: Any) -> Any:  # noqa: ANN401 - anything json can write
    """What the CLI's ``--json`` writes, read back: dates and paths as strings."""
    return json.loads(json.dumps(data, ensure_ascii=False, default=str))


def _citation(row: Mapping[str, Any]) -> str:
    """``path › section [start:end]``, as the CLI prints a source."""
    section = row.get("section_path") or ""
    if isinstance(section, list | tuple):
        section = SECTION_SEPARATOR.join(section)
    where = f" › {section}" if section else ""
    return f"{row.get('source_path', '')}{where} [{row.get('start')}:{row.get('end')}]"


def _chunk_uri(chunk_id: str) -> str:
    return f"ragloom://chunks/{chunk_id}"


def _cited(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "citation": _citation(row), "uri": _chunk_uri(str(row.get("chunk_id", "")))}


# -- the server -------------------------------------------------------------------------------------


def create_server(engine: "Engine", binding: Binding | None = None) -> "MCPServer[Any]":
    """The MCP server over ``engine``: its tools and resources, calls checked against ``binding``
    (default: stdio, no key, any tenant)."""
    _check_extra()
    import anyio.to_thread
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
    from mcp_types import Resource, ToolAnnotations

    from ragloom import __version__
    from ragloom.context.organize import strategy_names
    from ragloom.retrieve import mode_names

    bind = binding or Binding("stdio", Keys(engine.workspace.path))
    limits = _Limits(engine.settings.server)
    bounds = engine.settings.server
    modes = ", ".join(mode_names())

    def caller() -> Caller:
        return bind.caller(_headers.get())

    @contextmanager
    def calling(needed: Role, action: str) -> Iterator[Caller]:
        """The caller, allowed ``needed``; a ragloom error becomes the tool's error message."""
        try:
            who = caller()
            who.require(needed, action)
            yield who
        except RagloomError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from None

    @contextmanager
    def reading() -> Iterator[Caller]:
        """The caller of a resource read; a ragloom error becomes the read's error."""
        try:
            yield caller()
        except UnknownChunkError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except RagloomError as exc:
            raise ResourceError(f"{type(exc).__name__}: {exc}") from None

    def writer(model: str | None, strongest: bool) -> Any:  # noqa: ANN401 - a Writer
        return engine.writing.writer(model=model, strongest=strongest)

    def caller_documents() -> list[dict[str, Any]]:
        try:
            tenant = engine.components.tenant(caller().tenant_for(None))
            with engine.store.reading():
                return engine.store.documents(tenant)[:LISTED_DOCUMENTS]
        except RagloomError:
            return []

    class Server(MCPServer[Any]):
        async def list_resources(self) -> list[Resource]:
            # Every document of the caller's tenant too, so that a client can offer them to attach
            # (read in a worker thread, as the tools are: the store blocks).
            documents = await anyio.to_thread.run_sync(caller_documents)
            return await super().list_resources() + [Resource(uri=f"ragloom://documents/{d['document_id']}",
                                      name=str(d["source_path"]).rsplit("/", 1)[-1],
                                      title=d.get("title") or None, mime_type="application/json",
                                      description=f"{d['lens']} · {d['source_path']}: its chunks, each with its exact "
                                                  "text and offsets")
                             for d in documents]

    server = Server(
        "ragloom",
        title="ragloom",
        version=__version__,
        description="A local-first context engine for retrieval-augmented generation.",
        instructions="Search, question and summarise the documents of one ragloom workspace. Documents are filed "
                     "under lenses (the perspective they speak from). `search` finds chunks, `ask` writes an answer "
                     "citing its sources as [n], `report` writes the multi-lens synthesis report; `decisions`, "
                     "`timeline` and `contradictions` list what the documents record. Every chunk carries a "
                     "`citation` (path › section [start:end]) and a `uri` (ragloom://chunks/<id>) that reads its "
                     "exact text: cite those.",
        log_level="WARNING" if bind.transport == "stdio" else "INFO",
        middleware=[_Bind()],
    )
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)

    # Parameter types shared by the tools; their descriptions are what an agent reads.
    Lenses = Annotated[list[str] | None, Field(description="Only these lenses (none: every lens).")]  # noqa: N806
    Tenant = Annotated[str | None, Field(description="Tenant (default: the `tenant` setting). With an API key, or "  # noqa: N806
                                         "a server started with --tenant, only that tenant: another is refused.")]
    AsOf = Annotated[str | None, Field(description="The workspace as it was at this moment of its own history, ISO "  # noqa: N806
                                       "8601 (`2026-03-01T00:00:00Z`): what had been ingested by then; none: now.")]
    DatedFrom = Annotated[str | None, Field(description="Only documents dated on or after this day (their own "  # noqa: N806
                                            "date: front matter or file name), like `2025-01-01`.")]
    DatedTo = Annotated[str | None, Field(description="Only documents dated on or before this day.")]  # noqa: N806
    Mode = Annotated[str | None, Field(description=f"The retrieval mode: {modes} (default: the `retrieval.mode` "  # noqa: N806
                                       "setting).")]
    Options = Annotated[dict[str, Any] | None, Field(description="The mode's own options, e.g. `{\"threshold\": 0.7}` "  # noqa: N806
                                                     "for dynamic, `{\"chunks_per_lens\": 2}` for balanced, "
                                                     "`{\"window\": 2}` for window; an option the mode does not have "
                                                     "is an error naming the valid ones.")]
    Budget = Annotated[int | None, Field(ge=1, description=f"Tokens of context (at most {bounds.max_budget}: "  # noqa: N806
                                         "server.max_budget).")]
    Model = Annotated[str | None, Field(description="The model to write with (over `llm.model`); none: the "  # noqa: N806
                                        "configured writer (the offline extractive writer unless `[llm]` names one).")]
    Strongest = Annotated[bool, Field(description="Write with the strongest configured model "  # noqa: N806
                                      "(`llm.strongest_model`).")]
    text_bound = f"at most {bounds.max_text_chars} characters: server.max_text_chars"

    Limit = Annotated[int | None, Field(ge=1, description="At most this many (none: all; at most "  # noqa: N806
                                        f"{bounds.max_k}: server.max_k).")]

    @server.tool(
        title="Search the workspace",
        description="Find the chunks of the workspace's documents that best match `text`, with any retrieval mode "
                    f"({modes}). Each result has its exact text, its source (path, lens, section, character offsets "
                    "start/end), a `citation` and a `uri` that reads the chunk back. With `budget`, `organize` or "
                    "`optimize`, `context` also holds the optimised context window (de-duplicated, ordered, "
                    "within the budget). Returns what `ragloom query --json` prints.",
        annotations=read_only)
    def search(
        text: Annotated[str, Field(min_length=1, description=f"What to look for ({text_bound}).")],
        mode: Mode = None,
        k: Annotated[int | None, Field(ge=1, description="Number of results (default: `retrieval.k`, or "
                                       "`context_optimization.candidates` when a context is built; at most "
                                       f"{bounds.max_k}: server.max_k).")] = None,
        lenses: Lenses = None,
        tenant: Tenant = None,
        as_of: AsOf = None,
        dated_from: DatedFrom = None,
        dated_to: DatedTo = None,
        budget: Budget = None,
        organize: Annotated[str | None, Field(description="Build the optimised context window organised by: "
                                              f"{', '.join(strategy_names())}.")] = None,
        optimize: Annotated[bool, Field(description="Build the optimised context window with the default "
                                        "budget.")] = False,
        options: Options = None,
    ) -> dict[str, Any]:
        with calling("read", "search") as who:
            limits.text("text", text)
            limits.count("k", k)
            limits.budget(budget)
            limits.lenses(lenses)
            result = engine.query(Query.build(text, k=k, mode=mode, lenses=lenses, tenant=who.tenant_for(tenant),
                                              as_of=as_of, budget=budget, organize=organize, optimize=optimize,
                                              dated_from=dated_from, dated_to=dated_to,
                                              options=limits.options(options)))
            data: dict[str, Any] = _plain(result.to_dict())
        data["results"] = [_cited(r) for r in data["results"]]
        return data

    @server.tool(
        title="Ask a question",
        description="Answer a question from the workspace: a written answer that cites its sources as [n], every "
                    "citation checked, with the numbered sources (each with its exact text, path, lens, section, "
                    "offsets, `citation` and `uri`). The offline extractive writer quotes the sources verbatim "
                    "unless the workspace's `[llm]` settings name a model. Returns what `ragloom ask --json` "
                    "prints.",
        annotations=read_only)
    def ask(
        question: Annotated[str, Field(min_length=1, description=f"The question ({text_bound}).")],
        mode: Mode = None,
        k: Annotated[int | None, Field(ge=1, description="Candidates retrieved before the context is optimised "
                                       f"(at most {bounds.max_k}: server.max_k).")] = None,
        lenses: Lenses = None,
        tenant: Tenant = None,
        as_of: AsOf = None,
        dated_from: DatedFrom = None,
        dated_to: DatedTo = None,
        budget: Budget = None,
        model: Model = None,
        strongest: Strongest = False,
        options: Options = None,
    ) -> dict[str, Any]:
        with calling("read", "ask") as who:
            limits.text("question", question)
            limits.count("k", k)
            limits.budget(budget)
            limits.lenses(lenses)
            request = Query.build(question, k=k, mode=mode, lenses=lenses, tenant=who.tenant_for(tenant), as_of=as_of,
                                  budget=budget, dated_from=dated_from, dated_to=dated_to,
                                  options=limits.options(options))
            result = engine.ask(request, writer=writer(model, strongest))
            data: dict[str, Any] = _plain(result.to_dict())
        data["sources"] = [_cited(s) for s in data["sources"]]
        return data

    @server.tool(
        title="Write the synthesis report",
        description="Write the multi-lens synthesis report (a master roadmap): the decisions log, a timeline of "
                    "dated events, the themes, a section per query with what each lens says, contradictions called "
                    "out, open questions, and the numbered sources, every citation checked. Saved under the "
                    "workspace's reports/ (so it needs a key with the write role). Returns what `ragloom generate "
                    "--json` prints.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                    open_world_hint=False))
    def report(
        context: Annotated[str, Field(description="What the report should keep in mind (a focus, a goal); asked as "
                                      f"one more query ({text_bound}).")] = "",
        queries: Annotated[list[str] | None, Field(description="The report's queries, a section each (default: six "
                                                   "broad ones; at most "
                                                   f"{bounds.max_queries}: server.max_queries).")] = None,
        title: Annotated[str | None, Field(description="The report's title.")] = None,
        lenses: Lenses = None,
        tenant: Tenant = None,
        as_of: AsOf = None,
        budget: Annotated[int | None, Field(ge=1, description="Tokens of context per section (at most "
                                            f"{bounds.max_budget}: server.max_budget).")] = None,
        model: Model = None,
        strongest: Strongest = False,
        markdown: Annotated[bool, Field(description="Also return the report as Markdown, under `markdown`.")] = False,
    ) -> dict[str, Any]:
        with calling("write", "report") as who:
            limits.text("context", context)
            limits.text("title", title)
            limits.queries(queries)
            limits.budget(budget)
            limits.lenses(lenses)
            written = engine.generate(context=context, queries=queries, title=title, tenant=who.tenant_for(tenant),
                                      lenses=lenses, as_of=as_of, budget=budget, writer=writer(model, strongest))
            data: dict[str, Any] = _plain(written.to_dict())
        data["sources"] = [_cited(s) for s in data["sources"]]
        if markdown:
            data["markdown"] = written.to_markdown()
        return data

    @server.tool(
        title="Decisions recorded",
        description="The decisions, votes, approvals and commitments the documents record, newest first, each with "
                    "its date (the document's own), kind, lens, the sentence and where it is (path, section, "
                    "offsets). Returns `{\"decisions\": [...]}`, the list `ragloom decisions --json` prints.",
        annotations=read_only)
    def decisions(
        since: Annotated[str | None, Field(description="Only decisions dated on or after this day, like "
                                           "`2025-01-01`.")] = None,
        lenses: Lenses = None,
        limit: Limit = None,
        tenant: Tenant = None,
    ) -> dict[str, Any]:
        with calling("read", "decisions") as who:
            limits.count("limit", limit)
            limits.text("since", since)
            limits.lenses(lenses)
            found = engine.decisions(since=since, tenant=who.tenant_for(tenant), lenses=lenses, limit=limit)
            return {"decisions": _plain([d.to_dict() for d in found])}

    @server.tool(
        title="Timeline of dated events",
        description="What the dated documents say happens, or happened, on a day or in a month, quarter or half "
                    "(the report's timeline): each event with the period it names (begins, ends), when it was said, "
                    "the sentence, its lens and source (path, section, offsets); the best ones, in the order of "
                    "their periods. Returns `{\"events\": [...]}`.",
        annotations=read_only)
    def timeline(
        lenses: Lenses = None,
        limit: Limit = 40,
        tenant: Tenant = None,
    ) -> dict[str, Any]:
        with calling("read", "timeline") as who:
            limits.count("limit", limit)
            limits.lenses(lenses)
            with engine.store.reading():  # one commit, as Engine's own reads
                found = engine.insights.events(tenant=who.tenant_for(tenant), lenses=lenses, limit=limit)
            return {"events": _plain([e.to_dict() for e in found])}

    @server.tool(
        title="Contradictions between lenses",
        description="Statements of different lenses that disagree (dates, numbers, negations), each with the "
                    "statements quoted, their lenses and sources, how certain the conflict is and which lens has "
                    "the authority. The whole workspace, or the chunks about `topic`. Returns "
                    "`{\"contradictions\": [...]}`, the list `ragloom contradictions --json` prints.",
        annotations=read_only)
    def contradictions(
        topic: Annotated[str | None, Field(description=f"Only what the chunks about this topic say ({text_bound})."
                                           )] = None,
        lenses: Lenses = None,
        limit: Limit = 20,
        tenant: Tenant = None,
    ) -> dict[str, Any]:
        with calling("read", "contradictions") as who:
            limits.text("topic", topic)
            limits.count("limit", limit)
            limits.lenses(lenses)
            found = engine.contradictions(topic=topic, tenant=who.tenant_for(tenant), limit=limit, lenses=lenses)
            return {"contradictions": _plain([c.to_dict() for c in found])}

    @server.tool(
        title="Workspace statistics",
        description="Documents, chunks and tokens per lens, and how the index was built (embedder, chunking), with "
                    "any warning that the index does not match the settings. Returns what `ragloom stats --json` "
                    "prints.",
        annotations=read_only)
    def stats(tenant: Tenant = None) -> dict[str, Any]:
        with calling("read", "stats") as who:
            data: dict[str, Any] = _plain(engine.stats(tenant=who.tenant_for(tenant)))
            return data

    # -- resources ----------------------------------------------------------------------------------

    def dumps(data: Any) -> str:  # noqa: ANN401
        return json.dumps(data, ensure_ascii=False, indent=2, default=str)

    @server.resource("ragloom://documents", name="documents", title="Documents",
                     description="The tenant's current documents: id, path, title, lens, date, version, chunk count, "
                                 "and the uri of each one's chunks.", mime_type="application/json")
    def documents() -> str:
        with reading() as who:
            tenant = engine.components.tenant(who.tenant_for(None))
            with engine.store.reading():
                rows = engine.store.documents(tenant)
        return dumps({"tenant": tenant, "documents": [_document(d) for d in rows]})

    @server.resource("ragloom://documents/{document_id}", name="document", title="A document's chunks",
                     description="One document (an id from ragloom://documents) and its chunks in order, each with "
                                 "its exact text, section, character offsets, citation and uri.",
                     mime_type="application/json")
    def document(document_id: str) -> str:
        with reading() as who:
            tenant = engine.components.tenant(who.tenant_for(None))
            with engine.store.reading():
                row = engine.store.document(tenant, document_id, with_text=False)
                chunks = engine.store.chunks(tenant, document_ids=[document_id]) if row else []
        if row is None or row.get("change_type") == "delete":
            raise ResourceNotFoundError(f"no document {document_id[:80]!r} in tenant {tenant!r}; "
                                        "ragloom://documents lists them")
        chunks.sort(key=lambda c: c["chunk_index"])
        return dumps({**_document(row), "tenant": tenant, "chunks": [_chunk(c) for c in chunks]})

    @server.resource("ragloom://chunks/{chunk_id}", name="chunk", title="A chunk",
                     description="One chunk (a whole id, its first 8 characters, or a window result's "
                                 "`document:start-end`): its exact text, its source path, lens, section, character "
                                 "offsets in the document, citation, and its neighbours' ids.",
                     mime_type="application/json")
    def chunk(chunk_id: str) -> str:
        with reading() as who:
            tenant = engine.components.tenant(who.tenant_for(None))
            with engine.store.reading():
                found = _read_chunk(engine, tenant, chunk_id)
        return dumps(found)

    return server


def _document(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"document_id": row["document_id"], "source_path": row["source_path"], "title": row.get("title"),
            "lens": row["lens"], "doc_type": row.get("doc_type"), "document_date": row.get("document_date"),
            "version": row.get("version_sequence"), "chunks": row.get("chunk_count"),
            "characters": row.get("size_chars"), "uri": f"ragloom://documents/{row['document_id']}"}


def _chunk(row: Mapping[str, Any]) -> dict[str, Any]:
    data = {"chunk_id": row["chunk_id"], "chunk_index": row.get("chunk_index"),
            "section_path": row.get("section_path") or "", "start": row["start_char"], "end": row["end_char"],
            "token_count": row.get("token_count"), "text": row["text"]}
    return {**data, "citation": _citation(data), "uri": _chunk_uri(row["chunk_id"])}


def _read_chunk(engine: "Engine", tenant: str, chunk_id: str) -> dict[str, Any]:
    """One chunk of ``tenant`` with its provenance; a window result's ``document:start-end`` is
    read from its document's text."""
    store = engine.store
    window = _WINDOW_ID.match(chunk_id)
    if window:
        document_id, start, end = window.group(1), int(window.group(2)), int(window.group(3))
        row = store.document(tenant, document_id, with_text=True)
        text = (row or {}).get("text") or ""
        if row is None or not start < end <= len(text):
            raise UnknownChunkError(chunk_id, f"tenant {tenant!r}")
        data = {"chunk_id": chunk_id, "document_id": document_id, "source_path": row["source_path"],
                "title": row.get("title"), "lens": row["lens"], "document_date": row.get("document_date"),
                "section_path": "", "start": start, "end": end, "text": text[start:end]}
        return {**data, "citation": _citation(data), "uri": _chunk_uri(chunk_id)}
    whole = engine.insights.resolve(chunk_id, tenant=tenant)
    rows = store.chunks(tenant, chunk_ids=[whole])
    if not rows:
        raise UnknownChunkError(chunk_id, f"tenant {tenant!r}")
    row = rows[0]
    data = {**_chunk(row), "document_id": row["document_id"], "source_path": row["source_path"],
            "title": row.get("title"), "lens": row["lens"], "document_date": row.get("document_date"),
            "total_chunks": row.get("total_chunks"), "prev_id": row.get("prev_id"), "next_id": row.get("next_id"),
            "version_id": row.get("version_id")}
    return {**data, "citation": _citation(data)}


# -- HTTP: keys before anything -------------------------------------------------------------------


class _KeyGate:
    """Plain ASGI: with API keys in the workspace, a request without a valid one is a 401 before
    the MCP layer reads it. Without keys, a server that listens beyond this machine (``--insecure``
    aside) refuses every request: its keys were all revoked after it started."""

    def __init__(self, app: Any, keys: Keys, *, exposed: bool) -> None:  # noqa: ANN401 - an ASGI app
        self.app = app
        self.keys = keys
        self.exposed = exposed

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:  # noqa: ANN401 - ASGI
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            configured = self.keys.configured
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            token = _bearer(headers.get("authorization"))
            grant = self.keys.verify(token) if configured else None
        except ConfigError as exc:  # keys.json unreadable: refuse everyone, say why
            await _answer(send, 500, "ConfigError", str(exc))
            return
        if configured and grant is None:
            detail = ("this server needs an API key: send the header Authorization: Bearer <key> (`ragloom keys "
                      "create` makes one)") if token is None else "the API key is not valid (mistyped or revoked)"
            await _answer(send, 401, "Unauthorized", detail, extra=[(b"www-authenticate", b'Bearer realm="ragloom"')])
            return
        if not configured and self.exposed:
            await _answer(send, 503, "NoKeys", "the workspace has no API keys any more, and this server listens "
                          "beyond this machine; create a key with `ragloom keys create`")
            return
        await self.app(scope, receive, send)


async def _answer(send: Any, status: int, error: str, detail: str,  # noqa: ANN401 - ASGI send
                  *, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = error_body(error, detail)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# -- the launcher -----------------------------------------------------------------------------------


def _warm(engine: "Engine") -> None:
    def load() -> None:
        try:
            engine.embedder.embed_query("warm up")  # loads the model: the seconds the first search would pay
            engine.store  # noqa: B018 - opens the tables
        except Exception as exc:  # noqa: BLE001 - the first call reports it again, to the caller
            log.error("loading the embedding model failed: %s", exc)

    threading.Thread(target=load, name="ragloom-mcp-warm-up", daemon=True).start()


def serve(engine: "Engine", *, transport: str = "stdio", host: str = "127.0.0.1", port: int = DEFAULT_PORT,
          key: str | None = None, tenant: str | None = None, insecure: bool = False,
          announce: Callable[[str], None] | None = None, warm: bool = True) -> None:
    """Serve ``engine`` over MCP until the client closes stdin (stdio), or Ctrl-C / SIGTERM (HTTP).

    ``key`` (stdio only) binds the server to that API key's tenant and role; ``tenant`` binds it
    to one tenant. Over HTTP each request brings its own key once the workspace has keys; without
    keys, only a loopback ``host`` is allowed unless ``insecure``. ``announce`` (default: a line
    on standard error) receives where it serves.
    """
    _check_extra()
    if transport not in TRANSPORTS:
        raise ConfigError(f"--transport {transport!r} is not a transport; use one of {', '.join(TRANSPORTS)}")
    say = announce or _print_stderr
    keys = Keys(engine.workspace.path)
    bound_tenant = engine.components.tenant(tenant) if tenant is not None else None
    if transport == "stdio":
        binding, who = _stdio_binding(keys, key, bound_tenant)
        server = create_server(engine, binding)
        say(f"ragloom mcp: serving over stdio (workspace {engine.workspace.path}; {who}; stop: close stdin)")
        if warm:
            _warm(engine)
        try:
            server.run("stdio")
        except KeyboardInterrupt:
            pass
        return
    _serve_http(engine, keys, host=host, port=port, key=key, tenant=bound_tenant, insecure=insecure, say=say,
                warm=warm)


def _stdio_binding(keys: Keys, key: str | None, tenant: str | None) -> tuple[Binding, str]:
    """The binding of a stdio server, and who it serves in words."""
    if key is None:
        return Binding("stdio", keys, tenant=tenant), f"tenant {tenant!r} only" if tenant else "any tenant"
    grant = keys.verify(key.strip())
    if grant is None:
        raise ConfigError(f"--key (or RAGLOOM_API_KEY) is not an API key of the workspace {keys.path.parent} "
                          "(mistyped, revoked, or made for another workspace); `ragloom keys list` shows its keys")
    if tenant is not None and tenant != grant.tenant:
        raise ConfigError(f"--tenant {tenant!r} and --key disagree: the key {grant.name!r} is for tenant "
                          f"{grant.tenant!r}; leave --tenant out")
    return (Binding("stdio", keys, key=key.strip()),
            f"API key {grant.name!r}: tenant {grant.tenant!r}, role {grant.role!r}")


def _serve_http(engine: "Engine", keys: Keys, *, host: str, port: int, key: str | None, tenant: str | None,
                insecure: bool, say: Callable[[str], None], warm: bool) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from ragloom.httpguard import Guard, display_host, host_names, is_loopback
    from ragloom.server import exposure, listening

    if not 0 <= port < 65536:
        raise ConfigError(f"--port ({port}) must be between 0 and 65535 (0: any free port)")
    if key is not None:
        say("ragloom mcp: --key (RAGLOOM_API_KEY) is for stdio; over HTTP each request brings its own key, so it "
            "is not used")
    local = is_loopback(host)
    for line in exposure(host, keys.configured, insecure, what="ragloom mcp"):
        say(line)
    limits = engine.settings.server
    server = create_server(engine, Binding("http", keys, tenant=tenant))
    max_body = int(limits.max_body_mb * 2**20)
    # The Guard checks Host and Origin against the [server] settings (as for `ragloom serve`); the
    # SDK's own check would refuse server.trusted_hosts.
    app = server.streamable_http_app(streamable_http_path=PATH, host=host, max_request_body_size=max_body,
                                     transport_security=TransportSecuritySettings(
                                         enable_dns_rebinding_protection=False))
    guarded = Guard(_KeyGate(app, keys, exposed=not local and not insecure),
                    hosts=host_names(host, limits.trusted_hosts), origins=limits.cors_origins, max_body=max_body)
    runner = uvicorn.Server(uvicorn.Config(guarded, log_level="info", timeout_graceful_shutdown=5,
                                           lifespan="on"))
    with listening(host, port) as sock:
        bound = sock.getsockname()[1]
        shown = display_host(host)
        access = ("API keys required (Authorization: Bearer <key>)" if keys.configured
                  else "no API keys: every caller is trusted" + ("" if local else " (--insecure)"))
        say(f"ragloom mcp: http://{shown}:{bound}{PATH}  (workspace {engine.workspace.path}; {access}; Ctrl-C to "
            "stop)")
        if warm:
            _warm(engine)
        try:
            runner.run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn shut down gracefully, then raised the Ctrl-C again
            pass


def _print_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
