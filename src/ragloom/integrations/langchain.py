"""LangChain adapters: a retriever over a ragloom workspace and a document transformer that
splits with ragloom's chunkers at exact offsets.

Needs ``pip install 'ragloom[langchain]'`` (langchain-core only; no network, no LLM)::

    from ragloom import Engine
    from ragloom.integrations.langchain import RagloomRetriever, RagloomTextSplitter

    retriever = RagloomRetriever(engine=Engine("ragloom-data"), k=5, mode="balanced")
    docs = retriever.invoke("What blocks the catalog integration?")   # langchain Documents

    splitter = RagloomTextSplitter("boundary", target_size=800, min_size=500, max_size=1200)
    chunks = splitter.split_documents(docs)                           # metadata: start_index, end_index, ...
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import BaseDocumentTransformer
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables.config import run_in_executor
    from pydantic import Field
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from ragloom.errors import MissingExtraError

    raise MissingExtraError("langchain-core", "langchain", "the LangChain integration") from exc

from ragloom.chunk import Chunker, chunker_from_settings, get_chunker
from ragloom.config import PrefixSettings, Settings
from ragloom.engine import Engine
from ragloom.enrich.prefix import PrefixBuilder
from ragloom.errors import InvalidParameterError
from ragloom.load.normalize import parse_date, title_from_filename
from ragloom.parse.doctype import infer_doc_type
from ragloom.parse.sections import parse_sections
from ragloom.query import Query, QueryRequest
from ragloom.types import Chunk, Document, ScoredChunk

__all__ = ["RagloomRetriever", "RagloomTextSplitter", "to_langchain"]


def _iso(value: datetime | date | None) -> str | None:
    return value.isoformat() if value is not None else None


def to_langchain(result: ScoredChunk, *, rank: int = 0) -> LCDocument:
    """A retrieved chunk as a LangChain ``Document``: the naked text, and where it came from.

    ``score`` is the relevance from 0 to 1 that ``ragloom query`` prints, on one scale for every
    mode; ``raw_score`` is the mode's own score (a reciprocal-rank fusion score of about 0.03 for
    hybrid, a cosine for vector). Metadata is JSON-serialisable: strings, numbers and None (no
    lists, which some vector stores refuse), plus two dicts: ``scores`` (the raw score per
    retriever) and, for graph results, ``via`` (the seed chunk and edge that brought this one in).
    """
    metadata: dict[str, Any] = {
        "chunk_id": result.chunk_id, "document_id": result.document_id,
        "source": result.source_path,  # the key LangChain's loaders and chains read
        "source_path": result.source_path, "title": result.title, "lens": result.lens, "tenant": result.tenant,
        "doc_type": result.doc_type, "section_path": result.section_path_str,
        "start": result.start, "end": result.end, "token_count": result.token_count,
        "chunk_index": result.chunk_index, "score": result.relevance, "raw_score": result.score,
        "retriever": result.retriever,
        "scores": dict(result.scores), "rank": rank,
        "version_id": result.version_id, "valid_from": _iso(result.as_of),
        "document_date": _iso(result.document_date),
    }
    if result.via is not None:
        metadata["via"] = dict(result.via)
    return LCDocument(page_content=result.text, metadata=metadata, id=result.chunk_id or None)


class RagloomRetriever(BaseRetriever):
    """Retrieves chunks from a ragloom workspace with any retrieval mode.

    Each result is a ``Document`` whose ``page_content`` is the chunk's text (exactly
    ``document.text[start:end]``) and whose metadata says where it came from (see
    :func:`to_langchain`). With ``budget``, ``organize`` or ``optimize`` the documents are the
    optimised context window's chunks, in its order (de-duplicated, within the token budget,
    trimmed chunks keeping exact offsets) rather than the raw ranking. ``options`` are the
    mode's own (``{"threshold": 0.7}`` for ``dynamic``). Every parameter is checked when the
    retriever is built. ``k`` defaults to the ``retrieval.k`` setting (5).

    A call may change any of them for itself: ``retriever.invoke(query, k=3)``,
    ``invoke(query, mode="graph", lenses=["engineering"])``; any other keyword is one of the
    mode's own options (``invoke(query, threshold=0.7)``), and a name the mode does not have is
    an error naming those it has. ``ainvoke`` runs the query in a worker thread.
    """

    engine: Engine
    k: int | None = None
    mode: str | None = None
    lenses: list[str] | None = None
    tenant: str | None = None
    as_of: datetime | str | None = None
    dated_from: date | str | None = None
    dated_to: date | str | None = None
    budget: int | None = None
    organize: str | None = None
    optimize: bool = False
    options: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:  # noqa: ANN401 - pydantic fields
        super().__init__(**data)
        # Checked here, not in a pydantic validator, so that a bad value raises ragloom's own
        # InvalidParameterError (naming the parameter and its bound), not a ValidationError.
        self._request("")

    def _request(self, query: str, call: Mapping[str, Any] | None = None) -> QueryRequest:
        """The request for ``query``, with what the call changes (``k=3``; a mode's option) over the fields."""
        given = {name: value for name, value in (call or {}).items() if name != "verbose"}  # verbose: LangChain's
        fields = {name: given.pop(name) if name in given else getattr(self, name) for name in Query.FIELDS}
        options = {**self.options, **(given.pop("options", None) or {})}
        return self.engine.queries.request(Query.build(query, **fields, options=options), **given)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[LCDocument]:  # noqa: ANN401 - the call's own k, mode, options
        result = self.engine.queries.run(self._request(query, kwargs))
        chunks = result.context.chunks if result.context is not None else result.results
        return [to_langchain(chunk, rank=i + 1) for i, chunk in enumerate(chunks)]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[LCDocument]:  # noqa: ANN401
        # LangChain's default drops the call's keywords (k=3): pass them on to the worker thread.
        return await run_in_executor(None, self._get_relevant_documents, query, run_manager=run_manager.get_sync(),
                                     **kwargs)



class RagloomTextSplitter(BaseDocumentTransformer):
    """Splits LangChain documents with a ragloom chunking strategy, at exact offsets.

    ``strategy`` is any registered name (``token``, ``boundary``, ``sentence`` or a plugin's)
    and ``params`` its parameters (``chunk_size=512, chunk_overlap=64``; ``target_size``,
    ``min_size``, ``max_size``, ``overlap``; ``max_chars``; ``tokenizer`` for all). Each
    output document carries the input's metadata plus ``start_index`` and ``end_index``
    (``page_content[start_index:end_index]`` of the input is exactly the chunk), the Markdown
    ``section_path`` (``"A > B"``), ``token_count``, ``chunk_index``, ``total_chunks`` and
    ``strategy``. With ``contextualize``, also the contextual ``prefix`` and the
    ``contextualized_text`` (prefix + text, what ragloom embeds), built from the input's
    ``title``, ``doc_type``, ``lens``, ``source`` and ``date`` metadata where present (the first
    H1, the inferred type, ``default``, none and undated otherwise).
    """

    def __init__(self, strategy: str | Chunker = "token", *, contextualize: bool = False,
                 prefix: PrefixSettings | None = None, **params: Any) -> None:  # noqa: ANN401 - the strategy's own
        if isinstance(strategy, Chunker):
            if params:
                raise InvalidParameterError(f"parameters {sorted(params)} apply to a strategy name; a Chunker "
                                            "instance is already built with its own: pass one or the other")
            self.chunker = strategy
        else:
            self.chunker = get_chunker(strategy, **params)
        self.contextualize = contextualize
        self.prefix = PrefixBuilder(prefix) if contextualize else None

    @classmethod
    def from_settings(cls, settings: Settings, *, strategy: str | None = None,
                      contextualize: bool = False) -> RagloomTextSplitter:
        """The splitter a workspace's ``[chunking]`` and ``[prefix]`` settings describe
        (``engine.settings``), so LangChain-side chunks match ragloom's own."""
        return cls(chunker_from_settings(settings.chunking, strategy), contextualize=contextualize,
                   prefix=settings.prefix)

    def chunks(self, text: str) -> list[Chunk]:
        """ragloom's own chunks of ``text`` (sections parsed first)."""
        return self.chunker.chunk(text)

    def split_text(self, text: str) -> list[str]:
        return [c.text for c in self.chunks(text)]

    def create_documents(self, texts: Iterable[str], metadatas: Iterable[dict[str, Any]] | None = None,
                         ) -> list[LCDocument]:
        texts = list(texts)
        metas = list(metadatas) if metadatas is not None else [{} for _ in texts]
        out: list[LCDocument] = []
        for text, metadata in zip(texts, metas, strict=True):
            out.extend(self._split(text, metadata))
        return out

    def split_documents(self, documents: Iterable[LCDocument]) -> list[LCDocument]:
        return [piece for d in documents for piece in self._split(d.page_content, d.metadata)]

    def transform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> list[LCDocument]:  # noqa: ANN401
        return self.split_documents(documents)

    def _split(self, text: str, metadata: dict[str, Any]) -> list[LCDocument]:
        chunks = self.chunks(text)
        prefixes: dict[tuple[str, ...], str] = {}
        source = _as_document(text, metadata) if self.prefix is not None and chunks else None
        out = []
        for c in chunks:
            meta = copy.deepcopy(metadata)
            meta.update({"start_index": c.start, "end_index": c.end, "section_path": c.section_path_str,
                         "token_count": c.token_count, "chunk_index": c.chunk_index, "total_chunks": c.total_chunks,
                         "strategy": c.strategy})
            if self.prefix is not None and source is not None:
                if c.section_path not in prefixes:
                    prefixes[c.section_path] = self.prefix(source, c.section_path)
                meta["prefix"] = prefixes[c.section_path]
                meta["contextualized_text"] = prefixes[c.section_path] + c.text
            out.append(LCDocument(page_content=c.text, metadata=meta))
        return out


def _day(value: object) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return parse_date(str(value)) if value else None


def _as_document(text: str, metadata: dict[str, Any]) -> Document:
    """The ragloom Document the prefix template reads (title, type, lens, source name, date)
    from a LangChain document's metadata, filled in the way ragloom's loader would."""
    source = str(metadata.get("source") or metadata.get("source_path") or "")
    name = source.replace("\\", "/").rsplit("/", 1)[-1]
    lens = str(metadata.get("lens") or "default")
    heading = next((s.title for s in parse_sections(text[:20000]) if s.level == 1 and s.title), "")
    title = str(metadata.get("title") or "") or heading or (title_from_filename(name.rsplit(".", 1)[0]) if name
                                                            else "Untitled")
    return Document(
        text=text, source_path=source, title=" ".join(title.split()), lens=lens,
        tenant=str(metadata.get("tenant") or "default"), media_type="text/markdown",
        # Only the prefix reads this value: identity and modification time do not apply.
        modified_at=datetime.fromtimestamp(0, tz=UTC), document_id="", file_hash="",
        doc_type=str(metadata.get("doc_type") or infer_doc_type(name, text, lens)),
        document_date=_day(metadata.get("date") or metadata.get("document_date")) or parse_date(name),
    )
