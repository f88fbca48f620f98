"""Pure helpers of the web app (no Streamlit here, so they are easy to test): the highlighted
document view, labels, the evaluation results on disk, what changed in the settings form, and
what the Settings page may let a visitor do with the language model's key."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ragloom.config import PROVIDER_DEFAULTS

#: What each built-in retrieval mode does, for the mode picker's help.
MODE_HELP = {
    "vector": "nearest chunks by embedding",
    "bm25": "keyword search (BM25)",
    "hybrid": "vector and keywords fused (reciprocal rank)",
    "balanced": "the best chunks of every lens",
    "graph": "hybrid seeds plus their neighbours in the context graph",
    "window": "best sentences grown into fixed windows",
    "dynamic": "best sentences grown while the next one stays similar",
}

#: Colours per edge type (the graph picture and its legend).
EDGE_COLOURS = {
    "SIMILAR_TO": "#e45756",
    "SAME_SOURCE": "#4c78a8",
    "SAME_LENS": "#9d9da1",
    "TOPIC_OVERLAP": "#f58518",
    "TEMPORAL_OVERLAP": "#54a24b",
    "SEQUENTIAL": "#b279a2",
    "MENTIONS": "#eeca3b",
    "SHARED_ENTITY": "#72b7b2",
}
#: What each edge type means (the legend and the relations list).
EDGE_HELP = {
    "SIMILAR_TO": "embeddings closer than the similarity threshold",
    "SAME_SOURCE": "chunks of the same document",
    "SAME_LENS": "chunks of the same lens",
    "TOPIC_OVERLAP": "share key terms",
    "TEMPORAL_OVERLAP": "name the same period",
    "SEQUENTIAL": "next to each other in their document",
    "MENTIONS": "one names what the other is about (its title or heading)",
    "SHARED_ENTITY": "both name the same subject",
}
#: Colours per lens, in order of first appearance.
LENS_PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d",
                "#eeca3b", "#bab0ac")


def lens_colour(lens: str, lenses: Sequence[str]) -> str:
    """A stable colour for ``lens`` among ``lenses``."""
    try:
        i = list(lenses).index(lens)
    except ValueError:
        i = sum(map(ord, lens))
    return LENS_PALETTE[i % len(LENS_PALETTE)]


def merge_spans(spans: Iterable[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """Spans clipped to ``[0, length]``, sorted, overlapping ones merged, empty ones dropped."""
    clipped = sorted((max(0, s), min(length, e)) for s, e in spans)
    out: list[tuple[int, int]] = []
    for s, e in clipped:
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def highlight_html(text: str, spans: Iterable[tuple[int, int]], *, element_id: str, height_rem: int = 30,
                   document_id: str = "") -> str:
    """The document as escaped, pre-wrapped text with ``text[start:end]`` of each span in a
    ``<mark>`` (``data-start``/``data-end`` carry the offsets), scrolled to the first mark."""
    parts: list[str] = []
    at = 0
    for i, (s, e) in enumerate(merge_spans(spans, len(text))):
        parts.append(html.escape(text[at:s]))
        parts.append(f'<mark class="ragloom-mark" data-start="{s}" data-end="{e}" data-index="{i}">'
                     f"{html.escape(text[s:e])}</mark>")
        at = e
    parts.append(html.escape(text[at:]))
    safe_id = re.sub(r"[^A-Za-z0-9_-]", "-", element_id)
    style = (f"position:relative;white-space:pre-wrap;overflow-wrap:anywhere;max-height:{height_rem}rem;"
             "overflow-y:auto;padding:0.75rem 1rem;border:1px solid rgba(49,51,63,0.2);border-radius:0.5rem;"
             "font-family:'Source Code Pro',ui-monospace,monospace;font-size:0.85rem;line-height:1.5;")
    # No "<" in the script: the sanitiser drops a script whose text holds "<" before a word character.
    script = (
        "<script>(function(){function go(n){var box=document.getElementById('%s');"
        "var m=box?box.querySelector('mark'):null;"
        "if(!m||!box.clientHeight){if(40>n){setTimeout(function(){go(n+1)},50)}return;}"
        "box.scrollTop=Math.max(0,m.offsetTop-box.clientHeight/3);}go(0);})();</script>" % safe_id
    )
    doc = html.escape(document_id, quote=True)
    return (f'<div class="ragloom-doc" id="{safe_id}" data-document-id="{doc}" style="{style}">{"".join(parts)}</div>'
            f"{script}")


MARK = re.compile(r'<mark class="ragloom-mark" data-start="(\d+)" data-end="(\d+)"[^>]*>(.*?)</mark>', re.DOTALL)


def marked_spans(body: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of each ``<mark>`` in :func:`highlight_html`'s output (for tests)."""
    return [(int(s), int(e), html.unescape(t)) for s, e, t in MARK.findall(body)]


