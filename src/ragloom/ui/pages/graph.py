"""Context graph: the graph's metrics, and one chunk's relations, found by search, drawn as a picture."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import streamlit as st
from streamlit_agraph import Config, Edge, Node, agraph

from ragloom.errors import RagloomError
from ragloom.graph.view import ContextGraph
from ragloom.ui.common import engine, ensure_app, fail, hbars, header, runtime
from ragloom.ui.helpers import EDGE_COLOURS, EDGE_HELP, lens_colour, md_escape, one_line, preview, section_tail

ensure_app()
rt = runtime()
header("Context graph", "Chunks are nodes; their relations are edges. Find a chunk to see what it is connected to "
                        "and why.")
eng = engine()
tenant = eng.settings.tenant

try:
    graph: ContextGraph = eng.graph(tenant=tenant)
    stats = graph.stats()
except RagloomError as exc:
    fail(exc)
    st.stop()

if not stats["nodes"]:
    st.info("No chunks yet: ingest documents first.", icon=":material/inbox:")
    st.stop()

m = st.columns(4)
m[0].metric("Nodes", f"{stats['nodes']:,}", help="One per current chunk.")
m[1].metric("Edges", f"{stats['edges']:,}", help="Stored relations.")
m[2].metric("Density", f"{stats['density']:.3f}", help="Share of all possible pairs that are related.")
m[3].metric("Components", stats["components"], help="Groups of chunks connected to each other.")
chart, legend = st.columns([3, 2], gap="large")
with chart:
    types = stats["edge_types"]
    if types:
        hbars([{"edge type": k, "edges": v} for k, v in types.items()], category="edge type", values=["edges"],
              axis="edges", category_colours=EDGE_COLOURS)
with legend:
    st.html("".join(
        f'<div style="margin:0.2rem 0"><span style="display:inline-block;width:0.8rem;height:0.8rem;'
        f'border-radius:0.2rem;background:{colour};margin-right:0.5rem"></span><b>{kind}</b>: '
        f"{EDGE_HELP.get(kind, '')}</div>" for kind, colour in EDGE_COLOURS.items()))

st.subheader("Explore a chunk")
search = st.text_input("Find a chunk", key="graph-search", placeholder="QuickBooks sync rate limits",
                       help="Searches the workspace (hybrid retrieval); pick one of the hits below.")
hits: dict[str, str] = {}
if search.strip():
    try:
        for r in eng.query(search.strip(), k=10, tenant=tenant).results:
            hits[r.chunk_id] = f"{r.source_name} › {section_tail(r.section_path_str)} — {preview(r.text, 90)}"
    except RagloomError as exc:
        fail(exc)
    if not hits:
        st.caption("No chunk matches that.")


def _pick() -> None:
    st.session_state["graph-chunk"] = st.session_state.get("graph-hit")


if hits:
    st.radio("Hits", list(hits), format_func=hits.__getitem__, key="graph-hit", on_change=_pick, index=None,
             label_visibility="collapsed")

chunk_id = st.session_state.get("graph-chunk")
if not chunk_id or chunk_id not in graph:
    st.caption("Search, then choose a hit to see its relations.")
    st.stop()

limit = st.slider("Relations shown", 5, 200, 40, step=5, key="graph-limit",
                  help="The strongest relations first; the picture shows the same ones.")
shown = graph.show(chunk_id, limit=limit)
lenses = graph.lenses()
total = len(graph.neighbours(chunk_id))

by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
for rel in shown["relations"]:
    by_type[rel["type"]].append(rel)
kinds = sorted(by_type, key=lambda k: -len(by_type[k]))

left, right = st.columns([2, 3], gap="large")
with left:
    with st.container(border=True):
        st.markdown(f"**{shown['source_name']}** · {shown['lens']}  \nchunk {shown['chunk_index'] + 1} of "
                    f"{shown['total_chunks']} · {shown['token_count']} tokens")
        st.caption(shown["section_path"] or "(no section)")
        text = preview(shown["content_preview"], 400)
        st.markdown(md_escape(text + ("…" if len(shown["content_preview"]) >= 200 and not text.endswith("…") else "")))
        if shown.get("key_terms"):
            st.caption("Key terms: " + ", ".join(shown["key_terms"]))
        if shown.get("time_references"):
            st.caption("Periods: " + ", ".join(shown["time_references"]))
    st.markdown(f"**{shown['relations_total']} stored relations** ({total} with implied ones); "
                f"the strongest {len(shown['relations'])}:")
    st.markdown("\n".join(
        f"- **{kind}** · {len(by_type[kind])}  ({EDGE_HELP.get(kind, '')})" for kind in kinds))

with right:
    st.markdown("**Neighbourhood** (click a node to explore it)")
    pairs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rel in shown["relations"]:
        pairs[rel["neighbour"]].append(rel)
    nodes = [Node(id=chunk_id, label=one_line(shown["source_name"], 28), title=preview(shown["content_preview"], 200),
                  size=30, shape="star", color=lens_colour(shown["lens"], lenses),
                  font={"size": 14, "strokeWidth": 3})]
    edges = []
    for neighbour, rels in pairs.items():
        data = graph.node(neighbour)
        nodes.append(Node(id=neighbour, label=one_line(data["source_name"].rsplit(".", 1)[0], 22),
                          title=f"{data['lens']} · {section_tail(data['section_path'])}\n"
                                f"{preview(data['content_preview'], 160)}",
                          size=14, color=lens_colour(data["lens"], lenses), font={"size": 11}))
        best = max(rels, key=lambda r: r["weight"])
        edges.append(Edge(source=chunk_id, target=neighbour, color=EDGE_COLOURS.get(best["type"], "#999999"),
                          title=", ".join(f"{r['type']} {r['weight']:.2f}" for r in rels),
                          width=1 + min(4.0, len(rels))))
    config = Config(width=600, height=520, directed=False, physics=True, hierarchical=False,
                    interaction={"hover": True})
    config.width = "100%"  # Config only takes pixels; the column decides
    clicked = agraph(nodes=nodes, edges=edges, config=config)
    shown_lenses = sorted({rels[0]["neighbour_lens"] for rels in pairs.values()} | {shown["lens"]})
    st.html("<div style='font-size:0.8rem;color:rgba(49,51,63,0.7)'>Node colour, lens: " + " ".join(
        f"<span style='white-space:nowrap;margin-right:0.6rem'><span style='display:inline-block;width:0.7rem;"
        f"height:0.7rem;border-radius:50%;background:{lens_colour(lens, lenses)};margin-right:0.25rem'></span>"
        f"{lens}</span>" for lens in shown_lenses)
        + " · edge colour: its strongest relation · star: the chosen chunk</div>")
    if clicked and clicked != st.session_state.get("graph-clicked"):
        st.session_state["graph-clicked"] = clicked
        if clicked != chunk_id and clicked in graph:
            st.session_state["graph-chunk"] = clicked
            st.rerun()

st.markdown("**Relations by type**")
for i, kind in enumerate(kinds):
    rels = by_type[kind]
    with st.expander(f"{kind} · {len(rels)}", expanded=i == 0):
        rows = []
        for rel in rels:
            extra = {k: v for k, v in rel.items() if k not in ("type", "weight") and not k.startswith("neighbour")}
            detail = "; ".join(f"{k.replace('_', ' ')}: {', '.join(map(str, v)) if isinstance(v, list) else v}"
                               for k, v in extra.items())
            rows.append({"weight": round(rel["weight"], 3), "file": rel["neighbour_source"],
                         "section": section_tail(rel["neighbour_section"]), "lens": rel["neighbour_lens"],
                         "preview": preview(graph.node(rel["neighbour"])["content_preview"], 140),
                         "why": detail, "chunk": rel["neighbour_short_id"]})
        st.dataframe(rows, hide_index=True, width="stretch",
                     column_config={"preview": st.column_config.TextColumn(width="large"),
                                    "weight": st.column_config.NumberColumn(format="%.2f", width="small"),
                                    "chunk": st.column_config.TextColumn(width="small")})
