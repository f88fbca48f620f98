"""Checks of arguments shared by every layer, and how a value is shown in their messages."""

from __future__ import annotations

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
