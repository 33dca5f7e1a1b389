"""The small interface every provider implements: one request in, one response out.

Providers translate ``GenerateRequest`` to their wire format and back, and map their
failures to ``ProviderError``. Retries, caching, concurrency, deadlines and usage
accounting are not their business: ``hallumeasure.models.model.Model`` owns those.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from hallumeasure.models.caching import min_cache_tokens
from hallumeasure.types import Usage


class TextBlock(BaseModel):
    """A piece of a message. ``cache_after`` marks the end of a cacheable prefix."""

    model_config = ConfigDict(frozen=True)

    text: str
    cache_after: bool = False


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant"]
    content: tuple[TextBlock, ...]

    @classmethod
    def user(cls, *texts: str | TextBlock) -> "Message":
        return cls(role="user", content=tuple(t if isinstance(t, TextBlock) else TextBlock(text=t) for t in texts))

    @classmethod
    def assistant(cls, text: str) -> "Message":
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


StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal", "stop_sequence", "other"]


class GenerateResponse(BaseModel):
    text: str = ""
    tool_input: dict[str, Any] | None = None
    stop_reason: StopReason = "end_turn"
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    #: True when the answer came from the request cache (no provider call was made).
    cached: bool = False


class ModelAPI(ABC):
    """One provider's wire format. Subclasses implement ``generate`` and nothing else of substance."""

    provider: ClassVar[str]

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        #: The shortest prompt prefix (tokens) the provider caches for this model; None: it caches nothing.
        #: Stages skip cache warm-ups below it; settable, for a provider whose documented minimum differs.
        self.min_cache_tokens: int | None = min_cache_tokens(self.provider, model_name)

    @property
    def spec(self) -> str:
        """The model spec string, such as ``anthropic:claude-sonnet-4-5``."""
        return f"{self.provider}:{self.model_name}" if self.model_name else self.provider

    @abstractmethod
    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        """Send one request. Raise ``ProviderError`` (retryable or not) on failure."""

    def settings(self) -> dict[str, Any]:
        """Settings that change answers, recorded in the run manifest. Never include secrets."""
        return {}

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