def one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"(?:^|(?<=\s))#{1,6}\s|:?-{3,}:?|[|*`>]+|(?<!\w)_+|_+(?!\w)")


def preview(text: str, limit: int = 160) -> str:
    """One line of plain text from Markdown: no heading marks, table rules, emphasis or links."""
    return one_line(_MARKUP.sub(" ", _LINK.sub(r"\1", text)), limit)


def file_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def section_tail(section: str, parts: int = 2) -> str:
    """The last ``parts`` headings of a " > " joined section path."""
    pieces = [p for p in section.split(" > ") if p]
    shown = pieces[-parts:]
    return ("… > " if len(pieces) > parts else "") + " > ".join(shown)


def end_of_day(day: date) -> datetime:
    """The as-of moment for a date: the end of that day, UTC."""
    return datetime.combine(day, time(23, 59, 59), tzinfo=UTC)


def describe_via(via: Mapping[str, Any], seed: str) -> str:
    """How graph expansion brought a result in: seed, edge, weight, hops."""
    hops = int(via.get("hops", 1))
    weight = float(via.get("weight", 0.0))
    return (f"Brought in by the graph from {seed} over a {via.get('edge', '?')} edge "
            f"(weight {weight:.2f}, {hops} hop{'s' if hops != 1 else ''})")


def format_when(stamp: str | None) -> str:
    """An ISO timestamp as ``2025-03-01 14:05 UTC`` (or as given when it is not one)."""
    if not stamp:
        return "never"
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def parse_lines(text: str) -> list[str]:
    """Non-empty lines, stripped; lines starting with ``#`` skipped."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def settings_changes(current: Mapping[str, Mapping[str, Any]], wanted: Mapping[str, Mapping[str, Any]]
                     ) -> dict[str, dict[str, Any]]:
    """The ``{section: {key: value}}`` of ``wanted`` that differ from ``current``."""
    out: dict[str, dict[str, Any]] = {}
    for section, values in wanted.items():
        have = current.get(section, {})
        for key, value in values.items():
            old = have.get(key)
            if isinstance(old, tuple | list) and isinstance(value, tuple | list):
                same = list(old) == list(value)
            else:
                same = old == value
            if not same:
                out.setdefault(section, {})[key] = list(value) if isinstance(value, tuple) else value
    return out


# -- evaluation results on disk ---------------------------------------------------------------


@dataclass
class EvalResult:
    """One suite's files in one folder: ``<name>.md``, ``<name>.json`` and its PNG charts."""

    name: str
    folder: Path
    markdown: Path | None = None
    json: Path | None = None
    images: list[Path] = field(default_factory=list)

    @property
    def modified(self) -> float:
        files = [p for p in (self.markdown, self.json, *self.images) if p is not None]
        return max((p.stat().st_mtime for p in files), default=0.0)

    def body(self) -> tuple[str, str]:
        """(title, Markdown without its title and image lines)."""
        if self.markdown is None:
            return self.name, ""
        lines = self.markdown.read_text(encoding="utf-8", errors="replace").splitlines()
        title = self.name
        if lines and lines[0].startswith("# "):
            title = lines[0][2:].strip().strip("`")
            lines = lines[1:]
        kept = [line for line in lines if not re.match(r"^\s*!\[[^\]]*\]\([^)]*\)\s*$", line)]
        return title, "\n".join(kept).strip()


