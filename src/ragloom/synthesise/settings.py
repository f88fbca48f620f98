"""The ``[llm]`` settings: which provider writes answers and reports, and how it is reached.

This module depends on pydantic only, so that the configuration can import it without pulling
in an LLM SDK. API keys are never stored here: ``api_key_env`` names the environment variable
that holds the key.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ProviderName = Literal["none", "anthropic", "openai"]

#: Provider name -> (default model, default strongest model, default key variable, base URL variable).
PROVIDER_DEFAULTS: dict[str, tuple[str, str, str, str]] = {
    "anthropic": ("claude-sonnet-4-6", "claude-opus-4-1", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "openai": ("gpt-5-mini", "gpt-5", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
}

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LLMSettings(BaseModel):
    """``[llm]``: the language model that writes; ``provider = "none"`` is the offline writer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ProviderName = Field(
        "none", description="none (the offline extractive writer), anthropic, or openai (any OpenAI-compatible URL)")
    model: str | None = Field(None, description="model name; empty for the provider's default")
    strongest_model: str | None = Field(
        None, description="the model --opus picks; empty for the provider's strongest default")
    base_url: str | None = Field(
        None,
        description="endpoint; ANTHROPIC_BASE_URL / OPENAI_BASE_URL override it (Ollama: http://localhost:11434/v1)")
    api_key_env: str | None = Field(
        None, description="name of the environment variable holding the key (ANTHROPIC_API_KEY / OPENAI_API_KEY)")
    timeout: float = Field(60.0, gt=0, description="seconds to wait for the endpoint, per attempt")
    max_retries: int = Field(3, ge=0, le=10, description="retries on rate limits (429), overload (529) and 5xx")
    max_tokens: int = Field(2000, ge=1, description="tokens the model may write per answer or report section")
    temperature: float | None = Field(None, ge=0, le=2, description="empty for the provider's default")

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        # A key pasted here would end up in a TOML file and in logs; refuse it loudly.
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(
                f"llm.api_key_env must name an environment variable (like ANTHROPIC_API_KEY), not hold the key; "
                f"got a value of {len(value)} characters that is not a variable name")
        return value

    @field_validator("model", "strongest_model", "base_url")
    @classmethod
    def _empty_is_default(cls, value: str | None) -> str | None:
        return (value.strip() or None) if value is not None else None

    def key_variable(self) -> str:
        """The environment variable the API key is read from."""
        if self.api_key_env:
            return self.api_key_env
        return PROVIDER_DEFAULTS[self.provider][2] if self.provider in PROVIDER_DEFAULTS else ""

    def model_name(self, *, strongest: bool = False) -> str:
        """The model to use: the configured one, else the provider's default."""
        if self.provider not in PROVIDER_DEFAULTS:
            return ""
        default, best, _, _ = PROVIDER_DEFAULTS[self.provider]
        if strongest:
            return self.strongest_model or best
        return self.model or default
