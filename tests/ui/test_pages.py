"""Each page of the web app, through Streamlit's AppTest, on a workspace holding the sample
materials (hashing embedder): what it shows is checked against the engine's own answers."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ragloom.ui.helpers import format_when, marked_spans, md_escape
from tests.conftest import docx_bomb
from tests.ui.conftest import APP, MATERIALS, bound_to, fast_engine, open_page, run_until, texts

QUESTION = "When will the QuickBooks catalog integration ship?"


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


# -- dashboard ---------------------------------------------------------------------------------


def test_dashboard_shows_counts_per_lens_graph_and_last_write(app: AppTest, workspace: Path) -> None:
    engine = fast_engine(workspace)
    stats = engine.store.stats("default")
    graph = engine.graph().stats()
    at = open_page(app, "dashboard")
    shown = metrics(at)
    assert shown["Documents"] == f"{stats['documents']:,}" == "15"
    assert shown["Chunks"] == f"{stats['chunks']:,}"
    assert shown["Tokens"] == f"{stats['tokens']:,}"
    assert shown["Mean tokens per chunk"] == f"{stats['tokens'] / stats['chunks']:,.1f}"
    assert shown["Lenses"] == "6"
    assert shown["Nodes"] == f"{graph['nodes']:,}"
    assert shown["Edges"] == f"{graph['edges']:,}"
    assert shown["Components"] == str(graph["components"])
    assert shown["Density"] == f"{graph['density']:.3f}"
    table = at.dataframe[0].value
    per_lens = dict(zip(table["lens"], table["chunks"], strict=True))
    assert per_lens == {lens: v["chunks"] for lens, v in stats["lenses"].items()}
    page = "\n".join(texts(at))
    assert format_when(engine.store.commit_info()["committed_at"]) in page
    assert (engine.workspace.manifest() or {})["embedder"] in page
    assert not at.warning  # the index matches the settings


def test_dashboard_of_an_empty_workspace_points_to_ingest(app: AppTest, empty_workspace: Path) -> None:
    at = open_page(app, "dashboard")
    assert any("The workspace is empty" in i.value for i in at.info)


# -- ingest ------------------------------------------------------------------------------------


def test_uploaded_files_are_kept_in_the_workspace_and_reported_one_line_each(
        app: AppTest, empty_workspace: Path) -> None:
    at = open_page(app, "ingest")
    at.selectbox(key="ingest-lens").set_value("New lens…").run()  # an empty workspace has no lenses yet
    at.text_input(key="ingest-new-lens").input("engineering")
    good = sorted((MATERIALS / "engineering").glob("*.md"))
    files = [(p.name, p.read_bytes(), "text/markdown") for p in good] + [("broken.md", b"\x00\x01\x02", "text/markdown")]
    at.file_uploader[0].set_value(files)
    at.run()
    at.button(key="ingest-go").click()
    run_until(at, lambda a: any("Into **" in e.value for e in [*a.success, *a.warning]))

    folder = empty_workspace / "uploads" / "default" / "engineering"
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in good)  # the refused one is not kept
    assert all((folder / p.name).read_bytes() == p.read_bytes() for p in good)
    table = at.dataframe[0].value
    status = dict(zip(table["file"], table["status"], strict=True))
    assert status == {**{p.name: "added" for p in good}, "broken.md": "FAILED"}
    report = next(e.value for e in at.warning if "Into **" in e.value)
    assert f"Into **engineering**: {len(good) + 1} files: {len(good)} added" in report
    errors = [e.value for e in at.error]
    assert any(e.startswith(f"✗ {folder / 'broken.md'}: binary content") for e in errors), errors
    relations = int(metrics(at)["Graph relations found"])
    assert relations > 0
    engine = fast_engine(empty_workspace)
    assert engine.store.lenses("default") == {"engineering"}
    assert engine.graph().stats()["edges"] == relations  # a fresh graph: every edge is new


def upload(at: AppTest, lens: str, files: list[tuple[str, bytes]]) -> AppTest:
    """Offer ``files`` to the uploader under ``lens`` (a new lens the first time)."""
    if lens in at.selectbox(key="ingest-lens").options:
        at.selectbox(key="ingest-lens").set_value(lens).run()
    else:
        at.selectbox(key="ingest-lens").set_value("New lens…").run()
        at.text_input(key="ingest-new-lens").input(lens)
    at.file_uploader[0].set_value([(name, data, "text/markdown") for name, data in files])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def ingest_uploads(at: AppTest) -> AppTest:
    at.button(key="ingest-go").click()
    return run_until(at, lambda a: any("Into **" in e.value for e in [*a.success, *a.warning]))


def test_upload_names_are_made_safe_and_same_names_kept_apart(
        app: AppTest, empty_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_INGEST__MAX_UNPACKED_MB", "1")
    a, b = b"# Team A\n\nAlpha ships the QuickBooks sync.\n", b"# Team B\n\nBeta owns the rate limits.\n"
    at = upload(open_page(app, "ingest"), "eng", [
        ("..", b"# dots"), ("team-a/notes.md", a), ("team-b/notes.md", b), (".env", b"SECRET=1"),
        ("bomb.docx", docx_bomb(3_000_000))])
    before = [e.value for e in at.error]
    assert '"..": not a file name; rename the file and upload it again' in before
    assert "\".env\": a hidden file (its name starts with '.'); rename the file and upload it again" in before
    assert any(f"Files with the same name are all kept: the later ones as {md_escape('notes (2).md')}." == c.value
               for c in at.caption)

    ingest_uploads(at)
    folder = empty_workspace / "uploads" / "default" / "eng"
    assert sorted(p.name for p in folder.iterdir()) == ["notes (2).md", "notes.md"]  # the bomb is gone
    assert (folder / "notes.md").read_bytes() == a and (folder / "notes (2).md").read_bytes() == b
    report = next(w.value for w in at.warning if "Into **" in w.value)
    assert "3 files: 2 added" in report and "1 failed" in report and "2 uploads refused for their name" in report
    errors = [e.value for e in at.error]
    assert errors[:2] == [f"✗ {m}" for m in before[:2]]
    assert any(e.startswith(f"✗ {folder / 'bomb.docx'}: ") and "ingest.max_unpacked_mb = 1" in e for e in errors)
    assert any("Refused uploads are not kept" in c.value for c in at.caption)
    sources = sorted(d["source_path"] for d in fast_engine(empty_workspace).store.documents("default"))
    assert sources == [(folder / "notes (2).md").as_posix(), (folder / "notes.md").as_posix()]


def test_an_upload_named_like_an_earlier_one_is_its_new_version_unless_refused(
        app: AppTest, empty_workspace: Path) -> None:
    folder = empty_workspace / "uploads" / "default" / "eng"
    first, second = b"# Plan\n\nWe ship in March.\n", b"# Plan\n\nWe ship in May.\n"
    at = ingest_uploads(upload(open_page(app, "ingest"), "eng", [("plan.md", first)]))
    assert "1 added" in at.success[0].value

    at = upload(at, "eng", [("plan.md", second)])
    note = " ".join(i.value for i in at.info)
    assert f"Already uploaded to eng: {md_escape('plan.md')}. Ingesting makes this file its new version" in note
    ingest_uploads(at)
    assert "1 updated" in at.success[0].value and (folder / "plan.md").read_bytes() == second

    at = ingest_uploads(upload(at, "eng", [("plan.md", b"\x00\x01\x02")]))  # refused: binary
    assert any("binary content" in e.value for e in at.error)
    assert sorted(p.name for p in folder.iterdir()) == ["plan.md"]
    assert (folder / "plan.md").read_bytes() == second  # the accepted version's file, back in place
    [document] = fast_engine(empty_workspace).store.documents("default")
    assert document["version_sequence"] == 2


def test_a_path_that_does_not_exist_gets_the_clis_line(app: AppTest, workspace: Path) -> None:
    at = open_page(app, "ingest")
    at.radio(key="ingest-source").set_value("A folder or file on this computer").run()
    missing = workspace.parent / "no-such-folder"
    at.text_input(key="ingest-path").input(str(missing)).run()
    at.button(key="ingest-go").click()
    run_until(at, lambda a: bool(a.error))
    cli = fast_engine(workspace).ingest(missing, lens="engineering").failed  # what `ragloom ingest` prints
    assert [e.value for e in at.error] == [f"✗ {message}" for _, message in cli]
    assert at.error[0].value.startswith(f"✗ {missing}: ")


def test_a_folder_path_is_ingested_under_a_new_lens(app: AppTest, workspace: Path) -> None:
    folder = workspace.parent / "founder"
    folder.mkdir()
    for p in (MATERIALS / "your-voice").glob("*.md"):
        (folder / f"founder-{p.name}").write_bytes(p.read_bytes())
    at = open_page(app, "ingest")
    at.radio(key="ingest-source").set_value("A folder or file on this computer").run()
    at.selectbox(key="ingest-lens").set_value("New lens…").run()
    at.text_input(key="ingest-new-lens").input("bad lens!").run()
    at.text_input(key="ingest-path").input("founder").run()  # relative to the working folder
    at.button(key="ingest-go").click().run()
    assert any("lens 'bad lens!' is not a valid name" in e.value for e in at.error)

    at.text_input(key="ingest-new-lens").input("founder-notes").run()
    at.button(key="ingest-go").click()
    run_until(at, lambda a: any("Into **" in e.value for e in a.success))
    assert "2 added" in at.success[0].value
    assert "founder-notes" in fast_engine(workspace).store.lenses("default")
    assert "founder-notes" in at.selectbox(key="ingest-lens").options  # offered from now on


def test_deleting_a_document_or_a_lens_asks_first(app: AppTest, workspace: Path) -> None:
    engine = fast_engine(workspace)
    documents = engine.store.documents("default")
    target = next(d for d in documents if d["source_path"].endswith("roadmap-2025.md"))
    at = open_page(app, "ingest")
    at.selectbox(key="delete-doc").set_value(target["document_id"]).run()
    at.button(key=f"ask-doc-{target['document_id']}").click().run()
    assert any("Delete **team-structured · roadmap-2025.md**" in w.value for w in at.warning)
    assert len(engine.store.documents("default")) == len(documents)  # nothing yet
    at.button(key=f"yes-doc-{target['document_id']}").click().run()
    remaining = engine.store.documents("default")
    assert len(remaining) == len(documents) - 1
    assert target["document_id"] not in {d["document_id"] for d in remaining}
    assert any("Deleted team-structured · roadmap-2025.md" in s.value for s in at.success)

    at.selectbox(key="delete-lens").set_value("engineering").run()
    at.button(key="ask-lens-engineering").click().run()
    at.button(key="no-lens-engineering").click().run()
    assert "engineering" in engine.store.lenses("default")
    at.button(key="ask-lens-engineering").click().run()
    at.button(key="yes-lens-engineering").click().run()
    assert "engineering" not in engine.store.lenses("default")


# -- ask ---------------------------------------------------------------------------------------


def test_ask_shows_the_answer_and_opens_each_cited_source_at_its_span(app: AppTest, workspace: Path) -> None:
    engine = fast_engine(workspace)
    expected = engine.ask(QUESTION).answer
    assert expected.extractive and expected.citations.ok
    at = open_page(app, "ask")
    at.text_area(key="ask-question").input(QUESTION)
    at.button(key="ask-go").click().run()
    assert not at.exception

    body = expected.text.split("\n", 1)[1].strip()  # the banner replaces its first line
    assert any(m.value.strip() == body for m in at.markdown)
    assert any("Extractive answer" in i.value for i in at.info)
    assert any("Citations checked" in s.value for s in at.success)
    cited = list(dict.fromkeys(expected.citations.valid))
    by_number = {s.number: s for s in expected.sources}
    for n in cited:
        source = by_number[n]
        assert any(f"**[{n}] {Path(source.source_path).name}** · {source.lens}" in m.value for m in at.markdown)

    for i, n in enumerate(cited):
        if i:  # the first cited source is open already
            at.button(key=f"open-{n}").click().run()
        source = by_number[n]
        document = engine.store.document_texts("default", [source.document_id])[source.document_id]
        [view] = at.get("html")
        spans = marked_spans(view.value)
        quoted = [(q.start, q.end) for q in expected.quotes if q.number == n]
        assert [(s, e) for s, e, _ in spans] == sorted(quoted or [(source.start, source.end)])
        for start, end, marked in spans:
            assert marked == document[start:end]  # the exact offsets, whatever the text holds
        assert at.button(key=f"open-{n}").disabled  # "Shown"


def test_graph_expanded_results_name_their_seed_and_edge(app: AppTest, workspace: Path) -> None:
    result = fast_engine(workspace).ask(QUESTION, mode="graph", k=30)
    expanded = [r for r in result.query.results if r.via]
    assert expanded
    at = open_page(app, "ask")
    at.text_area(key="ask-question").input(QUESTION)
    at.selectbox(key="ask-mode").set_value("graph")
    at.number_input(key="ask-k").set_value(30)
    at.button(key="ask-go").click().run()
    lines = [c.value for c in at.caption if "Brought in by the graph" in c.value]
    assert len(lines) >= len(expanded)
    for r in expanded:
        assert any(f"over a {r.via['edge']} edge (weight {float(r.via['weight']):.2f}" in line for line in lines)


def test_ask_with_an_as_of_date_before_anything_was_ingested_finds_nothing(
        app: AppTest, workspace: Path) -> None:
    from datetime import date

    at = open_page(app, "ask")
    at.text_area(key="ask-question").input(QUESTION)
    at.date_input(key="ask-as-of").set_value(date(2000, 1, 1))
    at.button(key="ask-go").click().run()
    assert not at.exception
    expected = fast_engine(workspace).ask(QUESTION, as_of="2000-01-01T23:59:59Z").answer
    assert not expected.sources
    assert any(m.value.strip() == expected.text.split("\n", 1)[1].strip() for m in at.markdown)
    assert not at.get("html")  # no source to open


# -- context graph -----------------------------------------------------------------------------


def test_graph_page_finds_a_chunk_by_search_and_lists_its_relations(app: AppTest, workspace: Path) -> None:
    engine = fast_engine(workspace)
    graph = engine.graph()
    stats = graph.stats()
    at = open_page(app, "graph")
    shown = metrics(at)
    assert (shown["Nodes"], shown["Edges"], shown["Components"]) == (
        f"{stats['nodes']:,}", f"{stats['edges']:,}", str(stats["components"]))
    at.text_input(key="graph-search").input("QuickBooks sync rate limits").run()
    hits = engine.query("QuickBooks sync rate limits", k=10).results
    radio = at.radio(key="graph-hit")
    assert len(radio.options) == len(hits)
    assert all(option.startswith(f"{r.source_name} › ") for option, r in zip(radio.options, hits, strict=True))
    at.radio(key="graph-hit").set_value(radio.options[1]).run()
    chosen = hits[1].chunk_id
    details = graph.show(chosen, limit=40)
    counts: dict[str, int] = {}
    for rel in details["relations"]:
        counts[rel["type"]] = counts.get(rel["type"], 0) + 1
    assert sorted(e.label for e in at.expander) == sorted(f"{k} · {v}" for k, v in counts.items())
    listed = {(row["chunk"], float(row["weight"])) for frame in at.dataframe for _, row in frame.value.iterrows()}
    assert listed == {(rel["neighbour_short_id"], round(rel["weight"], 3)) for rel in details["relations"]}
    why = {row["why"] for frame in at.dataframe for _, row in frame.value.iterrows()}
    assert not any("neighbour" in w for w in why), why  # the why column explains, it does not repeat ids
    assert any(f"{details['relations_total']} stored relations" in m.value for m in at.markdown)


# -- contradictions ----------------------------------------------------------------------------


def test_contradictions_are_shown_side_by_side_and_filtered(app: AppTest, workspace: Path) -> None:
    engine = fast_engine(workspace)
    everything = engine.contradictions(limit=20)
    assert everything
    at = open_page(app, "contradictions")
    assert any(f"{len(everything)} contradiction" in c.value for c in at.caption)
    page = "\n".join(texts(at))
    first = everything[0]
    for statement in first.statements:
        assert f"**{statement.lens}** · {Path(statement.source_path).name}" in page
        assert f"characters {statement.start:,}–{statement.end:,}" in page

    topic = "catalog integration"
    about = engine.contradictions(topic=topic, lenses=["engineering"], limit=20)
    at.text_input(key="contra-topic").input(topic)
    at.multiselect(key="contra-lenses").set_value(["engineering"])
    at.button(key="contra-go").click().run()
    titles = [m.value for m in at.markdown if " — " in m.value and m.value.startswith("**")]
    assert len(titles) == len(about)
    for c in about:
        assert "engineering" in {s.lens for s in c.statements}


# -- decisions ---------------------------------------------------------------------------------


def test_decisions_are_listed_newest_first_and_filtered(app: AppTest, workspace: Path) -> None:
    engine = fast_engine(workspace)
    everything = engine.decisions()
    assert everything
    at = open_page(app, "decisions")
    assert any(f"{len(everything)} decision" in c.value for c in at.caption)
    page = "\n".join(texts(at))
    for d in everything:
        assert f"characters {d.start:,}–{d.end:,}" in page and f"> {md_escape(d.flat)}" in page
    newest = max(d.date for d in everything if d.date)
    at.date_input(key="decisions-since").set_value(newest)
    at.button(key="decisions-go").click().run()
    assert any(f"{len(engine.decisions(since=newest))} decision" in c.value for c in at.caption)


# -- report ------------------------------------------------------------------------------------


def test_report_is_written_in_the_background_and_can_be_downloaded(app: AppTest, workspace: Path) -> None:
    at = open_page(app, "report")
    at.text_area(key="report-queries").input("roadmap priorities and timeline\nrisks and concerns")
    at.button(key="report-go").click()
    run_until(at, lambda a: any(b.label == "Download JSON" for b in a.get("download_button")))
    markdown = next(m.value for m in at.markdown if m.value.startswith("*Extractive report"))
    assert "## roadmap priorities and timeline" in markdown and "## risks and concerns" in markdown
    saved = sorted((workspace / "reports").glob("*.md"))
    assert len(saved) == 1 and saved[0].read_text(encoding="utf-8").strip() == markdown.strip()
    assert saved[0].with_suffix(".json").is_file()
    assert metrics(at)["Sections"] == "2"
    assert at.selectbox(key="report-earlier").value == saved[0]  # listed among the earlier ones


# -- evaluation --------------------------------------------------------------------------------


def test_evaluation_page_shows_results_found_on_disk(app: AppTest, workspace: Path) -> None:
    folder = workspace / "eval"
    folder.mkdir()
    (folder / "chunking.md").write_text("# `ragloom eval chunking`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                                        "![chunking](chunking.png)\n", encoding="utf-8")
    (folder / "chunking.json").write_text("{}", encoding="utf-8")
    png = Path(__file__).resolve().parents[2] / "docs" / "eval" / "chunking.png"
    if png.is_file():
        (folder / "chunking.png").write_bytes(png.read_bytes())
    at = open_page(app, "evaluation")
    assert at.subheader[0].value == "ragloom eval chunking"
    assert any("| 1 | 2 |" in m.value and "![" not in m.value for m in at.markdown)
    assert [b.label for b in at.get("download_button")][:2] == ["Download MD", "Download JSON"]
    assert any("ragloom eval chunking --out eval-out" in c.value for c in at.code)


# -- settings ----------------------------------------------------------------------------------


def test_settings_are_saved_to_the_toml_and_a_chunk_size_change_warns(app: AppTest, workspace: Path) -> None:
    config = workspace / "ragloom.toml"  # the sample materials' own settings (ragloom demo writes them)
    config.write_text(config.read_text(encoding="utf-8") + "\n# my notes\n[chunking]\nchunk_size = 1024  # the default\n",
                      encoding="utf-8")
    at = open_page(app, "settings")
    assert not at.warning
    at.number_input(key="set-chunk-size").set_value(512)
    at.slider(key="set-threshold").set_value(0.85)
    at.radio(key="set-embed-text").set_value("naked")
    at.button(key="settings-save").click().run()
    assert not at.exception
    text = config.read_text(encoding="utf-8")
    assert "# my notes" in text  # comments kept
    saved = tomllib.loads(text)
    assert saved["chunking"]["chunk_size"] == 512
    assert saved["graph"]["similarity_threshold"] == 0.85
    assert saved["embedding"]["embed_text"] == "naked"
    assert "llm" not in saved and "retrieval" not in saved  # only what changed
    warning = " ".join(w.value for w in at.warning)
    assert "The index does not match the settings" in warning and "chunk_size" in warning
    assert at.button(key="reindex-settings")  # the way out is right there


def test_invalid_settings_are_refused_with_the_reason(app: AppTest, workspace: Path) -> None:
    before = (workspace / "ragloom.toml").read_text(encoding="utf-8")
    at = open_page(app, "settings")
    at.number_input(key="set-chunk-size").set_value(100)
    at.number_input(key="set-chunk-overlap").set_value(200)
    at.button(key="settings-save").click().run()
    assert any("chunk_overlap (200) must be smaller than chunking.chunk_size (100)" in e.value for e in at.error)
    assert (workspace / "ragloom.toml").read_text(encoding="utf-8") == before  # nothing written


def test_api_keys_are_never_shown_or_written(app: AppTest, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-ant-test-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    at = open_page(app, "settings")
    at.selectbox(key="set-provider").set_value("anthropic")
    at.button(key="settings-save").click().run()
    assert tomllib.loads((workspace / "ragloom.toml").read_text(encoding="utf-8"))["llm"] == {"provider": "anthropic"}
    assert any("ANTHROPIC_API_KEY is set" in c.value for c in at.caption)
    everything = [*texts(at), *(w.value for w in at.text_input), *(w.value for w in at.text_area)]
    assert not any(secret in str(t) for t in everything)
    assert secret not in (workspace / "ragloom.toml").read_text(encoding="utf-8")


def test_the_key_variable_is_one_the_operator_allows(app: AppTest, workspace: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    config = workspace / "ragloom.toml"
    config.write_text(config.read_text(encoding="utf-8") + '\n[server]\nllm_key_variables = ["GROQ_API_KEY"]\n',
                      encoding="utf-8")
    monkeypatch.setenv("GROQ_API_KEY", "gsk-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    at = open_page(app, "settings")
    choice = at.selectbox(key="set-key-env")
    assert choice.options == ["The provider's own", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GROQ_API_KEY"]
    at.selectbox(key="set-provider").set_value("openai")
    at.selectbox(key="set-key-env").set_value("GROQ_API_KEY")
    at.text_input(key="set-base-url").input("http://localhost:11434/v1")
    at.button(key="settings-save").click().run()
    assert tomllib.loads(config.read_text(encoding="utf-8"))["llm"] == {
        "provider": "openai", "base_url": "http://localhost:11434/v1", "api_key_env": "GROQ_API_KEY"}
    assert any(c.value == ":material/key: GROQ_API_KEY is set in the environment." for c in at.caption)

    at.text_input(key="set-base-url").input("file:///etc/passwd")
    at.button(key="settings-save").click().run()
    assert any("llm.base_url 'file:///etc/passwd' is not an http:// or https:// address" in e.value for e in at.error)
    assert "passwd" not in config.read_text(encoding="utf-8")


def test_a_variable_outside_the_allowed_ones_is_never_said_to_be_set(
        app: AppTest, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = workspace / "ragloom.toml"
    config.write_text(config.read_text(encoding="utf-8") + '\n[llm]\nprovider = "openai"\n'
                      'api_key_env = "AWS_SECRET_ACCESS_KEY"\n', encoding="utf-8")
    shown = []
    for value in ("aws-secret", None):
        if value:
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", value)
        else:
            monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
        at = open_page(AppTest.from_file(str(APP), default_timeout=120), "settings")
        shown.append(sorted(texts(at)))
        assert not any("AWS_SECRET_ACCESS_KEY is set" in t or "AWS_SECRET_ACCESS_KEY is not set" in t
                       for t in texts(at))
    assert shown[0] == shown[1]  # the page is the same whether it is set or not
    assert any("The key is read from AWS_SECRET_ACCESS_KEY, which the settings name. This page looks only at "
               "ANTHROPIC_API_KEY, OPENAI_API_KEY" in c for c in shown[0])
    # The operator's own choice stays when something else is saved.
    at.number_input(key="set-chunk-size").set_value(512)
    at.button(key="settings-save").click().run()
    assert tomllib.loads(config.read_text(encoding="utf-8"))["llm"]["api_key_env"] == "AWS_SECRET_ACCESS_KEY"


@pytest.mark.parametrize("address", ["0.0.0.0", None, "192.0.2.7"])
def test_beyond_this_machine_the_endpoint_and_key_variable_are_read_only(
        app: AppTest, workspace: Path, address: str | None) -> None:
    config = workspace / "ragloom.toml"
    config.write_text(config.read_text(encoding="utf-8") + '\n[llm]\nprovider = "openai"\n'
                      'base_url = "http://localhost:11434/v1"\n', encoding="utf-8")
    with bound_to(address):
        at = open_page(app, "settings")
        base_url, key_env = at.text_input(key="set-base-url"), at.text_input(key="set-key-env")
        assert base_url.disabled and key_env.disabled
        assert (base_url.value, key_env.value) == ("http://localhost:11434/v1", "OPENAI_API_KEY")
        lock = next(c.value for c in at.caption if "Read-only here" in c.value)
        assert f"this app listens on {address if address == '192.0.2.7' else 'every interface'}, beyond this " \
               "machine" in lock and "ragloom.toml" in lock
        # A forged form (the widgets are disabled, but a client may send any value) changes neither.
        at.session_state["set-base-url"] = "https://attacker.example/v1"
        at.session_state["set-key-env"] = "AWS_SECRET_ACCESS_KEY"
        at.run()
        assert at.text_input(key="set-base-url").value == "https://attacker.example/v1"  # what the form sends
        at.text_input(key="set-model").input("llama3.1")
        at.button(key="settings-save").click().run()
    assert tomllib.loads(config.read_text(encoding="utf-8"))["llm"] == {
        "provider": "openai", "base_url": "http://localhost:11434/v1", "model": "llama3.1"}
    assert any("Saved llm.model" in s.value for s in at.success)


def test_reindex_from_the_dashboard_clears_the_warning(app: AppTest, workspace: Path) -> None:
    (workspace / "ragloom.toml").write_text("[chunking]\nchunk_size = 256\nchunk_overlap = 32\n", encoding="utf-8")
    at = open_page(app, "dashboard")
    assert any("The index does not match the settings" in w.value for w in at.warning)
    before = int(metrics(at)["Chunks"].replace(",", ""))
    at.button(key="reindex-dashboard").click()
    run_until(at, lambda a: not a.warning and not a.get("progress"))
    assert fast_engine(workspace).warnings == []
    assert int(metrics(at)["Chunks"].replace(",", "")) > before  # smaller chunks, more of them


def test_settings_edited_outside_the_app_are_picked_up(app: AppTest, workspace: Path) -> None:
    at = open_page(app, "dashboard")
    assert not at.warning
    (workspace / "ragloom.toml").write_text("[chunking]\nchunk_size = 300\n", encoding="utf-8")
    at.run()
    assert any("chunk_size" in w.value for w in at.warning)
