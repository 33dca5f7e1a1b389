"""What every provider must do, each against its own simulator (the real SDK over real HTTP, nothing of
ours mocked): errors mapped to retryable or not with the SDK's own retries off, retry-after read,
credentials kept out of errors and settings, stop reasons mapped, and the pipeline run end to end.
What is particular to one provider (its wire format, its options) stays in its ``test_<provider>.py``;
truncated bodies are in ``test_truncated_bodies.py``."""

import asyncio
import json
import socket
from datetime import UTC, datetime, timedelta

import pytest
from provider_fixtures import (
    ANTHROPIC,
    BEDROCK,
    OPENAI,
    VERDICT,
    assert_keeps_no_sdk_error,
    each_provider,
    expect_provider_error,
    generate_once,
    judge_request,
    per_provider,
)

from hallumeasure import Mode, Sample, build_extractor, build_judge, measure_samples
from hallumeasure.core.errors import ProviderError
from hallumeasure.judges.llm.outputs import CotVerdict, ExtractedClaims, PlainVerdicts, tool_schema
from hallumeasure.judges.llm.parsing import parse_output
from hallumeasure.models.base import Message, ToolSpec
from hallumeasure.models.model import Model
from hallumeasure.testing import Reply, anthropic_server, bedrock_server, openai_server

# errors, retries, timeouts ----------------------------------------------------------------------------


@per_provider(
    "status, code, retryable",
    {
        ANTHROPIC: [
            (408, "api_error", True),
            (409, "api_error", True),
            (500, "api_error", True),
            (503, "api_error", True),
            (400, "invalid_request_error", False),
            (401, "authentication_error", False),
            (403, "permission_error", False),
            (404, "not_found_error", False),
        ],
        OPENAI: [
            (408, "server_error", True),
            (409, "server_error", True),
            (429, "rate_limit_exceeded", True),
            (500, "server_error", True),
            (503, "service_unavailable", True),
            (400, "invalid_request_error", False),
            (401, "invalid_api_key", False),
            (404, "model_not_found", False),
        ],
        BEDROCK: [
            (429, "ThrottlingException", True),
            (503, "ServiceUnavailableException", True),
            (429, "ModelNotReadyException", True),
            (500, "InternalServerException", True),
            (408, "ModelTimeoutException", True),
            (400, "ValidationException", False),
            (403, "AccessDeniedException", False),
            (404, "ResourceNotFoundException", False),
        ],
    },
)
def test_error_statuses_map_to_retryable_or_not_and_the_sdk_never_retries(provider, status, code, retryable):
    with provider.server(script=[provider.error_reply(status, "something is wrong", code=code)]) as srv:
        exc = expect_provider_error(provider.api(srv))
        assert len(srv.requests) == 1  # SDK retries are off: the wrapper is the only layer that retries
    assert (exc.status, exc.cause, exc.retryable) == (status, code, retryable)
    assert "something is wrong" in str(exc) and provider.spec in str(exc)


@per_provider(
    "headers, low, high",
    {
        ANTHROPIC: [
            ({"retry_after": 0.01}, 0.01, 0.01),
            ({"retry_after_ms": 250}, 0.25, 0.25),
            # An HTTP date has whole seconds, and the clock moves while the test runs. The date is made
            # when the test runs (a callable here), not at collection, which can be long before.
            ({"retry_after": lambda: datetime.now(UTC) + timedelta(seconds=60)}, 40.0, 60.0),
            ({}, None, None),
        ],
        OPENAI: [({"retry_after": 2}, 2.0, 2.0), ({"retry_after_ms": 250}, 0.25, 0.25), ({}, None, None)],
        BEDROCK: [({"retry_after": 0.01}, 0.01, 0.01)],  # Bedrock's own throttling sends none (the simulator's)
    },
)
def test_a_rate_limit_is_retryable_and_carries_retry_after(provider, headers, low, high):
    headers = {k: v() if callable(v) else v for k, v in headers.items()}
    script = [provider.error_reply(429, **headers), provider.tool_reply("record_verdict", {})]
    with provider.server(script=script) as srv:
        exc = expect_provider_error(provider.api(srv))
        assert len(srv.requests) == 1  # SDK retries are off: the wrapper is the only layer that retries
    assert exc.retryable and exc.status == 429 and exc.cause == provider.server.protocol.error_codes[429]
    if low is None:
        assert exc.retry_after is None
    else:
        assert low - 1e-9 <= exc.retry_after <= high + 1e-9


@per_provider(
    "first",
    {
        ANTHROPIC: [anthropic_server.error_reply(429, retry_after=0.01)],
        OPENAI: [
            openai_server.error_reply(429, retry_after=0.01),
            openai_server.error_reply(500),
            openai_server.error_reply(503),
        ],
        BEDROCK: [bedrock_server.throttling_reply(retry_after=0.01)],
    },
)
def test_a_retryable_error_is_retried_once_by_the_model_wrapper(provider, first):
    with provider.server(script=[first, provider.tool_reply("record_verdict", VERDICT)]) as srv:
        model = Model(provider.api(srv), backoff_base=0.0)
        response = generate_once(model, judge_request())
        assert len(srv.requests) == 2
    assert response.tool_input == VERDICT and model.retries == 1 and model.usage.calls == 1


@each_provider(ANTHROPIC, BEDROCK)
def test_read_timeout_is_retryable(provider):
    with provider.server(script=[Reply(200, {}, delay=0.5)]) as srv:
        exc = expect_provider_error(provider.api(srv, **{provider.timeout_option: 0.1}))
        assert len(srv.requests) == 1
    assert exc.retryable and exc.cause == "timeout"


