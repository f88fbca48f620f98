"""Ask: a cited answer; each cited source opens its document with the cited span highlighted."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

import streamlit as st

from ragloom.engine import Engine
from ragloom.errors import RagloomError
from ragloom.ids import short_id
from ragloom.query import Query
from ragloom.retrieve import mode_names
from ragloom.synthesise.sources import Source
from ragloom.types import ScoredChunk
from ragloom.ui.common import engine, ensure_app, fail, header, index_warning, runtime
from ragloom.ui.helpers import (
    MODE_HELP,
    describe_via,
    end_of_day,
    file_name,
    highlight_html,
    md_escape,
    one_line,
    preview,
    section_tail,
)
from ragloom.writing import AskResult

ensure_app()
rt = runtime()
header("Ask", "A question answered from the workspace, every statement citing its source [n]; "
              "citations are checked against the sources.")
eng = engine()
tenant = eng.settings.tenant
index_warning(rt, eng, key="ask")


def lens_options(eng: Engine) -> list[str]:
    try:
        present = eng.store.lenses(tenant)
    except RagloomError:
        present = set()
    return [lens for lens in eng.settings.retrieval.lenses if lens in present] + sorted(
        present - set(eng.settings.retrieval.lenses))


def chunk_label(eng: Engine, chunk_id: str, results: Sequence[ScoredChunk]) -> str:
    """``file › section`` of a chunk: from the results if it is one, else from the graph."""
    for r in results:
        if r.chunk_id == chunk_id:
            return f"{r.source_name} › {section_tail(r.section_path_str)}"
    try:
        node = eng.graph(tenant=tenant).node(chunk_id)
        return f"{node['source_name']} › {section_tail(node['section_path'])}"
    except RagloomError:
        return chunk_id


def spans_for(result: AskResult, source: Source) -> list[tuple[int, int]]:
    """What to highlight for a source: the quotes taken from it, else the whole source span."""
    quoted = [(q.start, q.end) for q in result.answer.quotes
              if q.number == source.number and (not q.document_id or q.document_id == source.document_id)]
    return quoted or [(source.start, source.end)]


# -- the question ------------------------------------------------------------------------------

modes = mode_names()
default_mode = eng.settings.retrieval.mode if eng.settings.retrieval.mode in modes else modes[0]
with st.form("ask-form", border=True):
    question = st.text_area("Question", key="ask-question", height=80,
                            placeholder="When will the QuickBooks catalog integration ship?")
    c1, c2, c3, c4, c5 = st.columns([2, 3, 2, 2, 2])
    mode = c1.selectbox("Retrieval mode", modes, index=modes.index(default_mode), key="ask-mode",
                        help="\n".join(f"- **{m}**: {MODE_HELP.get(m, 'a plugin mode')}" for m in modes))
    lenses = c2.multiselect("Lenses", lens_options(eng), key="ask-lenses", placeholder="All lenses",
                            help="Only these lenses; empty for all of them.")
    as_of_day = c3.date_input("As of", value=None, key="ask-as-of", format="YYYY-MM-DD",
                              min_value=date(1970, 1, 1), max_value=date.today(),
                              help="Answer from the workspace as it was at the end of this day (UTC); empty: now.")
    budget = c4.number_input("Budget (tokens)", min_value=200, max_value=200_000, step=500, key="ask-budget",
                             value=int(eng.settings.context_optimization.max_tokens),
                             help="Tokens of context the answer is written from.")
    k = c5.number_input("Candidates", min_value=1, max_value=200, value=None, key="ask-k",
                        placeholder=str(eng.settings.context_optimization.candidates),
                        help="Chunks retrieved before the context is optimised; empty for the default.")
    asked = st.form_submit_button("Ask", type="primary", key="ask-go")

if asked:
    if not question.strip():
        st.warning("Write a question first.")
    else:
        st.session_state.pop("ask-open", None)
        box = st.empty()
        parts: list[str] = []

        def on_text(delta: str) -> None:
            parts.append(delta)
            box.markdown("".join(parts))

        try:
            with st.spinner("Retrieving and writing…"):
                request = Query(question.strip(), mode=mode, lenses=lenses or None,
                                as_of=end_of_day(as_of_day) if as_of_day else None, budget=int(budget),
                                k=int(k) if k else None)
                fresh = eng.ask(request, on_text=on_text)
            box.empty()
            st.session_state["ask-result"] = {"result": fresh, "as_of": as_of_day, "mode": mode}
        except RagloomError as exc:
            box.empty()
            fail(exc)

stored: dict[str, Any] | None = st.session_state.get("ask-result")
if stored is None:
    st.caption("Answers quote or cite numbered sources; open a source to read it in its document.")
    st.stop()

result: AskResult = stored["result"]
answer = result.answer
by_number = {s.number: s for s in answer.sources}
context_chunks = {c.chunk_id: c for c in (result.query.context.chunks if result.query.context else [])}
retrieved = list(result.query.results)
cited = [n for n in dict.fromkeys(answer.citations.valid) if n in by_number]
if "ask-open" not in st.session_state and cited:
    st.session_state["ask-open"] = cited[0]

left, right = st.columns([5, 4], gap="large")
with left:
    st.subheader(answer.question)
    if answer.extractive:
        st.info("**Extractive answer**: no language model is configured, so these statements are quoted "
                "verbatim from the sources. Choose a model on the Settings page for a written answer.", icon=":material/format_quote:")
    else:
        st.caption(f"Written by {answer.writer} ({answer.model})")
    text = answer.text
    if answer.extractive and text.startswith("*Extractive"):
        text = text.split("\n", 1)[1].lstrip() if "\n" in text else text  # the banner above says it
    with st.container(border=True, key="ask-answer"):
        st.markdown(text)
    citations = answer.citations
    if citations.ok:
        st.success(f"Citations checked: {citations.summary()}", icon=":material/check_circle:")
    else:
        st.warning(f"Citations checked: {citations.summary()}", icon=":material/warning:")
        if citations.invalid:
            st.caption("Numbers that match no source: " + ", ".join(f"[{n}]" for n in citations.invalid))
        for sentence in citations.uncited_sentences[:5]:
            st.caption(f"Without a citation: {one_line(sentence, 200)}")

    st.markdown(f"**Cited sources** ({len(cited)} of {len(answer.sources)} in the context)")
    for n in cited:
        source = by_number[n]
        with st.container(border=True):
            top, button = st.columns([4, 1], vertical_alignment="center")
            top.markdown(f"**[{n}] {file_name(source.source_path)}** · {source.lens}  \n"
                         f"{section_tail(source.section_path, 3)}")
            opened = st.session_state.get("ask-open") == n
            if button.button("Shown" if opened else "Open", key=f"open-{n}", disabled=opened,
                             help="Show the document with the cited text highlighted."):
                st.session_state["ask-open"] = n
                st.rerun()
            chunk = context_chunks.get(source.chunk_id)
            if chunk is not None and chunk.via:
                st.caption(":material/hub: " + describe_via(chunk.via, chunk_label(eng, str(chunk.via.get("seed")), retrieved)))
    uncited = [s for s in answer.sources if s.number not in cited]
    if uncited:
        with st.expander(f"Also in the context, not cited ({len(uncited)})"):
            for s in uncited:
                st.markdown(f"[{s.number}] **{file_name(s.source_path)}** · {s.lens} · {section_tail(s.section_path)}")
                st.caption(md_escape(preview(s.text, 220)))

    expanded = sum(1 for r in retrieved if r.via)
    label = f"How the sources were found: {len(retrieved)} results, mode {result.query.mode}"
    with st.expander(label + (f", {expanded} brought in by the graph" if expanded else "")):
        ctx = result.query.context
        if ctx is not None:
            st.caption(f"Context: {ctx.total_tokens} of {ctx.budget} tokens, organised by {ctx.strategy}; "
                       f"{len(ctx.removed)} candidates left out.")
        for rank, r in enumerate(retrieved, 1):
            line = (f"{rank}. **{r.source_name}** · {r.lens} · {section_tail(r.section_path_str)} · "
                    f"relevance {r.relevance:.2f} · `{short_id(r.chunk_id)}`")
            st.markdown(line)
            if r.via:
                st.caption(":material/hub: " + describe_via(r.via, chunk_label(eng, str(r.via.get("seed")), retrieved)))

with right:
    number = st.session_state.get("ask-open")
    shown = by_number.get(number) if isinstance(number, int) else None
    if shown is None:
        st.caption("Open a source to read it here.")
    else:
        as_of = stored.get("as_of")
        try:
            texts = eng.store.document_texts(tenant, [shown.document_id],
                                             as_of=end_of_day(as_of) if as_of else None)
        except RagloomError as exc:
            fail(exc)
            texts = {}
        doc_text = texts.get(shown.document_id)
        st.markdown(f"#### [{shown.number}] {shown.title or file_name(shown.source_path)}")
        st.caption(f"{shown.source_path}  \nLens {shown.lens} · {shown.section_path}")
        if doc_text is None:
            st.warning("This document is no longer in the workspace.")
        else:
            spans = spans_for(result, shown)
            st.caption("Highlighted: " + ", ".join(f"characters {s:,}–{e:,}" for s, e in spans))
            st.html(highlight_html(doc_text, spans, element_id=f"ask-doc-{shown.number}",
                                   document_id=shown.document_id),
                    unsafe_allow_javascript=True)
