"""The LangChain adapters inside real chains (langchain-core's own fake chat model, no network)."""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from ragloom import chunk_text, get_tokenizer
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.errors import InvalidParameterError, MissingExtraError, UnknownNameError
from ragloom.integrations.langchain import RagloomRetriever, RagloomTextSplitter

from ..chunk.strategies import documents
from ..conftest import sample_engine

PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer from the context only and cite the sources.\n\n{context}"),
    ("human", "{question}"),
])
ANSWER = "The QuickBooks integration ships after the event bus migration [1]."


def format_docs(docs: list[LCDocument]) -> str:
    return "\n\n".join(f"[{d.metadata['rank']}] {d.metadata['title']} ({d.metadata['section_path']})\n{d.page_content}"
                       for d in docs)


class Recorder:
    """Passes a chain's prompt on unchanged, keeping it for the test to read."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, prompt: PromptValue) -> PromptValue:
        self.prompts.append(prompt.to_string())
        return prompt


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Engine:
    return sample_engine(tmp_path_factory.mktemp("lc") / "ws", materials)


def stored_text(engine: Engine, document_id: str) -> str:
    return str(engine.store.document("default", document_id)["text"])


# -- the retriever ---------------------------------------------------------------------------------


def test_retriever_answers_through_a_chain(loaded: Engine) -> None:
    retriever = RagloomRetriever(engine=loaded, k=4, mode="hybrid")
    recorder = Recorder()
    chain = ({"context": retriever | format_docs, "question": RunnablePassthrough()}
             | PROMPT | RunnableLambda(recorder) | FakeListChatModel(responses=[ANSWER]) | StrOutputParser())
    question = "When does the QuickBooks integration ship?"
    assert chain.invoke(question) == ANSWER
    docs = retriever.invoke(question)
    assert len(docs) == 4 and [d.metadata["rank"] for d in docs] == [1, 2, 3, 4]
    (prompt,) = recorder.prompts
    assert question in prompt
    for d in docs:  # every retrieved chunk reached the model, with its title
        assert d.page_content in prompt and d.metadata["title"] in prompt
    assert any("QuickBooks" in d.page_content for d in docs)


@pytest.mark.parametrize("mode,options", [("vector", {}), ("bm25", {}), ("hybrid", {}), ("balanced", {}),
                                          ("graph", {}), ("window", {}), ("dynamic", {"threshold": 0.5})])
def test_every_mode_gives_exact_chunks_with_their_provenance(loaded: Engine, mode: str, options: dict[str, Any]) -> None:
    docs = RagloomRetriever(engine=loaded, k=6, mode=mode, options=options).invoke("catalog integration event bus")
    result = loaded.query("catalog integration event bus", k=6, mode=mode, **options)
    assert [d.metadata["chunk_id"] for d in docs] == [r.chunk_id for r in result]
    for d, r in zip(docs, result, strict=True):
        meta = d.metadata
        assert stored_text(loaded, meta["document_id"])[meta["start"] : meta["end"]] == d.page_content == r.text
        assert meta["score"] == r.relevance and meta["raw_score"] == r.score  # the relevance the CLI prints
        assert meta["lens"] == r.lens and meta["source_path"] == meta["source"]
        assert meta["section_path"] == " > ".join(r.section_path) and meta["doc_type"] == r.doc_type
        assert meta["version_id"] and meta["valid_from"] and meta["retriever"]
        assert meta["document_date"] == (r.document_date.isoformat() if r.document_date else None)


def test_a_call_may_change_k_the_mode_and_its_options(loaded: Engine) -> None:
    retriever = RagloomRetriever(engine=loaded)
    question = "When does the QuickBooks integration ship?"
    assert len(retriever.invoke(question)) == loaded.settings.retrieval.k == 5
    assert len(retriever.invoke(question, k=1)) == 1 and len(retriever.invoke(question, k=7)) == 7
    assert len(asyncio.run(retriever.ainvoke(question, k=2))) == 2
    assert [len(docs) for docs in retriever.batch([question, question], k=3)] == [3, 3]
    assert retriever.k is None  # a call changes nothing for the next
    graph = retriever.invoke(question, mode="graph", k=3, hops=2)
    assert len(graph) == 3 and {d.metadata["retriever"] for d in graph} <= {"hybrid", "graph"}
    engineering = retriever.invoke(question, lenses=["engineering"], k=3)
    assert {d.metadata["lens"] for d in engineering} == {"engineering"}
    with pytest.raises(InvalidParameterError, match="unknown option 'threshold' for retrieval mode 'hybrid'"):
        retriever.invoke(question, threshold=0.5)


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid", "balanced", "graph", "window", "dynamic"])
def test_score_is_the_relevance_from_0_to_1_the_cli_prints(loaded: Engine, mode: str) -> None:
    docs = RagloomRetriever(engine=loaded, mode=mode).invoke("catalog integration event bus")
    scores = [d.metadata["score"] for d in docs]
    assert docs and all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    if mode in ("bm25", "hybrid", "balanced", "graph"):  # a share of the best: the first is 1
        assert scores[0] == 1.0 and docs[0].metadata["raw_score"] != 1.0


def test_graph_results_say_which_seed_and_edge_brought_them(loaded: Engine) -> None:
    docs = RagloomRetriever(engine=loaded, k=50, mode="graph").invoke("QuickBooks sync")
    ids = {d.metadata["chunk_id"] for d in docs}
    expanded = [d for d in docs if "via" in d.metadata]
    assert expanded
    for d in expanded:
        assert {"seed", "edge"} <= set(d.metadata["via"]) and d.metadata["via"]["seed"] in ids


def test_lenses_and_tenant_scope_the_results(loaded: Engine) -> None:
    docs = RagloomRetriever(engine=loaded, k=10, lenses=["engineering"]).invoke("roadmap risks")
    assert docs and {d.metadata["lens"] for d in docs} == {"engineering"}
    assert RagloomRetriever(engine=loaded, tenant="someone-else").invoke("roadmap risks") == []


def test_a_budget_returns_the_optimised_context_in_its_order(loaded: Engine) -> None:
    question = "What blocks the catalog integration?"
    docs = RagloomRetriever(engine=loaded, budget=1200, organize="relevance").invoke(question)
    context = loaded.query(question, budget=1200, organize="relevance").context
    assert context is not None and docs
    assert [(d.metadata["chunk_id"], d.page_content) for d in docs] == [(c.chunk_id, c.text) for c in context.chunks]
    counter = get_tokenizer(loaded.settings.chunking.tokenizer)
    assert sum(counter.count(d.page_content) for d in docs) <= context.budget


def test_async_and_batched_calls_match_the_sync_one(loaded: Engine) -> None:
    retriever = RagloomRetriever(engine=loaded, k=3, mode="bm25")
    questions = ["offline mode", "pricing tiers", "event bus migration"]
    expected = [retriever.invoke(q) for q in questions]
    assert asyncio.run(retriever.ainvoke(questions[0])) == expected[0]
    assert asyncio.run(retriever.abatch(questions)) == expected
    assert retriever.batch(questions) == expected


def test_bad_parameters_fail_when_the_retriever_is_built(loaded: Engine) -> None:
    with pytest.raises(InvalidParameterError, match="did you mean 'threshold'"):
        RagloomRetriever(engine=loaded, mode="dynamic", options={"treshold": 0.7})
    with pytest.raises(UnknownNameError, match="vector"):
        RagloomRetriever(engine=loaded, mode="vectr")
    with pytest.raises(InvalidParameterError, match=r"k \(0\) must be at least 1"):
        RagloomRetriever(engine=loaded, k=0)
    with pytest.raises(InvalidParameterError, match="reserve_tokens"):
        RagloomRetriever(engine=loaded, budget=10)


# -- the splitter ----------------------------------------------------------------------------------

STRATEGIES = st.one_of(
    st.builds(lambda size, overlap: ("token", {"chunk_size": size, "chunk_overlap": min(overlap, size - 1)}),
              st.integers(8, 600), st.integers(0, 100)),
    st.builds(lambda mn, extra: ("boundary", {"min_size": mn, "target_size": mn + extra, "max_size": 2 * mn + extra,
                                              "overlap": mn // 5}), st.integers(50, 600), st.integers(0, 400)),
    st.builds(lambda n: ("sentence", {"max_chars": n}), st.integers(20, 3000)),
)


def check_offsets(text: str, metadata: dict[str, Any], pieces: list[LCDocument]) -> None:
    previous = -1
    for i, p in enumerate(pieces):
        m = p.metadata
        assert text[m["start_index"] : m["end_index"]] == p.page_content  # exact, never found with str.find
        assert m["start_index"] >= previous
        previous = m["start_index"]
        assert m["chunk_index"] == i and m["total_chunks"] == len(pieces)
        assert {k: m[k] for k in metadata} == metadata  # the input's metadata is kept


@given(data=st.data(), choice=STRATEGIES)
def test_splitter_offsets_are_exact_on_real_text(real_corpus: list[tuple[str, str]], data: st.DataObject,
                                                 choice: tuple[str, dict[str, Any]]) -> None:
    name, text = data.draw(st.sampled_from(real_corpus))
    a = data.draw(st.integers(0, len(text)))
    text = text[a : data.draw(st.integers(a, min(len(text), a + 20000)))]  # any part, cut anywhere
    strategy, params = choice
    splitter = RagloomTextSplitter(strategy, **params)
    metadata = {"source": name, "page": 3}
    pieces = splitter.split_documents([LCDocument(page_content=text, metadata=metadata)])
    check_offsets(text, metadata, pieces)
    assert [(p.metadata["start_index"], p.metadata["end_index"]) for p in pieces] == \
        [(c.start, c.end) for c in chunk_text(text, strategy, **params)]
    if strategy == "token":
        assert all(p.metadata["token_count"] <= params["chunk_size"] for p in pieces)


@given(text=documents, choice=STRATEGIES)
def test_splitter_offsets_are_exact_on_awkward_text(text: str, choice: tuple[str, dict[str, Any]]) -> None:
    strategy, params = choice
    pieces = RagloomTextSplitter(strategy, **params).create_documents([text], [{"n": 1}])
    check_offsets(text, {"n": 1}, pieces)
    assert [p.page_content for p in pieces] == [c.text for c in chunk_text(text, strategy, **params)]


def test_splitter_prefixes_match_ragloom_ingest(loaded: Engine, materials: Path) -> None:
    path = materials / "engineering" / "architecture-catalog-sync.md"
    document, chunks = loaded.chunk_file(path, lens="engineering")
    splitter = RagloomTextSplitter.from_settings(loaded.settings, contextualize=True)
    metadata = {"source": document.source_path, "title": document.title, "doc_type": document.doc_type,
                "lens": "engineering", "date": document.document_date}
    pieces = splitter.split_documents([LCDocument(page_content=document.text, metadata=metadata)])
    assert [(p.page_content, p.metadata["start_index"], p.metadata["section_path"], p.metadata["prefix"])
            for p in pieces] == [(c.text, c.start, c.section_path_str, c.prefix) for c in chunks]
    assert all(p.metadata["contextualized_text"] == p.metadata["prefix"] + p.page_content for p in pieces)
    # Without metadata the title comes from the first heading and the type is inferred.
    bare = RagloomTextSplitter("sentence", contextualize=True).split_text(document.text)
    assert bare == [c.text for c in chunk_text(document.text, "sentence")]
    first = RagloomTextSplitter("sentence", contextualize=True).create_documents([document.text])[0]
    assert first.metadata["prefix"].startswith(f"[Document: {document.title} - Type: ")
    assert "prefix" not in RagloomTextSplitter("sentence").create_documents([document.text])[0].metadata


def test_splitter_parameters_are_checked() -> None:
    with pytest.raises(InvalidParameterError, match=r"chunk_overlap \(200\) must be smaller than chunk_size \(150\)"):
        RagloomTextSplitter("token", chunk_size=150, chunk_overlap=200)
    with pytest.raises(UnknownNameError, match="boundary"):
        RagloomTextSplitter("paragraphs")
    with pytest.raises(InvalidParameterError, match="Chunker instance"):
        RagloomTextSplitter(RagloomTextSplitter("token").chunker, chunk_size=10)


class HashingEmbeddings(Embeddings):
    """ragloom's hashing embedder through LangChain's Embeddings interface."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self.inner.embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self.inner.embed_query(text)))


