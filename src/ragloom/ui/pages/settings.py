"""Settings: chunking, graph, lenses, embedding and the language model, saved to ragloom.toml.

API keys are read from the environment only: this page never shows or writes a key. The server
sends the key variable's value to the base URL, so the variable may only be one of the
providers' own or those the operator lists (``server.llm_key_variables``), the page says
whether a variable is set for those names only, and when the app listens beyond this machine
neither the base URL nor the key variable can be changed here.
"""

from __future__ import annotations

import os
from typing import Any

import streamlit as st

from ragloom.chunk import chunker_names
from ragloom.config import CONFIG_FILENAME, PROVIDER_DEFAULTS
from ragloom.configfile import save_settings
from ragloom.errors import RagloomError
from ragloom.httpguard import is_loopback
from ragloom.synthesise.writers import WRITERS
from ragloom.ui.common import bind_address, engine, ensure_app, header, index_warning, runtime
from ragloom.ui.helpers import key_note, key_variables, llm_problems, parse_lines, settings_changes

ensure_app()
rt = runtime()
eng = engine()
s = eng.settings
path = rt.workspace / CONFIG_FILENAME
header("Settings", f"Saved to {path}, keeping its comments. Environment variables (RAGLOOM_SECTION__KEY) and "
                   "--config still take precedence.")

if flash := st.session_state.pop("settings-flash", None):
    st.success(flash, icon=":material/save:")
for note in st.session_state.pop("settings-overridden", []):
    st.warning(note, icon=":material/warning:")
index_warning(rt, eng, key="settings")

providers = ["none", *[p for p in WRITERS.names() if p != "none"]]
strategies = chunker_names()
address = bind_address()
exposed = not is_loopback(address)
allowed = key_variables(s.server.llm_key_variables)
key_choices = ["", *allowed, *([s.llm.api_key_env] if s.llm.api_key_env and s.llm.api_key_env not in allowed else [])]

with st.form("settings-form"):
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader("Chunking")
        strategy = st.selectbox("Strategy", strategies, index=strategies.index(s.chunking.strategy)
                                if s.chunking.strategy in strategies else 0, key="set-strategy",
                                help="token: fixed token windows cut at sentence ends · boundary: sections and "
                                     "paragraphs within a character range · sentence: one sentence per chunk.")
        c1, c2 = st.columns(2)
        chunk_size = c1.number_input("Chunk size (tokens)", min_value=16, max_value=32_768,
                                     value=s.chunking.chunk_size, step=64, key="set-chunk-size",
                                     help="Token strategy: the most tokens a chunk holds.")
        chunk_overlap = c2.number_input("Overlap (tokens)", min_value=0, max_value=16_384,
                                        value=s.chunking.chunk_overlap, step=16, key="set-chunk-overlap",
                                        help="Token strategy: tokens neighbouring chunks share.")
        b1, b2, b3 = st.columns(3)
        target_size = b1.number_input("Target (chars)", min_value=1, value=s.chunking.target_size, step=50,
                                      key="set-target", help="Boundary strategy: the size aimed at.")
        min_size = b2.number_input("Minimum (chars)", min_value=1, value=s.chunking.min_size, step=50,
                                   key="set-min", help="Boundary strategy.")
        max_size = b3.number_input("Maximum (chars)", min_value=1, value=s.chunking.max_size, step=50,
                                   key="set-max", help="Boundary strategy.")

        st.subheader("Embedding")
        embed_text = st.radio(
            "Embedded text", ["contextual", "naked"], index=0 if s.embedding.embed_text == "contextual" else 1,
            horizontal=True, key="set-embed-text",
            help="contextual: a '[Document … Section …]' prefix plus the chunk is embedded (better retrieval); "
                 "naked: the chunk alone (the rollback). The model and the user always see the naked text.")
        st.caption(f"Model: {s.embedding.model} ({s.embedding.provider})")

    with right:
        st.subheader("Context graph")
        threshold = st.slider("Similarity threshold", min_value=0.5, max_value=1.0, step=0.01,
                              value=float(s.graph.similarity_threshold), key="set-threshold",
                              help="Two chunks get a SIMILAR_TO edge when their embeddings' cosine is above this.")
        st.subheader("Lenses")
        l1, l2 = st.columns(2)
        lenses_text = l1.text_area("Lenses (one per line)", value="\n".join(s.retrieval.lenses), height=170,
                                   key="set-lenses", help="The lenses offered when ingesting and expected by "
                                                          "balanced retrieval.")
        authority_text = l2.text_area("Authority (most trusted first)", value="\n".join(s.graph.authority),
                                      height=170, key="set-authority",
                                      help="Orders contradictions and the report's lenses.")

        st.subheader("Language model")
        provider = st.selectbox("Provider", providers, index=providers.index(s.llm.provider)
                                if s.llm.provider in providers else 0, key="set-provider",
                                help="none: the offline extractive writer, which quotes the sources. openai covers "
                                     "any OpenAI-compatible server (Ollama, vLLM, LM Studio, llama.cpp).")
        m1, m2 = st.columns(2)
        default_model = PROVIDER_DEFAULTS.get(provider, ("",))[0]
        model = m1.text_input("Model", value=s.llm.model or "", key="set-model",
                              placeholder=default_model or "the provider's default",
                              help="Empty for the provider's default.")
        base_url = m2.text_input("Base URL", value=s.llm.base_url or "", key="set-base-url", disabled=exposed,
                                 placeholder="http://localhost:11434/v1" if not exposed else "the provider's own",
                                 help="Empty for the provider's own endpoint.")
        if exposed:
            key_env = st.text_input("API key variable", value=s.llm.key_variable(), key="set-key-env", disabled=True,
                                    help="The NAME of the environment variable holding the key.")
            shown = "every interface" if address in ("", "0.0.0.0", "::") else address
            st.caption(f":material/lock: **Read-only here:** this app listens on {shown}, beyond this machine, and "
                       "the server sends the key to the base URL. The operator sets both in ragloom.toml, under "
                       "[llm] as base_url and api_key_env; served on 127.0.0.1, the app lets them change here.")
        else:
            default_key = PROVIDER_DEFAULTS.get(provider, ("", "", ""))[2]
            key_env = st.selectbox(
                "API key variable", key_choices, index=key_choices.index(s.llm.api_key_env or ""), key="set-key-env",
                format_func=lambda name: name or (f"The provider's own ({default_key})" if default_key
                                                  else "The provider's own"),
                help="The NAME of the environment variable holding the key; the key itself is never written to the "
                     "settings. The server sends the variable's value to the base URL, so only the providers' own "
                     "variables and those the operator lists in ragloom.toml under [server] llm_key_variables can be "
                     "chosen.")
        if note := key_note(s.llm.provider, s.llm.key_variable(), allowed, os.environ):
            st.caption(note)
    saved = st.form_submit_button("Save", type="primary", key="settings-save")

