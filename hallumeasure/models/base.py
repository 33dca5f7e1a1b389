"""The small interface every provider implements: one request in, one response out.

Providers translate ``GenerateRequest`` to their wire format and back, and map their
failures to ``ProviderError``. Retries, caching, concurrency, deadlines and usage
accounting are not their business: ``hallumeasure.models.model.Model`` owns those.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from types import ModuleType
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from hallumeasure.core.errors import ProviderError
from hallumeasure.core.types import Usage
from hallumeasure.models.wire import is_retryable_status, parse_retry_after, scrub_secrets
from hallumeasure.registry import facts as model_facts


class _AsyncClient(Protocol):
    async def close(self) -> None: ...


T = TypeVar("T")
ClientT = TypeVar("ClientT", bound=_AsyncClient)

#: The deadline of the attempt in progress in this task, and its length in seconds (set by ``Model``).
ATTEMPT_DEADLINE: ContextVar[tuple[asyncio.Timeout, float] | None] = ContextVar("hallumeasure_deadline", default=None)


def deadline_waits() -> None:
    """Stop the current attempt's deadline: a provider calls it before it waits for a thread or a
    connection of its own, and ``deadline_starts_now`` once the call leaves, so the wait is not charged."""
    current = ATTEMPT_DEADLINE.get()
    if current is not None and not current[0].expired():
        current[0].reschedule(None)


def deadline_starts_now() -> None:
    """Count the current attempt's deadline from now (the call is leaving)."""
    current = ATTEMPT_DEADLINE.get()
    if current is not None and not current[0].expired():
        deadline, seconds = current
        deadline.reschedule(asyncio.get_running_loop().time() + seconds)


class TextBlock(BaseModel):
    """A piece of a message. ``cache_after`` marks the end of a cacheable prefix."""

    model_config = ConfigDict(frozen=True)

    text: str
    cache_after: bool = False


class ToolCallBlock(BaseModel):
    """The assistant's call of a tool, as the model made it: parsed ``input``, or the ``raw`` arguments
    when they were not valid JSON. It goes back to the model when a re-ask continues the conversation."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    input: dict[str, Any] | None = None
    raw: str | None = None

    @property
    def text(self) -> str:
        return self.raw if self.input is None and self.raw is not None else json.dumps(self.input or {})


class ToolResultBlock(BaseModel):
    """The answer to a tool call (``call_id``); ``is_error`` tells the model its call failed."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    result: str
    is_error: bool = True

    @property
    def text(self) -> str:
        return self.result


Block = TextBlock | ToolCallBlock | ToolResultBlock


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant"]
    content: tuple[Block, ...]

    @classmethod
    def user(cls, *texts: str | TextBlock) -> Message:
        return cls(role="user", content=tuple(t if isinstance(t, TextBlock) else TextBlock(text=t) for t in texts))

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls(role="assistant", content=(TextBlock(text=text),))

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content)


