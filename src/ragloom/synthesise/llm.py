"""Language model providers, through their official client libraries.

- :class:`AnthropicLLM`: the ``anthropic`` SDK, Messages API.
- :class:`OpenAICompatibleLLM`: the ``openai`` SDK, Chat Completions, at any base URL
  (OpenAI, Ollama, vLLM, the llama.cpp server, LM Studio).

The SDKs are imported when a provider is built, never before (they are the ``llm`` extra).
Retries are the SDKs' own: ``max_retries`` attempts more on 408, 409, 429 and 5xx (529
"overloaded" included) and on connection errors and timeouts, waiting what the server's
``retry-after-ms`` or ``retry-after`` header asks (the openai SDK only up to 60 s), else an
exponential backoff from 0.5 s to 8 s. Every SDK error comes out as one
:class:`~ragloom.errors.LLMError` line that names the provider, the endpoint and the fix.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from ragloom.config import PROVIDER_DEFAULTS, LLMSettings
from ragloom.errors import ConfigError, InvalidParameterError, LLMError, MissingExtraError

ANTHROPIC_URL = "https://api.anthropic.com"
OPENAI_URL = "https://api.openai.com/v1"
#: Sent as the key to a local OpenAI-compatible server, which wants a header but checks nothing.
LOCAL_KEY = "not-needed"
#: Characters of a server's error message kept in an LLMError.
DETAIL_CHARS = 200


@runtime_checkable
class LLM(Protocol):
    """A language model that writes text from a system prompt and a user prompt."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    def complete(self, system: str, prompt: str, *, max_tokens: int) -> str:
        """The whole answer at once."""
        ...

    def stream(self, system: str, prompt: str, *, max_tokens: int) -> Iterator[str]:
        """The answer as text deltas, as the model writes them."""
        ...


def _import_sdk(package: str, purpose: str) -> Any:
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        raise MissingExtraError(package, "llm", purpose) from exc


def is_openai_host(base_url: str) -> bool:
    """Whether ``base_url`` is OpenAI's own API (which needs a key and its newer parameters)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith(".openai.com")


def _one_line(text: str, limit: int = DETAIL_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _server_message(exc: Exception) -> str:
    """The server's own error message (``{"error": {"message": …}}``), else the SDK's."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return _one_line(str(error["message"]))
        if body.get("message"):
            return _one_line(str(body["message"]))
    return _one_line(str(getattr(exc, "message", "") or exc))


def _root_cause(exc: BaseException) -> str:
    """The innermost cause of a connection error ("[Errno 111] Connection refused")."""
    *_, innermost = _causes(exc)
    return _one_line(str(innermost) or type(innermost).__name__, 120)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _timed_out(exc: BaseException) -> bool:
    """Whether a timeout is behind ``exc``: the SDKs wrap a read timeout met while streaming
    in a plain connection error."""
    return any("Timeout" in type(e).__name__ for e in _causes(exc))


def _is_transport_error(exc: BaseException) -> bool:
    """An error of the SDKs' HTTP layer (httpx or httpx2) that the SDK let through unwrapped,
    as happens while reading a stream."""
    return type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2")


