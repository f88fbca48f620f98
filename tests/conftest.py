"""Shared fixtures: real text from ../shared/data, sample materials, engines on temporary workspaces."""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

from ragloom.config import Settings
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.ingest.report import Progress

if TYPE_CHECKING:
    from tests.synthesise.fake_llm import FakeLLMServer

ROOT = Path(__file__).resolve().parents[1]
MATERIALS = ROOT / "examples" / "materials"
SHARED = Path(os.environ.get("RAGLOOM_SHARED_DATA", ROOT.parent / "shared" / "data"))

# A running `ragloom serve` or `chat` answers the command line over a socket in this folder
# (ragloom.attach): the tests get their own, so that they neither find a developer's server nor
# leave sockets behind.
os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="rl-run-")

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


class Tally(Progress):
    """What an operation reports as it goes (the command line draws these as bars): per stage,
    the totals announced and the units done."""

    def __init__(self) -> None:
        self.totals: dict[str, int] = {}
        self.done: dict[str, int] = {}

    def stage(self, name: str, total: int | None) -> None:
        self.totals[name] = self.totals.get(name, 0) + (total or 0)

    def advance(self, name: str, amount: int = 1) -> None:
        self.done[name] = self.done.get(name, 0) + amount


def shared_data() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"the shared test data is not at {SHARED}; set RAGLOOM_SHARED_DATA")
    return SHARED


def real_texts() -> list[tuple[str, str]]:
    """(name, text) of real documents written by others, plus the sample materials."""
    data = shared_data()
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in sorted((data / "chunking-eval" / "corpora").glob("*.md"))]
    docs = json.loads((data / "contextual" / "codebase_chunks.json").read_text(encoding="utf-8"))
    texts += [(d["doc_id"], d["content"]) for d in docs[:25]]
    texts += [(p.name, p.read_text(encoding="utf-8")) for p in sorted(MATERIALS.rglob("*.md"))]
    return texts


@pytest.fixture(scope="session")
def real_corpus() -> list[tuple[str, str]]:
    return real_texts()


def fast_settings(**overrides: object) -> Settings:
    """Settings for tests: the hashing embedder, no embedding cache."""
    base = {"embedding.model": "hashing", "embedding.cache": False}
    base.update(overrides)
    return Settings.load(environ={}, overrides=base)


SAMPLE_SETTINGS = ROOT / "examples" / "ragloom.toml"


def sample_settings(**overrides: object) -> Settings:
    """:func:`fast_settings` with the sample materials' own settings (``examples/ragloom.toml``:
    their lenses' authority, document types and vocabulary), as ``ragloom demo`` gives them."""
    base = {"embedding.model": "hashing", "embedding.cache": False}
    base.update(overrides)
    return Settings.load(environ={}, config_file=SAMPLE_SETTINGS, overrides=base)


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())


def ingest_all(engine: Engine, folder: Path) -> None:
    """Each subfolder of ``folder`` ingested under the lens of its name (the sample materials)."""
    for lens_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        report = engine.ingest(lens_dir, lens=lens_dir.name)
        assert report.ok, report.failed


def sample_engine(workspace: Path, materials: Path) -> Engine:
    """A hashing-embedder workspace holding the sample materials, every lens."""
    engine = Engine(workspace, settings=sample_settings(), embedder=HashingEmbedder())
    ingest_all(engine, materials)
    return engine


@pytest.fixture(scope="session")
def materials() -> Path:
    return MATERIALS


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    """A local HTTP server speaking the Anthropic and OpenAI APIs (tests/synthesise/fake_llm.py)."""
    from tests.synthesise.fake_llm import FakeLLMServer

    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


def docx_bomb(inflated: int) -> bytes:
    """A DOCX whose word/document.xml inflates to ``inflated`` bytes (about 1,000 to 1)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w") as f:
            for _ in range(inflated // 1_000_000):
                f.write(b"<w:p/>" * 166_667)
    return out.getvalue()
