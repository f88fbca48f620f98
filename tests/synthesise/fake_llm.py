"""A local HTTP server that speaks the Anthropic Messages API and OpenAI Chat Completions.

The official SDKs talk to it over a real socket, so retries, timeouts, streaming and error
mapping are exercised end to end, with no mock of either SDK. Each test scripts the replies
(status, headers, delays, streamed pieces) and reads back every request the server received.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted reply. ``pieces`` are the text deltas of a streamed reply (and joined, the
    text of a plain one); ``delay`` is waited before answering, ``stall`` after the first
    streamed delta."""

    pieces: tuple[str, ...] = ("Hello from the fake model.",)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    stall: float = 0.0
    error_message: str = "scripted failure"
    stream_error: str = ""  # when set, an error event follows the first streamed delta

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def text_reply(text: str, *, chunks: int = 1) -> Reply:
    """A reply of ``text`` cut into ``chunks`` roughly equal streamed pieces."""
    size = max(1, -(-len(text) // chunks))
    return Reply(tuple(text[i : i + size] for i in range(0, len(text), size)))


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


class FakeLLMServer:
    """Scripted replies are used in order; the last one repeats when the script runs out."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the response ends when the connection closes

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server naming
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = outer._next(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                                             time.monotonic()))
                try:
                    outer._answer(self, reply, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def push(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if not self.script:
                return Reply()
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def start(self) -> FakeLLMServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers that are sleeping out a delay
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- the two APIs ---------------------------------------------------------------------

    def _answer(self, handler: BaseHTTPRequestHandler, reply: Reply, body: dict[str, Any]) -> None:
        if reply.delay and self._stop.wait(reply.delay):
            return
        anthropic = handler.path.rstrip("/").endswith("/v1/messages")
        if handler.path.rstrip("/").endswith("/chat/completions"):
            anthropic = False
        elif not anthropic:
            self._send_json(handler, 404, {"error": {"message": f"no route {handler.path}"}}, {})
            return
        if reply.status != 200:
            error = ({"type": "error", "error": {"type": "api_error", "message": reply.error_message}} if anthropic
                     else {"error": {"message": reply.error_message, "type": "server_error", "code": None}})
            self._send_json(handler, reply.status, error, reply.headers)
            return
        model = str(body.get("model", ""))
        if body.get("stream"):
            events = self._anthropic_events(reply, model) if anthropic else self._openai_events(reply, model)
            handler.send_response(200)
            handler.send_header("content-type", "text/event-stream")
            handler.send_header("cache-control", "no-cache")
            for key, value in reply.headers.items():
                handler.send_header(key, value)
            handler.end_headers()
            first_delta = 2 if anthropic else 1  # the index of the first text event
            for i, event in enumerate(events):
                handler.wfile.write(event.encode())
                handler.wfile.flush()
                if i == first_delta and reply.stream_error:
                    handler.wfile.write(self._stream_error(reply.stream_error, anthropic).encode())
                    return
                if i == first_delta and reply.stall and self._stop.wait(reply.stall):
                    return
            return
        payload = self._anthropic_message(reply, model) if anthropic else self._openai_completion(reply, model)
        self._send_json(handler, 200, payload, reply.headers)

    @staticmethod
    def _send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any],
                   headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _stream_error(message: str, anthropic: bool) -> str:
        if anthropic:
            data = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
            return f"event: error\ndata: {json.dumps(data)}\n\n"
        return f"data: {json.dumps({'error': {'message': message, 'type': 'server_error'}})}\n\n"

    @staticmethod
    def _anthropic_message(reply: Reply, model: str) -> dict[str, Any]:
        return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": reply.text}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 34}}

    @staticmethod
    def _anthropic_events(reply: Reply, model: str) -> Iterator[str]:
        def event(name: str, data: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        yield event("message_start", {"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}})
        yield event("content_block_start", {"type": "content_block_start", "index": 0,
                                            "content_block": {"type": "text", "text": ""}})
        for piece in reply.pieces:
            yield event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "text_delta", "text": piece}})
        yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                          "stop_sequence": None},
                                      "usage": {"output_tokens": 34}})
        yield event("message_stop", {"type": "message_stop"})

    @staticmethod
    def _openai_completion(reply: Reply, model: str) -> dict[str, Any]:
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                             "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46}}

    @staticmethod
    def _openai_events(reply: Reply, model: str) -> Iterator[str]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            data = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
            return f"data: {json.dumps(data)}\n\n"

        yield chunk({"role": "assistant", "content": ""})
        for piece in reply.pieces:
            yield chunk({"content": piece})
        yield chunk({}, "stop")
        yield "data: [DONE]\n\n"
