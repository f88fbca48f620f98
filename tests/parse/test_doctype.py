from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import ConfigError
from ragloom.parse import DocTypeRule, infer_doc_type
from ragloom.parse.doctype import DEFAULT_RULES, filename_words


def test_filename_content_and_lens_rules() -> None:
    assert infer_doc_type("2025-02-11-planning-sync.md", "", "team-conversational") == "Meeting Notes"
    assert infer_doc_type("notes.md", "Attendees: Ana, Bo\n\nWe met.", "") == "Meeting Notes"
    assert infer_doc_type("roadmap-2025.md", "# Roadmap", "team-structured") == "Roadmap"
    # No lens is built in: a lens names a type only through the settings' rules.
    assert infer_doc_type("random.md", "text", "engineering") == "Document"
    rules = [*DEFAULT_RULES, DocTypeRule("Engineering Doc", lens=r"^engineering$")]
    assert infer_doc_type("random.md", "text", "engineering", rules=rules) == "Engineering Doc"
    assert infer_doc_type("random.md", "text", "unknown-lens", rules=rules) == "Document"


def test_custom_rules_need_every_given_pattern() -> None:
    rules = [DocTypeRule("Dive Manual", filename=r"ffessm", content=r"niveau")]
    assert infer_doc_type("FFESSM-n2.md", "Niveau 2 manual", rules=rules) == "Dive Manual"
    assert infer_doc_type("FFESSM-n2.md", "something else", rules=rules, default="Manual") == "Manual"


def test_bad_pattern_names_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"doc_types.*filename"):
        infer_doc_type("x.md", "", rules=[DocTypeRule("X", filename="(")])


def test_filename_rules_match_whole_words() -> None:
    # Words, not letters: the types go into the embedded prefix, so a wrong one hurts retrieval.
    assert infer_doc_type("memory.md", "", "") == "Document"  # not a "memo"
    assert infer_doc_type("asyncio.md", "", "") == "Document"  # "sync" inside a word
    assert infer_doc_type("specialisation.md", "", "") == "Document"
    assert infer_doc_type("TeamSync.md", "", "") == "Meeting Notes"  # camelCase humps are words
    assert infer_doc_type("2025-03-03_weekly_sync.md", "", "") == "Meeting Notes"
    assert infer_doc_type("roadmaps.md", "", "") == "Roadmap"  # a plural is the same word
    assert infer_doc_type("HTTPServerDesign.md", "", "") == "Design Doc"
    assert filename_words("2025-03-03_TeamSync.v2.md") == "2025 03 03 Team Sync v2 md"


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12))
def test_a_default_rule_word_inside_a_longer_word_never_matches(stem: str) -> None:
    for word in ("memo", "sync", "spec", "design", "report", "chat"):
        name = f"x{word}{stem}.md" if stem[0] != "s" else f"x{word}x{stem}.md"
        assert infer_doc_type(name, "", "") == "Document", name
