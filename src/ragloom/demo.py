"""Where the bundled sample materials are."""

from __future__ import annotations

from pathlib import Path

from ragloom.errors import ConfigError

_RELATIVE = Path("examples") / "materials"


def find_materials(explicit: Path | None = None) -> Path:
    """``explicit``, else ``./examples/materials``, else the one beside the source checkout."""
    candidates = [explicit] if explicit is not None else [
        Path.cwd() / _RELATIVE,
        Path(__file__).resolve().parents[2] / _RELATIVE,
    ]
    for candidate in candidates:
        if candidate is not None and candidate.is_dir():
            return candidate
    raise ConfigError(
        "sample materials not found (looked in "
        + ", ".join(str(c) for c in candidates if c is not None)
        + "); run the demo from the ragloom checkout or pass --materials FOLDER"
    )
