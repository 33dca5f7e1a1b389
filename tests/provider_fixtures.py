"""What the provider tests (``tests/models/test_anthropic.py``, ``test_bedrock.py``) share: one verdict
tool, one request to judge a claim with it, how to run a call and catch its ``ProviderError``, and
the truncated 200 bodies that both providers must turn into a retryable ``ProviderError``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from hallumeasure.core.errors import ProviderError
from hallumeasure.models.base import GenerateRequest, GenerateResponse, Message, TextBlock, ToolSpec
from hallumeasure.testing import Fault, FaultPlan, Reply

SCHEMA = {
    "type": "object",
    "properties": {"label_reason": {"type": "string"}, "label": {"enum": ["supported", "absent"]}},
    "required": ["label_reason", "label"],
}
TOOL = ToolSpec(name="record_verdict", description="Record the verdict on the claim.", input_schema=SCHEMA)


def judge_request(**changes) -> GenerateRequest:
    """A request to judge 'blue' against a cached context with ``TOOL``; ``changes`` replace its fields."""
    context = TextBlock(text="<context>The sky is blue.</context>", cache_after=True)
    fields = {
        "system": "You judge claims against a context.",
        "messages": (Message.user(context, "Claim: blue."),),
        "tool": TOOL,
        "max_tokens": 512,
    }
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


def cut_inside_a_character(body: dict[str, Any]) -> Reply:
    """A 200 whose UTF-8 body (``body`` holds an 'é') stops after the first byte of that character, so
    that decoding fails before JSON parsing starts (the fault plan's cut lands in ASCII)."""
    raw = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return Reply(200, raw=raw, cut_body=raw.index("é".encode()) + 1)


def truncated_once() -> FaultPlan:
    """The first model call gets a 200 whose JSON body is cut in half; the next ones are answered."""
    return FaultPlan.at({0: Fault.TRUNCATED_BODY})


def truncated_always(tool: str | None = None) -> FaultPlan:
    """Every model call (or every call with ``tool``) gets a 200 whose JSON body is cut in half."""
    match = None if tool is None else (lambda call: (call.tool or {}).get("name") == tool)
    return FaultPlan(rate=1.0, faults=[Fault.TRUNCATED_BODY], match=match)
