"""A running ``ragloom serve`` or ``ragloom chat`` answers this machine's ``ragloom query`` and
``ragloom ask``.

A cold question from the command line spends two to four seconds starting Python and loading
the embedding model, and about 60 ms answering. A process that already holds a warm engine
(``serve``, ``chat``) listens on a Unix socket named after its workspace; ``query`` and ``ask``
try it first and, when it answers, print its result (``--json`` says so under ``served_by``).
With none running, or one whose settings differ from what this command would load (another
``--config``, an edited ``ragloom.toml``, other ``RAGLOOM_*`` variables, another LLM key), the
command runs in its own process as before; ``--local`` always does.

Read as an attacker would:

- **Who may call.** The socket lives in a folder this user owns with mode 0700
  (``$XDG_RUNTIME_DIR/ragloom``, else ``<tmp>/ragloom-<uid>``; a folder owned by someone else,
  or open to others, or a symbolic link, turns the feature off), the socket itself has mode
  0600, and the listener also checks the caller's user id where the system reports it
  (``SO_PEERCRED``). A caller can do nothing it could not do by opening the workspace itself:
  the same user reads the same files.
- **What it reads.** Only the workspace the process already serves: a request carries a query
  or a question and its fields (tenant, lenses, dates, mode), never a path.
- **How big.** A request is one JSON line of at most :data:`MAX_REQUEST` bytes, read within
  :data:`READ_SECONDS`; anything longer or slower is refused and the connection closed.

The protocol: the client sends one JSON line ``{"protocol", "op", "settings", "query", ...}``;
the server answers with JSON lines, ``{"text": ...}`` for each piece of a streamed answer, then
one final line: ``{"ok": true, "result": ..., "served_by": ...}``, ``{"ok": false, "error":
{"type", "message"}}`` for a ragloom error, or ``{"ok": false, "refused": reason}`` when the
client should run the request itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import stat
import struct
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragloom.errors import RagloomError

if TYPE_CHECKING:
    from ragloom.config import Settings
    from ragloom.engine import Engine

#: The version of the wire format; a client and a server of different versions do not talk.
PROTOCOL = 1
#: A request is one line of JSON of at most this many bytes.
MAX_REQUEST = 1 << 20
#: A connected client must send its request within this many seconds.
READ_SECONDS = 10.0
#: The operations a listener answers.
OPERATIONS = ("query", "ask")
#: Unix socket paths are limited (108 bytes on Linux); a longer one turns the feature off.
_MAX_PATH = 100


def runtime_folder() -> Path | None:
    """The folder for this user's sockets, made if missing, or None when it is not safe: owned
    by another user, readable or writable by others, or a symbolic link."""
    if not hasattr(socket, "AF_UNIX"):  # pragma: no cover - Windows
        return None
    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(base) / "ragloom" if base else Path(tempfile.gettempdir()) / f"ragloom-{os.getuid()}"
    with contextlib.suppress(FileExistsError, FileNotFoundError):
        folder.mkdir(mode=0o700)
    try:
        info = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder


def socket_path(location: str | Path) -> Path | None:
    """Where the listener for the workspace at ``location`` (a folder or an object-storage URI)
    has its socket, or None where there can be none."""
    folder = runtime_folder()
    if folder is None:
        return None
    text = str(location)
    key = text if "://" in text else os.path.realpath(text)
    path = folder / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:24] + ".sock")
    return path if len(os.fsencode(path)) <= _MAX_PATH else None


def fingerprint(settings: Settings) -> str:
    """What must be the same for a listener's answer to equal the caller's own: every setting,
    and the language model's key (hashed; it is read from the environment, not the settings)."""
    variable = settings.llm.key_variable()
    key = os.environ.get(variable, "") if variable else ""
    digest = hashlib.sha256(settings.model_dump_json().encode("utf-8"))
    digest.update(b"\0" + hashlib.sha256(key.encode("utf-8")).digest())
    return digest.hexdigest()


# -- the listener: a process with a warm engine -----------------------------------------------


