from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragloom.errors import ConfigError, LLMError, UnknownNameError
from ragloom.synthesise import (
    AnthropicLLM,
    LLMSettings,
    OpenAICompatibleLLM,
    llm_from_settings,
    writer_from_settings,
)
from ragloom.synthesise.llm import LOCAL_KEY


def test_defaults_are_the_offline_writer() -> None:
    settings = LLMSettings()
    assert settings.provider == "none"
    assert (settings.timeout, settings.max_retries, settings.max_tokens) == (60.0, 3, 2000)
    assert llm_from_settings(settings, environ={}) is None


def test_settings_are_strict_and_frozen() -> None:
    with pytest.raises(ValidationError):
        LLMSettings(provider="anthropic", api_key="sk-ant-123")  # type: ignore[call-arg]  # keys never live here
    with pytest.raises(UnknownNameError, match="unknown writer 'gemini'; choose one of: anthropic, none, openai"):
        writer_from_settings(LLMSettings(provider="gemini"), environ={})
    with pytest.raises(ValidationError, match="not hold the key"):
        LLMSettings(provider="anthropic", api_key_env="sk-ant-api03-abcdef")
    with pytest.raises(ValidationError):
        LLMSettings(timeout=0)
    settings = LLMSettings(provider="anthropic")
    with pytest.raises(ValidationError):
        settings.model = "x"  # type: ignore[misc]


def test_asking_for_a_model_without_a_provider_is_an_error() -> None:
    with pytest.raises(ConfigError, match="llm.provider is 'none'"):
        llm_from_settings(LLMSettings(), strongest=True, environ={})
    with pytest.raises(ConfigError, match="'gpt-x'"):
        llm_from_settings(LLMSettings(), model="gpt-x", environ={})


def test_anthropic_from_settings_reads_the_named_variable_and_picks_models() -> None:
    settings = LLMSettings(provider="anthropic", api_key_env="MY_CLAUDE_KEY", timeout=5, max_retries=1)
    environ = {"MY_CLAUDE_KEY": "sk-test"}
    llm = llm_from_settings(settings, environ=environ)
    assert isinstance(llm, AnthropicLLM)
    assert llm.model == "claude-sonnet-4-6" and llm.timeout == 5 and llm.max_retries == 1
    strongest = llm_from_settings(settings, strongest=True, environ=environ)
    assert strongest is not None and strongest.model == "claude-opus-4-1"
    chosen = llm_from_settings(settings, model="claude-haiku-4-5", strongest=True, environ=environ)
    assert chosen is not None and chosen.model == "claude-haiku-4-5"  # an explicit model wins
    custom = LLMSettings(provider="anthropic", strongest_model="claude-opus-4-8")
    best = llm_from_settings(custom, strongest=True, environ={"ANTHROPIC_API_KEY": "k"})
    assert best is not None and best.model == "claude-opus-4-8"


def test_environment_base_url_overrides_the_setting() -> None:
    settings = LLMSettings(provider="anthropic", base_url="http://from-settings:1")
    llm = llm_from_settings(settings, environ={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://from-env:2"})
    assert isinstance(llm, AnthropicLLM) and llm.endpoint == "http://from-env:2/v1/messages"
    llm = llm_from_settings(settings, environ={"ANTHROPIC_API_KEY": "k"})
    assert isinstance(llm, AnthropicLLM) and llm.endpoint == "http://from-settings:1/v1/messages"


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(LLMError, match="no API key configured; set the environment variable ANTHROPIC_API_KEY") as e:
        llm_from_settings(LLMSettings(provider="anthropic"), environ={"ANTHROPIC_API_KEY": "  "})
    assert e.value.reason == "no_key" and e.value.provider == "anthropic"
    with pytest.raises(LLMError, match="OPENAI_API_KEY") as e:
        llm_from_settings(LLMSettings(provider="openai"), environ={})
    assert "https://api.openai.com/v1/chat/completions" in str(e.value)


def test_local_openai_compatible_endpoint_needs_no_key() -> None:
    settings = LLMSettings(provider="openai", base_url="http://localhost:11434/v1", model="llama3.2")
    llm = llm_from_settings(settings, environ={})
    assert isinstance(llm, OpenAICompatibleLLM)
    assert not llm.official and llm.model == "llama3.2"
    assert llm._client.api_key == LOCAL_KEY
    env = {"OPENAI_BASE_URL": "https://api.openai.com/v1"}  # the environment points back at OpenAI
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        llm_from_settings(settings, environ=env)
