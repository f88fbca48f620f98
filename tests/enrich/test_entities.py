from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.chunk import chunk_text
from ragloom.enrich.entities import (
    DEFAULT_TYPES,
    EntityExtractor,
    Gazetteer,
    GlinerExtractor,
    SpacyExtractor,
    entity_id,
)
from ragloom.errors import ConfigError

GAZETTEER = Gazetteer(
    {
        "customer": {"Apex HVAC": ["Apex", "Apex HVAC Services"], "Brightwater Plumbing": ["Brightwater"]},
        "product": {"Service Catalog v2": ["catalog v2", "the catalog"]},
        "technician": {"Sam Whitfield": ["Sam"]},
    },
    patterns=[("procedure", r"\bSOP-\d{3}\b")],
)


def test_aliases_resolve_to_one_canonical_entity() -> None:
    text = "Apex HVAC Services renewed. apex asked about Catalog v2; Sam followed SOP-042 at Brightwater."
    found = {(m.text, m.canonical, m.type) for m in EntityExtractor(GAZETTEER)(text)}
    assert ("Apex HVAC Services", "Apex HVAC", "customer") in found
    assert ("apex", "Apex HVAC", "customer") in found  # case-insensitive alias
    assert ("Catalog v2", "Service Catalog v2", "product") in found
    assert ("Sam", "Sam Whitfield", "technician") in found
    assert ("SOP-042", "SOP-042", "procedure") in found
    assert ("Brightwater", "Brightwater Plumbing", "customer") in found
    ids = {m.entity_id for m in EntityExtractor(GAZETTEER)(text) if m.canonical == "Apex HVAC"}
    assert ids == {entity_id("customer", "Apex HVAC")}


def test_offsets_are_exact_and_mentions_do_not_overlap() -> None:
    text = Path(__file__).resolve().parents[2].joinpath("examples/materials/team-conversational/2025-02-11-planning-sync.md").read_text()
    mentions = EntityExtractor(Gazetteer.load(Path(__file__).resolve().parents[2] / "examples" / "entities.toml"))(text)
    assert mentions
    for a, b in zip(mentions, mentions[1:], strict=False):
        assert a.end <= b.start
    assert all(text[m.start : m.end] == m.text for m in mentions)
    assert {"person", "customer", "product", "date"} <= {m.type for m in mentions}


def test_candidates_are_typed_by_shape() -> None:
    text = ("Yesterday Dr. Laura Chen met Northwind Logistics Inc. about Fleet Tracker v3. "
            "Jane Doe (Finance) said the Atlas Platform is late. The meeting ended.")
    found = {m.text: m.type for m in EntityExtractor(types=[*DEFAULT_TYPES, "other"])(text)}
    assert found["Laura Chen"] == "person"
    assert found["Northwind Logistics Inc"] == "organisation"
    assert found["Fleet Tracker v3"] == "product"
    assert found["Jane Doe"] == "person"
    assert "Yesterday" not in found and "The" not in found


def test_short_forms_resolve_to_the_longer_name_in_the_document() -> None:
    text = "Northwind Logistics Inc signed. Later, Northwind asked for more."
    mentions = EntityExtractor(types=[*DEFAULT_TYPES, "other"])(text)
    assert [m.canonical for m in mentions] == ["Northwind Logistics Inc", "Northwind Logistics Inc"]


def test_dates_are_entities() -> None:
    (m,) = EntityExtractor(candidates=False)("Beta starts on May 12, 2025.")
    assert (m.type, m.canonical) == ("date", "2025-05-12")


def test_types_setting_filters() -> None:
    mentions = EntityExtractor(GAZETTEER, types=["customer"])("Apex and Sam and the catalog")
    assert {m.type for m in mentions} == {"customer"}


def test_gazetteer_files_toml_and_yaml(tmp_path: Path) -> None:
    (tmp_path / "g.toml").write_text('[customer]\n"Apex HVAC" = ["Apex"]\n\n[[pattern]]\ntype = "procedure"\nregex = "SOP-\\\\d+"\n')
    (tmp_path / "g.yaml").write_text("customer:\n  Apex HVAC: [Apex]\npattern:\n  - type: procedure\n    regex: 'SOP-\\d+'\n")
    for name in ("g.toml", "g.yaml"):
        g = Gazetteer.load(tmp_path / name)
        assert g.resolve("apex") == ("customer", "Apex HVAC")
        assert [m.type for m in g.find("Apex ran SOP-12")] == ["customer", "procedure"]
    (tmp_path / "bad.toml").write_text("[customer\n")
    with pytest.raises(ConfigError, match="bad.toml"):
        Gazetteer.load(tmp_path / "bad.toml")


def test_thousands_of_aliases_match_in_one_pass() -> None:
    names = {f"Customer Number {i}": [f"CN{i}"] for i in range(3000)}
    g = Gazetteer({"customer": names})
    found = g.find("We met CN1234 and Customer Number 2999 but not CN99999.")
    assert [(m.canonical) for m in found] == ["Customer Number 1234", "Customer Number 2999"]


class FakeSpacyDoc:
    def __init__(self, ents):
        self.ents = ents


class FakeSpan:
    def __init__(self, text, start, label):
        self.text, self.start_char, self.end_char, self.label_ = text, start, start + len(text), label


def test_spacy_adapter_maps_labels_and_gazetteer_canonicalises() -> None:
    text = "Rosa Delgado visited Apex in Denver."
    nlp = lambda t: FakeSpacyDoc([FakeSpan("Rosa Delgado", 0, "PERSON"), FakeSpan("Apex", 21, "ORG"),  # noqa: E731
                                  FakeSpan("Denver", 29, "GPE"), FakeSpan("five", 0, "CARDINAL")])
    extractor = EntityExtractor(GAZETTEER, models=[SpacyExtractor(nlp)], candidates=False)
    found = {(m.text, m.type, m.canonical) for m in extractor(text)}
    assert ("Rosa Delgado", "person", "Rosa Delgado") in found
    assert ("Apex", "customer", "Apex HVAC") in found  # the gazetteer wins the overlap
    assert ("Denver", "location", "Denver") in found


def test_gliner_adapter_uses_the_types_as_labels() -> None:
    class FakeGliner:
        def predict_entities(self, text, labels, threshold):
            assert "technician" in labels
            return [{"start": 0, "end": 13, "text": "Sam Whitfield", "label": "technician", "score": 0.9}]

    (m,) = GlinerExtractor(FakeGliner())("Sam Whitfield fixed it")
    assert (m.type, m.confidence, m.source) == ("technician", 0.9, "model")


names = st.sampled_from(["Apex HVAC Services", "Brightwater Plumbing", "Service Catalog v2", "Sam Whitfield"])
filler = st.text(st.sampled_from("abcdefghij .,\n"), min_size=0, max_size=300)


@given(st.lists(st.tuples(filler, names), min_size=1, max_size=30), st.integers(60, 400))
def test_boundary_never_splits_a_mention(parts, target: int) -> None:
    text = "".join(f"{a} {name} " for a, name in parts)
    mentions = EntityExtractor(GAZETTEER, candidates=False, dates=False)(text)
    spans = [(m.start, m.end) for m in mentions]
    chunks = chunk_text(text, "boundary", target_size=target, min_size=target // 2, max_size=target * 3 // 2,
                        overlap=target // 8, protected=spans)
    for c in chunks:
        for a, b in spans:
            assert not a < c.start < b and not a < c.end < b
    assert len(mentions) >= len(parts) // 2  # the mentions were found in the first place
    assert all(re.fullmatch(r"[\w ]+", m.text) for m in mentions)
