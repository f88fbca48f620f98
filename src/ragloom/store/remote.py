"""Workspaces on object storage (``s3://bucket/prefix``, ``gs://``, ``az://``, ``abfs[s]://``).

LanceDB keeps the tables there natively. This module keeps the few small objects ragloom
writes beside them (the commit record, the pending marker, the manifest, the settings) and the
workspace's write lock, which on object storage cannot be an ``flock``:

- **The lock is a lease.** Taking it creates ``write.lock`` with a conditional put (S3's
  ``If-None-Match: *``; the other stores' equivalents), so of two writers exactly one
  succeeds. Its holder rewrites it every quarter lease (the heartbeat), each put conditional
  on the version it last wrote. A waiter takes the lock over, again with a put conditional on
  the version it saw, when the record is older than the lease by the waiter's clock, when it
  has not changed for a whole lease while the waiter watched (no clock is trusted then), or at
  once when the holder was a process of this machine that no longer runs. The lease is
  ``workspace.lock_timeout``.
- **Commits are fenced.** The commit record is written only over the version of it that this
  writer read, so a writer whose lease ran out (a process paused for longer than the lease)
  cannot overwrite the commit of the writer that took over: its commit fails with an error,
  and the tables it changed are rolled back by the next writer, as after a crash.

Credentials, region and endpoint come from the environment (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``; ``GOOGLE_*``; ``AZURE_*``),
read the same way by LanceDB and by obstore (both use the Rust ``object_store`` crate). An
``http://`` endpoint (a local S3-compatible server) is allowed when the endpoint says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragloom.errors import InvalidParameterError, MissingExtraError, StoreError, WorkspaceLockedError
from ragloom.store.locks import ReentrantLock

#: URI schemes a workspace may use on object storage (LanceDB's and obstore's, both).
REMOTE_SCHEMES = ("s3", "gs", "az", "abfs", "abfss")
_SCHEME = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*):/+(?P<rest>.*)$")


def is_remote(location: str | Path | None) -> bool:
    """Whether ``location`` names object storage (``s3://bucket/prefix``) rather than a folder."""
    if location is None:
        return False
    found = _SCHEME.match(str(location))
    return found is not None and found["scheme"] in REMOTE_SCHEMES


def normalize(location: str | Path) -> str:
    """``s3://bucket/prefix`` without a trailing slash; a ``Path`` made of a URI (which folds
    ``//`` into ``/``) gets its ``//`` back."""
    found = _SCHEME.match(str(location))
    if found is None or found["scheme"] not in REMOTE_SCHEMES:
        raise InvalidParameterError(f"{location!r} is not an object-storage URI; use one of "
                                    + ", ".join(f"{s}://bucket/prefix" for s in REMOTE_SCHEMES))
    rest = found["rest"].strip("/")
    if not rest:
        raise InvalidParameterError(f"the workspace URI {location!r} names no bucket; use {found['scheme']}://bucket/prefix")
    return f"{found['scheme']}://{rest}"


def join(uri: str, *parts: str) -> str:
    return "/".join([uri.rstrip("/"), *(p.strip("/") for p in parts)])


def _endpoint() -> str:
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"):
        if os.environ.get(name):
            return os.environ[name]
    return ""


def storage_options(uri: str) -> dict[str, str]:
    """LanceDB ``storage_options`` for ``uri`` beyond what it reads from the environment
    itself: plain HTTP allowed when the S3 endpoint is an ``http://`` one (a local server)."""
    if uri.startswith("s3://") and _endpoint().startswith("http://") and "AWS_ALLOW_HTTP" not in os.environ:
        return {"allow_http": "true"}
    return {}


def _obstore() -> Any:  # noqa: ANN401 - the obstore module
    try:
        import obstore
    except ImportError as exc:
        raise MissingExtraError("obstore", "distributed", "a workspace on object storage") from exc
    return obstore


def mirror_folder(uri: str) -> Path:
    """The local folder that stands for a remote workspace on this machine: its downloaded
    settings, the embedding cache, saved reports (``$RAGLOOM_CACHE_DIR/workspaces/...``)."""
    base = os.environ.get("RAGLOOM_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base) / ("" if os.environ.get("RAGLOOM_CACHE_DIR") else "ragloom") if base else \
        Path.home() / ".cache" / "ragloom"
    slug = re.sub(r"[^A-Za-z0-9]+", "-", uri)[-40:].strip("-")
    return root / "workspaces" / f"{slug}-{hashlib.blake2b(uri.encode(), digest_size=6).hexdigest()}"


class Conflict(Exception):
    """A conditional put found the object other than it expected (internal)."""


class ObjectFiles:
    """Small objects under one prefix: read, written (optionally only if absent, or only over
    a known version), deleted; each identified by its entity tag."""

    def __init__(self, uri: str) -> None:
        self.uri = normalize(uri)
        ob = _obstore()
        from obstore.store import from_url

        # Credentials, region and endpoint: obstore reads the same variables LanceDB does.
        http = bool(storage_options(self.uri).get("allow_http"))
        self._ob = ob
        self._store = from_url(self.uri, client_options={"allow_http": True} if http else None)

    def __str__(self) -> str:
        return self.uri

    def read(self, name: str) -> tuple[bytes, str] | None:
        """(bytes, tag) of ``name``, or None when there is none."""
        try:
            result = self._ob.get(self._store, name)
            data = bytes(result.bytes())
        except FileNotFoundError:
            return None
        return data, str(result.meta.get("e_tag") or "")

    def tag(self, name: str) -> str | None:
        """The object's tag (it changes with every write), or None when there is none."""
        try:
            return str(self._ob.head(self._store, name).get("e_tag") or "")
        except FileNotFoundError:
            return None

    def write(self, name: str, data: bytes, *, absent: bool = False, over: str | None = None) -> str:
        """Put ``data``; only if there is no object yet (``absent``), or only over the version
        tagged ``over``; raises :class:`Conflict` when that does not hold. Returns the new tag."""
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        mode: Any = "create" if absent else ({"e_tag": over} if over is not None else "overwrite")
        try:
            result = self._ob.put(self._store, name, data, mode=mode)
        except (AlreadyExistsError, PreconditionError) as exc:
            raise Conflict(name) from exc
        except FileNotFoundError as exc:  # an update of an object that is gone
            raise Conflict(name) from exc
        return str(result.get("e_tag") or "")

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._ob.delete(self._store, name)

    def any(self) -> bool:
        """Whether anything is stored under the prefix."""
        for batch in self._ob.list(self._store, chunk_size=1):
            if batch:
                return True
        return False


def _alive_here(info: dict[str, Any]) -> bool | None:
    """Whether the lock's holder still runs, when it ran on this machine (None: can't tell)."""
    if info.get("host") != socket.gethostname() or not isinstance(info.get("pid"), int):
        return None
    try:
        os.kill(info["pid"], 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, as another user's process
        return True
    return True


class ObjectLock(ReentrantLock):
    """The write lock of a workspace on object storage: a lease kept alive by a heartbeat
    (see the module docstring). Same interface as the local ``flock`` lock: re-entrant in
    one thread, queued between threads."""

    NAME = "write.lock"

    def __init__(self, files: ObjectFiles, workspace: str, lease: float) -> None:
        super().__init__(workspace)
        self.files = files
        #: Seconds without a heartbeat after which the lock is taken over.
        self.lease = max(float(lease), 1.0)
        self._tag: str | None = None
        self._record: dict[str, Any] = {}
        self._lost: str | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def holder(self, info: dict[str, Any] | None = None) -> str:
        if info is None:
            found = self.files.read(self.NAME)
            try:
                info = json.loads(found[0]) if found else {}
            except ValueError:
                info = {}
        return (f"process {info.get('pid', '?')} on {info.get('host', '?')} ({info.get('command', '?')}, since "
                f"{info.get('since', '?')}, last heartbeat {info.get('beat', '?')})")

    def check(self) -> None:
        """Raise if the lease was lost (a heartbeat found the lock taken over)."""
        if self._lost is not None:
            raise StoreError(f"the workspace {self.workspace} lost its write lock: {self._lost}; the tables this "
                             "write changed are rolled back by the next writer; run the command again")

    def _record_now(self, beats: int) -> dict[str, Any]:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        return {**self._record, "beat": now, "beats": beats, "released": False}

    def _acquire(self, timeout: float, on_wait: Callable[[str], None] | None) -> None:
        self._record = {"owner": uuid.uuid4().hex, "pid": os.getpid(), "host": socket.gethostname(),
                        "command": " ".join(os.path.basename(a) for a in sys.argv[:2]) or "python",
                        "since": datetime.now(UTC).isoformat(timespec="seconds"), "lease": self.lease}
        data = json.dumps(self._record_now(0)).encode()
        started = time.monotonic()
        seen: tuple[str, float] | None = None  # (tag, when first seen)
        told = False
        while True:
            found = self.files.read(self.NAME)
            try:
                if found is None:
                    self._tag = self.files.write(self.NAME, data, absent=True)
                    break
                raw, tag = found
                try:
                    info = json.loads(raw)
                except ValueError:
                    info = {"released": True}  # not a lock record: nobody holds it
                now = time.monotonic()
                if seen is None or seen[0] != tag:
                    seen = (tag, now)
                if self._free(info) or now - seen[1] >= self.lease:
                    self._tag = self.files.write(self.NAME, data, over=tag)
                    break
            except Conflict:
                continue  # another writer moved first: look again
            waited = time.monotonic() - started
            if waited >= timeout:
                raise WorkspaceLockedError(self.workspace, self.holder(info), timeout)
            if not told and on_wait is not None:
                on_wait(f"waiting for the workspace write lock, held by {self.holder(info)}")
                told = True
            time.sleep(min(0.1 * (1 + waited), 1.0, max(0.05, self.lease / 8)))
        self._lost = None
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat, name="ragloom-lock-heartbeat", daemon=True)
        self._beat.start()

    def _free(self, info: dict[str, Any]) -> bool:
        """Whether a lock record binds nobody: released, its holder gone, or its heartbeat older
        than the lease by this machine's clock."""
        if info.get("released") or _alive_here(info) is False:
            return True
        try:
            beat = datetime.fromisoformat(str(info.get("beat")))
        except ValueError:
            return False
        lease = max(float(info.get("lease") or self.lease), self.lease)
        return (datetime.now(UTC) - beat).total_seconds() > lease + 1.0  # 1 s: the record's rounding

    def _heartbeat(self) -> None:
        beats = 0
        while not self._stop.wait(self.lease / 4):
            beats += 1
            try:
                self._tag = self.files.write(self.NAME, json.dumps(self._record_now(beats)).encode(), over=self._tag)
            except Conflict:
                self._lost = f"another writer took it over ({self.holder()})"
                return
            except Exception:  # noqa: BLE001, S112 - a failed request: the next beat tries again (the
                continue  # commit's fence catches a lease lost meanwhile)

    def _release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
            self._beat = None
        if self._lost is None and self._tag is not None:
            with contextlib.suppress(Conflict):
                self.files.write(self.NAME, json.dumps({**self._record_now(-1), "released": True}).encode(),
                                 over=self._tag)
        self._tag = None


class ObjectState:
    """The store's commit record and pending marker as objects beside the tables, and its lock."""

    def __init__(self, uri: str, *, lock_timeout: float) -> None:
        self.files = ObjectFiles(uri)
        self.lock = ObjectLock(self.files, uri.rsplit("/", 1)[0] if uri.endswith("/_ragloom") else uri, lock_timeout)
        self._fence: str | None = None

    def arm(self, name: str) -> None:
        """Remember the version of ``name`` as the lock was taken: a fenced write goes only over it."""
        self._fence = self.files.tag(name)

    def stamp(self, name: str) -> str | None:
        return self.files.tag(name)

    def read(self, name: str) -> str | None:
        found = self.files.read(name)
        return found[0].decode("utf-8") if found else None

    def exists(self, name: str) -> bool:
        return self.files.tag(name) is not None

    def write(self, name: str, text: str, *, fenced: bool = False) -> None:
        """Write ``name``; ``fenced`` (the commit record): only over the version this writer
        saw when it took the lock, or last wrote itself, so that a writer whose lease ran out
        cannot overwrite the commit of the one that took over."""
        if not fenced:
            self.files.write(name, text.encode("utf-8"))
            return
        try:
            self._fence = self.files.write(name, text.encode("utf-8"), absent=self._fence is None, over=self._fence)
        except Conflict:
            raise StoreError(f"{self.files.uri}/{name} was written by another writer while this one held the write "
                             "lock (its lease ran out); this write is rolled back by the next writer; run the command "
                             "again") from None

    def unlink(self, name: str) -> None:
        self.files.delete(name)

    def reserve(self, size: int) -> None:
        """Nothing to set aside: object storage does not fill up as a disk does."""

    def release_reserve(self) -> bool:
        return False
