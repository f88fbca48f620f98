from __future__ import annotations

import numpy as np
import pytest

from ragloom.enrich.backrefs import back_references, context_summary, relationship


def row(chunk_id, doc, index, text, entities, vector, section=""):
    return {"chunk_id": chunk_id, "document_id": doc, "chunk_index": index, "text": text, "entities": entities,
            "vector": np.asarray(vector, dtype=np.float32), "source_path": f"/{doc}.md", "lens": "x",
            "section_path": section}


APEX = "customer:apex"
ENTITIES = {APEX: ("customer", "Apex HVAC", ["Apex HVAC", "Apex"])}


def test_scores_follow_the_seed_weights() -> None:
    me = row("c0", "d1", 0, "Apex HVAC renewed.", [APEX], [1, 0])
    near = row("c1", "d1", 1, "Apex asked about Apex HVAC pricing. Apex again.", [APEX, APEX, APEX], [1, 0])
    far = row("c2", "d2", 5, "We met Apex HVAC.", [APEX], [0, 1])
    refs = back_references(me, [me, near, far], ENTITIES)
    assert [r.chunk_id for r in refs] == ["c1", "c2"]
    first = refs[0]
    assert (first.proximity, first.frequency, first.similarity) == (0.5, 1.0, 1.0)
    assert first.relevance_score == pytest.approx(0.3 * 0.5 + 0.3 * 1.0 + 0.4 * 1.0)
    second = refs[1]
    assert (second.proximity, second.similarity) == (0.0, 0.0)  # another document, orthogonal vectors
    assert second.relevance_score == pytest.approx(0.3 * (1 / 3))


def test_at_most_limit_per_entity_and_never_itself() -> None:
    me = row("c0", "d1", 0, "Apex HVAC.", [APEX], [1, 0])
    others = [row(f"o{i}", "d2", i, "Apex HVAC here.", [APEX], [1, 0]) for i in range(6)]
    refs = back_references(me, [me, *others], ENTITIES, limit=3)
    assert len(refs) == 3 and "c0" not in {r.chunk_id for r in refs}


@pytest.mark.parametrize(
    "text,section,expected",
    [
        ("Apex HVAC is our largest HVAC customer in the region.", "", "defines"),
        ("Apex HVAC: a 60-technician company.", "", "defines"),
        ("Notes about Apex HVAC and their renewal.", "", "describes"),
        ("Renewal terms were agreed.", "Customers > Apex HVAC", "describes"),
        ("For details see Apex HVAC in the CRM.", "", "references"),
        ("We called Apex HVAC twice.", "", "mentions"),
    ],
)
def test_relationship(text: str, section: str, expected: str) -> None:
    assert relationship(text, section, ["Apex HVAC", "Apex"]) == expected


def test_context_summary_is_the_sentence_that_names_it() -> None:
    text = "The renewal is in September. Apex HVAC wants offline mode first. Nothing else."
    assert context_summary(text, ["Apex HVAC"]) == "Apex HVAC wants offline mode first."
    long = "Apex HVAC " + "word " * 100 + "."
    assert len(context_summary(long, ["Apex HVAC"])) == 200
