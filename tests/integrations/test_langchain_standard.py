"""LangChain's own standard tests of a retriever (``langchain-tests``), run on
:class:`~ragloom.integrations.langchain.RagloomRetriever` over a small workspace (the hashing
embedder: no model to load)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.integrations.langchain import RagloomRetriever

from ..conftest import fast_settings


@pytest.fixture(scope="module")
def small_engine(tmp_path_factory: pytest.TempPathFactory, materials: Path) -> Engine:
    engine = Engine(tmp_path_factory.mktemp("lc-standard") / "ws", settings=fast_settings(), embedder=HashingEmbedder())
    for lens in ("engineering", "team-structured"):
        assert engine.ingest(materials / lens, lens=lens).ok
    return engine


class TestRagloomRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _engine(self, small_engine: Engine) -> None:
        self.engine = small_engine  # the properties below cannot take fixtures

    @property
    def retriever_constructor(self) -> type[RagloomRetriever]:
        return RagloomRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"engine": self.engine}

    @property
    def retriever_query_example(self) -> str:
        return "When does the event bus migration finish?"
