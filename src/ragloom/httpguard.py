"""What stands in front of every HTTP request to ``ragloom serve`` (and ``ragloom mcp`` over
HTTP), before any endpoint runs: a plain ASGI middleware, so it needs no framework.

- **Host**: a request whose ``Host`` header is not a name of this server is refused (421). A web
  page on another site that makes a browser resolve its own name to 127.0.0.1 (DNS rebinding)
  sends its own name as Host, and so never reaches the API.
- **Origin**: a request a browser sends from another origin is refused (403) unless that origin
  is listed in ``server.cors_origins``; CORS headers are sent only to those origins.
- **Size**: a body over ``server.max_body_mb`` is refused (413) from its ``Content-Length``,
  before a byte of it is read, or as soon as a chunked body passes the bound.
- **Bugs**: an exception no endpoint handled becomes a 500 with the API's error shape, and the
  traceback goes to the server's log. The exception stops here, so the server keeps the
  connection open for the client's next request.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

__all__ = ["LOOPBACK_NAMES", "Guard", "display_host", "error_body", "host_names", "is_loopback"]

log = logging.getLogger("ragloom.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The names of this machine every server answers to.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _loopback_ip(text: str) -> bool:
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 zone (fe80::1%eth0) is not part of it
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


@functools.lru_cache(maxsize=64)
def _resolves_to_loopback(name: str) -> bool:
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    return bool(infos) and all(_loopback_ip(str(info[4][0])) for info in infos)


def is_loopback(host: str | None) -> bool:
    """Whether a server bound to ``host`` is reachable from this machine only: a loopback
    address (127.0.0.0/8, ::1), or a name every address of which is one (``localhost``).
    Empty or None (every interface, Streamlit's default), ``0.0.0.0``, ``::``, any other
    address and a name that does not resolve are not."""
    text = (host or "").strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not text:
        return False
    if _loopback_ip(text):
        return True
    try:
        ipaddress.ip_address(text.split("%", 1)[0])
        return False  # an address, and not a loopback one
    except ValueError:
        return _resolves_to_loopback(text.lower())



def display_host(host: str) -> str:
    """``host`` as a URL shows it: a wildcard bind as ``localhost``, an IPv6 address in brackets."""
    return "localhost" if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host


def host_names(bound: str, trusted: Iterable[str]) -> frozenset[str]:
    """The Host names a server bound to ``bound`` answers: loopback, the bound address (unless it
    is a wildcard), and the operator's ``trusted`` names (``*``: any)."""
    names = {*LOOPBACK_NAMES, *(t.lower().strip("[]") for t in trusted)}
    if bound not in ("", "0.0.0.0", "::"):
        names.add(bound.lower().strip("[]"))
    return frozenset(names)


def _host_of(value: str) -> str:
    """``example.org:8000`` -> ``example.org``; ``[::1]:8000`` -> ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def error_body(error: str, detail: str) -> bytes:
    return json.dumps({"error": error, "detail": detail}, ensure_ascii=False).encode("utf-8", "backslashreplace")


class Guard:
    """The checks above around ``app``. ``hosts`` is from :func:`host_names`."""

    def __init__(self, app: ASGIApp, *, hosts: frozenset[str], origins: Iterable[str], max_body: int) -> None:
        from starlette.exceptions import HTTPException

        self.too_large = HTTPException  # FastAPI passes this one on as it is (it makes others a 400)
        self.app = app
        self.hosts = hosts
        self.origins = frozenset(o.rstrip("/").lower() for o in origins)
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = self._refusal(headers)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        origin = headers.get("origin", "").rstrip("/").lower()
        if scope.get("method") == "OPTIONS" and origin and "access-control-request-method" in headers:
            await _answer(send, 204, "", "", extra=self._cors(origin, preflight=True))
            return
        started = False
        received = 0

        async def bounded_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body:
                raise self.too_large(413, self._too_large()[2])
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if origin in self.origins:
                    message["headers"] = [*message.get("headers", []), *self._cors(origin)]
            await send(message)

        try:
            await self.app(scope, bounded_receive, tracked_send)
        except self.too_large as exc:  # raised by bounded_receive, in an app that let it through
            if not started:
                await _answer(send, exc.status_code, "RequestTooLarge" if exc.status_code == 413 else "HTTPException",
                              str(exc.detail))
        except Exception as exc:  # noqa: BLE001 - a bug: answered here so the connection stays usable
            log.exception("%s %s failed", scope.get("method"), scope.get("path"))
            if not started:
                await _answer(send, 500, type(exc).__name__,
                              f"internal error ({str(exc)[:300]}); the server's log has the traceback")

    def _refusal(self, headers: dict[str, str]) -> tuple[int, str, str] | None:
        host = _host_of(headers.get("host", ""))
        if "*" not in self.hosts and host not in self.hosts:
            return (421, "UntrustedHost", f"this server does not answer to the host name {host[:100]!r}; the "
                    "operator adds it to server.trusted_hosts (a guard against DNS rebinding)")
        origin = headers.get("origin", "").rstrip("/").lower()
        if origin and origin not in self.origins and _host_of(origin.split("://", 1)[-1]) != host:
            return (403, "UntrustedOrigin", f"requests from the web page at {origin[:100]!r} are refused; the "
                    "operator allows a browser origin in server.cors_origins")
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            return self._too_large()
        return None

    def _too_large(self) -> tuple[int, str, str]:
        return (413, "RequestTooLarge", f"the request body is larger than server.max_body_mb "
                f"({self.max_body / 2**20:g} MiB); send less, or ask the operator to raise it")

    def _cors(self, origin: str, *, preflight: bool = False) -> list[tuple[bytes, bytes]]:
        if origin not in self.origins:
            return []
        headers = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
        if preflight:
            headers += [(b"access-control-allow-methods", b"GET, POST"),
                        (b"access-control-allow-headers", b"authorization, content-type"),
                        (b"access-control-max-age", b"600")]
        return headers


async def _answer(send: Send, status: int, error: str, detail: str, *,
                  extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = error_body(error, detail) if error else b""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
