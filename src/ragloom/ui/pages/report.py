"""Report: write the multi-lens synthesis report in the background, watch it, read it, download it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import streamlit as st

from ragloom.synthesise import Report
from ragloom.ui.common import engine, ensure_app, header, job_panel, lenses_by_authority, runtime
from ragloom.ui.helpers import format_when, parse_lines
from ragloom.ui.jobs import Job
from ragloom.writing import SEED_QUERIES

ensure_app()
rt = runtime()
header("Report", "The synthesis report: the decisions the documents record, a timeline of their dated events, the "
                 "workspace's themes and what every lens says about each question, the contradictions with both "
                 "sides quoted, open questions, and numbered sources.")
eng = engine()
tenant = eng.settings.tenant

llm = eng.settings.llm
if llm.provider == "none":
    st.caption("Writer: the offline extractive writer (no language model configured; every statement is quoted "
               "from its source). Choose a model on the Settings page.")
else:
    st.caption(f"Writer: {llm.provider} · {llm.model_name() or 'plugin default'}")

order = lenses_by_authority(eng, tenant)

running = rt.jobs.latest("generate")
with st.form("report-form"):
    context = st.text_area("Context", key="report-context", height=70,
                           placeholder="Optional, for example: we must decide what ships in Q3 2025",
                           help="What the report is for; it also becomes one more question.")
    left, right = st.columns(2, gap="large")
    queries_text = left.text_area("Questions (one per line)", key="report-queries", height=150,
                                  placeholder="\n".join(SEED_QUERIES),
                                  help="Empty for the six standard ones shown in grey.")
    lenses = right.multiselect("Lenses", order, key="report-lenses", placeholder="All lenses")
    title = right.text_input("Title", key="report-title", placeholder="Master roadmap: what every lens says")
    go = st.form_submit_button("Generate", type="primary", key="report-go",
                               disabled=running is not None and running.active)

if go:
    queries = parse_lines(queries_text) or None
    only = list(lenses) or None

    def work(job: Job) -> Report:
        return eng.generate(context=context, queries=queries, title=title.strip() or None, lenses=only,
                            progress=job.step, on_text=job.write)

    rt.jobs.submit("generate", "Writing the report", work)
    st.rerun()


def show(report: Report, *, key: str) -> None:
    markdown = report.to_markdown()
    stem = f"{report.generated_at.strftime('%Y%m%d-%H%M%S')}-report"
    c1, c2, c3, c4 = st.columns([1, 1, 1, 2], vertical_alignment="center")
    c1.metric("Sections", len(report.sections))
    c2.metric("Sources", len(report.sources))
    c3.metric("Contradictions", len(report.contradictions))
    with c4:
        st.download_button("Download Markdown", markdown, file_name=f"{stem}.md", mime="text/markdown",
                           key=f"md-{key}", icon=":material/download:")
        st.download_button("Download JSON", json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str),
                           file_name=f"{stem}.json", mime="application/json", key=f"json-{key}",
                           icon=":material/download:")
    citations = report.citations
    (st.success if citations.ok else st.warning)(f"Citations checked: {citations.summary()}")
    with st.container(height=640, border=True):
        st.markdown(markdown)


def show_job(job: Job) -> None:
    report: Report = job.result
    where = report.saved[0].name if report.saved else ""
    st.markdown(f"**{report.title}** · written in {job.seconds:.1f}s · saved as "
                f"`reports/{where}`", help=str(report.saved[0]) if report.saved else None)
    show(report, key=f"job-{job.id}")


shown = job_panel(rt, "generate", render_result=show_job, stream=True)

# -- earlier reports ---------------------------------------------------------------------------

st.divider()
folder = rt.workspace / "reports"
files = sorted(folder.glob("*.md"), key=lambda p: p.stat().st_mtime, reverse=True) if folder.is_dir() else []
if not files:
    st.subheader("Earlier reports")
    st.caption(f"None yet in {folder}.")
    st.stop()


def label(path: Path) -> str:
    when = format_when(datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat())
    return f"{when} · {path.stem}"


fresh = shown is not None and shown.status == "done"
with st.expander(f"Earlier reports ({len(files)})", expanded=not fresh):
    chosen = st.selectbox("Report", files, format_func=label, key="report-earlier",
                          help=f"Markdown and JSON files in {folder}.")
    if chosen is not None:
        text = chosen.read_text(encoding="utf-8", errors="replace")
        sidecar = chosen.with_suffix(".json")
        d1, d2, _ = st.columns([1, 1, 3])
        d1.download_button("Download Markdown", text, file_name=chosen.name, mime="text/markdown", key="old-md",
                           icon=":material/download:")
        if sidecar.is_file():
            d2.download_button("Download JSON", sidecar.read_bytes(), file_name=sidecar.name,
                               mime="application/json", key="old-json", icon=":material/download:")
        with st.container(height=520, border=True):
            st.markdown(text)