class ToolSpec(BaseModel):
    """A tool the model is forced to call; its input schema is the output contract."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    input_schema: dict[str, Any]


class GenerateRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    system: str
    messages: tuple[Message, ...]
    tool: ToolSpec | None = None
    max_tokens: int = Field(default=2048, ge=1)
    #: Cache the system prompt as a prefix (it holds instructions and few-shot examples).
    cache_system: bool = True
    #: Which repeat of the same question this is (``measure --repeats``). Never sent to a provider:
    #: it only keeps the answers of repeats apart in the request cache (see ``request_key``).
    repeat: int = Field(default=0, ge=0)
    #: 0 for a first ask, n for the n-th re-ask. Part of the request's identity (and so of its cache
    #: key), so that a re-ask that happens to repeat an earlier one still reaches the model.
    attempt: int = Field(default=0, ge=0)


StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal", "stop_sequence", "other"]


class GenerateResponse(BaseModel):
    text: str = ""
    tool_input: dict[str, Any] | None = None
    #: The tool call's arguments as the model wrote them, when they were not valid JSON (some
    #: OpenAI-compatible servers pass a fenced or tagged object through); the parser repairs them.
    tool_raw: str | None = None
    #: The provider's id of the tool call, needed to answer it with a tool result in a re-ask.
    tool_call_id: str | None = None
    stop_reason: StopReason = "end_turn"
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    #: True when the answer came from the request cache (no provider call was made).
    cached: bool = False


class ModelAPI(ABC):
    """One provider's wire format. Subclasses implement ``generate`` and nothing else of substance."""

    provider: ClassVar[str]
    #: The shortest prompt prefix (tokens) the provider caches for this model; None: it caches nothing.
    #: Stages skip cache warm-ups below it; settable, for a provider whose documented minimum differs.
    min_cache_tokens: int | None = None
    #: Tokens the model reads and writes per request (prompt and answer together); None: no known limit.
    #: From the registry's facts, a spec option, or the server itself (``ask_window``).
    context_window: int | None = None

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        facts = model_facts(f"{self.provider}:{model_name}")
        self.min_cache_tokens = facts.min_cache_tokens
        self.context_window = facts.context_window

    @property
    def spec(self) -> str:
        """The model spec string, such as ``anthropic:claude-sonnet-4-5``."""
        return f"{self.provider}:{self.model_name}" if self.model_name else self.provider

    @abstractmethod
    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        """Send one request. Raise ``ProviderError`` (retryable or not) on failure."""

    def settings(self) -> dict[str, Any]:
        """Settings that change answers, recorded in the run manifest and part of the cache key:
        the resolved model name and the endpoint (base URL, region) included. Never secrets."""
        return {}

    def sampling(self) -> str:
        """How answers to the same request may differ between repeats, as recorded in the manifest."""
        return "the provider's default sampling (hallumeasure sends no temperature, so repeats may differ)"

    async def ask_window(self) -> int | None:
        """The context window the server says it serves this model with, or None when it says nothing.

        Asked once per model (``Model.window``), where the facts table cannot know: a local server
        runs any model with the window it was started with. Most providers have nothing to ask."""
        return None

    def bound(self, *, timeout: float, max_concurrency: int) -> None:  # noqa: B027 - optional hook
        """Fit the client to the wrapper's limits: ``timeout`` seconds per attempt, ``max_concurrency`` calls.

        ``Model`` calls it once. A provider sizes its connection pool (and its thread pool, if it has
        one) for ``max_concurrency`` calls plus the ones it has given up on and that are still closing,
        and sets its client's own timeouts from ``timeout``, so that a call the wrapper abandoned at its
        deadline does not hold a connection or a thread much longer.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


class SDKModelAPI(ModelAPI, Generic[ClientT]):
    """A provider behind one of the Stainless-built HTTP SDKs (``anthropic``, ``openai``), which share
    their shape: the client per event loop with the SDK's own retries off, its timeouts and pool from
    ``bound``, and the SDK's errors mapped to a ``ProviderError`` that keeps nothing of them are here.
    A subclass names its SDK, builds its client (``new_client``) and reads its wire format."""

    #: The SDK module: its ``Timeout``, HTTP client, connection limits and error types are used.
    sdk: ModuleType
    #: The SDK's base error type (``anthropic.AnthropicError``, ``openai.OpenAIError``).
    sdk_error: ClassVar[type[Exception]]
    #: What a connection error says could not be reached, such as ``the Anthropic API``.
    service: str
    _api_key: str

    def __init__(self, model_name: str, *, timeout: float | None, connect_timeout: float | None) -> None:
        super().__init__(model_name)
        # Given here, they win over what ``bound`` derives from the wrapper's deadline.
        self._fixed_timeout, self._fixed_connect = timeout, connect_timeout
        self._max_connections = 16
        self._timeout = self._sdk_timeout(timeout or 120.0)
        self._client: ClientT | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _sdk_timeout(self, deadline: float) -> Any:
        read = self._fixed_timeout or deadline
        return self.sdk.Timeout(read, connect=min(self._fixed_connect or 10.0, read))

    def bound(self, *, timeout: float, max_concurrency: int) -> None:
        """The SDK's timeouts from the wrapper's deadline; a pool of twice ``max_concurrency`` connections
        (a cancelled request's connection is closed, not returned, so the pool is never the wait)."""
        self._timeout = self._sdk_timeout(timeout)
        self._max_connections = 2 * max_concurrency
        self._client = None

    @abstractmethod
    def new_client(self, options: dict[str, Any]) -> ClientT:
        """The SDK's async client, given ``options`` (key, retries off, timeouts, HTTP pool) as keywords."""

    def _client_for_loop(self) -> ClientT:
        # An async HTTP pool belongs to one event loop; sync wrappers run a fresh loop per call.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            http_client = self.sdk.DefaultAsyncHttpxClient(
                # The SDK's own HTTP package's Limits type (which package that is differs between releases).
                limits=type(self.sdk.DEFAULT_CONNECTION_LIMITS)(
                    max_connections=self._max_connections, max_keepalive_connections=self._max_connections
                ),
                timeout=self._timeout,
            )
            self._client = self.new_client(
                {
                    "api_key": self._api_key,
                    "max_retries": 0,  # the Model wrapper is the only layer that retries
                    "timeout": self._timeout,
                    "http_client": http_client,
                }
            )
            self._client_loop = loop
        return self._client

    async def _call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Await ``make()``; an SDK error becomes a ``ProviderError`` that keeps nothing of it.

        The SDK's exception keeps the request (its headers hold the API key) and the reply as it
        came, unscrubbed. Raising ours inside the ``except`` block would keep it as ``__context__``
        even with ``from None``, so ours is built there (from chosen, scrubbed fields) and raised
        after the block has ended.

        The SDK decodes a 200's body without wrapping what goes wrong: a body cut short on the way
        raises the decoder's own error, which becomes a retryable ``ProviderError`` here.
        """
        try:
            return await make()
        except self.sdk_error as exc:
            error = self._provider_error(exc)
        except (json.JSONDecodeError, UnicodeDecodeError):  # the error keeps the body: nothing of it is kept
            error = ProviderError(
                f"{self.spec}: reply body was not valid JSON (truncated?)", retryable=True, cause="unreadable_body"
            )
        raise error

    @abstractmethod
    def status_error(self, exc: Any) -> tuple[str, str]:
        """The kind of the SDK's ``APIStatusError`` ``exc`` and the detail its body gives."""

    def _provider_error(self, exc: Exception) -> ProviderError:
        # Messages are built from chosen fields, then scrubbed, so that no key can slip through.
        if isinstance(exc, self.sdk.APIStatusError):
            status = exc.status_code
            kind, detail = self.status_error(exc)
            return ProviderError(
                scrub_secrets(f"{self.spec}: HTTP {status} {kind}: {detail[:500]}", [self._api_key]),
                retryable=is_retryable_status(status),
                retry_after=parse_retry_after(exc.response.headers),
                status=status,
                cause=kind,
            )
        if isinstance(exc, self.sdk.APITimeoutError):
            return ProviderError(f"{self.spec}: the request timed out", retryable=True, cause="timeout")
        if isinstance(exc, self.sdk.APIConnectionError):
            reason = exc.__cause__ or exc.__context__
            detail = f" ({type(reason).__name__})" if reason is not None else ""
            return ProviderError(
                f"{self.spec}: could not connect to {self.service}{detail}", retryable=True, cause="connection"
            )
        return ProviderError(
            scrub_secrets(f"{self.spec}: {type(exc).__name__}: {exc}", [self._api_key]), cause=type(exc).__name__
        )

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.close()
