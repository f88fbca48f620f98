from __future__ import annotations

import pytest

from ragloom.errors import ConfigError
from ragloom.parse import DocTypeRule, infer_doc_type


def test_filename_content_and_lens_rules() -> None:
    assert infer_doc_type("2025-02-11-planning-sync.md", "", "team-conversational") == "Meeting Notes"
    assert infer_doc_type("notes.md", "Attendees: Ana, Bo\n\nWe met.", "") == "Meeting Notes"
    assert infer_doc_type("roadmap-2025.md", "# Roadmap", "team-structured") == "Roadmap"
    assert infer_doc_type("random.md", "text", "engineering") == "Engineering Doc"
    assert infer_doc_type("random.md", "text", "unknown-lens") == "Document"


def test_custom_rules_need_every_given_pattern() -> None:
    rules = [DocTypeRule("Dive Manual", filename=r"ffessm", content=r"niveau")]
    assert infer_doc_type("FFESSM-n2.md", "Niveau 2 manual", rules=rules) == "Dive Manual"
    assert infer_doc_type("FFESSM-n2.md", "something else", rules=rules, default="Manual") == "Manual"


def test_bad_pattern_names_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"doc_types.*filename"):
        infer_doc_type("x.md", "", rules=[DocTypeRule("X", filename="(")])
