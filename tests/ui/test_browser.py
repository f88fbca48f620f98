"""End to end in a real browser: ``ragloom ui`` served, driven with Playwright and Debian's Chromium.

Screenshots of every page go to ``test-artifacts/`` at the project root (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.conftest import FAST_ENV, MATERIALS, ROOT, fast_engine

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "test-artifacts"
QUESTION = "When will the QuickBooks catalog integration ship?"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def chromium() -> str:
    found = "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else shutil.which("chromium")
    if found is None:
        pytest.skip("Chromium is not installed: install it with 'sudo apt-get install chromium' (or 'make browser'); "
                    "Playwright's own browser download is not used")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ragloom_command() -> list[str]:
    script = Path(sys.executable).with_name("ragloom")
    return [str(script)] if script.is_file() else [sys.executable, "-c", "from ragloom.cli import main; main()"]


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 90.0) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if process.poll() is not None:
            raise AssertionError(f"ragloom ui exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return time.monotonic() - started
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout}s")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``ragloom ui --port N --workspace tmp`` with the hashing embedder; stopped with Ctrl-C."""
    chromium()
    port = free_port()
    workspace = tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")} | FAST_ENV
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen([*ragloom_command(), "ui", "--port", str(port), "--workspace", str(workspace)],
                               cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url, workspace
    finally:
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: launch() waits for the server to stop
        try:
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            log.close()


def settle(page, timeout: float = 120_000) -> None:  # type: ignore[no-untyped-def]
    """Wait until the app has finished running its script."""
    page.wait_for_timeout(300)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=timeout)
    page.wait_for_timeout(300)


