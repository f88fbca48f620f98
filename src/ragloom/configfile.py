"""The settings as files and as a table: a commented ``ragloom.toml`` for a new workspace
(``ragloom init``), every effective setting with where its value came from (``ragloom
config show``), and changes written into the file with its comments kept (the web app).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ragloom.config import CONFIG_FILENAME, ENV_PREFIX, Settings, env_overrides, explain_error, merge_into
from ragloom.errors import ConfigError

#: Sections written to a new ``ragloom.toml``, in this order (``doc_types`` rules are a list of
#: tables, shown as one example instead).
SECTIONS = ("chunking", "prefix", "embedding", "retrieval", "sentences", "graph", "context_optimization", "entities",
            "ingest", "workspace", "llm", "server")
WIDTH = 44  # the column where a setting's description starts


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective setting: its dotted key, its value and where the value came from
    (``default``, a TOML file's path, or an environment variable's name)."""

    key: str
    value: Any
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "source": self.source}


def toml_value(value: Any) -> str:  # noqa: ANN401 - any setting
    """A setting's value as TOML writes it (strings quoted, lists bracketed). TOML has no null:
    a None raises a :class:`ConfigError` (:func:`settings_toml` comments such a setting out)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)  # inf, nan, 1e-05 and 1e+16 are TOML as Python writes them
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise ConfigError(f"cannot write the setting value {value!r} as TOML")


def _toml_string(text: str) -> str:
    # JSON escapes the quote, the backslash and U+0000..U+001F as TOML's basic strings do;
    # TOML also wants DEL escaped.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(name: str) -> str:
    """A key as TOML writes it: bare when it can be, else quoted."""
    return name if _BARE_KEY.fullmatch(name) else _toml_string(name)


def _comment(text: str) -> str:
    """``text`` fit for a TOML comment, which ends at a newline and may hold no control
    character: those are written as Python escapes (a path may hold anything)."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _fields(model: type[BaseModel], values: BaseModel) -> Iterator[tuple[str, Any, str]]:
    for name, field in model.model_fields.items():
        yield name, getattr(values, name), field.description or ""


def commented_toml(settings: Settings | None = None) -> str:
    """A ``ragloom.toml`` with every setting commented out at its default, each with what it does.

    Uncommenting a line sets that value; the file as written changes nothing, so a workspace
    made with it matches one made without it.
    """
    settings = settings or Settings()
    lines = [
        "# ragloom settings for this workspace. Every line is commented out at its default value:",
        "# uncomment a line and change the value to set it. Order of precedence: defaults, this file,",
        f"# --config FILE, then environment variables {ENV_PREFIX}<SECTION>__<KEY> "
        f"({ENV_PREFIX}CHUNKING__CHUNK_SIZE=512).",
        "# 'ragloom config show' prints the effective settings and where each came from. Changing a",
        "# chunking, prefix, document-type or embedding setting calls for 'ragloom reindex'.",
        "",
        f"# tenant = {toml_value(settings.tenant)}",
    ]
    for section in SECTIONS:
        values: BaseModel = getattr(settings, section)
        lines += ["", f"[{section}]"]
        for name, value, description in _fields(type(values), values):
            if isinstance(value, Mapping) and not value:
                line = f"# [{section}.{name}.<name>]"
            elif value is None:
                line, description = f"# {name} =", f"(not set) {description}".strip()
            else:
                line = f"# {name} = {toml_value(value)}"
            lines.append(f"{line:<{WIDTH}} # {description}" if description else line)
    lines += [
        "",
        "# Document types: rules replace the defaults; the first that matches wins; all the patterns",
        "# a rule gives must match (filename patterns see the name as words: 'Team_Sync.md' is 'Team Sync md').",
        "# [[doc_types.rules]]",
        '# type = "Dive Manual"',
        '# filename = "(?i)\\\\bpadi\\\\b"',
        '# content = "(?i)niveau"',
        "",
    ]
    return "\n".join(lines)


def init_workspace(path: Path, *, force: bool = False) -> Path:
    """Make the workspace folder (if needed) and write its commented ``ragloom.toml``; an
    existing settings file is kept unless ``force``."""
    target = path / CONFIG_FILENAME
    if target.exists() and not force:
        raise ConfigError(f"{target} already exists; edit it, or pass --force to replace it with the commented "
                          "defaults")
    path.mkdir(parents=True, exist_ok=True)
    target.write_text(commented_toml(), encoding="utf-8")
    return target


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping) and value and dotted != "chunking.options":
            out.update(_flatten(value, dotted))
        else:
            out[dotted] = value
    return out


def _keys_set(data: Mapping[str, Any]) -> set[str]:
    """The dotted keys a TOML file or the environment sets (a whole section counts for
    ``doc_types.rules`` and a plugin's options)."""
    keys = set(_flatten(data))
    return keys | {k.rsplit(".", 1)[0] for k in keys if k.startswith(("doc_types.rules", "chunking.options."))}


