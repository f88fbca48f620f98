"""Decisions: what the documents record as decided, voted, approved or committed, newest first."""

from __future__ import annotations

import datetime as dt

import streamlit as st

from ragloom.analyse.decisions import Decision
from ragloom.errors import RagloomError
from ragloom.ui.common import engine, ensure_app, fail, header, lenses_by_authority, runtime
from ragloom.ui.helpers import file_name, md_escape, section_tail

KIND_LABEL = {"decision": ":material/gavel: decision", "vote": ":material/how_to_vote: vote",
              "approval": ":material/task_alt: approval", "commitment": ":material/handshake: commitment"}

ensure_app()
rt = runtime()
header("Decisions", "What the documents record as decided: a decision, a vote's outcome, an approval or a "
                    "commitment, each quoted with its date (the document's), lens and place, newest first.")
eng = engine()
tenant = eng.settings.tenant
order = lenses_by_authority(eng, tenant)

with st.form("decisions-form", border=False):
    c1, c2, c3, c4 = st.columns([2, 4, 1, 1], vertical_alignment="bottom")
    since = c1.date_input("Since", value=None, key="decisions-since", help="Only decisions dated on or after this day.")
    lenses = c2.multiselect("Lenses", order, key="decisions-lenses", placeholder="All lenses")
    limit = c3.number_input("At most", min_value=1, max_value=500, value=50, key="decisions-limit")
    c4.form_submit_button("Filter", type="primary", key="decisions-go")


@st.cache_data(show_spinner=False, ttl=600, max_entries=32)
def _find(workspace: str, commit: int, since: dt.date | None, lenses: tuple[str, ...], limit: int) -> list[Decision]:
    """Cached per commit: the log reads every sentence that could record a decision."""
    return eng.decisions(since=since, lenses=list(lenses) or None, limit=limit, tenant=tenant)


try:
    commit = int(eng.store.commit_info().get("sequence", 0))
    with st.spinner("Reading the decisions…"):
        found = _find(str(rt.workspace), commit, since if isinstance(since, dt.date) else None, tuple(lenses),
                      int(limit))
except RagloomError as exc:
    fail(exc)
    st.stop()

if not found:
    st.info("No decisions found" + (f" since {since}" if since else "") + ": no sentence records one in words a rule "
            "recognises (“decided to”, “was approved”, “the vote was to …”, “no objections”).", icon=":material/info:")
    st.stop()

dated = [d.date for d in found if d.date]
span = f", {min(dated)} to {max(dated)}" if dated else ""
st.caption(f"{len(found)} decision{'s' if len(found) != 1 else ''}{span}, newest first.")

for d in found:
    with st.container(border=True):
        when = d.date.isoformat() if d.date else "undated"
        st.markdown(f"**{when}** · {KIND_LABEL.get(d.kind, d.kind)} · **{md_escape(d.lens)}** · "
                    f"{md_escape(file_name(d.source_path))}")
        where = section_tail(d.section, 3)
        st.caption((f"{where} · " if where else "") + f"characters {d.start:,}–{d.end:,}")
        st.markdown("> " + md_escape(d.flat))
