from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.analyse import detect_contradictions, sentences_with_claims
from ragloom.analyse.contradictions import Contradiction, code_regions, is_code, prose_of, quantities
from ragloom.engine import Engine
from ragloom.evaluate.contradictions import load_labels, reported_pair, score, statement_hash
from tests.conftest import sample_settings

from ..conftest import ROOT, sample_engine

AUTHORITY = ("your-voice", "business-framework", "team-structured", "team-conversational", "engineering",
             "external-analyst")
LABELS = ROOT / "bench" / "labels" / "contradictions.jsonl"
Row = tuple[str, str, list[str]]


def claims(*statements: Row, texts: dict[str, str] | None = None, entities: tuple[str, ...] = (),
           dates: tuple[date | None, ...] = ()) -> list[Any]:
    """One chunk and one sentence per statement: (lens, text, key terms), dated by ``dates``."""
    chunks, sentences = [], []
    for i, (lens, text, terms) in enumerate(statements):
        doc = f"d{i}"
        chunks.append({"chunk_id": f"c{i}", "document_id": doc, "lens": lens, "start_char": 0,
                       "end_char": len(text), "key_terms": terms})
        sentences.append({"document_id": doc, "lens": lens, "source_path": f"/{doc}.md", "section_path": "S",
                          "start_char": 0, "end_char": len(text), "text": text,
                          "document_date": dates[i] if i < len(dates) else None})
    generic = set(sample_settings().graph.domain_terms)  # the sample materials' vocabulary
    return sentences_with_claims(sentences, chunks, generic=generic, texts=texts, entities=entities)


def conflicts(*statements: Row, entities: tuple[str, ...] = ()) -> list[Contradiction]:
    return detect_contradictions(claims(*statements, entities=entities), authority=AUTHORITY)


# -- dates -------------------------------------------------------------------------------------


def test_same_initiative_different_quarters() -> None:
    (c,) = conflicts(
        ("team-structured", "We ship the catalog integration in Q2 2025.", ["catalog", "integration"]),
        ("engineering", "The catalog integration cannot ship before Q3 2025.", ["catalog", "integration"]),
    )
    assert (c.kind, c.type, c.topic, c.difference) == ("date", "engineering_vs_team-structured", "catalog integration",
                                                        "Q2 2025 vs not before Q3 2025")
    assert c.statements[0].lens == "team-structured"  # the more authoritative lens first, its side first
    assert c.statements[1].text.startswith("The catalog integration")


def test_one_lens_over_time_is_a_supersession_not_a_conflict() -> None:
    """Within one lens, a later statement that disagrees with an earlier one replaces it: the
    minutes of January plan Q2, those of March move it to Q3."""
    rows = (("meetings", "We will ship the catalog integration in Q2 2025.", ["catalog", "integration"]),
            ("meetings", "The catalog integration moves to Q3 2025.", ["catalog", "integration"]))
    (c,) = detect_contradictions(claims(*rows, dates=(date(2025, 3, 18), date(2025, 1, 10))), authority=AUTHORITY)
    assert (c.kind, c.type) == ("date", "superseded")
    assert [s.document_date for s in c.statements] == [date(2025, 1, 10), date(2025, 3, 18)]  # earlier first
    assert "2025-01-10" in c.note and "2025-03-18" in c.note and "supersedes" in c.note
    # Undated, or on one day, one lens is not compared with itself; and amounts over time are not.
    assert detect_contradictions(claims(*rows), authority=AUTHORITY) == []
    assert detect_contradictions(claims(*rows, dates=(date(2025, 1, 10),) * 2), authority=AUTHORITY) == []
    spent = (("meetings", "The travel grant budget is $100,000.", ["travel grant"]),
             ("meetings", "The travel grant budget is $7,000.", ["travel grant"]))
    assert detect_contradictions(claims(*spent, dates=(date(2025, 1, 10), date(2025, 3, 18))), authority=AUTHORITY) == []


@pytest.mark.parametrize(
    "second",
    [
        "The catalog integration ships on June 30, 2025.",  # a date inside Q2: agreement
        "The catalog integration is great.",  # no date: nothing to compare
        "CPQ ships in Q4 2025, after the catalog integration.",  # the date belongs to CPQ
        "We can ship the catalog without QuickBooks sync in June.",  # another subject
        "The catalog integration starts in Q3 2025.",  # a start is not a delivery
    ],
)
def test_no_conflict_when_dates_agree_or_belong_elsewhere(second: str) -> None:
    assert conflicts(
        ("team-structured", "We ship the catalog integration in Q2 2025.", ["catalog", "integration", "cpq"]),
        ("engineering", second, ["catalog", "integration", "cpq", "quickbooks"]),
    ) == []


