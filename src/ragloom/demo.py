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


def install_gazetteer(materials: Path, workspace: Path) -> Path | None:
    """Copy the sample gazetteer (``examples/entities.toml``) into a workspace that has none."""
    source = materials.parent / "entities.toml"
    if not source.is_file() or any((workspace / n).exists() for n in ("entities.toml", "entities.yaml", "entities.yml")):
        return None
    workspace.mkdir(parents=True, exist_ok=True)
    target = workspace / "entities.toml"
    target.write_bytes(source.read_bytes())
    return target
