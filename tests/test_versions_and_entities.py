"""Issue 4 through the engine: versions, tombstones, mentions, back-references, quality, tenants."""

from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import InvalidParameterError
from ragloom.retrieve.base import age_decay

from .conftest import MATERIALS, fast_settings

ROOT = MATERIALS.parent


def workspace_with_gazetteer(tmp_path: Path, **overrides) -> Engine:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(ROOT / "entities.toml", ws / "entities.toml")
    return Engine(ws, settings=fast_settings(**overrides), embedder=HashingEmbedder())


def test_every_record_carries_its_version_fields(engine: Engine, materials: Path) -> None:
    engine.ingest(materials / "your-voice", lens="your-voice")
    fields = {"tenant_id", "document_id", "content_hash", "version_id", "version_sequence", "previous_version_id",
              "as_of", "created_at", "updated_at", "change_type", "change_summary"}
    assert fields <= engine.store.documents("default")[0].keys()
    assert fields <= engine.store.chunks("default")[0].keys()
    assert fields <= engine.store.chunks("default", table="sentences")[0].keys()


def one_chunk_per_section(tmp_path: Path) -> Engine:
    """These tests follow single chunks across versions: every section its own chunk, however short."""
    return Engine(tmp_path / "ws-sections", settings=fast_settings(**{"chunking.min_chunk_chars": 0}),
                  embedder=HashingEmbedder())