class Listener:
    """Answers ``query`` and ``ask`` for ``engine`` on its workspace's socket, in a thread per
    connection, until :meth:`close`. ``process`` names the process in answers ("ragloom serve")."""

    def __init__(self, engine: Engine, process: str) -> None:
        self.engine = engine
        self.process = process
        self.fingerprint = fingerprint(engine.settings)
        self.path = socket_path(engine.workspace.uri)
        self._server: socket.socket | None = None
        self._inode: int | None = None
        self._restore = False

    def start(self) -> Listener:
        """Listen, unless another live process already does for this workspace (it keeps the
        socket) or no safe folder exists; either way the caller goes on serving its own way."""
        if self.path is None or _answers(self.path):
            return self
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a socket left by a process that died
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(str(self.path))
            # Mode 0600 once bound; until then the folder's 0700 keeps everyone else out (the
            # umask is the whole process's, and other threads may be making files).
            self.path.chmod(0o600)
        except OSError:  # another process bound it first
            server.close()
            return self
        server.listen(16)
        self._server, self._inode = server, self.path.stat().st_ino
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            # Killed politely (kill, systemd, uvicorn passing its SIGTERM on), the process still
            # leaves through close() and takes its socket with it.
            signal.signal(signal.SIGTERM, _terminate)
            self._restore = True
        threading.Thread(target=self._accept, name="ragloom-attach", daemon=True).start()
        return self

    @property
    def listening(self) -> bool:
        return self._server is not None

    def close(self) -> None:
        """Stop listening and remove the socket (only if it is still this listener's)."""
        server, self._server = self._server, None
        if server is None or self.path is None:
            return
        if self._restore and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self._restore = False
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self._inode:
                self.path.unlink()
        server.close()

    def __enter__(self) -> Listener:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    def _accept(self) -> None:
        while (server := self._server) is not None:
            try:
                conn, _ = server.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), name="ragloom-attach-request", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            if not _same_user(conn):
                return
            conn.settimeout(READ_SECONDS)
            try:
                line = _read_line(conn)
            except (OSError, ValueError):
                return
            conn.settimeout(None)

            def send(message: Mapping[str, Any]) -> None:
                conn.sendall(json.dumps(message, ensure_ascii=False, default=str).encode("utf-8") + b"\n")

            with contextlib.suppress(OSError):  # the caller went away
                send(self.answer(line, send))

    def answer(self, line: bytes, send: Callable[[Mapping[str, Any]], None]) -> dict[str, Any]:
        """The final reply to one request line; ``send`` carries the pieces of a streamed answer."""
        try:
            request = json.loads(line)
        except ValueError:
            return {"ok": False, "refused": "the request is not JSON"}
        if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
            return {"ok": False, "refused": f"another protocol version (this {self.process} speaks {PROTOCOL})"}
        if request.get("op") not in OPERATIONS:
            return {"ok": False, "refused": f"unknown operation {str(request.get('op'))[:40]!r}"}
        if request.get("settings") != self.fingerprint:
            return {"ok": False, "refused": f"the running {self.process} has other settings"}
        try:
            result = self._run(request, send)
        except RagloomError as exc:
            return {"ok": False, "error": {"type": type(exc).__name__, "message": str(exc)}}
        except Exception as exc:  # noqa: BLE001 - the caller then runs it itself, and sees the error there
            return {"ok": False, "refused": f"the running {self.process} failed ({type(exc).__name__})"}
        return {"ok": True, "result": result, "served_by": {"process": self.process, "pid": os.getpid()}}

    def _run(self, request: Mapping[str, Any], send: Callable[[Mapping[str, Any]], None]) -> dict[str, Any]:
        from ragloom.query.request import Query

        query = Query.from_dict(request.get("query"))
        if request["op"] == "query":
            return self.engine.query(query).to_dict()
        writer = self.engine.writing.writer(model=request.get("model"), strongest=bool(request.get("strongest")))
        on_text = (lambda text: send({"text": text})) if request.get("stream") else None
        return self.engine.ask(query, writer=writer, on_text=on_text).to_dict()


def _terminate(signum: int, _: object) -> None:
    raise SystemExit(128 + signum)


def _answers(path: Path) -> bool:
    """Whether a live listener is at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this user (where the system says; the socket's mode holds elsewhere)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:  # pragma: no cover - not Linux
        return True
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return bool(uid == os.getuid())


def _read_line(conn: socket.socket) -> bytes:
    """One line from ``conn``, at most :data:`MAX_REQUEST` bytes (a ValueError beyond)."""
    data = bytearray()
    while b"\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            break
        data += piece
        if len(data) > MAX_REQUEST:
            raise ValueError("request too long")
    return bytes(data.split(b"\n", 1)[0])


# -- the client: the command line -------------------------------------------------------------


@dataclass(frozen=True)
class Served:
    """A running process's answer: the result as ``--json`` prints it, and who answered."""

    result: dict[str, Any]
    by: dict[str, Any]


def call(location: str | Path, settings: Callable[[], Settings], op: str, body: Mapping[str, Any], *,
         on_text: Callable[[str], None] | None = None) -> Served | str | None:
    """Send ``op`` with ``body`` (``query``: a :meth:`Query.to_dict`, and for ``ask`` ``model``,
    ``strongest``) to the listener of the workspace at ``location``, whose settings must be those
    ``settings()`` loads (called only when something listens). The listener's answer, or
    None when none is listening, or why the one listening left it to the caller (its settings
    differ, it failed before answering): the caller then runs it itself. A ragloom error the
    listener raised is raised here, with its message."""
    path = socket_path(location)
    if path is None or not path.exists():
        return None
    request = {"protocol": PROTOCOL, "op": op, "settings": fingerprint(settings()), "stream": on_text is not None,
               **body}
    streamed = False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(path))
            conn.sendall(json.dumps(request, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
            for message in _replies(conn):
                if "text" in message and "ok" not in message:
                    if on_text is not None:
                        on_text(str(message["text"]))
                        streamed = True
                    continue
                return _outcome(message)
    except (OSError, ValueError):  # gone, or a reply cut short
        pass
    if streamed:
        raise RagloomError(f"the running ragloom process on this workspace stopped while answering (socket {path}); "
                           "ask again, or pass --local to answer in this process")
    return None


def _replies(conn: socket.socket) -> Iterator[dict[str, Any]]:
    buffer = b""
    while True:
        piece = conn.recv(65536)
        if not piece:
            return
        buffer += piece
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            message = json.loads(line)
            if isinstance(message, dict):
                yield message


def _outcome(message: Mapping[str, Any]) -> Served | str:
    if message.get("ok"):
        return Served(dict(message["result"]), dict(message.get("served_by") or {}))
    error = message.get("error")
    if not isinstance(error, Mapping):
        return str(message.get("refused") or "it gave no reason")
    raise RagloomError(str(error.get("message")))  # printed as the listener's own error would be
