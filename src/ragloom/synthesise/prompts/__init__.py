"""The prompts the LLM writer sends, kept as Markdown files beside this module.

A user overrides one by putting a file of the same name in ``<workspace>/prompts/``
(``answer.md``, ``report_section.md``, ``system.md``, ``chunk_context.md``). Placeholders are
written ``{{name}}`` (double braces, so that a prompt may show JSON or code with single braces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ragloom.errors import ConfigError, InvalidParameterError, UnknownNameError

#: The packaged prompts, and the placeholders each must contain to be usable.
REQUIRED: dict[str, tuple[str, ...]] = {
    "system": (),
    "answer": ("question", "sources"),
    "report_section": ("query", "sources"),
    # The context of a chunk for its search prefix (``[prefix] llm_context``).
    "chunk_context": ("document", "chunk"),
}
PROMPT_NAMES = tuple(REQUIRED)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def prompt_path(name: str, workspace: Path | None = None) -> Path | None:
    """The user's override of prompt ``name`` when it exists, else None."""
    if workspace is None:
        return None
    path = Path(workspace) / "prompts" / f"{name}.md"
    return path if path.is_file() else None


def load_prompt(name: str, workspace: Path | None = None) -> str:
    """The text of prompt ``name``: ``<workspace>/prompts/<name>.md`` when it exists, else the
    packaged one. A user's prompt may have any valid name; a packaged one must exist."""
    if not _NAME.match(name):
        raise InvalidParameterError(f"prompt name {name!r} must be letters, digits, '_' or '-' (a file stem)")
    override = prompt_path(name, workspace)
    if override is not None:
        try:
            text = override.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{override}: cannot read the prompt ({exc}); fix the file or delete it to use the default") from exc
        missing = [p for p in REQUIRED.get(name, ()) if p not in placeholders(text)]
        if missing:
            raise ConfigError(
                f"{override}: the prompt lacks the placeholder(s) {', '.join('{{' + p + '}}' for p in missing)}; "
                "add them or delete the file to use the default")
        return text
    if name not in REQUIRED:
        raise UnknownNameError("prompt", name, PROMPT_NAMES)
    return resources.files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8")


def placeholders(template: str) -> set[str]:
    return set(_PLACEHOLDER.findall(template))


def render(template: str, **values: str) -> str:
    """``template`` with each ``{{name}}`` replaced by ``values[name]``; unknown ones are left
    as written, so that a user's prompt can mention the syntax."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


@dataclass(frozen=True, slots=True)
class Prompts:
    """The prompts one writer uses."""

    system: str
    answer: str
    report_section: str

    @classmethod
    def load(cls, workspace: Path | None = None) -> Prompts:
        """The packaged prompts, each replaced by the workspace's own when it has one."""
        return cls(*(load_prompt(name, workspace) for name in ("system", "answer", "report_section")))
