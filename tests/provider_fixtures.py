"""What the provider tests (``tests/models/test_anthropic.py``, ``test_bedrock.py``) share: one verdict
tool, one request to judge a claim with it, and how to run a call and catch its ``ProviderError``."""

from __future__ import annotations

import asyncio

import pytest

from hallumeasure.errors import ProviderError
from hallumeasure.models.base import GenerateRequest, GenerateResponse, Message, TextBlock, ToolSpec

SCHEMA = {
    "type": "object",
    "properties": {"label_reason": {"type": "string"}, "label": {"enum": ["supported", "absent"]}},
    "required": ["label_reason", "label"],
}
TOOL = ToolSpec(name="record_verdict", description="Record the verdict on the claim.", input_schema=SCHEMA)


def judge_request(**changes) -> GenerateRequest:
    """A request to judge 'blue' against a cached context with ``TOOL``; ``changes`` replace its fields."""
    context = TextBlock(text="<context>The sky is blue.</context>", cache_after=True)
    fields = dict(
        system="You judge claims against a context.",
        messages=(Message.user(context, "Claim: blue."),),
        tool=TOOL,
        max_tokens=512,
    )
    return GenerateRequest(**{**fields, **changes})


def generate_once(api, request: GenerateRequest) -> GenerateResponse:
    """``api.generate(request)`` in a fresh event loop, closing ``api`` (a provider or a Model) after."""

    async def go():
        try:
            return await api.generate(request)
        finally:
            await api.aclose()

    return asyncio.run(go())


def expect_provider_error(api, request: GenerateRequest | None = None) -> ProviderError:
    """The ``ProviderError`` that ``generate_once`` raises; it must keep nothing of the SDK's exception."""
    with pytest.raises(ProviderError) as info:
        generate_once(api, request or judge_request())
    assert_keeps_no_sdk_error(info.value)
    return info.value


def assert_keeps_no_sdk_error(exc: ProviderError) -> None:
    """The SDK's exception may hold the request's credentials: it is neither the cause nor the context
    ('from None' only hides a context from tracebacks)."""
    kept = exc.__cause__ or exc.__context__
    assert kept is None, f"{type(exc).__name__} keeps {type(kept).__name__} as its cause or context"
