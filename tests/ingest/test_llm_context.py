"""``[prefix] llm_context``: a context for each chunk written by a model from its whole document,
tested against a local server that speaks the Anthropic and OpenAI APIs (no mock of either SDK)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.config import Settings
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import ConfigError, LLMError
from ragloom.ingest.llm_context import (
    MAX_CONTEXT_CHARS,
    STAGE,
    ChunkContextWriter,
    ContextCache,
    cache_key,
    clean,
    document_view,
)
from ragloom.types import Chunk, Document
from ragloom.workspace import index_signature

from ..conftest import Tally, fast_settings
from ..synthesise.fake_llm import FakeLLMServer, Reply, text_reply

pytest.importorskip("anthropic")
pytest.importorskip("openai")

PROVIDERS = ("anthropic", "openai")
DOC = """# Tide tables

## Harbour entrance

The harbour entrance is dredged to eight metres. Pilots board two miles out, at the fairway buoy.

## Night arrivals

Ships arriving after dark wait at the outer anchorage until the pilot launch comes alongside.
"""


def _settings(provider: str, server: FakeLLMServer, **more: object) -> Settings:
    return fast_settings(**{
        "chunking.strategy": "boundary", "chunking.min_size": 20, "chunking.target_size": 60,
        "chunking.max_size": 200, "chunking.overlap_chars": 0, "sentences.enabled": False, "graph.enabled": False,
        "prefix.llm_context": True, "prefix.llm_context_concurrency": 1,
        "llm.provider": provider, "llm.max_retries": 1,
        "llm.base_url": server.url + ("/v1" if provider == "openai" else ""), **more})


def _engine(tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Engine:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return Engine(tmp_path / "ws", settings=settings, embedder=HashingEmbedder())


def _folder(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# -- the pieces ------------------------------------------------------------------------------


@given(st.text(min_size=0, max_size=3000), st.data())
def test_the_document_view_holds_the_chunk_within_the_limit(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 400)))
    limit = data.draw(st.integers(1000, 4000))
    view = document_view(text, start, end, limit)
    assert text[start:end] in view
    if len(text) <= limit:
        assert view == text
    else:
        assert len(view) <= limit + 2  # the cut marks


def test_clean_makes_one_bounded_line() -> None:
    assert clean('  "Part of the\n\nharbour guide."  ') == "Part of the harbour guide."
    long = clean("word " * 1000)
    assert len(long) <= MAX_CONTEXT_CHARS and long.endswith("…") and "\n" not in long


def test_the_cache_key_names_document_chunk_model_and_prompt() -> None:
    base = cache_key("doc", "chunk", "model", "prompt")
    assert len({base, cache_key("doc2", "chunk", "model", "prompt"), cache_key("doc", "chunk2", "model", "prompt"),
                cache_key("doc", "chunk", "model2", "prompt"), cache_key("doc", "chunk", "model", "prompt2")}) == 5


def test_the_setting_is_left_out_of_the_signature_unless_on() -> None:
    off = index_signature(Settings())
    assert "llm_context" not in off["prefix"]  # a workspace built before the setting still matches
    on = index_signature(Settings.load(environ={}, overrides={"prefix.llm_context": True, "llm.provider": "anthropic",
                                                              "prefix.llm_context_model": "claude-haiku-4-5"}))
    assert on["prefix"]["llm_context"]["model"] == "claude-haiku-4-5"


# -- through the ingest, against the fake server ---------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_contexts_join_the_prefix_and_are_cached(provider: str, llm_server: FakeLLMServer, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    llm_server.push(text_reply("From the zebrafish harbour guide, on pilotage."))
    engine = _engine(tmp_path, _settings(provider, llm_server, **{"prefix.llm_context_model": "small-model"}),
                     monkeypatch)
    progress = Tally()
    report = engine.ingest(_folder(tmp_path, **{"tides.md": DOC}), lens="engineering", progress=progress)
    assert report.ok, report.failed
    rows = engine.store.chunks("default", columns=["text", "prefix", "contextualized_text", "search_text"])
    assert len(rows) >= 2 and len(llm_server.requests) == len(rows)
    assert progress.totals[STAGE] == progress.done[STAGE] == len(rows)
    for row in rows:
        # The template's line, then the model's context; the naked text is untouched.
        assert row["prefix"].startswith("[Document: Tide tables")
        assert "From the zebrafish harbour guide, on pilotage.\n\n" in row["prefix"]
        assert row["contextualized_text"] == row["prefix"] + row["text"] and row["text"] in DOC
        assert "zebrafish" in row["search_text"] and "zebrafish" not in row["text"]
    # Each request carried the whole document, the chunk, and the configured model.
    for request in llm_server.requests:
        body = str(request.body)
        assert "small-model" == request.body["model"] and "fairway buoy" in body and "outer anchorage" in body
    assert any("Night arrivals" in str(r.body) for r in llm_server.requests)
    # The context is what a search can meet: a word only the model wrote finds the chunks.
    found = engine.query("zebrafish", mode="bm25", k=5)
    assert len(found.results) == len(rows)
    # Again from scratch, and re-indexed: every context comes from the cache, no call is made.
    calls = len(llm_server.requests)
    engine.clear()
    assert engine.ingest(_folder(tmp_path), lens="engineering").ok
    engine.reindex()
    assert len(llm_server.requests) == calls
    again = engine.store.chunks("default", columns=["prefix"])
    assert sorted(r["prefix"] for r in again) == sorted(r["prefix"] for r in rows)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_rate_limit_is_retried_then_the_context_lands(provider: str, llm_server: FakeLLMServer, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    llm_server.push(Reply(status=429, headers={"retry-after": "0"}), text_reply("Harbour guide context."))
    engine = _engine(tmp_path, _settings(provider, llm_server), monkeypatch)
    report = engine.ingest(_folder(tmp_path, **{"tides.md": DOC}), lens="engineering")
    assert report.ok, report.failed
    rows = engine.store.chunks("default", columns=["prefix"])
    assert len(llm_server.requests) == len(rows) + 1  # one retry
    assert all("Harbour guide context." in r["prefix"] for r in rows)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_exhausted_retries_fail_the_document_and_the_rest_lands(provider: str, llm_server: FakeLLMServer,
                                                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a.md (one chunk) is read first: its call and its one retry are refused; b.md then lands.
    llm_server.push(Reply(status=429, headers={"retry-after": "0"}, error_message="slow down"),
                    Reply(status=429, headers={"retry-after": "0"}, error_message="slow down"),
                    text_reply("Guide context."))
    engine = _engine(tmp_path, _settings(provider, llm_server), monkeypatch)
    folder = _folder(tmp_path, **{"a.md": "# Short\n\nOne short note about the quay.\n", "b.md": DOC})
    report = engine.ingest(folder, lens="engineering")
    assert [Path(source).name for source, _ in report.failed] == ["a.md"]
    message = report.failed[0][1]
    assert "rate limited (429) after 1 retry (slow down)" in message
    assert "the context of chunk 1 of 1 could not be written" in message and "left out of this ingest" in message
    assert "\n" not in message
    titles = {r["title"] for r in engine.store.documents("default")}
    assert titles == {"Tide tables"}
    # The next ingest asks only for what is missing: a.md's one chunk; b.md is unchanged.
    calls = len(llm_server.requests)
    assert engine.ingest(folder, lens="engineering").ok
    assert len(llm_server.requests) == calls + 1
    assert {r["title"] for r in engine.store.documents("default")} == {"Tide tables", "Short"}


def test_without_a_provider_the_ingest_stops_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(tmp_path / "ws", settings=fast_settings(**{"prefix.llm_context": True}), embedder=HashingEmbedder())
    with pytest.raises(ConfigError, match=r"prefix\.llm_context is on, but llm\.provider is 'none'.*set \[llm\] "
                                          r"provider to 'anthropic' or 'openai'.*prefix\.llm_context = false"):
        engine.ingest(_folder(tmp_path, **{"tides.md": DOC}), lens="engineering")
    assert not engine.store.has_table("chunks")


def test_without_a_key_the_ingest_stops_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings = fast_settings(**{"prefix.llm_context": True, "llm.provider": "anthropic"})
    engine = Engine(tmp_path / "ws", settings=settings, embedder=HashingEmbedder())
    with pytest.raises(LLMError, match="no API key configured; set the environment variable ANTHROPIC_API_KEY"):
        engine.ingest(_folder(tmp_path, **{"tides.md": DOC}), lens="engineering")


def test_naked_embedding_asks_no_model(llm_server: FakeLLMServer, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _engine(tmp_path, _settings("anthropic", llm_server, **{"embedding.embed_text": "naked"}), monkeypatch)
    assert engine.ingest(_folder(tmp_path, **{"tides.md": DOC}), lens="engineering").ok
    assert llm_server.requests == []


class ScriptedLLM:
    """An LLM through the provider protocol: answers "about <chunk>", and fails on one chunk."""

    name = "scripted"
    model = "scripted-1"

    def __init__(self, fail_on: str | None = None) -> None:
        self.fail_on = fail_on
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def complete(self, system: str, prompt: str, *, max_tokens: int) -> str:
        chunk = prompt.split("<chunk>\n", 1)[1].split("\n</chunk>", 1)[0]
        with self._lock:
            self.asked.append(chunk)
        if chunk == self.fail_on:
            raise LLMError("scripted at http://x: rate limited (429) after 3 retries", provider="scripted",
                           reason="rate_limited", status=429)
        return f"about {chunk}"

    def stream(self, system: str, prompt: str, *, max_tokens: int) -> Iterator[str]:
        yield self.complete(system, prompt, max_tokens=max_tokens)


def test_a_failure_among_concurrent_calls_keeps_what_the_others_wrote(tmp_path: Path) -> None:
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    text = " ".join(words)
    doc = Document(text=text, source_path="/x/w.md", title="Words", lens="l", tenant="t", media_type="text/markdown",
                   modified_at=datetime(2024, 1, 1, tzinfo=UTC), document_id="d", file_hash="h")
    chunks, at = [], 0
    for w in words:
        start = text.index(w, at)
        chunks.append(Chunk(text=w, start=start, end=start + len(w), token_count=1, prefix="[Document: Words]\n\n"))
        at = start + len(w)
    cache = ContextCache(tmp_path / "contexts.sqlite")
    failing = ScriptedLLM(fail_on="charlie")
    writer = ChunkContextWriter(failing, cache, prompt="{{document}}\n<chunk>\n{{chunk}}\n</chunk>", concurrency=3)
    with pytest.raises(LLMError, match=r"the context of chunk 3 of 6 could not be written \(scripted at http://x: "
                                       r"rate limited") as caught:
        writer.apply(doc, chunks)
    assert caught.value.reason == "rate_limited" and caught.value.status == 429
    written = [w for w in failing.asked if w != "charlie"]
    # Every call that answered was kept, whether it finished before or after the failure.
    healthy = ScriptedLLM()
    again = ChunkContextWriter(healthy, cache, prompt=writer.prompt, concurrency=3)
    out = again.apply(doc, chunks)
    assert sorted(healthy.asked) == sorted(set(words) - set(written))
    assert [c.prefix for c in out] == [f"[Document: Words]\n\nabout {w}\n\n" for w in words]
    assert [c.text for c in out] == words  # the naked text is untouched
