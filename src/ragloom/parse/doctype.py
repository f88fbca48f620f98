"""Document type inference from configurable rules (filename, content and lens patterns)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ragloom.errors import ConfigError

#: How much of a document the content patterns look at.
CONTENT_WINDOW = 4000


@dataclass(frozen=True, slots=True)
class DocTypeRule:
    """A document gets ``type`` when every pattern given matches (case-insensitive search).

    ``filename`` patterns see the file name as words: separators (``_ - .`` and spaces) and
    camelCase humps become single spaces, so ``2025-03-03_TeamSync.md`` is matched as
    ``2025 03 03 Team Sync md`` and ``\\bsync\\b`` finds it while leaving ``asyncio.md`` alone.
    """

    type: str
    filename: str | None = None
    content: str | None = None
    lens: str | None = None


def _words(*words: str) -> str:
    """A filename pattern for whole words (an optional plural ``s``): ``memo`` is not ``memory``."""
    return r"\b(?:" + "|".join(words) + r")s?\b"


DEFAULT_RULES: tuple[DocTypeRule, ...] = (
    DocTypeRule("Meeting Notes", filename=_words("meeting", "standup", "stand up", "retro", "retrospective", "sync",
                                                 "1on1", "one on one", "minutes")),
    DocTypeRule("Meeting Notes", content=r"^\s*(?:attendees|participants|action items)\s*:"),
    DocTypeRule("Conversation", filename=_words("slack", "chat", "thread", "transcript")),
    DocTypeRule("Roadmap", filename=_words("roadmap")),
    DocTypeRule("Product Requirements", filename=_words("prd", "requirement", "spec", "specification")),
    DocTypeRule("Design Doc", filename=_words("rfc", "design", "architecture", "adr")),
    DocTypeRule("Postmortem", filename=_words("postmortem", "post mortem", "incident")),
    DocTypeRule("OKRs", filename=_words("okr", "objective")),
    DocTypeRule("Strategy Memo", filename=_words("strategy", "vision", "memo", "thesis")),
    DocTypeRule("Analyst Report", filename=_words("analyst", "market", "report", "forecast")),
    DocTypeRule("Framework", filename=_words("framework", "canvas", "business model", "pricing")),
)

_SEPARATORS = re.compile(r"[\s_.\-]+")
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def filename_words(filename: str) -> str:
    """``filename`` as the words a ``filename`` pattern sees (see :class:`DocTypeRule`)."""
    return " ".join(_SEPARATORS.sub(" ", _HUMP.sub(" ", filename)).split())


@lru_cache(maxsize=256)
def _compile(pattern: str, field: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE | re.MULTILINE)
    except re.error as exc:
        raise ConfigError(
            f"doc_types rule {field} pattern {pattern!r} is not a valid regular expression ({exc}); "
            "fix it in ragloom.toml under [[doc_types.rules]]"
        ) from exc


def infer_doc_type(
    filename: str,
    text: str,
    lens: str = "",
    *,
    rules: Sequence[DocTypeRule] = DEFAULT_RULES,
    default: str = "Document",
) -> str:
    """The type of the first rule whose patterns all match, else ``default``."""
    head = text[:CONTENT_WINDOW]
    words = filename_words(filename)
    for rule in rules:
        checks = ((rule.filename, words, "filename"), (rule.content, head, "content"), (rule.lens, lens, "lens"))
        given = [(p, value, f) for p, value, f in checks if p]
        if given and all(_compile(p, f).search(value) for p, value, f in given):
            return rule.type
    return default
