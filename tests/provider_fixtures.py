"""What the provider tests (``tests/models/test_<provider>.py``, ``test_providers.py``) share: one verdict
tool, one request to judge a claim with it, how to run a call and catch its ``ProviderError``, the
truncated 200 bodies that every provider must turn into a retryable ``ProviderError``, and the
providers themselves (``ANTHROPIC``, ``OPENAI``, ``BEDROCK``): their simulators, test credentials and
how their APIs are pointed at a simulator, for the tests that every provider must pass."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hallumeasure.core.errors import ProviderError
from hallumeasure.models.base import GenerateRequest, GenerateResponse, Message, TextBlock, ToolSpec
from hallumeasure.testing import AnthropicServer, BedrockServer, Fault, FaultPlan, OpenAIServer, Reply, SimServer

SCHEMA = {
    "type": "object",
    "properties": {"label_reason": {"type": "string"}, "label": {"enum": ["supported", "absent"]}},
    "required": ["label_reason", "label"],
}
TOOL = ToolSpec(name="record_verdict", description="Record the verdict on the claim.", input_schema=SCHEMA)
VERDICT = {"label_reason": "The context says so.", "label": "supported"}


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


# The providers as the wire-level tests drive them ------------------------------------------------------------

ANTHROPIC_KEY = "test-key-SENTINEL-never-print-me-0123456789"
OPENAI_KEY = "sk-test-SENTINEL-never-print-me-0123456789"
AZURE_KEY = "azure-SENTINEL-never-print-me-9876543210"
AWS_ACCESS_KEY = "TESTKEYIDSENTINEL0NEVERPRINT"
AWS_SECRET_KEY = "secret-SENTINEL-never-print-me-0123456789"
BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"  # the colon must survive the path encoding


@functools.cache
def bedrock_session():
    """One boto3 session with the sentinel keys, so that botocore parses its service models once, not per test."""
    import boto3

    return boto3.Session(aws_access_key_id=AWS_ACCESS_KEY, aws_secret_access_key=AWS_SECRET_KEY)


@dataclass(frozen=True)
class Provider:
    """One provider as the tests drive it: its simulator, how its API is pointed at an address, its test
    credentials. The provider modules are imported only when an API is built (the SDKs take seconds to import,
    and most importers of this module want ``judge_request`` only)."""

    name: str
    server: type[SimServer]
    spec: str
    #: The test credentials; the first is sent on the wire as it is.
    secrets: tuple[str, ...]
    #: The API's keyword arguments for the simulator at ``url`` (also the ``model_options`` of the factory).
    options: Callable[[str], dict[str, Any]]
    build: Callable[..., Any]
    #: What a 200 whose body cannot be read becomes.
    unreadable: str
    timeout_option: str = "timeout"
    environment: Callable[[pytest.MonkeyPatch, Path], None] = lambda monkeypatch, tmp_path: None

    def api(self, srv: SimServer, **options):
        """The provider's API pointed at ``srv``; ``options`` add to (or replace) the test's options."""
        return self.api_at(srv.base_url, **options)

    def api_at(self, url: str, **options):
        """The provider's API pointed at ``url``."""
        return self.build(**{**self.options(url), **options})

    def error_reply(self, status: int, message: str | None = None, **options) -> Reply:
        """An error as this provider sends it (``Protocol.error_reply``)."""
        return self.server.protocol.error_reply(status, message, **options)

    def text_reply(self, text: str, **options) -> Reply:
        """A plain text answer as this provider sends it."""
        return self.server.protocol.text_reply(text, **options)

    def tool_reply(self, name: str, input: dict[str, Any], **options) -> Reply:  # noqa: A002 - the wire name
        """An answer that calls tool ``name`` with ``input``, as this provider sends it."""
        return self.server.protocol.tool_reply(name, input, **options)


def _anthropic(**options):
    from hallumeasure.models.anthropic import AnthropicAPI

    return AnthropicAPI("claude-test", **options)


def _openai(**options):
    from hallumeasure.models.openai import OpenAIAPI

    return OpenAIAPI("gpt-test", **options)


def _openai_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """OpenAI takes its keys from the environment only; no endpoint may come from it."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_VERSION", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


def _bedrock(**options):
    from hallumeasure.models.bedrock import BedrockAPI

    return BedrockAPI(BEDROCK_MODEL, region_name="us-east-1", **options)


def _dummy_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Sentinel credentials from the environment, and no AWS files or instance metadata to fall back on."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET_KEY)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)


ANTHROPIC = Provider(
    name="anthropic",
    server=AnthropicServer,
    spec="anthropic:claude-test",
    secrets=(ANTHROPIC_KEY,),
    options=lambda url: {"api_key": ANTHROPIC_KEY, "base_url": url},
    build=_anthropic,
    unreadable="anthropic:claude-test: reply body was not valid JSON (truncated?)",
)
OPENAI = Provider(
    name="openai",
    server=OpenAIServer,
    spec="openai:gpt-test",
    secrets=(OPENAI_KEY, AZURE_KEY),
    options=lambda url: {"base_url": url},
    build=_openai,
    unreadable="openai:gpt-test: reply body was not valid JSON (truncated?)",
    environment=_openai_keys,
)
BEDROCK = Provider(
    name="bedrock",
    server=BedrockServer,
    spec=f"bedrock:{BEDROCK_MODEL}",
    secrets=(AWS_ACCESS_KEY, AWS_SECRET_KEY),
    options=lambda url: {"session": bedrock_session(), "endpoint_url": url},
    build=_bedrock,
    unreadable=f"bedrock:{BEDROCK_MODEL}: reply body was not valid JSON or not a Converse answer (truncated?)",
    timeout_option="read_timeout",
    environment=_dummy_aws,
)


def each_provider(*providers: Provider) -> pytest.MarkDecorator:
    """Run a test once per provider, its ``provider`` fixture (tests/models/conftest.py) set up for it."""
    return pytest.mark.parametrize("provider", providers, ids=_provider_id, indirect=True)


def per_provider(argnames: str, rows: dict[Provider, list[Any]]) -> pytest.MarkDecorator:
    """Run a test on each provider's own ``rows`` of ``argnames`` (comma-separated), as ``each_provider`` does."""
    names = [name.strip() for name in argnames.split(",")]
    params = [(provider, *(row if len(names) > 1 else (row,))) for provider, many in rows.items() for row in many]
    return pytest.mark.parametrize(("provider", *names), params, ids=_provider_id, indirect=["provider"])


def _provider_id(value: Any) -> str | None:
    return value.name if isinstance(value, Provider) else None  # None: pytest's own id for the other values


def judge_with_a_scripted_verdict(provider: Provider, usage: dict[str, int]) -> tuple[GenerateResponse, SimServer]:
    """``judge_request()`` against ``provider``'s simulator scripted to call the tool with ``VERDICT`` and
    ``usage``. Checks what every provider reads back alike (the tool's input, the stop reason, no text,
    the token counts) and returns the response and the simulator, whose requests show the wire."""
    with provider.server(script=[provider.tool_reply("record_verdict", VERDICT, usage=usage)]) as srv:
        response = generate_once(provider.api(srv), judge_request())
    assert response.tool_input == VERDICT and response.stop_reason == "tool_use" and response.text == ""
    counts = (response.usage.calls, response.usage.input_tokens, response.usage.output_tokens)
    assert counts == (1, usage["input_tokens"], usage["output_tokens"])
    cached = (usage.get("cache_read_tokens", 0), usage.get("cache_write_tokens", 0))
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == cached
    return response, srv