@each_provider(ANTHROPIC, OPENAI, BEDROCK)
def test_connection_refused_is_retryable(provider):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    exc = expect_provider_error(provider.api_at(f"http://127.0.0.1:{port}"))
    assert exc.retryable and exc.cause == "connection"
    assert not any(secret in str(exc) for secret in provider.secrets)


@each_provider(ANTHROPIC, OPENAI)
def test_batch_calls_fail_with_a_provider_error_that_keeps_nothing_of_the_sdk(provider):
    missing = {ANTHROPIC: "msgbatch_missing", OPENAI: "batch_missing"}[provider]

    async def fail(call):
        try:
            with pytest.raises(ProviderError) as info:
                await call
            return info.value
        finally:
            await api.aclose()

    with provider.server() as srv:
        api = provider.api(srv)
        polled = asyncio.run(fail(api.poll_batch(missing)))
        read = asyncio.run(fail(api.batch_results(missing, {})))  # the results stream in
    for exc in (polled, read):
        assert exc.status == 404 and missing in str(exc) and not exc.retryable
        assert_keeps_no_sdk_error(exc)


# credentials ------------------------------------------------------------------------------------------


@each_provider(ANTHROPIC, BEDROCK)
def test_credentials_never_appear_in_errors_or_settings(provider):
    def echo_headers(body):  # a hostile server that reflects the credentials it received
        return provider.error_reply(400, " ".join([str(srv.requests[-1].headers), *provider.secrets]))

    with provider.server(handler=echo_headers) as srv:
        api = provider.api(srv)
        exc = expect_provider_error(api)
    assert provider.secrets[0] in str(srv.requests[0].headers)  # the test is meaningful: the key was on the wire
    for text in (str(exc), repr(exc), repr(exc.args), exc.cause, json.dumps(api.settings()), api.spec):
        assert not any(secret in text for secret in provider.secrets)


# answers ----------------------------------------------------------------------------------------------


@per_provider(
    "wire, ours",
    {
        ANTHROPIC: [
            ("end_turn", "end_turn"),
            ("max_tokens", "max_tokens"),
            ("refusal", "refusal"),
            ("stop_sequence", "stop_sequence"),
            ("model_context_window_exceeded", "max_tokens"),
            ("pause_turn", "other"),
        ],
        BEDROCK: [
            ("end_turn", "end_turn"),
            ("max_tokens", "max_tokens"),
            ("stop_sequence", "stop_sequence"),
            ("guardrail_intervened", "refusal"),
            ("content_filtered", "refusal"),
            ("model_context_window_exceeded", "max_tokens"),
            ("malformed_tool_use", "other"),
        ],
    },
)
def test_stop_reasons_are_mapped(provider, wire, ours):
    with provider.server(script=[provider.text_reply("partial", stop_reason=wire)]) as srv:
        response = generate_once(provider.api(srv), judge_request(tool=None))
    assert response.stop_reason == ours and response.text == "partial"


@per_provider(
    "cache_marker, tool_fields",
    {ANTHROPIC: [("cache_control", ("tools", "tool_choice"))], BEDROCK: [("cachePoint", ("toolConfig",))]},
)
def test_no_cache_markers_unless_asked_and_no_tool_without_a_tool(provider, cache_marker, tool_fields):
    messages = (Message.user("a"), Message.assistant("b"), Message.user("c"))
    request = judge_request(cache_system=False, tool=None, messages=messages)
    with provider.server(script=[provider.text_reply("plain answer")]) as srv:
        response = generate_once(provider.api(srv), request)
        body = srv.requests[0].body
    assert response.text == "plain answer" and response.tool_input is None and response.stop_reason == "end_turn"
    assert cache_marker not in json.dumps(body) and not any(field in body for field in tool_fields)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


@per_provider(
    "contract", {ANTHROPIC: [CotVerdict, ExtractedClaims, PlainVerdicts], BEDROCK: [CotVerdict, ExtractedClaims]}
)
def test_default_server_answers_schema_valid_tool_input_with_deterministic_usage(provider, contract):
    tool = ToolSpec(name="record", description="Record it.", input_schema=tool_schema(contract))
    with provider.server() as srv:
        api = provider.api(srv)
        first = generate_once(api, judge_request(tool=tool))
        # A new event loop: the provider makes a new client, and works again after aclose().
        second = generate_once(api, judge_request(tool=tool))
    assert parse_output(contract, first) is not None
    assert first.usage == second.usage and first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert len(srv.requests) == 2


# the pipeline -----------------------------------------------------------------------------------------


@per_provider(
    "mode, calls",
    {
        # Extraction, then a cache warm-up and one call per claim, or one call for all claims.
        ANTHROPIC: [(mode, 1 + (1 + 2 if mode.one_claim else 1)) for mode in Mode],
        BEDROCK: [(Mode.COT_ALL, 2)],
    },
)
def test_the_pipeline_runs_end_to_end_against_the_default_server(provider, mode, calls):
    sample = Sample(id="s1", context="The sky is blue.", response="The sky is blue. It rains every day.")
    with provider.server() as srv:
        options = {"model_options": provider.options(srv.base_url)}
        extractor = build_extractor(provider.spec, **options)
        judge = build_judge(provider.spec, mode, **options)
        (result,) = asyncio.run(measure_samples([sample], extractor, judge))
        assert len(srv.requests) == calls
    assert result.error is None and result.n_claims == 2 and result.n_evaluated == 2 and result.n_errors == 0
    assert result.usage.calls == calls and result.usage.input_tokens > 0