if saved:
    current: dict[str, dict[str, Any]] = {
        name: {k: ("" if v is None else v) for k, v in values.items()}
        for name, values in s.model_dump().items() if isinstance(values, dict)}
    wanted: dict[str, dict[str, Any]] = {
        "chunking": {"strategy": strategy, "chunk_size": int(chunk_size), "chunk_overlap": int(chunk_overlap),
                     "target_size": int(target_size), "min_size": int(min_size), "max_size": int(max_size)},
        "graph": {"similarity_threshold": round(float(threshold), 4), "authority": parse_lines(authority_text)},
        "retrieval": {"lenses": parse_lines(lenses_text)},
        "embedding": {"embed_text": embed_text},
        "llm": {"provider": provider, "model": model.strip()} if exposed else {
            "provider": provider, "model": model.strip(), "base_url": base_url.strip(), "api_key_env": key_env or ""},
    }
    changes = settings_changes(current, wanted)
    problems = llm_problems(current["llm"], wanted["llm"], allowed=allowed, exposed=exposed)
    if problems:
        for problem in problems:
            st.error(f"Not saved: {problem}.", icon=":material/error:")
    elif not changes:
        st.info("Nothing changed.")
    else:
        try:
            save_settings(rt.workspace, changes)
            fresh = rt.rebuild()
        except RagloomError as exc:
            st.error(f"Not saved: {exc}", icon=":material/error:")
        else:
            after = {name: {k: ("" if v is None else v) for k, v in values.items()}
                     for name, values in fresh.settings.model_dump().items() if isinstance(values, dict)}
            overridden = [f"{section}.{key} stays {after[section][key]!r}: RAGLOOM_{section.upper()}__{key.upper()} "
                          "or the --config file sets it."
                          for section, values in settings_changes(after, changes).items() for key in values]
            changed = ", ".join(f"{section}.{key}" for section, values in changes.items() for key in values)
            st.session_state["settings-flash"] = f"Saved {changed} to {path}."
            st.session_state["settings-overridden"] = overridden
            st.rerun()