@pytest.mark.parametrize(
    "second,conflicting",
    [
        ("The event bus lands in July 2025.", True),
        ("The event bus lands in April 2025.", False),  # before the deadline
        ("The platform squad cannot finish the event bus before July 2025.", True),
        ("The event bus is ready by August 2025.", False),  # two deadlines always overlap
        ("The event bus won't make May 2025.", False),  # not in May leaves April open
        ("The event bus lands in Q3 2025.", True),
    ],
)
def test_deadlines_and_floors(second: str, conflicting: bool) -> None:
    found = conflicts(
        ("team-structured", "Complete the event bus migration by May 15, 2025.", ["event bus"]),
        ("engineering", second, ["event bus"]),
    )
    assert bool(found) is conflicting


def test_a_version_is_another_subject() -> None:
    first = ("python-howto", "The change was planned since Python 2.2, which was released in 2002.", ["python"])
    assert conflicts(first, ("python-whatsnew", "Python 3.0 was released in December 2008.", ["python"])) == []
    (c,) = conflicts(first, ("python-whatsnew", "Python 2.2 was released on December 21, 2001.", ["python"]))
    assert c.topic == "python 2.2" and c.difference == "2002 vs 2001-12-21"


# -- numbers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("The Pro plan costs $49 per technician per month.", ("money", "USD per technician per month", 49.0)),
        ("Annual recurring revenue reached $14.2M.", ("money", "USD", 14.2e6)),
        ("Churn was 2.1% in January.", ("percent", "%", 2.1)),
        ("Dispatch reached 60% of accounts.", ("percent", "% of account", 60.0)),
        ("The sync takes 5ms.", ("duration", "s", 0.005)),
        ("The review took 3 weeks.", ("duration", "s", 3 * 7 * 86400.0)),
        ("The header is 16 bytes long.", ("size", "bit", 128.0)),
        ("The cache holds 2 MiB.", ("size", "bit", 2 * 8 * 1024.0**2)),
        ("The link runs at 10 Mbps.", ("rate", "bit/s", 1e7)),
        ("We have 18 engineers.", ("count", "engineer", 18.0)),
        ("We closed 2024 with 1,840 paying companies.", ("count", "company", 1840.0)),
        ("QuickBooks allows 500 requests per minute.", ("count", "request per minute", 500.0)),
    ],
)
def test_quantities_carry_their_kind_and_unit(text: str, expected: tuple[str, str, float]) -> None:
    (q,) = quantities(prose_of(text), {})
    assert (q.kind, q.unit) == expected[:2] and q.value == pytest.approx(expected[2])


@pytest.mark.parametrize(
    "text",
    [
        "The variable $1 holds the first argument.",  # a currency sign without a price's marks
        "Print it with `awk '{print $49}'` first.",  # inline code
        "Set :data:`limit` to ``$80 per month``.",  # reST literal
        "Python 3.11 is faster.",  # a version
        "Version 2.6.32 of the kernel fixed it.",
        "See section 4 for details.",  # a section number
        "3) add the lock entry to the list.",  # a list ordinal
        "x86 CPUs reorder loads.",  # an identifier
        "Python int digits are 15 or 30 bits.",  # alternatives, not one value
        "A 32 bit CRC is enough here.",  # a compound adjective
        "The Linux books of the 1990s were thick.",  # a decade
        "The ports lie between 210h and 370h.",  # hex
        "Churn must fall below 1.5%.",  # a bound
        "Quotes grow from 18% to 35% of jobs.",  # a change
        "HFS+ allows files of 2^63 bytes.",  # an exponent
        "See https://example.com/pricing/49 for the plans.",  # a URL
        "Dispatch (5), Platform (2) and Mobile (4).",  # bare numbers
        "The board has 40 columns and 2 supports.",  # "supports" is no noun here
    ],
)
def test_numbers_that_are_not_quantities(text: str) -> None:
    found = quantities(prose_of(text), {})
    assert [q for q in found if q.unit not in ("column",)] == []


@pytest.mark.parametrize(
    "text",
    [
        "```\nprice = $80\n```",
        "(gdb) p total\n$1 = 80",
        ">>> ipaddress.ip_address(3221225985)",
        "$ dd if=/dev/zero bs=4096 count=1",
        "| Dispatch | 1,500 | 100% |",
        "## Q3 2025: Configure-Price-Quote",
        "struct foo { int a[16]; char *b; };",
    ],
)
def test_code_tables_headings_and_transcripts_make_no_claims(text: str) -> None:
    assert is_code(text)
    assert claims(("engineering", text, ["dispatch", "configure-price-quote", "price"])) == []


