"""PDF, DOCX and HTML converted in a child process, under a time and a memory limit.

The converters (pdfminer.six, mammoth, BeautifulSoup and markdownify) are libraries that can
run for minutes or recurse without end on a hostile file, and Python cannot interrupt a
thread: the conversion runs in a child process that is stopped when a file takes longer than
``ingest.max_seconds_per_file``, and whose address space is capped (``WORKER_MEMORY_MB``), so
that a file that would take the machine's memory fails alone with a line saying so. One child
serves a whole ingest run (its imports take a second); a file that kills it costs only a new
child for the next file.

The child is ``python -m ragloom.load.worker``: started explicitly rather than by
``multiprocessing``, which would import the caller's main module again.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import struct
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import IO, Any

from ragloom.errors import (
    CorruptFileError,
    FileTooLargeError,
    LoadError,
    MissingExtraError,
    RagloomError,
)
from ragloom.load.limits import Limits, display_path

#: Address space the child may map, in MiB (its imports take about 500).
WORKER_MEMORY_MB = 2048
#: Seconds the child may take to start (import the converters); not counted against a file.
START_TIMEOUT = 120.0
_HEADER = struct.Struct(">Q")


def _write(stream: IO[bytes], value: object) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read(stream: IO[bytes]) -> Any:  # noqa: ANN401 - what the other side sent
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    payload = _read_exactly(stream, _HEADER.unpack(header)[0])
    return None if payload is None else pickle.loads(payload)  # noqa: S301 - our own child, over a pipe


class ConverterProcess:
    """A child process that converts files; restarted after a timeout or a crash.

    >>> converter = ConverterProcess()                                # doctest: +SKIP
    >>> media_type, converted = converter.convert(path, data, limits)  # doctest: +SKIP
    >>> converter.close()                                             # doctest: +SKIP
    """

    def __init__(self, *, memory_mb: int = WORKER_MEMORY_MB) -> None:
        self.memory_mb = memory_mb
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        #: Children started so far (a timeout or crash starts a new one).
        self.started = 0

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])  # the folder that holds ragloom/
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["PYTHONWARNINGS"] = "ignore"
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "ragloom.load.worker", str(self.memory_mb)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        weakref.finalize(self, _stop, proc)
        self.started += 1
        ready, reply = _receive(proc, START_TIMEOUT)
        if not ready or reply != ("ready",):
            _stop(proc)
            raise RagloomError("the converter process did not start; run 'python -m ragloom.load.worker' to see why")
        return proc

    def convert(self, path: Path, data: bytes, limits: Limits) -> tuple[str, Any]:
        """(media type, :class:`~ragloom.load.readers.Converted`) of one file, as
        :func:`~ragloom.load.readers.convert` gives it, within ``limits.max_seconds``."""
        from ragloom.load.readers import Converted

        shown = display_path(path)
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            proc = self._proc
            assert proc.stdin is not None
            try:
                _write(proc.stdin, (os.fspath(path), data, dataclasses.asdict(limits)))
            except OSError:
                self._kill()
                raise CorruptFileError(shown, "the converter process stopped before reading it") from None
            ready, reply = _receive(proc, limits.max_seconds)
            _note_peak(proc.pid)
            if not ready:
                self._kill()
                from ragloom.errors import ConversionTimeoutError

                seconds = f"{limits.max_seconds:g}"
                raise ConversionTimeoutError(
                    shown, f"stopped after {seconds} s, ingest.max_seconds_per_file = {seconds}",
                    fix="raise ingest.max_seconds_per_file or convert the file to Markdown first")
            if reply is None:
                code = self._kill()
                raise CorruptFileError(shown, f"the converter crashed on it (exit status {code})")
        kind = reply[0]
        if kind == "ok":
            _, media_type, markdown, title, notes = reply
            return media_type, Converted(markdown, title, tuple(notes))
        if kind == "error":
            _, name, error_path, detail, fix = reply
            import ragloom.errors

            cls = getattr(ragloom.errors, name, CorruptFileError)
            if not (isinstance(cls, type) and issubclass(cls, LoadError)):
                cls = CorruptFileError
            raise cls(error_path, detail, fix=fix)
        if kind == "missing":
            error = MissingExtraError.__new__(MissingExtraError)
            Exception.__init__(error, reply[1])
            raise error
        if kind == "memory":
            raise FileTooLargeError(shown, f"converting it needs more than {self.memory_mb} MiB of memory",
                                    fix="convert it to Markdown or split it")
        raise CorruptFileError(shown, str(reply[1])[:200])

    def _kill(self) -> int | None:
        proc, self._proc = self._proc, None
        return _stop(proc) if proc is not None else None

    def close(self) -> None:
        """Stop the child (the next conversion starts a new one)."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            assert proc.stdin is not None
            try:
                proc.stdin.close()  # the child exits at the end of its input
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            _stop(proc)  # kills it if it is still there; closes both pipes either way


def _receive(proc: subprocess.Popen[bytes], timeout: float | None) -> tuple[bool, Any]:
    """(whether the child answered in time, its answer or None if it died)."""
    box: list[Any] = []
    assert proc.stdout is not None
    stdout = proc.stdout

    def read() -> None:
        try:
            box.append(_read(stdout))
        except (OSError, EOFError, pickle.UnpicklingError):
            box.append(None)

    reader = threading.Thread(target=read, name="ragloom-converter-reply", daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        return False, None
    return True, box[0]


_PEAK_KB = 0


def _note_peak(pid: int) -> None:
    """Remember the child's peak resident memory (Linux; ``getrusage`` of children would count
    the parent's pages at fork)."""
    global _PEAK_KB
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    _PEAK_KB = max(_PEAK_KB, int(line.split()[1]))
                    return
    except (OSError, ValueError, IndexError):
        return


def peak_rss_mb() -> float:
    """The largest peak resident memory (MiB) any converter process reached in this process's
    life, as far as it could be read (0.0 where ``/proc`` is not there)."""
    return _PEAK_KB / 1024


def _stop(proc: subprocess.Popen[bytes]) -> int | None:
    if proc.poll() is None:
        proc.kill()
    try:
        return proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a killed process that does not exit
        return None
    finally:
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


# -- the child ------------------------------------------------------------------------------


def _limit_memory(megabytes: int) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX: no cap, the time limit still holds
        return
    limit = megabytes * 1024 * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def serve(memory_mb: int = WORKER_MEMORY_MB) -> None:
    """The child's loop: requests from stdin, answers to stdout, until stdin ends."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing a converter prints may corrupt the answers
    _limit_memory(memory_mb)
    from ragloom.load.readers import convert

    for module in ("markitdown", "pdfminer.high_level"):  # imported once, before any clock runs
        try:
            __import__(module)
        except ImportError:
            pass
    _write(stdout, ("ready",))
    while True:
        request = _read(stdin)
        if request is None:
            return
        path, data, limits = request
        reply: tuple[Any, ...]
        try:
            media_type, converted = convert(Path(path), data, Limits(**limits))
            reply = ("ok", media_type, converted.markdown, converted.title, converted.notes)
        except LoadError as exc:
            reply = ("error", type(exc).__name__, exc.path, exc.detail, exc.fix)
        except MissingExtraError as exc:
            reply = ("missing", str(exc))
        except MemoryError:
            reply = ("memory",)
        except Exception as exc:  # noqa: BLE001 - any converter failure is this file's, reported by name
            reply = ("crash", f"{type(exc).__name__}: {exc}")
        del data
        _write(stdout, reply)


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else WORKER_MEMORY_MB)