class _Provider:
    """What both providers share: validation, the error mapping, the streaming guard."""

    name = ""
    endpoint = ""
    _sdk: Any

    def __init__(self, model: str, *, timeout: float, max_retries: int, temperature: float | None,
                 api_key_env: str, url_setting: str) -> None:
        if not model or not model.strip():
            raise InvalidParameterError(f"model ({model!r}) must name a model; set llm.model")
        if not timeout > 0:
            raise InvalidParameterError(f"timeout ({timeout}) must be more than 0 seconds; set llm.timeout")
        if max_retries < 0:
            raise InvalidParameterError(f"max_retries ({max_retries}) must be 0 or more; set llm.max_retries")
        if temperature is not None and not 0 <= temperature <= 2:
            raise InvalidParameterError(f"temperature ({temperature}) must be between 0 and 2; set llm.temperature")
        self._model = model.strip()
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.temperature = temperature
        self.api_key_env = api_key_env
        self._url_setting = url_setting

    @property
    def model(self) -> str:
        return self._model

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, endpoint={self.endpoint!r})"

    def _fail(self, message: str, reason: str, status: int | None = None) -> LLMError:
        return LLMError(f"{self.name} at {self.endpoint}: {message}", provider=self.name, endpoint=self.endpoint,
                        reason=reason, status=status)

    def _no_key(self) -> LLMError:
        return self._fail(f"no API key configured; set the environment variable {self.api_key_env} "
                          "(llm.api_key_env names the variable to read)", "no_key")

    def _error(self, exc: BaseException) -> LLMError:
        """One LLMError line for an SDK (or transport) error."""
        sdk = self._sdk
        attempts = f"{self.max_retries + 1} attempt{'s' if self.max_retries else ''}"
        retries = f"{self.max_retries} retr{'y' if self.max_retries == 1 else 'ies'}"
        if isinstance(exc, sdk.APITimeoutError) or _timed_out(exc):
            return self._fail(f"timed out after {self.timeout:g} s ({attempts}); raise llm.timeout or check that "
                              "the endpoint is not overloaded", "timeout")
        if isinstance(exc, sdk.APIConnectionError) or _is_transport_error(exc):
            return self._fail(f"cannot connect ({_root_cause(exc)}); check that the server is running and that "
                              f"{self._url_setting} points at it", "connection")
        if isinstance(exc, sdk.APIStatusError):
            status = int(exc.status_code)
            detail = _server_message(exc)
            if status == 401:
                return self._fail(f"the API key was rejected (401: {detail}); put a valid key in "
                                  f"{self.api_key_env}", "auth", status)
            if status == 403:
                return self._fail(f"permission denied (403: {detail}); check that the key in {self.api_key_env} "
                                  f"may use the model {self.model!r}", "auth", status)
            if status == 404:
                return self._fail(f"not found (404: {detail}); check llm.model ({self.model!r}) and "
                                  f"{self._url_setting}", "not_found", status)
            if status == 429:
                return self._fail(f"rate limited (429) after {retries} ({detail}); wait and try "
                                  "again, or raise llm.max_retries", "rate_limited", status)
            if status >= 500:
                what = "overloaded" if status == 529 else "server error"
                return self._fail(f"{what} status {status} after {retries} ({detail}); try again "
                                  "later", "server_error", status)
            if status in (400, 413, 422):
                return self._fail(f"the request was refused ({status}: {detail}); shorten the context, lower "
                                  "llm.max_tokens or unset llm.temperature", "bad_request", status)
            if status >= 400:
                return self._fail(f"status {status} ({detail})", "status", status)
        if isinstance(exc, sdk.APIError):  # an error event inside a streamed answer, or a garbled reply
            return self._fail(f"the server reported an error while answering ({_server_message(exc)}); try again",
                              "stream_error")
        return self._fail(f"{type(exc).__name__}: {_one_line(str(exc))}", "error")

    def _guard(self, deltas: Callable[[], Iterator[str]]) -> Iterator[str]:
        """Yield from ``deltas()``, turning SDK and transport errors into LLMError."""
        try:
            yield from deltas()
        except LLMError:
            raise
        except Exception as exc:
            if isinstance(exc, self._sdk_errors()) or _is_transport_error(exc):
                raise self._error(exc) from exc
            raise

    def _sdk_errors(self) -> tuple[type[BaseException], ...]:
        raise NotImplementedError  # pragma: no cover - each provider names its base class

    def _empty(self, why: str) -> LLMError:
        return self._fail(f"the model {self.model!r} returned no text ({why}); raise llm.max_tokens or check the "
                          "prompt", "empty")


class AnthropicLLM(_Provider):
    """Claude through the ``anthropic`` SDK (Messages API)."""

    name = "anthropic"

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, max_retries: int = 3, temperature: float | None = None,
                 api_key_env: str = "ANTHROPIC_API_KEY") -> None:
        super().__init__(model, timeout=timeout, max_retries=max_retries, temperature=temperature,
                         api_key_env=api_key_env, url_setting="llm.base_url (or ANTHROPIC_BASE_URL)")
        self.base_url = (base_url or ANTHROPIC_URL).rstrip("/")
        self.endpoint = f"{self.base_url}/v1/messages"
        if not api_key:
            raise self._no_key()
        self._sdk = _import_sdk("anthropic", "writing with Anthropic models")
        # The key is passed explicitly, so the SDK reads no credentials of its own from the
        # environment or its profile files: what ragloom's settings say is what is used.
        self._client: Any = self._sdk.Anthropic(api_key=api_key, base_url=self.base_url, timeout=self.timeout,
                                                max_retries=self.max_retries)

    def _sdk_errors(self) -> tuple[type[BaseException], ...]:
        return (self._sdk.AnthropicError,)

    def _request(self, system: str, prompt: str, max_tokens: int) -> dict[str, Any]:
        if max_tokens < 1:
            raise InvalidParameterError(f"max_tokens ({max_tokens}) must be at least 1; set llm.max_tokens")
        request: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "system": system,
                                   "messages": [{"role": "user", "content": prompt}]}
        if self.temperature is not None:
            # A raw body field: the anthropic SDK dropped the keyword in 2.x (newer models fix
            # their sampling); a model that refuses it answers 400, which names the setting.
            request["extra_body"] = {"temperature": self.temperature}
        return request

    def complete(self, system: str, prompt: str, *, max_tokens: int) -> str:
        try:
            message = self._client.messages.create(**self._request(system, prompt, max_tokens))
        except self._sdk.AnthropicError as exc:
            raise self._error(exc) from exc
        text = "".join(str(getattr(b, "text", "")) for b in message.content if getattr(b, "type", "") == "text")
        if not text.strip():
            raise self._empty(f"stop reason {getattr(message, 'stop_reason', None)}")
        return text

    def stream(self, system: str, prompt: str, *, max_tokens: int) -> Iterator[str]:
        request = self._request(system, prompt, max_tokens)

        def deltas() -> Iterator[str]:
            with self._client.messages.stream(**request) as events:
                for text in events.text_stream:
                    if text:
                        yield str(text)

        return self._guard(deltas)