def test_a_literal_block_makes_no_claims() -> None:
    text = "A debugger session::\n\n    p cost\n    plan costs 80 dollars\n\nThe plan costs $49 per month."
    regions = code_regions(text)
    assert len(regions) == 1 and text[slice(*regions[0])].strip().startswith("p cost")
    block = text.index("plan costs 80")
    chunks = [{"chunk_id": "c", "document_id": "d", "lens": "engineering", "start_char": 0, "end_char": len(text),
               "key_terms": ["plan"]}]
    rows = [{"document_id": "d", "lens": "engineering", "source_path": "/d.md", "section_path": "", "start_char": s,
             "end_char": e, "text": text[s:e], "document_date": None}
            for s, e in [(block, block + len("plan costs 80 dollars")), (text.index("The plan"), len(text))]]
    found = sentences_with_claims(rows, chunks, generic=set(), texts={"d": text}, entities=("plan",))
    assert [c.statement.text for c in found] == ["The plan costs $49 per month."]
    without = sentences_with_claims(rows, chunks, generic=set(), entities=("plan",))  # the sentence alone does not show the block
    assert len(without) == 2


def test_different_numbers_for_the_same_quantity() -> None:
    (c,) = conflicts(
        ("team-structured", "The engineering organisation will have 24 engineers.", ["engineering"]),
        ("engineering", "Engineering has 18 engineers today.", ["engineering"]),
    )
    assert (c.kind, c.difference, c.topic) == ("number", "24 engineers vs 18 engineers", "engineers")


def test_every_pair_of_three_disagreeing_numbers() -> None:
    found = conflicts(
        ("team-structured", "The engineering organisation will have 24 engineers.", ["engineering"]),
        ("engineering", "Engineering has 18 engineers today.", ["engineering"]),
        ("external-analyst", "Analysts count 30 engineers in engineering.", ["engineering"]),
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
        ("Median churn for FSM vendors is 1.4%.", "Churn was 2.1% in January."),  # another subject's churn
        ("The request timeout is 60 seconds.", "The request timeout is 1 minute."),  # the same duration
        ("The request timeout is 60 seconds.", "The request timeout holds 60 entries."),  # other units
        ("The roadmap assumes 24 engineers.", "Analysts count 30 engineers at Jobber."),  # different subjects
    ],
)
def test_numbers_that_do_not_conflict(first: str, second: str) -> None:
    terms = ["pro", "starter", "churn", "dispatch", "fsm vendors", "request timeout", "roadmap", "jobber"]
    assert conflicts(("team-structured", first, terms), ("engineering", second, terms)) == []


def test_a_measure_needs_a_subject_that_names_one_thing() -> None:
    """"group" or "cpu" alone could be any group or CPU; "request timeout" or an entity cannot."""
    timeout = (("team-structured", "The request timeout is 30 seconds.", ["request timeout"]),
               ("engineering", "The request timeout is 90 seconds.", ["request timeout"]))
    (c,) = conflicts(*timeout)
    assert c.difference == "30 seconds vs 90 seconds" and c.topic == "request timeout (s)"
    cpu = (("team-structured", "The CPU stores 16 bits here.", ["cpu"]),
           ("engineering", "The CPU needs 64 bits there.", ["cpu"]))
    assert conflicts(*cpu) == []
    assert len(conflicts(*cpu, entities=("cpu",))) == 1  # a known entity is one thing


# -- negation ----------------------------------------------------------------------------------


def test_negation_of_a_commitment() -> None:
    (c,) = conflicts(
        ("your-voice", "Offline mode is not a priority in 2025.", ["offline mode"]),
        ("team-conversational", "We committed to offline mode for Apex HVAC by Q3 2025.", ["offline mode", "apex hvac"]),
    )
    assert c.kind == "negation" and c.topic == "offline mode" and c.statements[0].lens == "your-voice"
    assert c.difference == "rules out vs commits to offline mode"


@pytest.mark.parametrize(
    "first,second",
    [
        ("Full offline editing is not planned for 2025.", "A read-only offline editing is approved for Q3 2025."),
        ("Offline editing is not a priority in 2026.", "Offline editing is approved for Q3 2025."),  # other years
        ("The offline editing request is dropped.", "The offline editing request is scheduled for sending."),
    ],
)
def test_negations_that_do_not_conflict(first: str, second: str) -> None:
    assert conflicts(("your-voice", first, ["offline editing"]), ("engineering", second, ["offline editing"])) == []


def test_mere_co_mention_is_not_a_contradiction() -> None:
    assert conflicts(
        ("your-voice", "Offline mode matters to rural customers.", ["offline mode"]),
        ("engineering", "Offline mode needs a local database migration.", ["offline mode"]),
        ("external-analyst", "Is offline mode not a differentiator in 2025?", ["offline mode"]),  # a question
    ) == []


# -- lenses and ranking -----------------------------------------------------------------------------


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


