"""The providers against a local server that speaks both APIs, through the official SDKs."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from ragloom.errors import LLMError, MissingExtraError
from ragloom.synthesise import LLM, AnthropicLLM, OpenAICompatibleLLM
from tests.synthesise.fake_llm import FakeLLMServer, Reply, text_reply

PROVIDERS = ["anthropic", "openai"]


def make_llm(provider: str, url: str, **options: object) -> AnthropicLLM | OpenAICompatibleLLM:
    if provider == "anthropic":
        return AnthropicLLM("claude-test", api_key="sk-test", base_url=url, **options)  # type: ignore[arg-type]
    return OpenAICompatibleLLM("gpt-test", api_key="sk-test", base_url=url + "/v1", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_complete_sends_system_prompt_model_and_key(provider: str, llm_server: FakeLLMServer) -> None:
    llm_server.push(text_reply("The catalog ships in Q3 [1]."))
    llm = make_llm(provider, llm_server.url, temperature=0.2)
    assert isinstance(llm, LLM)
    assert llm.complete("SYSTEM RULES", "THE PROMPT", max_tokens=123) == "The catalog ships in Q3 [1]."
    (request,) = llm_server.requests
    body = request.body
    assert body["model"] == llm.model and body["max_tokens"] == 123 and body["temperature"] == 0.2
    assert not body.get("stream")
    if provider == "anthropic":
        assert request.path == "/v1/messages"
        assert body["system"] == "SYSTEM RULES"
        assert body["messages"] == [{"role": "user", "content": "THE PROMPT"}]
        # The SDK sends the key as x-api-key (1.x) or as a bearer token (2.x).
        assert request.headers.get("x-api-key") == "sk-test" or request.headers["authorization"] == "Bearer sk-test"
    else:
        assert request.path == "/v1/chat/completions"
        assert body["messages"] == [{"role": "system", "content": "SYSTEM RULES"},
                                    {"role": "user", "content": "THE PROMPT"}]
        assert request.headers["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_yields_several_deltas_that_join_to_the_text(provider: str, llm_server: FakeLLMServer) -> None:
    text = "The roadmap says June [1]; engineering says August [2]. Both cannot hold."
    llm_server.push(text_reply(text, chunks=6))
    deltas = list(make_llm(provider, llm_server.url).stream("S", "P", max_tokens=50))
    assert len(deltas) >= 5
    assert "".join(deltas) == text
    assert llm_server.requests[0].body["stream"] is True


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rate_limit_is_retried(provider: str, llm_server: FakeLLMServer) -> None:
    llm_server.push(Reply(status=429, headers={"retry-after": "0"}), text_reply("after the retry"))
    assert make_llm(provider, llm_server.url, max_retries=2).complete("S", "P", max_tokens=10) == "after the retry"
    assert len(llm_server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retry_after_is_honoured(provider: str, llm_server: FakeLLMServer) -> None:
    llm_server.push(Reply(status=529 if provider == "anthropic" else 503, headers={"retry-after": "1"}),
                    text_reply("later"))
    assert make_llm(provider, llm_server.url, max_retries=1).complete("S", "P", max_tokens=10) == "later"
    first, second = llm_server.requests
    assert second.at - first.at >= 0.95  # the SDK's own backoff alone would wait at most 0.5 s


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rate_limit_exhausted_is_one_clear_line(provider: str, llm_server: FakeLLMServer) -> None:
    llm_server.push(Reply(status=429, headers={"retry-after": "0"}, error_message="slow down"))
    llm = make_llm(provider, llm_server.url, max_retries=1)
    with pytest.raises(LLMError) as e:
        llm.complete("S", "P", max_tokens=10)
    message = str(e.value)
    assert e.value.reason == "rate_limited" and e.value.status == 429
    assert message.startswith(f"{provider} at {llm.endpoint}: rate limited (429) after 1 retry (slow down)")
    assert "llm.max_retries" in message and "\n" not in message
    assert len(llm_server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_is_reported_within_seconds(provider: str, llm_server: FakeLLMServer) -> None:
    llm_server.push(Reply(delay=4.0))
    llm = make_llm(provider, llm_server.url, timeout=0.5, max_retries=1)
    began = time.monotonic()
    with pytest.raises(LLMError, match=r"timed out after 0\.5 s \(2 attempts\); raise llm\.timeout") as e:
        llm.complete("S", "P", max_tokens=10)
    assert time.monotonic() - began < 3.5
    assert e.value.reason == "timeout" and llm.endpoint in str(e.value)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_that_stalls_times_out(provider: str, llm_server: FakeLLMServer) -> None:
    llm_server.push(Reply(pieces=("Hello ", "world"), stall=4.0))
    llm = make_llm(provider, llm_server.url, timeout=0.5, max_retries=0)
    received: list[str] = []
    began = time.monotonic()
    with pytest.raises(LLMError, match="timed out after 0.5 s") as e:
        for delta in llm.stream("S", "P", max_tokens=10):
            received.append(delta)
    assert received == ["Hello "]
    assert time.monotonic() - began < 3.0
    assert e.value.reason == "timeout"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_error_event_inside_a_stream(provider: str, llm_server: FakeLLMServer) -> None:
    llm_server.push(Reply(pieces=("Hello ", "world"), stream_error="Overloaded"))
    llm = make_llm(provider, llm_server.url)
    received: list[str] = []
    with pytest.raises(LLMError) as e:
        for delta in llm.stream("S", "P", max_tokens=10):
            received.append(delta)
    assert received == ["Hello "]
    assert str(e.value) == (f"{provider} at {llm.endpoint}: the server reported an error while answering "
                            "(Overloaded); try again")
    assert e.value.reason == "stream_error"


@pytest.mark.parametrize(("provider", "status", "what"), [("anthropic", 500, "server error"),
                                                          ("anthropic", 529, "overloaded"),
                                                          ("openai", 500, "server error")])
def test_server_error_after_retries(provider: str, status: int, what: str, llm_server: FakeLLMServer) -> None:
    llm_server.push(Reply(status=status, headers={"retry-after-ms": "10"}, error_message="boom"))
    llm = make_llm(provider, llm_server.url, max_retries=2)
    with pytest.raises(LLMError) as e:
        llm.complete("S", "P", max_tokens=10)
    assert str(e.value) == (f"{provider} at {llm.endpoint}: {what} status {status} after 2 retries (boom); "
                            "try again later")
    assert e.value.reason == "server_error" and e.value.status == status
    assert len(llm_server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rejected_key_names_the_variable(provider: str, llm_server: FakeLLMServer) -> None:
    llm_server.push(Reply(status=401, error_message="invalid x-api-key"))
    llm = make_llm(provider, llm_server.url)
    with pytest.raises(LLMError, match=r"rejected \(401: invalid x-api-key\); put a valid key in") as e:
        llm.complete("S", "P", max_tokens=10)
    assert llm.api_key_env in str(e.value) and e.value.reason == "auth"
    assert len(llm_server.requests) == 1  # a bad key is not retried


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("streaming", [False, True])
def test_endpoint_down(provider: str, streaming: bool) -> None:
    llm = make_llm(provider, f"http://127.0.0.1:{_closed_port()}", max_retries=0, timeout=2)
    with pytest.raises(LLMError) as e:
        if streaming:
            list(llm.stream("S", "P", max_tokens=10))
        else:
            llm.complete("S", "P", max_tokens=10)
    message = str(e.value)
    assert e.value.reason == "connection"
    assert message.startswith(f"{provider} at {llm.endpoint}: cannot connect (")
    assert "refused" in message.lower() and "llm.base_url" in message and "\n" not in message


def test_missing_key() -> None:
    with pytest.raises(LLMError, match="no API key configured; set the environment variable ANTHROPIC_API_KEY"):
        AnthropicLLM("claude-test", api_key=None)
    with pytest.raises(LLMError, match="set the environment variable MY_KEY"):
        OpenAICompatibleLLM("gpt-test", api_key="", api_key_env="MY_KEY")


def test_local_endpoint_gets_a_placeholder_key_and_max_tokens(llm_server: FakeLLMServer) -> None:
    llm = OpenAICompatibleLLM("llama3.2", base_url=llm_server.url + "/v1")
    llm.complete("S", "P", max_tokens=7)
    request = llm_server.requests[0]
    assert request.headers["authorization"] == "Bearer not-needed"
    assert request.body["max_tokens"] == 7 and "max_completion_tokens" not in request.body
    official = OpenAICompatibleLLM("gpt-5", api_key="k")
    assert official._request("S", "P", 7)["max_completion_tokens"] == 7  # OpenAI's newer models want this one


def test_empty_answer_is_an_error(llm_server: FakeLLMServer) -> None:
    llm_server.push(Reply(pieces=("",)))
    with pytest.raises(LLMError, match="returned no text") as e:
        make_llm("anthropic", llm_server.url).complete("S", "P", max_tokens=10)
    assert e.value.reason == "empty"


@pytest.mark.parametrize(("provider", "package"), [("anthropic", "anthropic"), ("openai", "openai")])
def test_missing_sdk_names_the_extra(provider: str, package: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # what an uninstalled package looks like to import
    with pytest.raises(MissingExtraError, match=rf"'{package}'.*pip install 'ragloom\[llm\]'"):
        make_llm(provider, "http://127.0.0.1:1")


def test_constructor_validates_eagerly() -> None:
    with pytest.raises(ValueError, match="timeout"):
        AnthropicLLM("m", api_key="k", timeout=0)
    with pytest.raises(ValueError, match="max_retries"):
        OpenAICompatibleLLM("m", api_key="k", max_retries=-1)
    with pytest.raises(ValueError, match="llm.model"):
        AnthropicLLM(" ", api_key="k")
    with pytest.raises(ValueError, match="max_tokens"):
        AnthropicLLM("m", api_key="k").stream("S", "P", max_tokens=0)


def test_importing_ragloom_does_not_import_the_sdks() -> None:
    code = ("import sys, ragloom.synthesise as s; s.ExtractiveWriter(); s.LLMSettings(); "
            "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"
