"""The ingest pipeline: ordered stages, inserted stages, and failures that stay with their file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import EmbeddingError, InvalidParameterError, NothingToIngestError
from ragloom.ingest import IngestRun, Work, default_stages

from ..conftest import fast_settings


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_the_default_stages_are_an_explicit_ordered_list(engine: Engine) -> None:
    names = [s.name for s in engine.pipeline.stages]
    assert names == ["load", "parse", "chunk", "enrich", "context", "version", "embed", "quality", "store", "graph"]
    assert [s.scope for s in default_stages()] == ["document"] * 6 + ["batch"] * 3 + ["run"]


def test_stages_are_inserted_by_name_and_checked(engine: Engine, tmp_path: Path) -> None:
    calls: list[tuple[str, int]] = []

    class Count:
        def __init__(self, name: str, scope: str) -> None:
            self.name, self.scope = name, scope

        def __call__(self, items: list[Work], run: IngestRun) -> list[Work]:
            calls.append((self.name, len(items)))
            return items

    engine.pipeline.insert(Count("after parse", "document"), after="parse")
    engine.pipeline.insert(Count("before store", "batch"), before="store")
    engine.pipeline.insert(Count("at the end", "run"))
    with pytest.raises(InvalidParameterError, match="no ingest stage named 'nope'; the stages are: load, parse"):
        engine.pipeline.insert(Count("x", "document"), after="nope")
    with pytest.raises(InvalidParameterError, match="scope 'sometimes'"):
        engine.pipeline.insert(Count("x", "sometimes"))
    report = engine.ingest(write(tmp_path / "d", {"a.md": "# A\nalpha.", "b.md": "# B\nbeta."}), lens="x")
    assert report.added == 2
    assert calls == [("after parse", 1), ("after parse", 1), ("before store", 2), ("at the end", 2)]
    assert {"load", "parse", "chunk", "embed", "store"} <= set(report.timings)


class PickyEmbedder(HashingEmbedder):
    """Cannot embed texts that contain a marker (as a model meets input it fails on)."""

    def embed(self, texts):  # noqa: ANN001, ANN201
        if any("POISON" in t for t in texts):
            raise EmbeddingError("the model failed on this input")
        return super().embed(texts)


def test_one_file_that_cannot_be_embedded_fails_alone(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=PickyEmbedder())
    folder = write(tmp_path / "d", {"a.md": "# A\nalpha text.", "b.md": "# B\nPOISON in here.", "c.md": "# C\ngamma."})
    report = engine.ingest(folder, lens="x")
    assert report.added == 2
    assert [Path(path).name for path, _ in report.failed] == ["b.md"]
    assert "the model failed on this input" in report.failed[0][1] and "b.md" in report.failed[0][1]
    assert {Path(d["source_path"]).name for d in engine.store.documents("default")} == {"a.md", "c.md"}


def test_chunk_document_is_the_parse_chunk_and_enrich_stages(engine: Engine, materials: Path) -> None:
    path = materials / "engineering" / "tech-debt-register.md"
    document = engine.load(path, lens="engineering")
    chunks = engine.chunk_document(document)
    assert chunks and all(document.text[c.start : c.end] == c.text for c in chunks)
    assert all(c.prefix and c.chunk_id and c.content_hash for c in chunks)
    boundary = engine.chunk_document(document, strategy="boundary")
    assert {c.strategy for c in boundary} == {"boundary"} and {c.strategy for c in chunks} == {"token"}


def test_an_interrupted_graph_is_rebuilt_by_the_next_ingest(engine: Engine, tmp_path: Path) -> None:
    folder = write(tmp_path / "d", {f"{i}.md": f"# Doc {i}\nThe catalog integration ships in Q{i % 4 + 1} 2025."
                                    for i in range(6)})
    engine.ingest(folder, lens="x")
    edges = sorted((e["src"], e["dst"], e["type"]) for e in engine.store.edges("default"))
    assert edges
    store = engine.store
    with store._change(graph_stale=True):  # as a crash between a data commit and its graph update leaves it
        store._writable("edges").delete("TRUE")
    assert engine.store.edges("default") == []
    report = engine.ingest(folder, lens="x")
    assert report.unchanged == 6
    assert sorted((e["src"], e["dst"], e["type"]) for e in engine.store.edges("default")) == edges
    assert not engine.store.commit_info()["graph_stale"]


class SpanHashing(HashingEmbedder):
    """Pools a span by embedding its text: derived sentence vectors are then checkable."""

    pools = True

    def __init__(self) -> None:
        super().__init__()
        self.texts_embedded: list[str] = []

    def embed(self, texts):  # noqa: ANN001, ANN201
        self.texts_embedded.extend(texts)
        return super().embed(texts)

    def pool(self, texts, spans):  # noqa: ANN001, ANN201
        vectors = self.embed(texts)
        return vectors, [HashingEmbedder.embed(self, [t[a:b] for a, b in s]) if s else np.zeros((0, self.dim))
                         for t, s in zip(texts, spans, strict=True)]


def test_derived_sentence_vectors_come_from_the_chunk_pass(tmp_path: Path, materials: Path) -> None:
    embedder = SpanHashing()
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"sentences.vectors": "derived"}), embedder=embedder)
    report = engine.ingest(materials / "engineering", lens="engineering")
    assert report.ok
    sentences = engine.store.chunks("default", table="sentences", with_vectors=True, columns=["text", "vector"])
    direct = HashingEmbedder().embed([s["text"] for s in sentences])
    assert np.allclose(np.stack([s["vector"] for s in sentences]), direct, atol=1e-6)
    # One model pass: the chunks, plus only the few sentences that no chunk holds whole.
    alone = [t for t in embedder.texts_embedded if t in {s["text"] for s in sentences}]
    assert len(alone) < 0.2 * len(sentences)
    assert len(embedder.texts_embedded) < report.chunks_written + 0.2 * len(sentences)


def test_the_report_counts_chunks_and_sentences_apart(tmp_path: Path) -> None:
    folder = write(tmp_path / "docs", {"a.md": "# A\n\nApples are red. Apples are sweet.\n\n## B\n\nBananas are yellow.\n"})
    engine = Engine(tmp_path / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    first = engine.ingest(folder, lens="x")
    chunks = len(engine.store.chunks("default"))
    sentences = len(engine.store.chunks("default", table="sentences"))
    assert (first.chunks_embedded, first.chunks_reused) == (chunks, 0)
    assert (first.sentences_embedded, first.sentences_reused) == (sentences, 0)
    (folder / "a.md").write_text("# A\n\nApples are red. Apples are sweet.\n\n## B\n\nBananas are yellow. And long.\n",
                                 encoding="utf-8")
    second = engine.ingest(folder, lens="x")
    assert second.chunks_embedded == 1 and second.chunks_reused == chunks - 1  # section A kept its vector
    assert second.sentences_embedded == 1 and second.sentences_reused == sentences  # one new sentence
    assert (f"1 chunk embedded, {chunks - 1} reused; 1 sentence embedded, {sentences} reused"
            in second.summary())


def test_an_unchanged_ingest_never_loads_the_model(tmp_path: Path, materials: Path) -> None:
    settings = fast_settings()
    Engine(tmp_path / "ws", settings=settings).ingest(materials / "engineering", lens="engineering")
    again = Engine(tmp_path / "ws", settings=settings)
    report = again.ingest(materials / "engineering", lens="engineering")
    assert report.unchanged == 3 and again.components._embedder is None  # only its name was needed
    assert again.workspace.manifest()["dim"] == again.store.dim == 384


def test_nothing_to_ingest_is_an_error_that_says_what_was_found(engine: Engine, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NothingToIngestError, match="no files"):
        engine.ingest(empty, lens="x")
    other = write(tmp_path / "other", {"a.csv": "1,2", "b.csv": "3,4", "LICENSE": "MIT"})
    with pytest.raises(NothingToIngestError, match=r"only 3 files of types ragloom does not read \(\.csv 2, no ext"):
        engine.ingest(other, lens="x")
    write(other, {"c.md": "# C\n\nText."})
    report = engine.ingest(other, lens="x")
    assert report.added == 1 and report.skipped == {".csv": 2, "": 1}
    assert engine.ingest(empty, lens="x", sync=True).files == 0  # a sync of an emptied folder is legitimate


def test_every_format_gets_the_per_file_time_bound(tmp_path: Path) -> None:
    """Not only PDF, DOCX and HTML conversion: a Markdown file whose own stages take longer than
    ``ingest.max_seconds_per_file`` fails with a line saying so, and the others land."""
    import time

    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"ingest.max_seconds_per_file": 0.3}),
                    embedder=HashingEmbedder())

    class SlowOnOne:
        name, scope = "slow", "document"

        def __call__(self, items: list[Work], run: IngestRun) -> list[Work]:
            if any("slow" in item.source for item in items):
                time.sleep(0.5)
            return items

    engine.pipeline.insert(SlowOnOne(), after="parse")
    report = engine.ingest(write(tmp_path / "d", {"slow.md": "# Slow\nalpha.", "fast.md": "# Fast\nbeta."}), lens="x")
    assert report.added == 1
    (source, message), = report.failed
    assert source.endswith("slow.md")
    assert "took too long to read" in message and "ingest.max_seconds_per_file = 0.3" in message, message
    assert "raise ingest.max_seconds_per_file or split the file" in message
