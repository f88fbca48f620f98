"""The ragloom web app (``ragloom ui``): every page over one :class:`~ragloom.engine.Engine`."""

from __future__ import annotations

import streamlit as st

# Page config and the menu first: they need nothing from ragloom, whose first import (the
# engine, then the store's libraries) takes seconds on a cold server; the page draws meanwhile.
st.set_page_config(page_title="ragloom", page_icon="🧶", layout="wide",
                   menu_items={"About": "ragloom: a local-first context engine for RAG."})

PAGES = {
    "Workspace": [
        st.Page("pages/dashboard.py", title="Dashboard", icon=":material/dashboard:", default=True),
        st.Page("pages/ingest.py", title="Ingest", icon=":material/upload_file:"),
    ],
    "Explore": [
        st.Page("pages/ask.py", title="Ask", icon=":material/question_answer:"),
        st.Page("pages/graph.py", title="Context graph", icon=":material/hub:"),
        st.Page("pages/contradictions.py", title="Contradictions", icon=":material/compare_arrows:"),
        st.Page("pages/decisions.py", title="Decisions", icon=":material/gavel:"),
    ],
    "Results": [
        st.Page("pages/report.py", title="Report", icon=":material/article:"),
        st.Page("pages/evaluation.py", title="Evaluation", icon=":material/monitoring:"),
    ],
    "Configure": [
        st.Page("pages/settings.py", title="Settings", icon=":material/settings:"),
    ],
}

page = st.navigation(PAGES)
st.session_state["_ragloom_in_app"] = True  # the pages check it: ragloom.ui.common.ensure_app


def sidebar() -> None:
    """The workspace, and the jobs running in the background (polled while there are any)."""
    from ragloom.ui.common import POLL, runtime

    rt = runtime()

    def jobs() -> None:
        active = rt.jobs.active()
        if not active and st.session_state.pop("_sidebar_polling", False):
            st.rerun(scope="app")  # a job ended: redraw the page (and stop polling)
        if active:
            st.session_state["_sidebar_polling"] = True
        for job in active:
            fraction = job.fraction()
            st.progress(fraction if fraction is not None else 0.0, text=job.describe())

    st.caption(f"Workspace: `{rt.workspace}`")
    st.fragment(run_every=POLL if rt.jobs.active() else None)(jobs)()


with st.sidebar:
    sidebar()

page.run()
