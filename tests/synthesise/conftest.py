from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.synthesise.fake_llm import FakeLLMServer


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