def effective_settings(workspace: Path, *, config_file: Path | None = None,
                       environ: Mapping[str, str] | None = None) -> list[Setting]:
    """Every setting with its effective value and its source, as :meth:`Settings.load` merges them."""
    environ = os.environ if environ is None else environ
    settings = Settings.load(workspace, config_file=config_file, environ=environ)
    sources: dict[str, str] = {}
    for path in (workspace / CONFIG_FILENAME, config_file):
        if path is not None and path.is_file():
            for key in _keys_set(tomllib.loads(path.read_text(encoding="utf-8"))):
                sources[key] = str(path)
    for key in _keys_set(env_overrides(environ)):
        sources[key] = ENV_PREFIX + "__".join(key.split(".")).upper()
    return setting_rows(settings, sources)


def setting_rows(settings: Settings, sources: Mapping[str, str] | None = None) -> list[Setting]:
    """Every setting of ``settings`` as a row, sorted by key, with its source from ``sources``
    (dotted key -> source; ``default`` for the others)."""
    sources = sources or {}
    # Python values, not JSON ones: JSON would turn an infinite timeout into null.
    flat = _flatten(settings.model_dump())
    if settings.doc_types.rules:  # one row for the rules: a list of tables reads badly as dotted keys
        flat = {k: v for k, v in flat.items() if not k.startswith("doc_types.rules")}
        flat["doc_types.rules"] = [r.model_dump(exclude_none=True) for r in settings.doc_types.rules]
    return [Setting(key, value, sources.get(key, "default")) for key, value in sorted(flat.items())]


def settings_toml(rows: Sequence[Setting], *, heading: Sequence[str] = ()) -> str:
    """``rows`` as a TOML file that :meth:`Settings.load` reads back to the same settings:
    each section under its header, a value from a file or a variable followed by a comment
    naming it, and a setting that is not set (None, which TOML cannot write) commented out as
    ``# key = (not set)``. A list of tables (``doc_types.rules``) becomes ``[[section.key]]``
    tables after its section's other keys. ``heading`` lines come first, as comments."""
    lines = [f"# {_comment(line)}".rstrip() for line in heading]
    sections: dict[str, list[Setting]] = {}
    for row in rows:
        section, _, rest = row.key.partition(".")
        if not rest:  # a top-level setting (tenant): before any table
            lines.append(_setting_line(row.key, row))
        else:
            sections.setdefault(section, []).append(Setting(rest, row.value, row.source))
    for section, members in sections.items():
        tables = [m for m in members if isinstance(m.value, list | tuple) and m.value
                  and all(isinstance(v, Mapping) for v in m.value)]
        lines += ["", f"[{toml_key(section)}]"]
        lines += [_setting_line(".".join(toml_key(p) for p in m.key.split(".")), m) for m in members if m not in tables]
        for m in tables:
            for i, table in enumerate(m.value):
                header = f"[[{toml_key(section)}.{toml_key(m.key)}]]"
                source = _source_comment(m.source) if i == 0 else ""
                lines += ["", f"{header:<{WIDTH}} {source}".rstrip()]
                lines += [f"{toml_key(str(k))} = {toml_value(v)}" for k, v in table.items() if v is not None]
    if not rows:
        lines.append("# (no settings to show)")
    return "\n".join(lines).lstrip("\n") + "\n"


def _source_comment(source: str) -> str:
    return "" if source == "default" else f"# from {_comment(source)}"


def _setting_line(key: str, row: Setting) -> str:
    line = f"# {key} = (not set)" if row.value is None else f"{key} = {toml_value(row.value)}"
    source = _source_comment(row.source)
    return f"{line:<{WIDTH}} {source}" if source else line


def save_settings(workspace: str | Path, changes: Mapping[str, Any]) -> Settings:
    """Write ``changes`` (``{"chunking": {"chunk_size": 512}, "tenant": "acme"}``) into
    ``<workspace>/ragloom.toml``, keeping the file's other settings and its comments; returns
    the settings the file now gives. Invalid values raise a :class:`ConfigError` and leave the
    file as it was. API keys never belong here (``llm.api_key_env`` names a variable).
    """
    import tomlkit

    path = Path(workspace) / CONFIG_FILENAME
    try:
        document = tomlkit.parse(path.read_text(encoding="utf-8")) if path.is_file() else tomlkit.document()
    except Exception as exc:  # noqa: BLE001 - tomlkit raises several kinds of parse error
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file or remove it") from exc
    merged = document.unwrap()
    merge_into(merged, changes)
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(explain_error(exc, [path])) from exc
    _update_toml(document, changes)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(tomlkit.dumps(document), encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a file
    return settings


def _update_toml(table: Any, changes: Mapping[str, Any]) -> None:  # noqa: ANN401 - a tomlkit container
    import tomlkit

    for key, value in changes.items():
        if isinstance(value, Mapping) and not (key in table and not isinstance(table[key], Mapping)):
            if key not in table:
                table[key] = tomlkit.table()
            _update_toml(table[key], value)
        else:
            table[key] = list(value) if isinstance(value, tuple) else value