class OpenAICompatibleLLM(_Provider):
    """Any Chat Completions endpoint through the ``openai`` SDK.

    A local server (any base URL that is not api.openai.com) needs no key: a placeholder is
    sent. OpenAI's own API gets ``max_completion_tokens`` (its newer models refuse
    ``max_tokens``); other servers get ``max_tokens``, which they all understand.
    """

    name = "openai"

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, max_retries: int = 3, temperature: float | None = None,
                 api_key_env: str = "OPENAI_API_KEY") -> None:
        super().__init__(model, timeout=timeout, max_retries=max_retries, temperature=temperature,
                         api_key_env=api_key_env, url_setting="llm.base_url (or OPENAI_BASE_URL)")
        self.base_url = (base_url or OPENAI_URL).rstrip("/")
        self.endpoint = f"{self.base_url}/chat/completions"
        self.official = is_openai_host(self.base_url)
        if not api_key:
            if self.official:
                raise self._no_key()
            api_key = LOCAL_KEY
        self._sdk = _import_sdk("openai", "writing with OpenAI-compatible models")
        self._client: Any = self._sdk.OpenAI(api_key=api_key, base_url=self.base_url, timeout=self.timeout,
                                             max_retries=self.max_retries)

    def _sdk_errors(self) -> tuple[type[BaseException], ...]:
        return (self._sdk.OpenAIError,)

    def _request(self, system: str, prompt: str, max_tokens: int) -> dict[str, Any]:
        if max_tokens < 1:
            raise InvalidParameterError(f"max_tokens ({max_tokens}) must be at least 1; set llm.max_tokens")
        request: dict[str, Any] = {"model": self.model, "messages": [{"role": "system", "content": system},
                                                                     {"role": "user", "content": prompt}]}
        request["max_completion_tokens" if self.official else "max_tokens"] = max_tokens
        if self.temperature is not None:
            request["temperature"] = self.temperature
        return request

    def complete(self, system: str, prompt: str, *, max_tokens: int) -> str:
        try:
            response = self._client.chat.completions.create(**self._request(system, prompt, max_tokens))
        except self._sdk.OpenAIError as exc:
            raise self._error(exc) from exc
        choices = list(getattr(response, "choices", None) or [])
        text = str(getattr(choices[0].message, "content", None) or "") if choices else ""
        if not text.strip():
            reason = getattr(choices[0], "finish_reason", None) if choices else "no choices"
            raise self._empty(f"finish reason {reason}")
        return text

    def stream(self, system: str, prompt: str, *, max_tokens: int) -> Iterator[str]:
        request = self._request(system, prompt, max_tokens)

        def deltas() -> Iterator[str]:
            with self._client.chat.completions.create(**request, stream=True) as chunks:
                for chunk in chunks:
                    for choice in getattr(chunk, "choices", None) or ():
                        text = getattr(choice.delta, "content", None)
                        if text:
                            yield str(text)

        return self._guard(deltas)


def llm_from_settings(settings: LLMSettings, *, model: str | None = None, strongest: bool = False,
                      environ: Mapping[str, str] = os.environ) -> LLM | None:
    """The provider ``[llm]`` describes; None for ``provider = "none"`` (the offline writer).

    ``model`` overrides the configured model; ``strongest`` picks ``llm.strongest_model`` (the
    ``--opus`` alias). The key is read from the environment variable ``llm.api_key_env``;
    ``ANTHROPIC_BASE_URL`` and ``OPENAI_BASE_URL`` override ``llm.base_url``.
    """
    if settings.provider == "none":
        if model or strongest:
            asked = f"the model {model!r}" if model else "the strongest model"
            raise ConfigError(f"{asked} was asked for, but llm.provider is 'none' (the offline extractive writer); "
                              "set llm.provider to 'anthropic' or 'openai'")
        return None
    _, _, _, url_variable = PROVIDER_DEFAULTS[settings.provider]
    name = (model or "").strip() or settings.model_name(strongest=strongest)
    base_url = (environ.get(url_variable) or "").strip() or settings.base_url
    key_variable = settings.key_variable()
    key = (environ.get(key_variable) or "").strip() or None
    provider = AnthropicLLM if settings.provider == "anthropic" else OpenAICompatibleLLM
    return provider(name, api_key=key, base_url=base_url, timeout=settings.timeout,
                    max_retries=settings.max_retries, temperature=settings.temperature, api_key_env=key_variable)