def test_vanished_chunks_leave_tombstones(tmp_path: Path) -> None:
    engine = one_chunk_per_section(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    doc = folder / "a.md"
    doc.write_text("# A\nalpha stays.\n\n# B\nbravo goes away.", encoding="utf-8")
    engine.ingest(folder, lens="x")
    doc.write_text("# A\nalpha stays.", encoding="utf-8")
    engine.ingest(folder, lens="x")
    rows = engine.store._table("chunks").search().where("change_type = 'delete'").limit(None).to_arrow().to_pylist()
    assert len(rows) == 1 and "bravo" in rows[0]["text"] and rows[0]["as_of"] == rows[0]["superseded_at"]
    assert rows[0]["previous_version_id"] is not None
    assert [c["text"] for c in engine.store.chunks("default")] == ["# A\nalpha stays."]


def test_a_file_ingested_under_another_lens_says_so_in_its_history(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "plan.md").write_text("# Plan\n\nThe launch is in May.\n", encoding="utf-8")
    engine.ingest(folder, lens="team")
    engine.ingest(folder, lens="strategy")
    engine.ingest(folder, lens="strategy")  # unchanged: no version
    summaries = [r["change_summary"] for r in engine.history(folder / "plan.md")]
    assert summaries == ["created with 1 chunk", "lens team -> strategy; 0 chunks edited, 0 added, 0 removed, "
                                                 "1 unchanged"]
    assert [r.lens for r in engine.query("launch", mode="bm25")] == ["strategy"]


def test_unchanged_chunk_keeps_identity_and_vector(tmp_path: Path) -> None:
    engine = one_chunk_per_section(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    doc = folder / "a.md"
    # The title stays "Doc": a new first H1 would change the title, hence every prefix and vector.
    doc.write_text("---\ntitle: Doc\n---\n# A\nalpha stays here.\n\n# B\nbravo changes.", encoding="utf-8")
    engine.ingest(folder, lens="x")
    before = {c["text"]: c for c in engine.store.chunks("default", with_vectors=True)}
    doc.write_text("---\ntitle: Doc\n---\n# Intro\nnew first section.\n\n# A\nalpha stays here.\n\n# B\nbravo changed.",
                   encoding="utf-8")
    engine.ingest(folder, lens="x")
    after = {c["text"]: c for c in engine.store.chunks("default", with_vectors=True)}
    kept = after["# A\nalpha stays here."]
    old = before["# A\nalpha stays here."]
    assert kept["chunk_id"] == old["chunk_id"] and list(kept["vector"]) == list(old["vector"])
    edited = after["# B\nbravo changed."]
    assert edited["chunk_id"] == before["# B\nbravo changes."]["chunk_id"]
    assert edited["change_type"] == "update" and edited["previous_version_id"] == before["# B\nbravo changes."]["version_id"]
    assert after["# Intro\nnew first section."]["change_type"] == "create"


def test_mentions_follow_versions_and_as_of(tmp_path: Path) -> None:
    engine = workspace_with_gazetteer(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    doc = folder / "a.md"
    doc.write_text("# Status\nApex HVAC asked for offline mode.", encoding="utf-8")
    engine.ingest(folder, lens="x")
    moment = datetime.now(UTC)
    time.sleep(0.01)
    doc.write_text("# Status\nBrightwater Plumbing asked for offline mode.", encoding="utf-8")
    engine.ingest(folder, lens="x")
    now = {e["name"] for e in engine.entities()}
    then = {e["name"] for e in engine.entities(as_of=moment)}
    assert "Brightwater Plumbing" in now and "Apex HVAC" not in now
    assert "Apex HVAC" in then and "Brightwater Plumbing" not in then


def test_back_references_through_the_engine(tmp_path: Path, materials: Path) -> None:
    engine = workspace_with_gazetteer(tmp_path)
    for lens in materials.iterdir():
        if lens.is_dir():
            engine.ingest(lens, lens=lens.name)
    hit = engine.query("Apex HVAC offline mode renewal condition", mode="bm25", k=1)[0]
    refs = engine.back_references(hit.chunk_id)
    assert refs and all(r.chunk_id != hit.chunk_id for r in refs)
    by_entity: dict[str, int] = {}
    for r in refs:
        by_entity[r.entity_name] = by_entity.get(r.entity_name, 0) + 1
        assert r.relationship in {"mentions", "describes", "references", "defines"}
        assert 0 <= r.relevance_score <= 1
    assert max(by_entity.values()) <= 3 and "Apex HVAC" in by_entity
    apex = [r for r in refs if r.entity_name == "Apex HVAC"][0]
    assert "apex" in apex.context_summary.lower()


def test_entities_listing_resolves_aliases(tmp_path: Path, materials: Path) -> None:
    engine = workspace_with_gazetteer(tmp_path)
    engine.ingest(materials / "team-conversational", lens="team-conversational")
    apex = [e for e in engine.entities(type="customer") if e["name"] == "Apex HVAC"][0]
    assert apex["mentions"] >= 4 and "Apex" in apex["aliases"]
    with pytest.raises(InvalidParameterError, match=r"no entities of type 'custmer' .*its types are: .*customer"):
        engine.entities(type="custmer")  # a misspelt type is named, not answered with an empty list
    assert engine.entities(type="customer", lens="team-conversational")  # a type it has, in a lens that has it


MINUTES = {
    "2025-01-10.md": "# Council 2025-01-10\n\n## Attendance\n\n- Council members: TC, Robin Ginn, Mara Bos\n\n"
                     "TC: Hearing support and no objections, the agenda is approved.\n\n"
                     "Robin Ginn: the survey results are in, we should publish them soon.\n\n"
                     "Mara: I can write the post this week if nobody else wants to.\n",
    "2025-01-24.md": "# Council 2025-01-24\n\nAttendees: TC, Mara Bos, Robin Gin\n\n"
                     "- **TC**: the budget for Node.js v22 hosting is approved now.\n"
                     "- Mara: good, then we close the item and move on to the next one.\n",
    "2025-02-07.md": "# Council 2025-02-07\n\nMara asked about Node.js again; Robin Ginn said the\n"
                     "Node.js migration is done.\nTC closed the meeting.\n",
    "2025-02-21.md": "# Council 2025-02-21\n\nRobin Ginn and TC reviewed the plan. Node.js, nodejs and NodeJS all came up.\n",
}


def test_the_listing_counts_every_mention_and_merges_variants(tmp_path: Path) -> None:
    """Issue 26's three symptoms through the engine: a name counted only where its document
    typed it, people in turns and attendee lists missing, a one-letter typo a second entity."""
    folder = tmp_path / "minutes"
    folder.mkdir()
    for name, text in MINUTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(folder, lens="meetings")
    rows = {e["name"]: e for e in engine.entities()}
    # known from "Node.js v22" in one document, counted in the two others that write it
    assert (rows["Node.js"]["mentions"], rows["Node.js"]["documents"]) == (5, 2) and rows["Node.js v22"]["mentions"] == 1
    assert {"nodejs", "NodeJS"} <= set(rows["Node.js"]["aliases"])
    assert (rows["TC"]["type"], rows["TC"]["mentions"], rows["TC"]["documents"]) == ("person", 6, 4)
    assert (rows["Robin Ginn"]["mentions"], rows["Robin Ginn"]["documents"]) == (5, 4)
    assert "Robin Gin" not in rows and "Robin Gin" in rows["Robin Ginn"]["aliases"]
    assert (rows["Mara Bos"]["mentions"], rows["Mara Bos"]["documents"]) == (5, 3) and "Mara" in rows["Mara Bos"]["aliases"]
    assert [e["name"] for e in engine.entities(type="person")][:1] == ["TC"]


def test_an_incremental_ingest_lists_what_a_full_build_lists(tmp_path: Path) -> None:
    folder = tmp_path / "minutes"
    folder.mkdir()
    step = Engine(tmp_path / "ws-step", settings=fast_settings(), embedder=HashingEmbedder())
    for name, text in MINUTES.items():  # one document at a time: each new one teaches the others' names
        (folder / name).write_text(text, encoding="utf-8")
        step.ingest(folder, lens="meetings")
    full = Engine(tmp_path / "ws-full", settings=fast_settings(), embedder=HashingEmbedder())
    full.ingest(folder, lens="meetings")
    assert step.entities() == full.entities()
    (folder / "2025-02-21.md").unlink()  # a document gone takes its mentions with it
    step.ingest(folder, lens="meetings", sync=True)
    rebuilt = Engine(tmp_path / "ws-rebuilt", settings=fast_settings(), embedder=HashingEmbedder())
    rebuilt.ingest(folder, lens="meetings")
    assert step.entities() == rebuilt.entities() != full.entities()


def test_boundary_chunks_never_split_mentions_in_real_documents(tmp_path: Path, materials: Path) -> None:
    engine = workspace_with_gazetteer(tmp_path, **{"chunking.strategy": "boundary", "chunking.min_size": 60,
                                                   "chunking.target_size": 120, "chunking.max_size": 200,
                                                   "chunking.overlap_chars": 20})
    for path in materials.rglob("*.md"):
        document = engine.load(path, lens="x")
        mentions = engine.mentions(document)
        for c in engine.chunk_document(document, mentions=mentions):
            assert not any(m.start < c.start < m.end or m.start < c.end < m.end for m in mentions)


def test_quality_report(engine: Engine, materials: Path) -> None:
    engine.ingest(materials / "engineering", lens="engineering")
    report = engine.quality(worst=3)
    assert report["scored"] == report["chunks"] > 0
    assert sum(report["histogram"].values()) == report["scored"]
    assert len(report["worst"]) == 3
    assert report["worst"][0]["score"] <= report["worst"][-1]["score"]
    assert set(report["worst"][0]["metrics"]) == {"length_score", "entity_density", "semantic_coherence",
                                                  "boundary_respect", "overlap_quality"}
    with pytest.raises(InvalidParameterError, match="has no lens 'nobody'; its lenses are: engineering"):
        engine.quality(lens="nobody")
    assert engine.quality(worst=0)["worst"] == []
    for worst in (-1, 2.5, True):
        with pytest.raises(InvalidParameterError, match=r"worst \(.*\) must be a whole number, 0 or more"):
            engine.quality(worst=worst)  # type: ignore[arg-type]
    chunk = engine.quality(worst=1)["worst"][0]["chunk_id"]
    for read in (lambda n: engine.back_references(chunk, limit=n), lambda n: engine.contradictions(limit=n),
                 lambda n: engine.graph().show(chunk, limit=n)):
        with pytest.raises(InvalidParameterError, match=r"limit \(-1\) must be a whole number, 0 or more"):
            read(-1)  # never the list without its last entries
        empty = read(0)
        assert (empty["relations"] if isinstance(empty, dict) else empty) == []


def test_age_decay() -> None:
    from ragloom.types import ScoredChunk

    def hit(score: float, born: str | None) -> ScoredChunk:
        return ScoredChunk("c", "d", "t", score, "/p", "x", "t", "", (), 0, 1, 1,
                           document_date=datetime.fromisoformat(born).date() if born else None)

    now = datetime(2026, 1, 1, tzinfo=UTC)
    old, new, undated = hit(1.0, "2021-01-01"), hit(0.8, "2025-12-01"), hit(0.9, None)
    ranked = age_decay([old, new, undated], now, per_year=0.1, floor=0.7)
    assert [r.score for r in ranked] == pytest.approx([0.9, 0.8 * (1 - 0.1 * 31 / 365.25), 0.7])


def test_age_decay_setting_reorders(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"retrieval.age_decay": True}), embedder=HashingEmbedder())
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "2015-01-01-old.md").write_text("# Plan\nroadmap roadmap roadmap", encoding="utf-8")
    (folder / "2025-12-01-new.md").write_text("# Plan\nroadmap roadmap", encoding="utf-8")
    engine.ingest(folder, lens="x")
    result = engine.query("roadmap", mode="bm25", k=2)
    assert result[0].source_path.endswith("new.md") and result[1].scores["age_factor"] == 0.7