# -- properties --------------------------------------------------------------------------------

SUBJECTS = ["catalog integration", "event bus", "offline mode", "request timeout"]
STATEMENTS = st.one_of(
    st.builds("The {} ships in {} {}.".format, st.sampled_from(SUBJECTS), st.sampled_from(["Q1", "Q2", "Q3", "Q4"]),
              st.sampled_from(["2025", "2026"])),
    st.builds("The {} cannot ship before {} 2025.".format, st.sampled_from(SUBJECTS),
              st.sampled_from(["March", "July", "October"])),
    st.builds("Complete the {} by {} 1, 2025.".format, st.sampled_from(SUBJECTS), st.sampled_from(["May", "August"])),
    st.builds("The {} has {} engineers.".format, st.sampled_from(SUBJECTS), st.integers(1, 40)),
    st.builds("The {} costs ${} per month.".format, st.sampled_from(SUBJECTS), st.integers(1, 99)),
    st.builds("The {} is {} in {}.".format, st.sampled_from(SUBJECTS),
              st.sampled_from(["approved", "not a priority", "postponed", "planned for"]),
              st.sampled_from(["2025", "Q3 2025", "2026"])),
    st.text(max_size=80),
)
LENSES = st.sampled_from(AUTHORITY)


def verdicts(found: list[Contradiction]) -> set[tuple[str, frozenset[tuple[str, str]]]]:
    return {(c.kind, frozenset((s.lens, s.text) for s in c.statements)) for c in found}


@given(STATEMENTS, LENSES, LENSES)
def test_a_statement_never_contradicts_itself(text: str, lens: str, other: str) -> None:
    assert conflicts((lens, text, SUBJECTS), (other, text, SUBJECTS)) == []


@given(STATEMENTS, STATEMENTS, LENSES, LENSES)
def test_the_verdict_does_not_depend_on_the_order(first: str, second: str, lens: str, other: str) -> None:
    a, b = (lens, first, SUBJECTS), (other, second, SUBJECTS)
    assert verdicts(conflicts(a, b)) == verdicts(conflicts(b, a))


@given(st.lists(STATEMENTS, min_size=2, max_size=5), LENSES)
def test_one_lens_never_contradicts_itself(texts: list[str], lens: str) -> None:
    assert conflicts(*[(lens, t, SUBJECTS) for t in texts]) == []


# -- the sample materials and their labels -------------------------------------------------------------


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Engine:
    ws = tmp_path_factory.mktemp("contradictions") / "ws"
    ws.mkdir()
    shutil.copy(materials.parent / "entities.toml", ws / "entities.toml")
    return sample_engine(ws, materials)


def test_the_sample_materials_disagreements_are_found(sample: Engine) -> None:
    found = sample.contradictions(limit=None)
    kinds = {(c.kind, c.topic.split(";")[0]) for c in found}
    assert {("date", "catalog integration"), ("date", "configure-price-quote"), ("date", "event bus"),
            ("negation", "offline mode")} <= kinds
    assert any(c.kind == "number" and "engineers" in c.difference for c in found)
    catalog = [c for c in found if c.topic.startswith("catalog integration")]
    # Every catalog conflict sets the original plan (Q2, June 30) against a later date.
    assert catalog and all("Q2 2025" in c.difference or "2025-06-30" in c.difference for c in catalog)
    topical = sample.contradictions(topic="engineers")
    assert topical and all("engineers" in c.topic for c in topical)


def test_the_labelled_sample_materials_pairs(sample: Engine, materials: Path) -> None:
    """The detector against the hand labels of bench/labels/contradictions.jsonl (issue 16)."""
    labels = load_labels(LABELS)
    reported = [r for c in sample.contradictions(limit=None) if (r := reported_pair(c.to_dict(), materials))]
    result = score(reported, labels, "materials")
    assert result.positives >= 30 and result.reported
    assert result.labelled >= 0.9 * result.reported  # the labels still cover what the detector says
    assert result.precision is not None and result.precision >= 0.8
    assert result.recall is not None and result.recall >= 0.45  # 0.53-0.61 now; implied subjects are missed
    assert result.stale == 0


def test_the_labels_point_at_their_statements(sample: Engine, materials: Path) -> None:
    texts = {Path(d["source_path"]).resolve().relative_to(materials.resolve()).as_posix(): d["text"]
             for d in sample.store.documents("default", with_text=True)}
    for pair in load_labels(LABELS):
        if pair.split == "materials":
            for s in (pair.a, pair.b):
                assert statement_hash(texts[s.path][s.start : s.end]) == s.sha256 and s.text is not None, pair.id
        else:
            assert pair.a.text is None and pair.b.text is None, pair.id  # third-party text stays out of the repo