def test_splitter_inside_an_indexing_chain_then_a_question(materials: Path) -> None:
    sources = sorted((materials / "engineering").glob("*.md"))
    loaded_docs = [LCDocument(page_content=p.read_text(encoding="utf-8"), metadata={"source": p.name}) for p in sources]
    splitter = RagloomTextSplitter("boundary", target_size=400, min_size=250, max_size=700, overlap=50,
                                   contextualize=True)
    store = InMemoryVectorStore(HashingEmbeddings())
    indexing = RunnableLambda(splitter.transform_documents) | RunnableLambda(store.add_documents)
    ids = indexing.invoke(loaded_docs)
    pieces = splitter.transform_documents(loaded_docs)
    assert len(ids) == len(pieces) > len(sources)
    for doc in loaded_docs:
        check_offsets(doc.page_content, doc.metadata, [p for p in pieces if p.metadata["source"] == doc.metadata["source"]])
    assert asyncio.run(splitter.atransform_documents(loaded_docs)) == pieces

    recorder = Recorder()
    answer = ({"context": store.as_retriever(search_kwargs={"k": 3}) | RunnableLambda(
                  lambda docs: "\n\n".join(d.metadata["contextualized_text"] for d in docs)),
               "question": RunnablePassthrough()}
              | PROMPT | RunnableLambda(recorder) | FakeListChatModel(responses=[ANSWER]) | StrOutputParser())
    assert answer.invoke("event bus migration") == ANSWER
    assert recorder.prompts[0].count("[Document: ") == 3  # the chunks reached the model with their context


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core.retrievers", None)  # what an absent package looks like
    monkeypatch.delitem(sys.modules, "ragloom.integrations.langchain")
    with pytest.raises(MissingExtraError, match=r"pip install 'ragloom\[langchain\]'"):
        importlib.import_module("ragloom.integrations.langchain")
