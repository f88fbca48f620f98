"""The workspace folder: where the store, the caches and the index manifest live.

``<workspace>/index.json`` records the settings the index was built with (see
:func:`ragloom.config.index_signature`), the embedder and its dimension.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragloom.config import DEFAULT_WORKSPACE, Settings, index_signature, signature_differences

MANIFEST = "index.json"
#: The layout of the workspace's tables. 2 added the search_text column, neighbour ids,
#: the sentences, mentions and edges tables.
FORMAT = 2


def resolve_workspace(path: str | Path | None = None) -> Path:
    """``path``, else ``$RAGLOOM_WORKSPACE``, else ``./ragloom-data``."""
    return Path(path or os.environ.get("RAGLOOM_WORKSPACE") or DEFAULT_WORKSPACE)


class Workspace:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = resolve_workspace(path)

    @property
    def store_path(self) -> Path:
        return self.path / "lancedb"

    @property
    def cache_path(self) -> Path:
        return self.path / "cache"

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def manifest(self) -> dict[str, Any] | None:
        try:
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
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.manifest_path)

    def forget(self) -> None:
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
            return [f"{self.manifest_path} is unreadable"]
        diffs = signature_differences(manifest.get("signature", {}), index_signature(settings))
        if embedder is not None and manifest.get("embedder") not in (None, embedder):
            diffs.append(f"embedder: {manifest.get('embedder')} -> {embedder}")
        return diffs

    def mismatch_warning(self, settings: Settings, *, embedder: str | None = None) -> str | None:
        diffs = self.mismatches(settings, embedder=embedder)
        if not diffs:
            return None
        return (f"The index in {self.path} was built with other settings than the current ones "
                f"({', '.join(diffs)}): run 'ragloom reindex' to rebuild it with them.")
