"""The small interface every provider implements: one request in, one response out.

Providers translate ``GenerateRequest`` to their wire format and back, and map their
failures to ``ProviderError``. Retries, caching, concurrency, deadlines and usage
accounting are not their business: ``hallumeasure.models.model.Model`` owns those.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from contextvars import ContextVar
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from hallumeasure.core.types import Usage
from hallumeasure.registry import facts as model_facts

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

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self.min_cache_tokens = model_facts(f"{self.provider}:{model_name}").min_cache_tokens

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

    def bound(self, *, timeout: float, max_concurrency: int) -> None:  # noqa: B027 - optional hook
        """Fit the client to the wrapper's limits: ``timeout`` seconds per attempt, ``max_concurrency`` calls.

        ``Model`` calls it once. A provider sizes its connection pool (and its thread pool, if it has
        one) for ``max_concurrency`` calls plus the ones it has given up on and that are still closing,
        and sets its client's own timeouts from ``timeout``, so that a call the wrapper abandoned at its
        deadline does not hold a connection or a thread much longer.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
