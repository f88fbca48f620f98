"""The workspace folder: where the store, the caches and the index manifest live.

``<workspace>/index.json`` records the settings the index was built with (see
:func:`index_signature`), the embedder and its dimension.

A workspace may also live on object storage (``s3://bucket/prefix``; see
:mod:`ragloom.store.remote`): the tables, the manifest, the commit records and the lock are
objects there, and ``ragloom.toml`` and the gazetteer are read from there. What is only a
cache (embedding vectors by text) or output (saved reports) stays in a local folder that
stands for the workspace on this machine (:func:`~ragloom.store.remote.mirror_folder`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragloom.config import CONFIG_FILENAME, DEFAULT_WORKSPACE, Settings
from ragloom.errors import ConfigError
from ragloom.store.remote import ObjectFiles, is_remote, join, mirror_folder, normalize

MANIFEST = "index.json"
#: The layout of the workspace's tables. 2 added the search_text column, neighbour ids,
#: the sentences, mentions and edges tables.
FORMAT = 2
#: Files of a workspace on object storage that are read from there when it is opened.
PULLED = (CONFIG_FILENAME, "entities.toml", "entities.yaml", "entities.yml")


def resolve_workspace(path: str | Path | None = None) -> Path:
    """``path``, else ``$RAGLOOM_WORKSPACE``, else ``./ragloom-data``; for a workspace on object
    storage, its local folder, with its settings copied from there."""
    location = workspace_location(path)
    return Workspace(location).path if isinstance(location, str) else location


def workspace_location(path: str | Path | None = None) -> str | Path:
    """Like :func:`resolve_workspace`, but an object-storage URI stays a URI (``s3://b/p``)."""
    raw = path or os.environ.get("RAGLOOM_WORKSPACE") or DEFAULT_WORKSPACE
    return normalize(raw) if is_remote(raw) else Path(raw)


def check_folder(location: Path) -> Path:
    """``location``, unless something other than a folder is there (a ConfigError says so)."""
    if location.exists() and not location.is_dir():
        raise ConfigError(f"the workspace {location} is a file, not a folder; name a folder with --workspace or "
                          f"RAGLOOM_WORKSPACE (a new one is made on the first ingest), for example {DEFAULT_WORKSPACE}")
    return location


class Workspace:
    def __init__(self, path: str | Path | None = None) -> None:
        location = workspace_location(path)
        #: Whether the workspace is on object storage (then :attr:`path` is its local stand-in).
        self.remote = isinstance(location, str)
        self._files: ObjectFiles | None = None
        if isinstance(location, str):
            self.uri = location
            self.path = mirror_folder(location)
            self._files = ObjectFiles(location)
            self._pull()
        else:
            self.path = check_folder(location)
            self.uri = str(location)

    def __str__(self) -> str:
        return self.uri

    def _pull(self) -> None:
        """The settings and the gazetteer of a remote workspace, copied into its local folder
        (a copy that is gone there is removed here)."""
        assert self._files is not None
        self.path.mkdir(parents=True, exist_ok=True)
        for name in PULLED:
            found = self._files.read(name)
            local = self.path / name
            if found is None:
                local.unlink(missing_ok=True)
            else:
                local.write_bytes(found[0])

    def exists(self) -> bool:
        """Whether there is a workspace here (a folder; on object storage, any object)."""
        if self._files is not None:
            return self._files.any()
        return self.path.is_dir()

    @property
    def store_path(self) -> Path:
        return self.path / "lancedb"

    @property
    def store_location(self) -> str | Path:
        """Where the tables are: ``<workspace>/lancedb``, a folder or a URI."""
        return join(self.uri, "lancedb") if self.remote else self.store_path

    @property
    def cache_path(self) -> Path:
        return self.path / "cache"

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def manifest(self) -> dict[str, Any] | None:
        try:
            if self._files is not None:
                found = self._files.read(MANIFEST)
                if found is None:
                    return None
                remote: dict[str, Any] = json.loads(found[0])
                return remote
            data: dict[str, Any] = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            return data
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError):
            return {"corrupt": True}

    def record(self, settings: Settings, *, embedder: str, dim: int) -> None:
        now = datetime.now(UTC).isoformat()
        previous = self.manifest() or {}
        data = {
            "format": FORMAT,
            "created_at": previous.get("created_at", now),
            "updated_at": now,
            "embedder": embedder,
            "dim": dim,
            "signature": index_signature(settings),
        }
        if self._files is not None:
            self._files.write(MANIFEST, (json.dumps(data, indent=2) + "\n").encode("utf-8"))
            return
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.manifest_path)

    def forget(self) -> None:
        if self._files is not None:
            self._files.delete(MANIFEST)
            return
        self.manifest_path.unlink(missing_ok=True)

    def outdated(self) -> bool:
        """Whether the tables were written by an older ragloom and need ``ragloom reindex``."""
        manifest = self.manifest()
        return manifest is not None and not manifest.get("corrupt") and int(manifest.get("format", 1)) < FORMAT

    def mismatches(self, settings: Settings, *, embedder: str | None = None) -> list[str]:
        """Differences between how the index was built and the current settings."""
        manifest = self.manifest()
        if manifest is None:
            return []
        if manifest.get("corrupt"):
            return [f"{join(self.uri, MANIFEST) if self.remote else self.manifest_path} is unreadable"]
        diffs = signature_differences(manifest.get("signature", {}), index_signature(settings))
        if embedder is not None and manifest.get("embedder") not in (None, embedder):
            diffs.append(f"embedder: {manifest.get('embedder')} -> {embedder}")
        return diffs

    def mismatch_warning(self, settings: Settings, *, embedder: str | None = None) -> str | None:
        diffs = self.mismatches(settings, embedder=embedder)
        if not diffs:
            return None
        return (f"The index in {self} was built with other settings than the current ones "
                f"({', '.join(diffs)}): run 'ragloom reindex' to rebuild it with them.")