def find_eval_results(folders: Iterable[Path]) -> list[EvalResult]:
    """Every suite result found in ``folders`` (each folder once), newest first."""
    seen: set[Path] = set()
    results: list[EvalResult] = []
    for folder in folders:
        try:
            resolved = folder.resolve()
        except OSError:
            continue
        if resolved in seen or not resolved.is_dir():
            continue
        seen.add(resolved)
        names = sorted({p.stem for p in folder.iterdir() if p.suffix in (".md", ".json") and p.is_file()})
        pngs = sorted(p for p in folder.iterdir() if p.suffix == ".png" and p.is_file())
        for name in names:
            md, js = folder / f"{name}.md", folder / f"{name}.json"
            images = [p for p in pngs if p.stem == name or p.stem.startswith(f"{name}_")]
            results.append(EvalResult(name, folder, md if md.is_file() else None, js if js.is_file() else None,
                                      images))
    results.sort(key=lambda r: -r.modified)
    return results


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")


def md_escape(text: str) -> str:
    """``text`` shown literally by Markdown (no emphasis, links, headings or HTML from it)."""
    return _MD_SPECIAL.sub(r"\\\1", text)


# -- who may reach the app, and what the Settings page may change -----------------------------

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def key_variables(listed: Iterable[str] = ()) -> list[str]:
    """The environment variables the Settings page may name as the language model's key: the
    providers' own (``PROVIDER_DEFAULTS``), then those the operator lists in
    ``server.llm_key_variables``, each once; an entry that is not a variable name is left out."""
    names = [defaults[2] for defaults in PROVIDER_DEFAULTS.values()] + [n.strip() for n in listed]
    return list(dict.fromkeys(n for n in names if _ENV_NAME.fullmatch(n)))


def key_note(provider: str, variable: str, allowed: Sequence[str], environ: Mapping[str, str]) -> str:
    """The line under the key variable: whether it is set, only for an ``allowed`` name (never
    its value). For any other name the line is the same whether or not it is set, so that the
    page tells a visitor nothing about the server's environment."""
    if provider == "none":
        return ":material/key: No key needed: the extractive writer runs offline."
    if not variable:
        return ""
    if variable not in allowed:
        return (f":material/key: The key is read from {variable}, which the settings name. This page looks only "
                f"at {', '.join(allowed)}: the providers' own variables and those ragloom.toml lists under [server] "
                "llm_key_variables.")
    if environ.get(variable):
        return f":material/key: {variable} is set in the environment."
    return (f":material/key_off: **{variable} is not set.** Set it in the environment before starting `ragloom ui` "
            "(a local server such as Ollama needs none).")


def llm_problems(current: Mapping[str, Any], wanted: Mapping[str, Any], *, allowed: Sequence[str],
                 exposed: bool) -> list[str]:
    """Why the Settings form may not save these ``[llm]`` values (empty: it may).

    The server sends the key variable's value to the base URL, so a visitor who could choose
    both could have any secret in its environment sent to any host: the key variable must be
    one of ``allowed``, and when the app listens beyond this machine (``exposed``) neither may
    change here at all."""
    problems: list[str] = []
    for key in ("base_url", "api_key_env"):
        new, old = str(wanted.get(key) or ""), str(current.get(key) or "")
        if key not in wanted or new == old:
            continue
        if exposed:
            problems.append(f"llm.{key} cannot be changed from the web app while it listens beyond this machine; "
                            "the operator sets it in ragloom.toml")
        elif key == "api_key_env" and new and new not in allowed:
            problems.append(f"llm.api_key_env {new!r} is not a key variable the web app may use; choose one of "
                            f"{', '.join(allowed)}, or list it in ragloom.toml under [server] llm_key_variables")
        elif key == "base_url" and new and not _web_url(new):
            problems.append(f"llm.base_url {new!r} is not an http:// or https:// address "
                            "(for example http://localhost:11434/v1)")
    return problems


def _web_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False
