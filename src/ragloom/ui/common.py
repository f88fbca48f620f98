"""What every page shares: the workspace's engine and job registry (one per workspace, kept
for the server's lifetime), the re-index warning, and the live view of a background job."""

from __future__ import annotations

import os
import runpy
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import altair as alt
import streamlit as st

from ragloom.config import CONFIG_FILENAME, Settings
from ragloom.engine import Engine
from ragloom.errors import RagloomError
from ragloom.ui.jobs import DONE, FAILED, Job, JobProgress, JobRegistry
from ragloom.workspace import resolve_workspace

#: Seconds between two looks at a running job.
POLL = 0.7
#: The app's entry script (page config, navigation, sidebar).
APP_SCRIPT = Path(__file__).with_name("app.py")
IN_APP = "_ragloom_in_app"  # set by app.py


def ensure_app() -> None:
    """Run the page inside the app. Until some session has run ``app.py`` (which calls
    ``st.navigation``), Streamlit serves a page URL opened first by running the file in
    ``pages/`` on its own, the way folders of pages worked before ``st.navigation``: without the
    app's layout and menu. Then run the app around it, and stop the bare run."""
    if st.session_state.get(IN_APP):
        return
    runpy.run_path(str(APP_SCRIPT), run_name="__main__")
    st.stop()


class Runtime:
    """One workspace in this server: its engine (rebuilt when the settings change) and its jobs."""

    def __init__(self, workspace: Path, config: Path | None) -> None:
        self.workspace = workspace
        self.config = config
        self.jobs = JobRegistry()
        self._engine: Engine | None = None
        self._opened = False
        self._built: tuple[int, ...] = ()
        self._lock = threading.Lock()

    @property
    def opened(self) -> bool:
        return self._opened

    def open(self) -> None:
        """Build the engine and open its store (the slow part of a first visit)."""
        eng = self.engine
        try:
            eng.store  # noqa: B018 - opening it imports the store's libraries once
        except RagloomError:
            pass  # an outdated workspace: the pages say so, with the way out
        self._opened = True

    @property
    def engine(self) -> Engine:
        """The engine; built again when a settings file changed since (edited outside the app)."""
        with self._lock:
            stamp = self._stamp()
            if self._engine is None or stamp != self._built:
                self._engine = self._build(self._engine)
                self._built = stamp
            return self._engine

    def _stamp(self) -> tuple[int, ...]:
        out = []
        for path in (self.workspace / CONFIG_FILENAME, self.config):
            try:
                out.append(path.stat().st_mtime_ns if path is not None else 0)
            except OSError:
                out.append(0)
        return tuple(out)

    def rebuild(self) -> Engine:
        """A new engine with the settings as they are now on disk (after Settings saves them).
        The embedder is kept when its settings did not change, so a loaded model is not loaded
        again; jobs that are running keep the engine they started with."""
        with self._lock:
            self._engine = self._build(self._engine)
            self._built = self._stamp()
            return self._engine

    def _build(self, old: Engine | None) -> Engine:
        settings = Settings.load(self.workspace, config_file=self.config)
        embedder = old.embedder if old is not None and old.settings.embedding == settings.embedding else None
        return Engine(self.workspace, settings=settings, embedder=embedder)


@st.cache_resource(show_spinner=False)
def _runtime(workspace: str, config: str | None) -> Runtime:
    return Runtime(Path(workspace), Path(config) if config else None)


def runtime() -> Runtime:
    """This server's :class:`Runtime` for the workspace in ``RAGLOOM_WORKSPACE``."""
    workspace = resolve_workspace(None).resolve()
    config = os.environ.get("RAGLOOM_CONFIG") or None
    return _runtime(str(workspace), str(Path(config).resolve()) if config else None)


def engine() -> Engine:
    """The workspace's engine; on a settings error, the error and nothing else on the page."""
    rt = runtime()
    job = rt.jobs.latest("reindex")
    if job is not None and job.active:
        # A re-index drops and rebuilds the tables: reading them meanwhile would fail.
        st.info("The workspace is being re-indexed with the current settings; this page comes back when it is "
                "done. You can leave it meanwhile.", icon=":material/autorenew:")
        job_panel(rt, "reindex", render_result=None)
        st.stop()
    try:
        if not rt.opened:
            with st.spinner("Opening the workspace (the first visit loads the libraries)…"):
                rt.open()
        return rt.engine
    except RagloomError as exc:
        st.error(f"The workspace cannot be opened: {exc}")
        st.caption("Fix the settings file (or remove it) and reload the page.")
        st.stop()
        raise  # st.stop() does not return; this keeps type checkers sure of it


def bind_address() -> str:
    """The address this server listens on: Streamlit's ``server.address``, which ``ragloom ui
    --host`` sets; empty when unset, which Streamlit takes as every interface."""
    return str(st.get_option("server.address") or "")


def header(title: str, caption: str | None = None) -> None:
    st.title(title)
    if caption:
        st.caption(caption)


def fail(exc: Exception) -> None:
    """A RagloomError as the one clear line the CLI prints."""
    st.error(f"error: {exc}", icon=":material/error:")


def lenses_by_authority(eng: Engine, tenant: str) -> list[str]:
    """The workspace's lenses by authority (the configured order, then the order they were first
    ingested); on an error its line, and the page stops."""
    try:
        return eng.lenses(tenant=tenant)
    except RagloomError as exc:
        fail(exc)
        st.stop()
        raise  # st.stop() raises; for the type checker


# -- background jobs ---------------------------------------------------------------------------


def start_reindex(rt: Runtime) -> Job:
    eng = rt.engine
    return rt.jobs.submit("reindex", "Re-indexing", lambda job: eng.reindex(progress=JobProgress(job)), writes=True)


