"""Evaluation: the latest ``ragloom eval`` results found on disk, with their charts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import streamlit as st

from ragloom.ui.common import ensure_app, header, runtime
from ragloom.ui.helpers import find_eval_results, format_when

SUITES = {
    "chunking": "chunk boundaries against human-marked evidence (recall, precision, IoU)",
    "contextual": "contextual against naked embeddings on retrieval",
    "ab": "answers from ragloom's context against a plain top-k baseline",
    "windows": "sentence windows: fixed against dynamic",
}

ensure_app()
rt = runtime()
header("Evaluation", "How each technique measures against its baseline, on data others wrote. "
                     "Results are read from disk; run the suites to add more.")

here = Path.cwd()
checkout = Path(__file__).resolve().parents[4]  # src/ragloom/ui/pages -> the project root
folders = [rt.workspace / "eval", here / "eval-out", here / "docs" / "eval", checkout / "eval-out",
           checkout / "docs" / "eval"]
results = find_eval_results(folders)

with st.expander("Run a suite", expanded=not results):
    st.markdown("In a terminal, from the project folder (embeddings are cached, so a second run takes seconds):")
    st.code("\n".join(f"ragloom eval {name} --out eval-out   # {what}" for name, what in SUITES.items()),
            language="bash")
    st.caption("Results land in eval-out/ as <suite>.json, <suite>.md and PNG charts; this page also reads "
               f"{rt.workspace / 'eval'} and docs/eval/.")

if not results:
    st.info("No evaluation results found in: " + ", ".join(
        str(f) for f in dict.fromkeys(p.resolve() for p in folders)), icon=":material/inbox:")
    st.stop()


def where(folder: Path) -> str:
    try:
        return str(folder.resolve().relative_to(here))
    except ValueError:
        return str(folder)


labels = {i: f"{r.name} · {where(r.folder)} · {format_when(datetime.fromtimestamp(r.modified, UTC).isoformat())}"
          for i, r in enumerate(results)}
index = st.selectbox("Result", list(labels), format_func=labels.__getitem__, key="eval-result",
                     help="Newest first.")
result = results[index if index is not None else 0]
title, body = result.body()
st.subheader(title)
if result.name in SUITES:
    st.caption(SUITES[result.name])
if body:
    st.markdown(body)
for image in result.images:
    st.image(str(image), caption=image.name, width="content")
files = [p for p in (result.markdown, result.json) if p is not None]
cols = st.columns(max(1, len(files)) + 2)
for col, path in zip(cols, files, strict=False):
    col.download_button(f"Download {path.suffix[1:].upper()}", path.read_bytes(), file_name=path.name,
                        key=f"dl-{path}", icon=":material/download:")
st.caption(f"Files in {result.folder}.")
