"""What the store makes of a failing disk: one recognisable error, whichever layer raised it.

LanceDB reports a full disk as a ``RuntimeError`` whose text carries the operating system's
error ("No space left on device (os error 28)"); Python's own file calls raise ``OSError`` with
``errno.ENOSPC``. Both become a :class:`~ragloom.errors.DiskFullError` that names the workspace
and what to do.
"""

from __future__ import annotations

import errno
import re

from ragloom.errors import DiskFullError

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_FULL_TEXT = re.compile(r"No space left on device|Disk quota exceeded|os error (?:28|122)\b")


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc``, or an error it was raised from, says that the disk (or quota) is full."""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, DiskFullError):
            return True
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            return True
        if _FULL_TEXT.search(str(exc)):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def disk_full(exc: BaseException, workspace: str, *, rolling_back: bool = False) -> DiskFullError:
    """The :class:`DiskFullError` for ``exc`` met while writing the workspace at ``workspace``."""
    if isinstance(exc, DiskFullError):
        return exc
    if rolling_back:
        error = DiskFullError(f"no space left on the disk of the workspace {workspace}, not even to undo an "
                              "interrupted write (reads still see the last commit); free some space and run the "
                              "command again")
    else:
        error = DiskFullError(f"no space left on the disk of the workspace {workspace}; the write that met it was "
                              "undone and what was committed before it stays; free some space and run the command "
                              "again")
    error.workspace = workspace
    return error
