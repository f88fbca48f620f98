"""One exception hierarchy for ragloom.

Every error a user can meet derives from :class:`RagloomError`. Messages name the file or the
parameter involved and say how to fix the problem.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

_PACKAGE = str(Path(__file__).resolve().parent)


def caller_level() -> int:
    """The ``stacklevel`` of a warning that names the first frame outside ragloom (the user's call)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


class RagloomError(Exception):
    """Base class of every ragloom error."""


class ConfigError(RagloomError, ValueError):
    """A setting is missing, malformed or out of bounds."""


class InvalidParameterError(RagloomError, ValueError):
    """A constructor or function argument is out of bounds."""


class _LookupFailed(InvalidParameterError, KeyError):
    """A name or id that was looked up and not found (also a ``KeyError``)."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0])


class UnknownNameError(_LookupFailed):
    """A strategy, mode, tokenizer or other named thing is not registered."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        self.kind, self.name, self.valid = kind, name, sorted(valid)
        super().__init__(f"unknown {kind} {name!r}; choose one of: {', '.join(self.valid)}")


class UnknownChunkError(_LookupFailed):
    """A chunk id that the workspace, or its graph, does not hold."""

    def __init__(self, chunk_id: str, where: str) -> None:
        self.chunk_id = chunk_id
        shown = repr(chunk_id) if len(chunk_id) <= 80 else f"{chunk_id[:60]!r}… ({len(chunk_id)} characters)"
        super().__init__(f"no chunk {shown} in {where}; take ids from 'ragloom query' (the 8 characters in "
                         "brackets) or 'ragloom query --json'")


class AmbiguousChunkError(_LookupFailed):
    """A short chunk id that starts more than one chunk id."""

    def __init__(self, prefix: str, matches: Iterable[str], where: str) -> None:
        self.prefix, self.matches = prefix, sorted(matches)
        shown = ", ".join(m[:12] for m in self.matches[:5]) + (" ..." if len(self.matches) > 5 else "")
        super().__init__(f"chunk id {prefix!r} starts {len(self.matches)} chunk ids in {where} ({shown}); "
                         "give more of it")


class MissingExtraError(RagloomError, ImportError):
    """An optional dependency is not installed."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the package {package!r}, which is not installed; "
            f"install it with: pip install 'ragloom[{extra}]'"
        )

    @classmethod
    def require(cls, extra: str, purpose: str, packages: dict[str, str]) -> None:
        """Raise for the first of ``packages`` (package name -> module name) that is not
        installed, without importing any of them."""
        import importlib.util

        for package, module in packages.items():
            if importlib.util.find_spec(module) is None:
                raise cls(package, extra, purpose)


class NothingToIngestError(InvalidParameterError):
    """The paths given to an ingest hold no file that ragloom reads."""


class LoadError(RagloomError):
    """A file could not be turned into a document. The batch it belongs to carries on."""

    reason = "could not be read"

    def __init__(self, path: str | Path, detail: str = "", *, fix: str = "") -> None:
        self.path = str(path)
        self.detail = detail
        self.fix = fix
        message = f"{self.path}: {self.reason}"
        if detail:
            message += f" ({detail})"
        if fix:
            message += f"; {fix}"
        super().__init__(message)


class UnsupportedFormatError(LoadError):
    reason = "unsupported file type"


class EmptyDocumentError(LoadError):
    reason = "empty document, nothing to index"


class BinaryFileError(LoadError):
    reason = "binary content where text was expected"


class CorruptFileError(LoadError):
    reason = "corrupt or unreadable file"


class EncryptedFileError(LoadError):
    reason = "password-protected file"


class FileTooLargeError(LoadError):
    reason = "file too large"


class EmbeddingError(RagloomError):
    """The embedding model could not be loaded or failed on input."""


class StoreError(RagloomError):
    """The workspace store is missing, locked or inconsistent."""


class DiskFullError(StoreError):
    """The disk (or quota) holding the workspace is full: the write that met it was undone.

    An ingest stopped by it carries what it did before the disk filled in ``report`` (an
    :class:`~ragloom.ingest.IngestReport`)."""

    report: object | None = None
    workspace: str = ""


class NoWorkspaceError(StoreError):
    """A command that reads a workspace was given a folder that does not exist."""


class WorkspaceLockedError(StoreError):
    """Another writer held the workspace's write lock for longer than the lock timeout."""

    def __init__(self, workspace: str | Path, holder: str, timeout: float) -> None:
        self.workspace, self.holder, self.timeout = str(workspace), holder, timeout
        super().__init__(
            f"the workspace {workspace} is being written by {holder}; gave up after {timeout:g} s "
            "(setting workspace.lock_timeout); try again when that write finishes, or raise the timeout"
        )


class DistributedIngestError(RagloomError):
    """An ingest on Ray failed (a worker died past its retries, the cluster went away)."""


class WorkspaceMismatchWarning(UserWarning):
    """The workspace was built with other chunk or embedding parameters than the current ones."""


class LLMError(RagloomError):
    """A language model provider failed: no key, endpoint down, timeout, rate limit, server error.

    The message is one line that names the provider, the endpoint and the fix; ``reason`` is a
    short machine-readable word (``no_key``, ``connection``, ``timeout``, ``rate_limited``,
    ``server_error``, ``auth``, ``not_found``, ``bad_request``, ``status``, ``empty``).
    """

    def __init__(self, message: str, *, provider: str = "", endpoint: str = "", reason: str = "",
                 status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.endpoint = endpoint
        self.reason = reason
        self.status = status


# -- bounds on what one file may cost (the ``[ingest]`` limits), and files that are not documents --


class NotRegularFileError(LoadError):
    """A FIFO, socket, device or folder where a file was expected; never opened (reading a FIFO blocks)."""

    reason = "not a regular file"


class SymlinkLoopError(LoadError):
    """A symbolic link that leads back to itself, or to a folder that contains it."""

    reason = "symlink loop"


class AccessDeniedError(RagloomError):
    """A call that the caller's API key (or the server's binding) does not allow."""


class OutsideRootsError(LoadError):
    """A file whose real path lies outside the folders a server may read (``server.ingest_roots``)."""

    reason = "outside the folders this server may read"

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, fix="ask the operator to add its folder to server.ingest_roots, or upload it")


class UnreadableFileError(LoadError):
    """The operating system refused to read the file (permissions, I/O error)."""

    reason = "cannot be read"


class FileNameError(LoadError):
    """A file name the store cannot hold (it keeps paths as UTF-8 text)."""

    reason = "file name is not valid UTF-8"


class TextTooLargeError(FileTooLargeError):
    """The text a file converts to is above ``ingest.max_text_mb``."""

    reason = "converted text too large"


class TooManyRowsError(FileTooLargeError):
    """A document would make more sentence and chunk rows than ``ingest.max_rows_per_file``."""

    reason = "too many sentences and chunks"


class ArchiveBombError(FileTooLargeError):
    """A DOCX (a ZIP container) whose parts declare more than ``ingest.max_unpacked_mb`` uncompressed."""

    reason = "expands too much when unpacked"


class ProcessingTimeoutError(LoadError):
    """Reading, parsing, chunking and enriching one file took longer than ``ingest.max_seconds_per_file``."""

    reason = "took too long to read"


class FileChangingError(LoadError):
    """The file changed while it was read, every time it was read (another program writing it)."""

    reason = "changed while it was read"


class NestingTooDeepError(LoadError):
    """HTML nested deeper than ``ingest.max_nesting`` elements (the converters recurse per level)."""

    reason = "nested too deeply to convert"


class ConversionTimeoutError(LoadError):
    """Converting one file took longer than ``ingest.max_seconds_per_file``."""

    reason = "conversion took too long"