def index_warning(rt: Runtime, eng: Engine, *, key: str) -> None:
    """The settings-differ warning with a re-index button (and the re-index in progress)."""
    job = rt.jobs.latest("reindex")
    if job is not None and job.active:
        job_panel(rt, "reindex", render_result=None)
        return
    try:
        warnings = eng.warnings
        outdated = eng.workspace.outdated()
    except RagloomError as exc:
        fail(exc)
        return
    if outdated and not warnings:
        warnings = [f"the workspace {eng.workspace.path} was written by an older ragloom; re-index it to use it"]
    if job is not None and job.status == FAILED:
        st.error(f"The last re-index failed: {job.error}")
    if not warnings:
        return
    with st.container(border=True):
        for w in warnings:
            st.warning(f"**The index does not match the settings.** {w[:1].upper()}{w[1:]}", icon=":material/warning:")
        st.caption("Re-indexing rebuilds every chunk from the stored documents with the current settings; "
                   "history is kept. It runs in the background: you can leave this page.")
        busy = rt.jobs.writing()
        if st.button("Re-index now", key=f"reindex-{key}", type="primary", disabled=busy is not None,
                     help=f"Wait for: {busy.title}" if busy else None):
            start_reindex(rt)
            st.rerun()


def _progress_view(job: Job) -> None:
    stages, current, messages, _ = job.snapshot()
    fraction = job.fraction()
    label = job.describe()
    if fraction is None:
        st.progress(0.0 if job.status != DONE else 1.0, text=label)
    else:
        st.progress(fraction, text=label)
    done = [s for s in stages if s.name != current and s.total]
    if done:
        st.caption(" · ".join(f"{s.name} {s.done}/{s.total}" for s in done))
    for m in messages[-5:]:
        st.caption(f"✗ {m}")


def job_panel(rt: Runtime, kind: str, *, render_result: Callable[[Job], None] | None,
              stream: bool = False, job: Job | None = None) -> Job | None:
    """The latest job of ``kind``: live progress while it runs (polled; the page stays usable),
    then ``render_result(job)``. Returns the job shown."""
    job = job or rt.jobs.latest(kind)
    if job is None:
        return None

    def body() -> None:
        if job.active:
            with st.container(border=True):
                _progress_view(job)
                if stream:
                    text = job.snapshot()[3]
                    if text:
                        st.markdown(text)
            return
        if st.session_state.get(f"_job_polling_{kind}") == job.id:
            # It finished while this page watched: redraw the whole page once (lists, counts),
            # which also stops the polling.
            del st.session_state[f"_job_polling_{kind}"]
            st.rerun(scope="app")
        if job.status == FAILED:
            st.error(f"{job.title} failed: {job.error}")
            return
        if render_result is not None:
            render_result(job)

    if job.active:
        st.session_state[f"_job_polling_{kind}"] = job.id
        st.fragment(run_every=POLL)(body)()
    else:
        body()
    return job


def busy_note(rt: Runtime) -> Job | None:
    """The job that is writing to the workspace, said on the page, if any."""
    busy = rt.jobs.writing()
    if busy is not None:
        st.info(f"{busy.describe()} — writes wait for it to finish.", icon="⏳")
    return busy


def confirm(key: str, question: str, action: Callable[[], Any], *, label: str = "Delete") -> None:
    """A button that asks before doing something that cannot be undone."""
    pending = st.session_state.get(f"confirm-{key}")
    if not pending:
        if st.button(label, key=f"ask-{key}"):
            st.session_state[f"confirm-{key}"] = True
            st.rerun()
        return
    st.warning(question, icon=":material/warning:")
    yes, no, _ = st.columns([1, 1, 4])
    if yes.button(f"Yes, {label.lower()}", key=f"yes-{key}", type="primary"):
        st.session_state[f"confirm-{key}"] = False
        action()
    if no.button("Cancel", key=f"no-{key}"):
        st.session_state[f"confirm-{key}"] = False
        st.rerun()


def hbars(rows: list[dict[str, Any]], *, category: str, values: list[str], colours: list[str] | None = None,
          axis: str = "", category_colours: dict[str, str] | None = None) -> None:
    """Horizontal bars, one group per ``category`` value, one bar per column in ``values``
    (coloured by column, or by category with ``category_colours``)."""
    long = [{category: r[category], "measure": v, "value": r[v]} for r in rows for v in values]
    several = len(values) > 1
    if category_colours is not None:
        present = [r[category] for r in rows]
        domain = [c for c in category_colours if c in present] + [c for c in present if c not in category_colours]
        colour = alt.Color(f"{category}:N", legend=None, scale=alt.Scale(
            domain=domain, range=[category_colours.get(c, "#9d9da1") for c in domain]))
    else:
        scale = alt.Scale(domain=values, range=colours) if colours else alt.Scale(domain=values)
        colour = alt.Color("measure:N", title=None, scale=scale, legend=alt.Legend(orient="bottom") if several else None)
    encoding: dict[str, Any] = {
        "y": alt.Y(f"{category}:N", title=None, sort=None, axis=alt.Axis(labelLimit=300)),
        "x": alt.X("value:Q", title=axis or None, axis=alt.Axis(tickCount=6)),
        "color": colour,
        "tooltip": [alt.Tooltip(f"{category}:N"), alt.Tooltip("measure:N"), alt.Tooltip("value:Q", format=",")],
    }
    if several:
        encoding["yOffset"] = alt.YOffset("measure:N", sort=values)
    height = max(120, (18 * len(values) + 14) * len(rows))
    chart = alt.Chart(alt.InlineData(values=long)).mark_bar(cornerRadiusEnd=3).encode(**encoding).properties(height=height)
    st.altair_chart(chart, width="stretch", height=height + (70 if several else 50))
