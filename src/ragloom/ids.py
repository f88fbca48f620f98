"""Short chunk ids: the first characters of a chunk id, as git shortens commit hashes.

Chunk ids are 20 hexadecimal characters; people read and type the first eight. Every command
that takes a chunk id takes any unambiguous prefix of at least :data:`MIN_PREFIX` characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragloom.errors import AmbiguousChunkError, UnknownChunkError

#: Characters of a whole chunk id (a 10-byte blake2b digest in hexadecimal).
CHUNK_ID_LENGTH = 20
#: Characters of a chunk id shown to people.
SHORT = 8
#: The shortest prefix accepted in place of a whole id.
MIN_PREFIX = 4
_HEX = re.compile(r"[0-9a-f]+")


def short_id(chunk_id: str) -> str:
    """What people see of a chunk id (window results, ``docid:start-end``, stay whole)."""
    return chunk_id[:SHORT] if _HEX.fullmatch(chunk_id) else chunk_id


def is_prefix(given: str) -> bool:
    """Whether ``given`` can stand for a longer chunk id (hexadecimal, ``MIN_PREFIX`` characters
    or more, shorter than a whole id)."""
    return MIN_PREFIX <= len(given) < CHUNK_ID_LENGTH and bool(_HEX.fullmatch(given))


def pick(given: str, matches: Iterable[str], where: str) -> str:
    """The one id of ``matches`` that ``given`` names (``given`` itself when it is among them)."""
    found = sorted(set(matches))
    if given in found:
        return given
    if len(found) == 1:
        return found[0]
    if not found:
        raise UnknownChunkError(given, where)
    raise AmbiguousChunkError(given, found, where)
