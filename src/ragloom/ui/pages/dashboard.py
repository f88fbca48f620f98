"""Dashboard: what the workspace holds, how it was built, and whether it matches the settings."""

from __future__ import annotations

import streamlit as st

from ragloom.errors import RagloomError
from ragloom.ui.common import engine, ensure_app, fail, hbars, header, index_warning, runtime
from ragloom.ui.helpers import EDGE_COLOURS, format_when

ensure_app()
rt = runtime()
header("Dashboard", f"Workspace {rt.workspace}")
eng = engine()
index_warning(rt, eng, key="dashboard")

try:
    stats = eng.store.stats(eng.settings.tenant)
    graph_stats = eng.graph().stats() if stats["chunks"] else None
    commit = eng.store.commit_info()
    manifest = eng.workspace.manifest() or {}
except RagloomError as exc:
    fail(exc)
    st.stop()

if not stats["documents"]:
    st.info("The workspace is empty. Add documents on the **Ingest** page, or run `make demo` in a terminal "
            "to load the sample materials.", icon=":material/inbox:")
    st.page_link("pages/ingest.py", label="Go to Ingest", icon=":material/upload_file:")
    st.stop()

lenses = stats["lenses"]
mean = stats["tokens"] / stats["chunks"] if stats["chunks"] else 0.0
cols = st.columns(5)
cols[0].metric("Documents", f"{stats['documents']:,}")
cols[1].metric("Chunks", f"{stats['chunks']:,}")
cols[2].metric("Tokens", f"{stats['tokens']:,}")
cols[3].metric("Mean tokens per chunk", f"{mean:,.1f}")
cols[4].metric("Lenses", len(lenses))

st.subheader("Per lens")
rows = [{"lens": lens, "documents": v["documents"], "chunks": v["chunks"], "tokens": v["tokens"],
         "tokens per chunk": round(v["tokens"] / v["chunks"], 1) if v["chunks"] else 0.0}
        for lens, v in sorted(lenses.items())]
left, right = st.columns(2, gap="large")
with left:
    hbars(rows, category="lens", values=["documents", "chunks"], colours=["#9ecae9", "#4c78a8"])
with right:
    hbars(rows, category="lens", values=["tokens"], colours=["#f58518"], axis="tokens")
st.dataframe(rows, hide_index=True, width="stretch")

st.subheader("Context graph")
if graph_stats is None:
    st.caption("No chunks, so no graph yet.")
else:
    g = st.columns(4)
    g[0].metric("Nodes", f"{graph_stats['nodes']:,}", help="One node per current chunk.")
    g[1].metric("Edges", f"{graph_stats['edges']:,}", help="Stored relations between chunks.")
    g[2].metric("Components", graph_stats["components"], help="Groups of chunks connected to each other.")
    g[3].metric("Density", f"{graph_stats['density']:.3f}", help="Share of all possible pairs that are related.")
    edge_rows = [{"edge type": k, "edges": v} for k, v in graph_stats["edge_types"].items()]
    if edge_rows:
        hbars(edge_rows, category="edge type", values=["edges"], axis="edges", category_colours=EDGE_COLOURS)
    implicit = {k: v for k, v in graph_stats.get("implicit_pairs", {}).items() if v}
    if implicit:
        st.caption("Implied, not stored (groups larger than their bound): "
                   + ", ".join(f"{k} {v:,} pairs" for k, v in implicit.items()))

st.subheader("Index")
signature = manifest.get("signature") or {}
chunking = signature.get("chunking") or {}
strategy = chunking.get("strategy", "?")
size = (f"{chunking.get('chunk_size')} tokens, overlap {chunking.get('chunk_overlap')}" if strategy == "token"
        else f"target {chunking.get('target_size')} chars" if strategy == "boundary" else "one sentence per chunk")
facts = [
    ("Last ingest", format_when(commit.get("committed_at"))),
    ("Index created", format_when(manifest.get("created_at"))),
    ("Embedder", f"{manifest.get('embedder', '?')} ({manifest.get('dim', '?')} dimensions)"),
    ("Embedded text", str((signature.get("embedding") or {}).get("embed_text", "?"))),
    ("Chunking", f"{strategy}: {size}"),
    ("Chunk versions stored", f"{stats['chunk_versions_stored']:,} (history included)"),
]
halves = st.columns(2)
for i, (label, value) in enumerate(facts):
    halves[i % 2].markdown(f"**{label}**  \n{value}")
