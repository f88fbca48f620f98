from __future__ import annotations

import numpy as np
import pytest

from ragloom.analyse import detect_contradictions, sentences_with_claims
from ragloom.enrich.keyterms import DEFAULT_DOMAIN_TERMS

AUTHORITY = ("your-voice", "business-framework", "team-structured", "team-conversational", "engineering",
             "external-analyst")


def claims(*statements: tuple[str, str, list[str]], vectors=None):
    """One chunk and one sentence per statement: (lens, text, key terms)."""
    chunks, sentences = [], []
    for i, (lens, text, terms) in enumerate(statements):
        doc = f"d{i}"
        chunks.append({"chunk_id": f"c{i}", "document_id": doc, "lens": lens, "start_char": 0,
                       "end_char": len(text), "key_terms": terms})
        sentences.append({"document_id": doc, "lens": lens, "source_path": f"/{doc}.md", "section_path": "S",
                          "start_char": 0, "end_char": len(text), "text": text, "document_date": None,
                          "vector": None if vectors is None else vectors[i]})
    return sentences_with_claims(sentences, chunks, generic=set(DEFAULT_DOMAIN_TERMS))


def conflicts(*statements, vectors=None):
    return detect_contradictions(claims(*statements, vectors=vectors), authority=AUTHORITY)


def test_same_initiative_different_quarters() -> None:
    (c,) = conflicts(
        ("team-structured", "We ship the catalog integration in Q2 2025.", ["catalog", "integration"]),
        ("engineering", "The catalog integration cannot ship before Q3 2025.", ["catalog", "integration"]),
    )
    assert (c.kind, c.type, c.topic, c.difference) == ("date", "engineering_vs_product", "catalog integration",
                                                        "Q2 2025 vs Q3 2025")
    assert c.statements[0].lens == "team-structured"  # the more authoritative lens first
    assert c.statements[1].text.startswith("The catalog integration")


@pytest.mark.parametrize(
    "second",
    [
        "The catalog integration ships on June 30, 2025.",  # a date inside Q2: agreement
        "The catalog integration is great.",  # no date: nothing to compare
        "CPQ ships in Q4 2025, after the catalog integration.",  # the date belongs to CPQ
        "We can ship the catalog without QuickBooks sync in June.",  # another subject
    ],
)
def test_no_conflict_when_dates_agree_or_belong_elsewhere(second: str) -> None:
    assert conflicts(
        ("team-structured", "We ship the catalog integration in Q2 2025.", ["catalog", "integration", "cpq"]),
        ("engineering", second, ["catalog", "integration", "cpq", "quickbooks"]),
    ) == []


def test_different_numbers_for_the_same_quantity() -> None:
    (c,) = conflicts(
        ("team-structured", "The roadmap assumes 24 engineers across four squads.", ["roadmap"]),
        ("engineering", "Engineering has 18 engineers today.", ["engineering"]),
    )
    assert (c.kind, c.difference) == ("number", "24 engineers vs 18 engineers")


def test_every_pair_of_three_disagreeing_numbers() -> None:
    found = conflicts(
        ("team-structured", "The roadmap assumes 24 engineers across four squads.", ["roadmap"]),
        ("engineering", "Engineering has 18 engineers today.", ["engineering"]),
        ("external-analyst", "Analysts count 30 engineers at the company.", ["analysts"]),
    )
    assert sorted(c.difference for c in found) == ["18 engineers vs 30 engineers", "24 engineers vs 18 engineers",
                                                   "24 engineers vs 30 engineers"]
    assert {c.topic for c in found} == {"engineers"}


@pytest.mark.parametrize(
    "first,second",
    [
        ("The Pro plan costs $49 per technician per month.", "The Starter plan costs $29 per technician per month."),
        ("Churn must fall below 1.5% by December.", "Churn was 2.1% in January."),  # a target is not a fact
        ("We have 18 engineers.", "We have 18 engineers in four squads."),  # the same number
        ("| Dispatch | 1,500 | 100% |", "Dispatch is adopted by 60% of accounts."),  # a table cell
    ],
)
def test_numbers_that_do_not_conflict(first: str, second: str) -> None:
    terms = ["pro", "starter", "churn", "dispatch"]
    assert conflicts(("team-structured", first, terms), ("engineering", second, terms)) == []


def test_negation_of_a_commitment() -> None:
    v = np.array([1.0, 0.2], dtype=np.float32)
    (c,) = conflicts(
        ("your-voice", "Offline mode is not a priority in 2025.", ["offline mode"]),
        ("team-conversational", "We committed to offline mode for Apex HVAC.", ["offline mode", "apex hvac"]),
        vectors=[v, v],
    )
    assert c.kind == "negation" and c.topic == "offline mode" and c.statements[0].lens == "your-voice"


def test_mere_co_mention_is_not_a_contradiction() -> None:
    v = np.array([1.0, 0.0], dtype=np.float32)
    assert conflicts(
        ("your-voice", "Offline mode matters to rural customers.", ["offline mode"]),
        ("engineering", "Offline mode needs a local database migration.", ["offline mode"]),
        ("external-analyst", "Is offline mode not a differentiator?", ["offline mode"]),  # a question takes no stance
        vectors=[v, v, v],
    ) == []


def test_same_lens_and_same_document_are_not_compared() -> None:
    assert conflicts(
        ("engineering", "We ship the catalog integration in Q2 2025.", ["catalog", "integration"]),
        ("engineering", "The catalog integration ships in Q3 2025.", ["catalog", "integration"]),
    ) == []


def test_ranking_by_authority_and_certainty() -> None:
    terms = ["catalog", "integration"]
    found = conflicts(
        ("engineering", "The catalog integration ships in Q3 2025.", terms),
        ("external-analyst", "The catalog integration ships in Q4 2025.", terms),
        ("your-voice", "We ship the catalog integration in Q1 2025.", terms),
    )
    assert len(found) == 3
    assert found[0].statements[0].lens == "your-voice"
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)


def test_the_sample_materials_disagreements_are_found(tmp_path, materials) -> None:
    import shutil

    from ragloom.embed import HashingEmbedder
    from ragloom.engine import Engine

    from ..conftest import fast_settings

    (tmp_path / "ws").mkdir()
    shutil.copy(materials.parent / "entities.toml", tmp_path / "ws" / "entities.toml")
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    for lens in sorted(p for p in materials.iterdir() if p.is_dir()):
        engine.ingest(lens, lens=lens.name)
    found = engine.contradictions(limit=None)
    kinds = {(c.kind, c.topic.split(";")[0]) for c in found}
    assert ("date", "catalog integration") in kinds
    assert ("date", "configure-price-quote") in kinds
    assert any(c.kind == "number" and "engineers" in c.difference for c in found)
    catalog = [c for c in found if c.topic.startswith("catalog integration")]
    # Every catalog conflict sets the original plan (Q2, June 30) against a later date.
    assert catalog and all("Q2 2025" in c.difference or "2025-06-30" in c.difference for c in catalog)
    topical = engine.contradictions(topic="engineers")
    assert topical and all("engineers" in c.topic for c in topical)