# -- tenants -------------------------------------------------------------------------------------

TENANTS = ["acme", "globex", "initech"]


@pytest.fixture(scope="module")
def shared_engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("tenants")
    engine = Engine(root / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    for tenant in TENANTS:
        folder = root / tenant
        folder.mkdir()
        (folder / "shared.md").write_text(f"# Plan\nThe roadmap of {tenant} says secret-{tenant} ships in Q3.",
                                          encoding="utf-8")
        for lens in ("engineering", "your-voice"):
            engine.ingest(folder, lens=lens, tenant=tenant)
    return engine


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tenant=st.sampled_from(TENANTS), text=st.text(max_size=40) | st.sampled_from([f"secret-{t}" for t in TENANTS]),
       mode=st.sampled_from(["vector", "bm25", "hybrid"]),
       lens=st.none() | st.sampled_from(["engineering", "your-voice"]) | st.text(max_size=20),
       as_of=st.none() | st.just(datetime.now(UTC) + timedelta(days=1)))
def test_no_tenant_sees_another(shared_engine: Engine, tenant: str, text: str, mode: str, lens: str | None,
                                as_of: datetime | None) -> None:
    lenses = [lens] if lens is not None else None
    if lens is not None and lens != "your-voice":  # each tenant's one document was re-filed under your-voice
        # Refused with the tenant's own lenses named, never another tenant's (and never a filter).
        with pytest.raises(InvalidParameterError, match="has no lens .*; its lenses are: your-voice$"):
            shared_engine.query(text, mode=mode, tenant=tenant, lenses=lenses, as_of=as_of, k=20)
        return
    result = shared_engine.query(text, mode=mode, tenant=tenant, lenses=lenses, as_of=as_of, k=20)
    for r in result:
        assert r.tenant == tenant and f"secret-{tenant}" in r.text
    for other in TENANTS:
        if other != tenant and text == f"secret-{other}" and mode == "bm25":
            assert all(f"secret-{other}" not in r.text for r in result)


