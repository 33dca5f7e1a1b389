"""The Anthropic Messages API through the ``anthropic`` SDK, with the SDK's own retries off."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anthropic

from hallumeasure.core.errors import ConfigError, ProviderError
from hallumeasure.core.types import Usage
from hallumeasure.models.base import (
    Block,
    GenerateRequest,
    GenerateResponse,
    SDKModelAPI,
    ToolCallBlock,
    ToolResultBlock,
)
from hallumeasure.models.wire import public_url, scrub_secrets

if TYPE_CHECKING:
    from hallumeasure.models.batch import BatchResults, BatchStatus

_STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
    "stop_sequence": "stop_sequence",
    # The answer was cut short by the context window: for a caller it is as truncated as max_tokens.
    "model_context_window_exceeded": "max_tokens",
}
#: Where the SDK sends requests when no base URL is given.
DEFAULT_BASE_URL = "https://api.anthropic.com"
#: Error types of a batch item that another try may fix.
_RETRYABLE_ERROR_TYPES = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error"})


class AnthropicAPI(SDKModelAPI[anthropic.AsyncAnthropic]):
    """``anthropic:<model>``. The key comes from ``api_key`` or $ANTHROPIC_API_KEY and is never recorded."""

    provider = "anthropic"
    sdk = anthropic
    sdk_error = anthropic.AnthropicError
    service = "the Anthropic API"
    #: The Message Batches API takes up to 100,000 requests per batch.
    batch_min_requests = 1
    batch_max_requests = 100_000

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
    ) -> None:
        super().__init__(model_name, timeout=timeout, connect_timeout=connect_timeout)
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ConfigError(
                f"{self.spec} needs an API key: set the ANTHROPIC_API_KEY environment variable, "
                "or use the offline judge (--judge offline --extractor offline)"
            )
        self._api_key = key
        self._base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None

    def settings(self) -> dict[str, Any]:
        # The endpoint is part of the cache key: a proxy or gateway may answer differently.
        return {"model": self.model_name, "base_url": public_url(self._base_url or DEFAULT_BASE_URL)}

    def new_client(self, options: dict[str, Any]) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(base_url=self._base_url, **options)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        params = self.request_params(request)
        message = await self._call(lambda: self._client_for_loop().messages.create(**params))
        return self._response(message, request)

    def request_params(self, request: GenerateRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        params: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": _content_blocks(m.content)} for m in request.messages],
        }
        if request.system:
            block: dict[str, Any] = {"type": "text", "text": request.system}
            if request.cache_system:
                block["cache_control"] = _cache_control()
            params["system"] = [block]
        if request.tool is not None:
            params["tools"] = [
                {
                    "name": request.tool.name,
                    "description": request.tool.description,
                    "input_schema": request.tool.input_schema,
                }
            ]
            params["tool_choice"] = {"type": "tool", "name": request.tool.name}
        return params

    # --- Message Batches (see hallumeasure.models.batch) ---

    async def submit_batch(self, items: Sequence[tuple[str, GenerateRequest]], *, token: str) -> str:
        """Create a Message Batch of ``(custom id, request)``; return its id."""
        requests = [{"custom_id": custom_id, "params": self.request_params(request)} for custom_id, request in items]
        batch = await self._call(
            # request_params gives the SDK's message parameters as a plain dict, as messages.create takes them
            lambda: self._client_for_loop().messages.batches.create(requests=requests)  # type: ignore[arg-type]
        )
        return batch.id

    async def poll_batch(self, batch_id: str) -> BatchStatus:
        from hallumeasure.models.batch import BatchStatus

        batch = await self._call(lambda: self._client_for_loop().messages.batches.retrieve(batch_id))
        counts = batch.request_counts
        failed = counts.errored + counts.expired + counts.canceled
        return BatchStatus(
            batch_id=batch.id,
            ended=batch.processing_status == "ended",
            total=counts.processing + counts.succeeded + failed,
            succeeded=counts.succeeded,
            errored=failed,
            state=batch.processing_status,
        )

    async def batch_results(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> BatchResults:
        """Responses (or item errors) of an ended batch, for the custom ids in ``requests``."""
        out: BatchResults = {}

        async def read() -> None:  # the results stream in, so reading them can fail like a call
            decoder = await self._client_for_loop().messages.batches.results(batch_id)
            async for entry in decoder:
                request = requests.get(entry.custom_id)
                if request is None:
                    continue
                result = entry.result
                if result.type == "succeeded":
                    out[entry.custom_id] = self._response(result.message, request)
                elif result.type == "errored":
                    error = result.error.error
                    out[entry.custom_id] = ProviderError(
                        scrub_secrets(
                            f"{self.spec}: batch item {result.type}: {error.type}: {error.message}"[:600],
                            [self._api_key],
                        ),
                        retryable=error.type in _RETRYABLE_ERROR_TYPES,
                        cause=error.type,
                    )
                else:  # expired or canceled: the request never ran, so it may run again
                    out[entry.custom_id] = ProviderError(
                        f"{self.spec}: batch item {result.type}", retryable=True, cause=result.type
                    )

        await self._call(read)
        return out

    def _response(self, message: Any, request: GenerateRequest) -> GenerateResponse:
        texts, tool_input, call_id = [], None, None
        for block in message.content:
            if block.type == "text":
                texts.append(block.text)
            elif (
                block.type == "tool_use"
                and tool_input is None
                and (request.tool is None or block.name == request.tool.name)
            ):
                tool_input = dict(block.input) if isinstance(block.input, Mapping) else {"input": block.input}
                call_id = block.id
        usage = message.usage
        return GenerateResponse(
            text="".join(texts),
            tool_input=tool_input,
            tool_call_id=call_id,
            stop_reason=_STOP_REASONS.get(message.stop_reason or "", "other"),
            usage=Usage(
                calls=1,
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_read_tokens=usage.cache_read_input_tokens or 0,
                cache_write_tokens=usage.cache_creation_input_tokens or 0,
            ),
            model=f"{self.provider}:{message.model or self.model_name}",
        )

    def status_error(self, exc: anthropic.APIStatusError) -> tuple[str, str]:
        detail = exc.api_message or (exc.body if isinstance(exc.body, str) else "") or "no details"
        return exc.type or type(exc).__name__, detail


def _content_blocks(blocks: Iterable[Block]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ToolCallBlock):  # Claude's tool inputs are always objects, never raw text
            content.append({"type": "tool_use", "id": block.call_id, "name": block.name, "input": block.input or {}})
            continue
        if isinstance(block, ToolResultBlock):
            content.append(
                {
                    "type": "tool_result",
                    "tool_use_id": block.call_id,
                    "content": block.result,
                    "is_error": block.is_error,
                }
            )
            continue
        if block.text:
            content.append({"type": "text", "text": block.text})
        # The API rejects empty text blocks, so a marker on one moves to the block before it.
        if block.cache_after and content:
            content[-1]["cache_control"] = _cache_control()
    return content


def _cache_control() -> dict[str, str]:
    return {"type": "ephemeral"}