#: Settings added after workspaces were first built, with the value that does what ragloom
#: did before them: at that value they are left out of the signature, so that a workspace
#: built before the setting existed still matches.
LEGACY_VALUES: Mapping[str, Mapping[str, Any]] = {"chunking": {"merge_sections": False, "min_chunk_chars": 0}}


#: The ``[prefix]`` settings of the LLM-written chunk context (see :func:`index_signature`).
LLM_CONTEXT_KEYS = ("llm_context", "llm_context_model", "llm_context_max_tokens", "llm_context_document_chars",
                    "llm_context_concurrency")


def index_signature(settings: Settings) -> dict[str, Any]:
    """The settings an index is built with; a change in any of them calls for ``ragloom reindex``."""
    chunking = {key: value for key, value in settings.chunking.model_dump().items()
                if LEGACY_VALUES["chunking"].get(key, ...) != value}
    # The LLM context settings are recorded only when it is on, with the model that writes it: a
    # workspace built before they existed (or with it off) keeps its signature.
    prefix = settings.prefix.model_dump(exclude=set(LLM_CONTEXT_KEYS))
    if settings.prefix.llm_context:
        prefix["llm_context"] = {"provider": settings.llm.provider,
                                 "model": settings.prefix.llm_context_model or settings.llm.model_name(),
                                 "max_tokens": settings.prefix.llm_context_max_tokens,
                                 "document_chars": settings.prefix.llm_context_document_chars}
    signature = {
        "chunking": chunking,
        "prefix": prefix,
        "doc_types": settings.doc_types.model_dump(),
        "embedding": {"model": settings.embedding.model, "embed_text": settings.embedding.embed_text,
                      "precision": settings.embedding.precision},
        "sentences": settings.sentences.model_dump(include={"enabled", "vectors"}),
        "retrieval": settings.retrieval.model_dump(include={"split_identifiers"}),
        "entities": settings.entities.model_dump(exclude={"back_references"}),
        "graph": settings.graph.model_dump(include={"key_terms", "domain_terms"}),
    }
    written: dict[str, Any] = json.loads(json.dumps(signature))  # the form it has once written to the workspace
    return written


def signature_differences(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What changed, one short phrase per setting (``chunking.chunk_size 1024 -> 512``); values
    too long to read in a sentence (the document-type rules) are only said to have changed."""
    diffs: list[str] = []

    def shown(value: Any) -> str | None:  # noqa: ANN401 - any setting
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 40 else None

    def walk(a: Any, b: Any, path: str) -> None:  # noqa: ANN401
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in sorted(set(a) | set(b)):
                walk(a.get(key), b.get(key), f"{path}.{key}" if path else key)
            return
        if a == b:
            return
        if path.startswith("doc_types"):
            path = "doc_types"
        if any(d.startswith(path + " ") for d in diffs):
            return
        old, new = shown(a), shown(b)
        if a is None and new is not None:
            diffs.append(f"{path} is {new} (the index predates this setting)")
        elif old is not None and new is not None:
            diffs.append(f"{path} {old} -> {new}")
        else:
            diffs.append(f"{path} changed")

    walk(recorded, current, "")
    return diffs
