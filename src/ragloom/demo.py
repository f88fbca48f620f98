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


def install_samples(materials: Path, workspace: Path) -> list[Path]:
    """Copy the sample materials' gazetteer (``examples/entities.toml``) and settings
    (``examples/ragloom.toml``: their lenses' authority, document types and vocabulary) into a
    workspace that has none of its own; returns what was copied. Call it before the engine is
    made: the settings are read then."""
    copied = []
    gazetteers = ("entities.toml", "entities.yaml", "entities.yml")
    for name, present in (("entities.toml", gazetteers), ("ragloom.toml", ("ragloom.toml",))):
        source = materials.parent / name
        if not source.is_file() or any((workspace / n).exists() for n in present):
            continue
        workspace.mkdir(parents=True, exist_ok=True)
        target = workspace / name
        target.write_bytes(source.read_bytes())
        copied.append(target)
    return copied


def sample_settings_file(materials: Path) -> Path | None:
    """The sample materials' own settings (``examples/ragloom.toml``), when they are there."""
    path = materials.parent / "ragloom.toml"
    return path if path.is_file() else None
