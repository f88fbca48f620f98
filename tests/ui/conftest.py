"""The web app's fixtures: a workspace filled once with the sample materials (hashing embedder),
copied for each test, and an :class:`AppTest` of the app pointed at the copy."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ragloom.config import Settings
from ragloom.demo import install_samples
from ragloom.engine import Engine

pytest.importorskip("streamlit", reason="the web app needs the ui extra: pip install 'ragloom[ui]'")

from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MATERIALS = ROOT / "examples" / "materials"
APP = ROOT / "src" / "ragloom" / "ui" / "app.py"
#: The settings the app gets from its environment in these tests: the hashing embedder, no cache.
FAST_ENV = {"RAGLOOM_EMBEDDING__MODEL": "hashing", "RAGLOOM_EMBEDDING__CACHE": "false"}


def fast_engine(workspace: Path) -> Engine:
    """An engine with the same settings the app will have (so the index matches them)."""
    return Engine(workspace, settings=Settings.load(workspace, environ=FAST_ENV))


@pytest.fixture(scope="session")
def sample_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample materials, one lens per sub-folder, ingested once per session."""
    workspace = tmp_path_factory.mktemp("sample") / "ws"
    install_samples(MATERIALS, workspace)
    engine = fast_engine(workspace)
    for lens in sorted(p for p in MATERIALS.iterdir() if p.is_dir()):
        assert engine.ingest(lens, lens=lens.name).ok
    return workspace


def _clean_env(monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    for name in list(os.environ):
        if name.startswith("RAGLOOM_") or name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    for name, value in FAST_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RAGLOOM_WORKSPACE", str(workspace))


@pytest.fixture
def workspace(sample_workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the sample workspace that the app under test reads (RAGLOOM_WORKSPACE)."""
    copy = tmp_path / "ws"
    shutil.copytree(sample_workspace, copy)
    _clean_env(monkeypatch, copy)
    monkeypatch.chdir(tmp_path)
    return copy


@pytest.fixture
def empty_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "empty"
    _clean_env(monkeypatch, path)
    monkeypatch.chdir(tmp_path)
    return path


@contextmanager
def bound_to(address: str | None) -> Iterator[None]:
    """The app as served on ``address`` (Streamlit's ``server.address``, what ``ragloom ui
    --host`` passes; None: every interface)."""
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", address)
    try:
        yield
    finally:
        config.set_option("server.address", before)


@pytest.fixture
def app() -> Iterator[AppTest]:
    """The app as ``ragloom ui`` serves it by default: on 127.0.0.1."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    with bound_to("127.0.0.1"):
        yield at


def open_page(at: AppTest, page: str) -> AppTest:
    """Switch to ``pages/<page>.py`` and run it."""
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def run_until(at: AppTest, done: Callable[[AppTest], bool], *, timeout: float = 120.0) -> AppTest:
    """Run the app again until ``done(at)`` (a background job finishing, typically)."""
    deadline = time.monotonic() + timeout
    while True:
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        if done(at):
            return at
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        time.sleep(0.2)


def texts(at: AppTest) -> list[str]:
    """Every markdown, caption and alert text on the page."""
    found: list[str] = [m.value for m in at.markdown] + [c.value for c in at.caption]
    for kind in (at.success, at.info, at.warning, at.error):
        found += [e.value for e in kind]
    return found
