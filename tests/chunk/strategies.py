"""Hypothesis strategies for Markdown-like documents with awkward content."""

from __future__ import annotations

from hypothesis import strategies as st

words = st.sampled_from(
    ["roadmap", "Q2", "2025.", "the", "catalog", "integration", "ships", "Dr.", "e.g.", "naïve", "café", "東京",
     "😀", "x" * 30, "end.", "why?", "yes!", "3.14", "—", "API-v2", "  ", "\t", "don't", "U.S.", "🇫🇷", "ｆｕｌｌ"]
)
sentence = st.lists(words, min_size=1, max_size=25).map(" ".join)
paragraph = st.lists(sentence, min_size=1, max_size=8).map(" ".join)
block = st.one_of(
    paragraph,
    paragraph,
    st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 6), sentence),
    st.lists(sentence, min_size=1, max_size=4).map(lambda xs: "\n".join("- " + x for x in xs)),
    st.builds(lambda t: "```\n" + t + "\n```", paragraph),
    st.text(max_size=80),
)
documents = st.lists(block, min_size=1, max_size=14).flatmap(
    lambda blocks: st.sampled_from(["\n\n", "\n", "\n\n\n"]).map(lambda sep: sep.join(blocks))
)
