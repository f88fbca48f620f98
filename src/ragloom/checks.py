"""Checks of arguments shared by every layer, and how a value is shown in their messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from ragloom.errors import InvalidParameterError


def shown(value: object) -> str:
    """A value for an error message, shortened: a 1 MB argument makes a one-line error."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}… ({len(text)} characters)"


def check_count(name: str, value: object, what: str) -> None:
    """Raise unless ``value`` is None or a whole number, 0 or more (``what`` says what it counts):
    a negative count would slice the end off a list, a silent wrong answer."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InvalidParameterError(f"{name} ({shown(value)}) must be a whole number, 0 or more: {what}")


def check_known(given: Iterable[str], valid: Sequence[str], noun: str, owner: str) -> None:
    """Raise for the first of ``given`` that is not in ``valid``, with the closest valid name:
    ``unknown option 'treshold' for retrieval mode 'dynamic' (did you mean 'threshold'?); valid
    options: query_floor, threshold``."""
    for key in given:
        if key not in valid:
            close = difflib.get_close_matches(key, list(valid), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidParameterError(f"unknown {noun} {key!r} for {owner}{hint}; valid {noun}s: "
                                        f"{', '.join(sorted(valid)) or 'none'}")
