"""Contradictions: statements of different lenses that disagree, side by side with their sources."""

from __future__ import annotations

import streamlit as st

from ragloom.analyse.contradictions import Contradiction, Statement
from ragloom.errors import RagloomError
from ragloom.ui.common import engine, ensure_app, fail, header, lenses_by_authority, runtime
from ragloom.ui.helpers import file_name, md_escape, one_line, section_tail

KIND_LABEL = {"date": ":material/event: dates differ", "number": ":material/tag: numbers differ", "negation": ":material/block: one denies the other"}

ensure_app()
rt = runtime()
header("Contradictions", "Where lenses disagree about the same subject: a date, a number, or one denying what the "
                         "other asserts. The more authoritative lens comes first (Settings › authority).")
eng = engine()
tenant = eng.settings.tenant

order = lenses_by_authority(eng, tenant)

with st.form("contradictions-form", border=False):
    c1, c2, c3, c4 = st.columns([3, 4, 1, 1], vertical_alignment="bottom")
    topic = c1.text_input("Topic", key="contra-topic", placeholder="catalog integration",
                          help="Only the chunks about this topic; empty for the whole workspace.")
    lenses = c2.multiselect("Lenses", order, key="contra-lenses", placeholder="All lenses",
                            help="Only contradictions involving these lenses.")
    limit = c3.number_input("At most", min_value=1, max_value=200, value=20, key="contra-limit")
    c4.form_submit_button("Filter", type="primary", key="contra-go")


@st.cache_data(show_spinner=False, ttl=600, max_entries=32)
def _find(workspace: str, commit: int, authority: tuple[str, ...], topic: str, lenses: tuple[str, ...],
          limit: int) -> list[Contradiction]:
    """Cached per commit (and authority order): the analysis reads every sentence of the workspace."""
    return eng.contradictions(topic=topic or None, lenses=list(lenses) or None, limit=limit, tenant=tenant)


try:
    commit = int(eng.store.commit_info().get("sequence", 0))
    with st.spinner("Comparing statements across lenses…"):
        found = _find(str(rt.workspace), commit, tuple(eng.settings.graph.authority), topic.strip(), tuple(lenses),
                      int(limit))
except RagloomError as exc:
    fail(exc)
    st.stop()

if not found:
    st.success("No contradictions found" + (f" about “{topic.strip()}”" if topic.strip() else "") + ".", icon=":material/check_circle:")
    st.stop()

st.caption(f"{len(found)} contradiction{'s' if len(found) != 1 else ''}, most certain and most authoritative first.")


def statement(column: st.delta_generator.DeltaGenerator, s: Statement) -> None:
    with column:
        st.markdown(f"**{s.lens}** · {file_name(s.source_path)}")
        st.caption(f"{section_tail(s.section_path, 3)} · characters {s.start:,}–{s.end:,}")
        st.markdown("> " + md_escape(" ".join(s.text.split())))


for c in found:
    with st.container(border=True):
        title = f"**{md_escape(c.topic)}**: {KIND_LABEL.get(c.kind, c.kind)} — {md_escape(c.difference)}"
        st.markdown(title)
        st.caption(f"{one_line(c.note, 200)} · certainty {c.certainty:.0%} · {c.type.replace('_', ' ')}")
        a, b = st.columns(2, gap="large")
        statement(a, c.statements[0])
        statement(b, c.statements[1])
