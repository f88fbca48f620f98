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
    """A document gets ``type`` when every pattern given matches (case-insensitive search)."""

    type: str
    filename: str | None = None
    content: str | None = None
    lens: str | None = None


DEFAULT_RULES: tuple[DocTypeRule, ...] = (
    DocTypeRule("Meeting Notes", filename=r"meeting|standup|stand-up|retro|sync|1on1|minutes"),
    DocTypeRule("Meeting Notes", content=r"^\s*(?:attendees|participants|action items)\s*:"),
    DocTypeRule("Conversation", filename=r"slack|chat|thread|transcript"),
    DocTypeRule("Roadmap", filename=r"roadmap"),
    DocTypeRule("Product Requirements", filename=r"\bprd\b|requirements|spec"),
    DocTypeRule("Design Doc", filename=r"\brfc\b|design|architecture|adr"),
    DocTypeRule("Postmortem", filename=r"postmortem|post-mortem|incident"),
    DocTypeRule("OKRs", filename=r"okr|objectives"),
    DocTypeRule("Strategy Memo", filename=r"strategy|vision|memo|thesis"),
    DocTypeRule("Analyst Report", filename=r"analyst|market|report|forecast"),
    DocTypeRule("Framework", filename=r"framework|canvas|model|pricing"),
    DocTypeRule("Conversation", lens=r"^team-conversational$"),
    DocTypeRule("Analyst Report", lens=r"^external-analyst$"),
    DocTypeRule("Engineering Doc", lens=r"^engineering$"),
    DocTypeRule("Strategy Memo", lens=r"^your-voice$"),
    DocTypeRule("Framework", lens=r"^business-framework$"),
    DocTypeRule("Team Doc", lens=r"^team-structured$"),
)


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
    for rule in rules:
        checks = ((rule.filename, filename, "filename"), (rule.content, head, "content"), (rule.lens, lens, "lens"))
        given = [(p, value, f) for p, value, f in checks if p]
        if given and all(_compile(p, f).search(value) for p, value, f in given):
            return rule.type
    return default
