"""Anthropic's contextual retrieval, for a user with a language model (``[prefix] llm_context``).

Before a chunk is embedded and indexed, the ``[llm]`` model reads the chunk's whole document
and writes a sentence or two that situate the chunk in it ("The constructor of DiffExecutor,
LibAFL's executor that runs two executors on the same input..."). That context joins the
chunk's contextual prefix, after the template's line, so it is embedded and indexed for BM25
with the chunk; the naked text is still what the reader and the answering model see
(contract 3). The prompt is ``synthesise/prompts/chunk_context.md`` (a workspace's
``prompts/chunk_context.md`` overrides it).

Each context is cached in ``<workspace>/cache/chunk_context.sqlite`` under a hash of the
document's text, the chunk's text, the model and the prompt, so re-ingesting, re-indexing or
moving a document calls no model. A call that still fails after the provider's own retries
fails its document alone, with a message that says so; the contexts written before it stay
cached, so the next ingest resumes where this one stopped.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ragloom.config import PROVIDER_DEFAULTS, Settings
from ragloom.enrich.prefix import content_hash
from ragloom.errors import ConfigError, LLMError
from ragloom.ingest.report import CONTEXT_STAGE as STAGE
from ragloom.types import Chunk, Document

if TYPE_CHECKING:
    from ragloom.ingest.report import Progress
    from ragloom.synthesise.llm import LLM

#: The prompt's name (a Markdown file among the packaged prompts).
PROMPT = "chunk_context"
SYSTEM = ("You write short, factual context that situates one chunk of a document within the whole document, "
          "for a search index. You answer with the context alone.")
#: A context longer than this (a model that ignored the prompt) is cut at a word.
MAX_CONTEXT_CHARS = 1_000
CACHE_FILE = "chunk_context.sqlite"


def wanted(settings: Settings) -> bool:
    """Whether contexts are written: asked for, and embedded (naked embedding, the rollback
    path, indexes no prefix, so it pays for no model call)."""
    return settings.prefix.llm_context and settings.embedding.embed_text == "contextual"


def cache_key(document_hash: str, chunk_hash: str, model: str, prompt: str) -> str:
    """The cache key of one context: the document, the chunk, the model and the prompt."""
    key = "\0".join((document_hash, chunk_hash, model, content_hash(SYSTEM + "\0" + prompt)))
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


def document_view(text: str, start: int, end: int, limit: int) -> str:
    """The document as the model reads it: whole when it has at most ``limit`` characters,
    else ``limit`` characters around the chunk (``start:end``), cuts marked with an ellipsis."""
    if len(text) <= limit:
        return text
    room = max(0, limit - (end - start))
    lo = max(0, start - room // 2)
    hi = min(len(text), lo + max(limit, end - start))
    lo = max(0, hi - max(limit, end - start))
    return ("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")


def clean(text: str) -> str:
    """The model's answer as one line, cut at a word to :data:`MAX_CONTEXT_CHARS`."""
    flat = " ".join(text.split()).strip().strip('"').strip()
    if len(flat) <= MAX_CONTEXT_CHARS:
        return flat
    cut = flat.rfind(" ", 0, MAX_CONTEXT_CHARS - 1)
    return flat[: cut if cut > MAX_CONTEXT_CHARS // 2 else MAX_CONTEXT_CHARS - 1].rstrip() + "…"


class ContextCache:
    """Contexts by :func:`cache_key`, in a SQLite file (one writer at a time, any thread)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS contexts (key TEXT PRIMARY KEY, context TEXT NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, keys: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        with self._connect() as db:
            for lo in range(0, len(unique), 500):
                batch = unique[lo : lo + 500]
                marks = ",".join("?" * len(batch))
                found.update(db.execute(f"SELECT key, context FROM contexts WHERE key IN ({marks})", batch))
        return found

    def put(self, key: str, context: str) -> None:
        with self._lock, self._connect() as db:
            db.execute("INSERT OR REPLACE INTO contexts (key, context) VALUES (?, ?)", (key, context))


class ChunkContextWriter:
    """Writes (or finds in the cache) the context of each chunk of a document."""

    def __init__(self, llm: LLM, cache: ContextCache, *, prompt: str, max_tokens: int = 150,
                 document_chars: int = 60_000, concurrency: int = 4) -> None:
        self.llm = llm
        self.cache = cache
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.document_chars = document_chars
        self.concurrency = concurrency
        self.calls = 0  # model calls made, for the report and tests

    @classmethod
    def from_settings(cls, settings: Settings, workspace: Path, cache_folder: Path) -> ChunkContextWriter:
        """The writer ``[prefix]`` and ``[llm]`` describe; a clear error when no model is configured."""
        from ragloom.synthesise.llm import llm_from_settings
        from ragloom.synthesise.prompts import load_prompt

        provider = settings.llm.provider
        if provider not in PROVIDER_DEFAULTS:
            what = "'none' (no language model)" if provider == "none" else f"{provider!r}, a writer plugin"
            raise ConfigError(f"prefix.llm_context is on, but llm.provider is {what}; set [llm] provider to "
                              f"{' or '.join(map(repr, PROVIDER_DEFAULTS))} (and its key), or set "
                              "prefix.llm_context = false")
        p = settings.prefix
        llm = llm_from_settings(settings.llm, model=p.llm_context_model)
        assert llm is not None  # a provider of PROVIDER_DEFAULTS always gives one
        return cls(llm, ContextCache(cache_folder / CACHE_FILE), prompt=load_prompt(PROMPT, workspace),
                   max_tokens=p.llm_context_max_tokens, document_chars=p.llm_context_document_chars,
                   concurrency=p.llm_context_concurrency)

    def _ask(self, document: Document, chunk: Chunk) -> str:
        from ragloom.synthesise.prompts import render

        view = document_view(document.text, chunk.start, chunk.end, self.document_chars)
        prompt = render(self.prompt, title=document.title, document=view, chunk=chunk.text)
        self.calls += 1
        return clean(self.llm.complete(SYSTEM, prompt, max_tokens=self.max_tokens))

    def contexts(self, document: Document, chunks: Sequence[Chunk], *, progress: Progress | None = None) -> list[str]:
        """The context of each chunk, from the cache or the model (``concurrency`` calls at once)."""
        doc_hash = content_hash(document.text)
        keys = [cache_key(doc_hash, c.content_hash or content_hash(c.text), self.llm.model, self.prompt)
                for c in chunks]
        found = self.cache.get(keys)
        todo = [i for i, key in enumerate(keys) if key not in found]
        if not todo:
            return [found[k] for k in keys]
        if progress is not None:
            progress.stage(STAGE, len(todo))
        def keep(i: int, context: str) -> None:
            found[keys[i]] = context
            self.cache.put(keys[i], context)  # kept even if a later call fails
            if progress is not None:
                progress.advance(STAGE)

        failure: tuple[int, BaseException] | None = None
        pool = ThreadPoolExecutor(min(self.concurrency, len(todo)), thread_name_prefix="ragloom-context")
        running: dict[Future[str], int] = {}
        try:
            running = {pool.submit(self._ask, document, chunks[i]): i for i in todo}
            pending = set(running)
            while pending and failure is None:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in sorted(done, key=running.__getitem__):
                    error = future.exception()
                    if error is None:
                        keep(running[future], future.result())
                    elif failure is None:
                        failure = (running[future], error)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        # Calls that were in flight when one failed: what they wrote is kept for the next try.
        for future, i in running.items():
            if keys[i] not in found and future.done() and not future.cancelled() and future.exception() is None:
                keep(i, future.result())
        if failure is not None:
            raise self._failed(failure[1], failure[0], len(chunks)) from failure[1]
        return [found[k] for k in keys]

    @staticmethod
    def _failed(error: BaseException, index: int, total: int) -> BaseException:
        if not isinstance(error, LLMError):
            return error
        return LLMError(f"the context of chunk {index + 1} of {total} could not be written ({error}); the document "
                        f"is left out of this ingest (prefix.llm_context is on); contexts already written are "
                        f"cached, so ingesting again asks only for the rest", provider=error.provider,
                        endpoint=error.endpoint, reason=error.reason, status=error.status)

    def apply(self, document: Document, chunks: Sequence[Chunk], *, separator: str = "\n\n",
              progress: Progress | None = None) -> list[Chunk]:
        """The chunks with their context after their prefix: ``prefix + context + separator + text``."""
        if not chunks:
            return []
        written = self.contexts(document, chunks, progress=progress)
        return [replace(c, prefix=f"{c.prefix}{context}{separator}") if context else c
                for c, context in zip(chunks, written, strict=True)]
