from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.chunk import chunk_text
from ragloom.config import PrefixSettings
from ragloom.enrich import PrefixBuilder, content_hash, enrich_chunks, shorten_path
from ragloom.errors import ConfigError
from ragloom.types import Document


def make_doc(text: str, **kw) -> Document:
    fields = dict(text=text, source_path="/x/plan.md", title="Plan", lens="your-voice", tenant="t",
                  media_type="text/markdown", modified_at=datetime(2025, 1, 1, tzinfo=UTC), document_id="d1",
                  file_hash="h", doc_type="Roadmap", document_date=date(2025, 1, 6))
    fields.update(kw)
    return Document(**fields)


def test_default_prefix_format() -> None:
    build = PrefixBuilder()
    assert build(make_doc("x"), ("Safety", "Pre-Dive Checks")) == \
        "[Document: Plan - Type: Roadmap - Section: Safety > Pre-Dive Checks]\n\n"
    assert build(make_doc("x"), ()) == "[Document: Plan - Type: Roadmap - Section: Introduction]\n\n"


def test_template_is_a_setting_and_is_checked() -> None:
    build = PrefixBuilder(PrefixSettings(template="{lens} | {title} | {date}", separator="\n"))
    assert build(make_doc("x"), ("A",)) == "your-voice | Plan | 2025-01-06\n"
    with pytest.raises(ConfigError, match="unknown field"):
        PrefixBuilder(PrefixSettings(template="{author}"))


@given(st.lists(st.text(min_size=1, max_size=60), min_size=1, max_size=8), st.integers(10, 120))
def test_shortened_path_fits(path: list[str], limit: int) -> None:
    short = shorten_path(path, limit)
    assert len(short) <= limit
    if len(" > ".join(path)) <= limit:
        assert short == " > ".join(path)


def test_shortening_keeps_the_ends() -> None:
    path = ["Engineering Handbook", "Operations", "Incident Response", "Paging Policy", "Escalation Rules"]
    assert shorten_path(path, 60) == "Engineering Handbook > … > Paging Policy > Escalation Rules"


def test_enrich_sets_prefix_hash_ids_and_links() -> None:
    text = "# A\nsame text.\n\n# B\nsame text.\n\n# C\nother text."
    doc = make_doc(text)
    chunks = enrich_chunks(doc, chunk_text(text, "sentence"), PrefixBuilder())
    assert all(c.contextualized_text == c.prefix + c.text for c in chunks)
    assert all(c.content_hash == content_hash(c.text) for c in chunks)
    assert len({c.chunk_id for c in chunks}) == len(chunks)  # identical texts still get distinct ids
    assert chunks[0].prev_id is None and chunks[-1].next_id is None
    assert all(a.next_id == b.chunk_id and b.prev_id == a.chunk_id for a, b in zip(chunks, chunks[1:], strict=False))


def test_ids_of_unchanged_chunks_survive_edits_elsewhere() -> None:
    before = "# A\nFirst paragraph stays.\n\n# B\nSecond paragraph."
    after = "# A\nFirst paragraph stays.\n\n# B\nSecond paragraph, edited."
    ids = lambda t: [c.chunk_id for c in enrich_chunks(make_doc(t), chunk_text(t, "sentence"), None)]  # noqa: E731
    # Each heading travels with its first sentence (issue 26): two chunks, the first unchanged.
    assert len(ids(before)) == 2 and ids(before)[0] == ids(after)[0] and ids(before)[-1] != ids(after)[-1]