def test_tenant_reads_are_all_scoped(shared_engine: Engine) -> None:
    stats = shared_engine.stats(tenant="acme")
    assert stats["documents"] == 1  # same path, two lenses: one document, re-filed
    assert {e["name"] for e in shared_engine.entities(tenant="globex")}.isdisjoint({"acme"})
    hit = shared_engine.query("secret-acme", mode="bm25", tenant="acme")[0]
    with pytest.raises(Exception, match="no chunk"):
        shared_engine.back_references(hit.chunk_id, tenant="globex")
    assert shared_engine.history(Path("nowhere.md"), tenant="initech") == []


@pytest.mark.parametrize("typed", [False, True])
def test_a_document_moved_to_another_lens_is_rewritten_under_it(tmp_path: Path, typed: bool) -> None:
    # With a document-type rule for the new lens, the chunks' prefix names another type.
    rules = [{"type": "Engineering Doc", "lens": "^engineering$"}] if typed else []
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"doc_types.rules": rules}), embedder=HashingEmbedder())
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nThe catalog ships in Q3 2025.\n\nOffline mode waits.", encoding="utf-8")
    engine.ingest(folder, lens="founder")
    before = engine.store.chunks("default", with_vectors=True)
    report = engine.ingest(folder, lens="engineering")
    # Every row is rewritten under the new lens; chunks are embedded again when their prefix
    # changed with the type, and sentence vectors (no prefix) are reused.
    assert report.updated == 1 and report.chunks_written == len(before)
    assert report.chunks_embedded == (len(before) if typed else 0)
    assert report.sentences_reused > 0 and report.sentences_embedded == 0
    after = engine.store.chunks("default", with_vectors=True)
    assert {c["lens"] for c in after} == {"engineering"} and engine.store.lenses("default") == {"engineering"}
    assert engine.query("catalog", lenses=["engineering"]).results
    with pytest.raises(InvalidParameterError, match="has no lens 'founder'; its lenses are: engineering"):
        engine.query("catalog", lenses=["founder"])


def test_speakers_and_attendees_are_entities_but_not_key_terms(tmp_path: Path) -> None:
    """Who spoke or attended says nothing of what minutes are about: with them as key terms, a
    council's themes were its members' names (issue 26)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    turns = "\n".join(f"- {who}: the grant budget for the mentorship programme needs review."
                      for who in ("Jane Doe", "John Roe", "Jane Doe", "John Roe", "Jane Doe"))
    (notes / "2024-05-02.md").write_text(
        "# Sync meeting\n\nAttendees: Jane Doe, John Roe, Ada Lovelace\n\n## Grant budget\n\n" + turns
        + "\n\nJane will send the budget to the board.\n", encoding="utf-8")
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    engine.ingest(notes, lens="meetings")
    listed = {e["name"] for e in engine.entities()}
    assert {"Jane Doe", "John Roe"} <= listed
    terms = {t for c in engine.store.chunks("default", columns=["key_terms"]) for t in c["key_terms"] or []}
    assert "budget" in terms or "grant budget" in terms
    assert not terms & {"jane doe", "john roe", "ada lovelace", "jane"}, terms
