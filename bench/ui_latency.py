"""How fast the web app answers: from ``ragloom ui`` to a served page, and each page's first
render on the sample workspace with the real default embedding model (all-MiniLM-L6-v2)
already loaded. Target: every page under 2 s.

    .venv/bin/python bench/ui_latency.py [--workspace DIR] [--runs 3]

It ingests examples/materials (one lens per sub-folder) into a temporary workspace with the
default settings (or uses --workspace as it is), starts ``ragloom ui`` on a free port, loads
the model once by asking a question in one browser session, then, in a fresh session, opens
every page from the sidebar and times it until its last element is drawn and the script has
finished. Chromium is Debian's (/usr/bin/chromium), driven by Playwright.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from common import MATERIALS, ROOT, markdown_table, save

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
QUESTION = "When will the QuickBooks catalog integration ship?"
TARGET = 2.0
#: Sidebar title -> text drawn at (or near) the end of the page's first render.
PAGES = {
    "Dashboard": "Chunk versions stored",
    "Ingest": "Delete a lens",
    "Ask": "Answers quote or cite numbered sources",
    "Context graph": "Search, then choose a hit",
    "Contradictions": "most certain and most authoritative first",
    "Report": "Earlier reports",
    "Evaluation": "Files in",
    "Settings": "API key variable",
}


def chromium() -> str:
    found = "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else shutil.which("chromium")
    if found is None:
        sys.exit("Chromium is not installed: sudo apt-get install chromium")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(workspace: Path) -> float:
    """The sample materials, ingested with the default settings (the real model)."""
    from ragloom.demo import install_samples
    from ragloom.engine import Engine

    started = time.perf_counter()
    install_samples(MATERIALS, workspace)
    engine = Engine(workspace)
    for lens in sorted(p for p in MATERIALS.iterdir() if p.is_dir()):
        report = engine.ingest(lens, lens=lens.name)
        if not report.ok:
            sys.exit(f"ingest of {lens} failed: {report.failed}")
    return time.perf_counter() - started


def settle(page: Any) -> None:  # noqa: ANN401 - a Playwright page
    """Until the script run has finished (the status widget gone)."""
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=120_000)


def timed_page(page: Any, title: str, marker: str) -> float:  # noqa: ANN401
    started = time.perf_counter()
    page.locator('[data-testid="stSidebarNavLink"]', has_text=title).first.click()
    page.wait_for_selector(f"h1:has-text('{title}')", timeout=120_000)
    page.get_by_text(marker).first.wait_for(timeout=120_000)
    settle(page)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, help="A workspace to use as it is (default: build one).")
    parser.add_argument("--runs", type=int, default=3, help="Page visits per page (the median is reported).")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="ragloom-ui-bench-"))
    workspace = args.workspace or tmp / "ws"
    build_seconds = None if args.workspace else build(workspace)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    script = Path(sys.executable).with_name("ragloom")
    command = [str(script)] if script.is_file() else [sys.executable, "-c", "from ragloom.cli import main; main()"]
    rows: list[list[Any]] = []
    raw: dict[str, Any] = {"build_seconds": build_seconds}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        started = time.perf_counter()
        server = subprocess.Popen([*command, "ui", "--port", str(port), "--workspace", str(workspace)], cwd=ROOT,
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        try:
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                        if response.status == 200:
                            break
                except OSError:
                    if server.poll() is not None:
                        sys.exit(f"ragloom ui exited with {server.returncode}")
                    time.sleep(0.05)
            health = time.perf_counter() - started
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(url)
            page.wait_for_selector("h1:has-text('Dashboard')", timeout=120_000)
            content = time.perf_counter() - started
            page.get_by_text(PAGES["Dashboard"]).first.wait_for(timeout=120_000)
            settle(page)
            complete = time.perf_counter() - started
            rows += [["`ragloom ui` → health endpoint answers", round(health, 2), ""],
                     ["`ragloom ui` → first page content (the dashboard's title) in Chromium", round(content, 2), ""],
                     ["`ragloom ui` → dashboard complete (first visit: imports, opens the store)",
                      round(complete, 2), ""]]
            raw |= {"health_seconds": health, "first_content_seconds": content, "dashboard_complete_seconds": complete}

            # Load the model once (the first question embeds it), in a session of its own.
            page.locator('[data-testid="stSidebarNavLink"]', has_text="Ask").first.click()
            page.get_by_label("Question").fill(QUESTION)
            t0 = time.perf_counter()
            page.get_by_role("button", name="Ask", exact=True).click()
            page.locator("mark.ragloom-mark").first.wait_for(timeout=300_000)
            settle(page)
            first_answer = time.perf_counter() - t0
            rows.append(["first question (loads the model)", round(first_answer, 2), ""])
            page.close()

            timings: dict[str, list[float]] = {title: [] for title in PAGES}
            interactions: dict[str, list[float]] = {"ask → answer and highlighted source": [],
                                                    "graph: search → hits": [],
                                                    "graph: pick a hit → relations and picture": []}
            for _ in range(args.runs):
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.goto(url)
                page.get_by_text(PAGES["Dashboard"]).first.wait_for(timeout=120_000)
                settle(page)
                for title, marker in [*list(PAGES.items())[1:], ("Dashboard", PAGES["Dashboard"])]:
                    timings[title].append(timed_page(page, title, marker))
                # Interactions, the model loaded.
                page.locator('[data-testid="stSidebarNavLink"]', has_text="Ask").first.click()
                page.get_by_label("Question").fill(QUESTION)
                t0 = time.perf_counter()
                page.get_by_role("button", name="Ask", exact=True).click()
                page.locator("mark.ragloom-mark").first.wait_for(timeout=120_000)
                settle(page)
                interactions["ask → answer and highlighted source"].append(time.perf_counter() - t0)
                page.locator('[data-testid="stSidebarNavLink"]', has_text="Context graph").first.click()
                search = page.locator('input[aria-label="Find a chunk"]')
                search.fill("QuickBooks sync rate limits")
                t0 = time.perf_counter()
                search.press("Enter")
                page.locator('[data-testid="stRadioOption"]').first.wait_for(timeout=120_000)
                settle(page)
                interactions["graph: search → hits"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                page.locator('[data-testid="stRadioOption"]').first.click()
                page.get_by_text("Relations by type").wait_for(timeout=120_000)
                page.locator("iframe").first.wait_for(timeout=120_000)
                settle(page)
                interactions["graph: pick a hit → relations and picture"].append(time.perf_counter() - t0)
                page.close()
            for title in PAGES:
                median = statistics.median(timings[title])
                rows.append([f"page first render: {title}", round(median, 2),
                             "yes" if median < TARGET else "NO"])
            for name, values in interactions.items():
                rows.append([name, round(statistics.median(values), 2), ""])
            raw |= {"first_answer_seconds": first_answer, "pages": timings, "interactions": interactions}
        finally:
            os.killpg(server.pid, signal.SIGINT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
            browser.close()
            shutil.rmtree(tmp, ignore_errors=True)
    table = markdown_table(["measurement", "seconds (median)", f"under {TARGET:.0f} s"], rows)
    print(table)
    save("ui_latency", {"runs": args.runs, "target_seconds": TARGET, "rows": rows, "raw": raw, "table": table})


if __name__ == "__main__":
    main()
