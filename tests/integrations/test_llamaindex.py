"""The LlamaIndex adapter: the sentence retriever and the dynamic-window postprocessor in a query pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core import get_response_synthesizer
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from pydantic import ValidationError

from ragloom.engine import Engine
from ragloom.errors import InvalidParameterError
from ragloom.integrations.llamaindex import DynamicWindowPostprocessor, SentenceRetriever

from ..conftest import sample_engine


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Engine:
    return sample_engine(tmp_path_factory.mktemp("w") / "ws", materials)


def test_llamaindex_postprocessor_in_a_query_pipeline(loaded: Engine) -> None:
    query_engine = RetrieverQueryEngine(
        retriever=SentenceRetriever(engine=loaded, top_k=6),
        node_postprocessors=[DynamicWindowPostprocessor(engine=loaded, threshold=-1.0, max_expand=2)],
        response_synthesizer=get_response_synthesizer(llm=MockLLM(), response_mode="compact"),
    )
    response = query_engine.query("When does the event bus migration finish?")
    assert response.source_nodes
    for n in response.source_nodes:
        meta = n.node.metadata
        text = loaded.store.document("default", meta["document_id"])["text"]
        assert text[meta["start_char"] : meta["end_char"]] == n.node.text
        assert meta["sentences"] >= 1  # merged windows may hold more than 2 * max_expand + 1
    assert any(n.node.metadata["sentences"] > 1 for n in response.source_nodes)


@pytest.mark.parametrize("top_k", [0, -1, 2.5, True])
def test_the_retriever_refuses_a_top_k_below_one(loaded: Engine, top_k: object) -> None:
    with pytest.raises(InvalidParameterError, match=r"top_k \(.*\) must be a whole number, 1 or more"):
        SentenceRetriever(engine=loaded, top_k=top_k)  # type: ignore[arg-type]


@pytest.mark.parametrize("options", [{"threshold": 2.0}, {"max_expand": -1}, {"query_floor": -3.0},
                                     {"adaptive_quantile": 1.0}])
def test_the_postprocessor_refuses_values_its_settings_would(loaded: Engine, options: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        DynamicWindowPostprocessor(engine=loaded, **options)