def choose(page, box: str, option: str) -> None:  # type: ignore[no-untyped-def]
    """Pick ``option`` in the searchable select box labelled ``box``, as a person does: open it,
    type, click the option. A rerun of the page (a job's progress polling) can replace the open
    list under the click; then close it, let the page settle and try again, the last time with
    the keyboard (the typed text leaves the option first and focused)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(3):
        combobox = page.get_by_role("combobox", name=box, exact=True)
        combobox.click()
        combobox.fill(option.rstrip("…"))
        try:
            if attempt < 2:
                page.get_by_role("option", name=option, exact=True).click(timeout=15_000)
            else:
                combobox.press("Enter")
            settle(page)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            settle(page)
    raise AssertionError(f"could not choose {option!r} in {box!r}")


def screenshot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    """The whole page (the app scrolls inside its main block, so the window grows to fit it)."""
    ARTIFACTS.mkdir(exist_ok=True)
    height = page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": 1440, "height": max(900, min(int(height) + 40, 6000))})
    page.wait_for_timeout(700)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": 1440, "height": 900})
    return path


def go(page, title: str) -> None:  # type: ignore[no-untyped-def]
    """Open a page from the sidebar (the session, and what it remembers, stay)."""
    page.locator('[data-testid="stSidebarNavLink"]', has_text=title).first.click()
    page.wait_for_selector(f"h1:has-text('{title}')", timeout=60_000)
    settle(page)


def test_the_whole_flow_in_a_browser(server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect, sync_playwright

    url, workspace = server
    outside: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(
            (f"{url}/", "data:", "blob:", "about:", f"ws://127.0.0.1:{url.rsplit(':', 1)[1]}/")) else None)
        page.set_default_timeout(60_000)
        page.goto(url)
        page.wait_for_selector("h1:has-text('Dashboard')")
        settle(page)
        expect(page.get_by_text("The workspace is empty")).to_be_visible()

        # -- Ingest: every lens of the sample materials, uploaded through the page --------------
        go(page, "Ingest")
        for lens_dir in sorted(d for d in MATERIALS.iterdir() if d.is_dir()):
            # A new workspace has no lenses: each is named once as a new lens, as a person does.
            choose(page, "Lens", "New lens…")
            name = page.get_by_label("New lens name")
            name.fill(lens_dir.name)
            name.press("Enter")
            settle(page)
            files = sorted(f for f in lens_dir.iterdir() if f.is_file())
            for attempt in range(3):  # a rerun landing on the upload can drop it: offer the files again
                with page.expect_file_chooser() as chooser:  # as a person does: the Upload button, then the files
                    page.locator('[data-testid="stFileUploader"] [data-testid="stBaseButton-secondary"]').click()
                chooser.value.set_files([str(f) for f in files])
                try:
                    for f in files:
                        expect(page.get_by_role("button", name=f"Remove {f.name}")).to_be_visible(timeout=15_000)
                    break
                except AssertionError:
                    if attempt == 2:
                        screenshot(page, f"upload-failure-{lens_dir.name}")
                        raise AssertionError(page.locator('[data-testid="stMain"]').aria_snapshot()) from None
                    settle(page)
            settle(page)
            page.get_by_role("button", name="Ingest", exact=True).click()
            expect(page.get_by_text(f"Into {lens_dir.name}:").first).to_be_visible(timeout=120_000)
            settle(page)
            saved = workspace / "uploads" / "default" / lens_dir.name
            assert sorted(p.name for p in saved.iterdir()) == [f.name for f in files]
        expect(page.get_by_text("Graph relations found").first).to_be_visible()
        screenshot(page, "ingest")

        go(page, "Dashboard")
        expect(page.get_by_text("Mean tokens per chunk")).to_be_visible()
        screenshot(page, "dashboard")

        # -- Ask: the cited span, highlighted in its document at its exact offsets --------------
        engine = fast_engine(workspace)
        expected = engine.ask(QUESTION).answer
        go(page, "Ask")
        page.get_by_label("Question").fill(QUESTION)
        page.get_by_role("button", name="Ask", exact=True).click()
        expect(page.get_by_text("Extractive answer")).to_be_visible()
        settle(page)
        cited = list(dict.fromkeys(expected.citations.valid))
        sources = {s.number: s for s in expected.sources}
        answer = " ".join(page.locator(".st-key-ask-answer").first.inner_text().split())
        for i, n in enumerate(cited[:3]):
            if i:
                page.locator(f".st-key-open-{n} button:visible").first.click()  # the source's own "Open" button
            expect(page.locator("h4", has_text=f"[{n}] ")).to_be_visible()
            settle(page)
            view = page.locator(".ragloom-doc").first
            mark = view.locator("mark.ragloom-mark").first
            expect(mark).to_be_visible()
            start, end = int(mark.get_attribute("data-start") or -1), int(mark.get_attribute("data-end") or -1)
            document_id = view.get_attribute("data-document-id") or ""
            document = engine.store.document_texts("default", [document_id])[document_id]
            marked = mark.text_content() or ""
            assert marked == document[start:end]  # the exact offsets in the stored document
            assert " ".join(marked.split()) in answer  # and it is the quotation the answer cites
            source = sources[n]
            assert source.document_id == document_id
            quotes = sorted((q.start, q.end) for q in expected.quotes if q.number == n)
            assert (start, end) == (quotes or [(source.start, source.end)])[0]
            box = view.bounding_box()
            spot = mark.bounding_box()
            assert box and spot and box["y"] <= spot["y"] <= box["y"] + box["height"]  # scrolled into view
            if i == 0:
                screenshot(page, "ask")

        # -- Context graph: a chunk chosen by search, its relations and picture -----------------
        go(page, "Context graph")
        search = page.locator('input[aria-label="Find a chunk"]')
        search.fill("QuickBooks sync rate limits")
        search.press("Enter")
        settle(page)
        page.locator('[data-testid="stRadioOption"]').first.click()
        settle(page)
        expect(page.get_by_text("Relations by type")).to_be_visible()
        expect(page.locator("iframe").first).to_be_visible()
        page.wait_for_timeout(3000)  # the picture's physics settles
        screenshot(page, "graph")

        go(page, "Contradictions")
        expect(page.get_by_text("contradictions, most certain").first).to_be_visible()
        screenshot(page, "contradictions")

        go(page, "Decisions")
        expect(page.get_by_text("newest first.").first).to_be_visible()
        screenshot(page, "decisions")

        # -- Report: written in the background; still there after leaving the page -------------
        go(page, "Report")
        page.get_by_role("button", name="Generate").click()
        started = page.get_by_text("Writing the report").or_(page.get_by_role("button", name="Download JSON"))
        expect(started.first).to_be_visible()
        go(page, "Dashboard")  # leave while it runs
        go(page, "Report")
        expect(page.get_by_role("button", name="Download JSON").first).to_be_visible(timeout=180_000)
        settle(page)
        expect(page.get_by_text("Extractive report").first).to_be_visible()
        assert list((workspace / "reports").glob("*.md"))
        screenshot(page, "report")

        go(page, "Evaluation")
        screenshot(page, "evaluation")

        # -- Settings: a smaller chunk size, then the re-index warning ---------------------------
        go(page, "Settings")
        size = page.locator('input[aria-label="Chunk size (tokens)"]')
        size.fill("512")
        size.press("Tab")
        page.get_by_role("button", name="Save").click()
        settle(page)
        expect(page.get_by_text("The index does not match the settings").first).to_be_visible()
        assert "chunk_size = 512" in (workspace / "ragloom.toml").read_text(encoding="utf-8")
        # On 127.0.0.1 the key variable is picked from the allowed names, not typed.
        key = page.get_by_role("combobox", name="API key variable", exact=True)
        key.scroll_into_view_if_needed()  # scrolling while the list is open closes it
        page.wait_for_timeout(300)
        for attempt in range(3):  # a rerun landing on the click closes the list again: open it once more
            if attempt < 2:
                key.click()
            else:
                key.press("ArrowDown")
            try:
                expect(page.get_by_role("option")).to_have_text(["The provider's own", "ANTHROPIC_API_KEY",
                                                                  "OPENAI_API_KEY"], timeout=10_000)
                break
            except AssertionError:
                if attempt == 2:
                    raise
                page.keyboard.press("Escape")
                settle(page)
        page.keyboard.press("Escape")
        key.blur()  # no focus ring in the picture
        settle(page)
        screenshot(page, "settings")
        browser.close()
    assert not outside, f"requests outside the server: {outside}"
