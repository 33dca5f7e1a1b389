"""AnthropicAPI against the local Messages API simulator: the real SDK over real HTTP, nothing of ours mocked."""

import asyncio
import json
import socket
from datetime import UTC, datetime, timedelta

import pytest
from provider_fixtures import (
    SCHEMA,
    TOOL,
    assert_keeps_no_sdk_error,
    cut_inside_a_character,
    expect_provider_error,
    generate_once,
    judge_request,
    truncated_once,
)

from hallumeasure import Mode, Sample, build_extractor, build_judge, measure_samples
from hallumeasure.core.errors import ConfigError, ProviderError
from hallumeasure.judges.llm.outputs import CotVerdict, ExtractedClaims, PlainVerdicts, tool_schema
from hallumeasure.judges.llm.parsing import parse_output
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import Message, TextBlock, ToolSpec
from hallumeasure.models.factory import build_model_api
from hallumeasure.models.model import Model
from hallumeasure.testing import AnthropicServer, Reply
from hallumeasure.testing.anthropic_server import error_reply, overloaded_reply, text_reply, tool_reply

SENTINEL = "test-key-SENTINEL-never-print-me-0123456789"


def _api(srv: AnthropicServer, **options) -> AnthropicAPI:
    return AnthropicAPI("claude-test", api_key=SENTINEL, base_url=srv.base_url, **options)


def test_forced_tool_round_trip_sends_cache_markers_and_reads_usage():
    usage = {"input_tokens": 12, "output_tokens": 7, "cache_read_tokens": 300, "cache_write_tokens": 40}
    verdict = {"label_reason": "The context says so.", "label": "supported"}
    with AnthropicServer(script=[tool_reply("record_verdict", verdict, usage=usage)]) as srv:
        response = generate_once(_api(srv), judge_request())
        (seen,) = srv.requests

    assert response.tool_input == verdict and response.stop_reason == "tool_use" and response.text == ""
    assert (response.usage.calls, response.usage.input_tokens, response.usage.output_tokens) == (1, 12, 7)
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (300, 40)
    assert response.model == "anthropic:claude-simulated"

    body = seen.body
    assert seen.path == "/v1/messages"
    assert body["model"] == "claude-test" and body["max_tokens"] == 512
    assert body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    assert body["tools"] == [{"name": "record_verdict", "description": TOOL.description, "input_schema": SCHEMA}]
    assert body["system"] == [
        {"type": "text", "text": "You judge claims against a context.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<context>The sky is blue.</context>", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Claim: blue."},
            ],
        }
    ]
    assert "temperature" not in body
    assert SENTINEL in seen.headers.get("x-api-key", "") + seen.headers.get("authorization", "")


def test_no_cache_markers_unless_asked_and_no_tool_without_a_tool():
    messages = (Message.user("a"), Message.assistant("b"), Message.user("c"))
    request = judge_request(cache_system=False, tool=None, messages=messages)
    with AnthropicServer(script=[text_reply("plain answer")]) as srv:
        response = generate_once(_api(srv), request)
        body = srv.requests[0].body
    assert response.text == "plain answer" and response.tool_input is None and response.stop_reason == "end_turn"
    assert "cache_control" not in json.dumps(body)
    assert "tools" not in body and "tool_choice" not in body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


def test_empty_block_passes_its_cache_marker_to_the_block_before():
    request = judge_request(messages=(Message.user("context", TextBlock(text="", cache_after=True), "claim"),))
    with AnthropicServer(script=[text_reply("x")]) as srv:
        generate_once(_api(srv), request)
        content = srv.requests[0].body["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "context", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "claim"},
    ]


@pytest.mark.parametrize(
    ("wire", "ours"),
    [
        ("end_turn", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("refusal", "refusal"),
        ("stop_sequence", "stop_sequence"),
        ("model_context_window_exceeded", "max_tokens"),
        ("pause_turn", "other"),
    ],
)
def test_stop_reasons_are_mapped(wire, ours):
    with AnthropicServer(script=[text_reply("partial", stop_reason=wire)]) as srv:
        response = generate_once(_api(srv), judge_request(tool=None))
    assert response.stop_reason == ours and response.text == "partial"


@pytest.mark.parametrize("contract", [CotVerdict, ExtractedClaims, PlainVerdicts])
def test_default_server_answers_schema_valid_tool_input_with_deterministic_usage(contract):
    tool = ToolSpec(name="record", description="Record it.", input_schema=tool_schema(contract))
    with AnthropicServer() as srv:
        api = _api(srv)
        first = generate_once(api, judge_request(tool=tool))
        second = generate_once(api, judge_request(tool=tool))  # a new event loop: the provider makes a new client
    assert parse_output(contract, first) is not None
    assert first.usage == second.usage and first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert len(srv.requests) == 2


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        ({"retry_after": 0.01}, 0.01, 0.01),
        ({"retry_after_ms": 250}, 0.25, 0.25),
        # An HTTP date has whole seconds, and the clock moves while the test runs. The date is made
        # when the test runs (a callable here), not at collection, which can be long before.
        ({"retry_after": lambda: datetime.now(UTC) + timedelta(seconds=60)}, 40.0, 60.0),
        ({}, None, None),
    ],
)
def test_rate_limit_is_retryable_with_retry_after_and_the_sdk_does_not_retry(headers, low, high):
    headers = {k: v() if callable(v) else v for k, v in headers.items()}
    with AnthropicServer(script=[error_reply(429, **headers), tool_reply("record_verdict", {})]) as srv:
        exc = expect_provider_error(_api(srv))
        assert len(srv.requests) == 1  # SDK retries are off: the wrapper is the only layer that retries
    assert exc.retryable and exc.status == 429 and exc.cause == "rate_limit_error"
    if low is None:
        assert exc.retry_after is None
    else:
        assert low - 1e-9 <= exc.retry_after <= high + 1e-9


def test_overloaded_529_is_retryable():
    with AnthropicServer(script=[overloaded_reply(retry_after=0.01)]) as srv:
        exc = expect_provider_error(_api(srv))
        assert len(srv.requests) == 1
    assert exc.retryable and exc.status == 529 and exc.cause == "overloaded_error" and exc.retry_after == 0.01


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(408, True), (409, True), (500, True), (503, True), (400, False), (401, False), (403, False), (404, False)],
)
def test_error_statuses_map_to_retryable_or_not(status, retryable):
    with AnthropicServer(script=[error_reply(status, "something is wrong")]) as srv:
        exc = expect_provider_error(_api(srv))
        assert len(srv.requests) == 1
    assert exc.status == status and exc.retryable is retryable
    assert "something is wrong" in str(exc) and "anthropic:claude-test" in str(exc)


def test_the_key_never_appears_in_errors_or_settings():
    def echo_headers(body):  # a hostile server that reflects the credentials it received
        return Reply(
            400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(srv.requests[-1].headers)}}
        )

    with AnthropicServer(handler=echo_headers) as srv:
        api = _api(srv)
        exc = expect_provider_error(api)
    assert SENTINEL in str(srv.requests[0].headers)  # the test is meaningful: the key was on the wire
    for text in (str(exc), repr(exc), repr(exc.args), exc.cause, json.dumps(api.settings()), api.spec):
        assert SENTINEL not in text


def test_batch_calls_fail_with_a_provider_error_that_keeps_nothing_of_the_sdk():
    async def fail(call):
        try:
            with pytest.raises(ProviderError) as info:
                await call
            return info.value
        finally:
            await api.aclose()

    with AnthropicServer() as srv:
        api = _api(srv)
        polled = asyncio.run(fail(api.poll_batch("msgbatch_missing")))
        read = asyncio.run(fail(api.batch_results("msgbatch_missing", {})))  # the results stream in
    for exc in (polled, read):
        assert exc.status == 404 and "msgbatch_missing" in str(exc) and not exc.retryable
        assert_keeps_no_sdk_error(exc)


def test_a_broken_handler_is_answered_with_500_and_kept_for_the_test():
    with AnthropicServer(handler=lambda body: 1 / 0) as srv:
        exc = expect_provider_error(_api(srv))
    assert exc.status == 500 and exc.retryable and "ZeroDivisionError" in str(exc)
    assert [type(e) for e in srv.errors] == [ZeroDivisionError]


def test_connection_refused_is_retryable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    api = AnthropicAPI("claude-test", api_key=SENTINEL, base_url=f"http://127.0.0.1:{port}")
    exc = expect_provider_error(api)
    assert exc.retryable and exc.cause == "connection" and SENTINEL not in str(exc)


def test_read_timeout_is_retryable():
    with AnthropicServer(script=[Reply(200, {}, delay=0.5)]) as srv:
        exc = expect_provider_error(_api(srv, timeout=0.1))
    assert exc.retryable and exc.cause == "timeout"


def test_key_and_base_url_from_the_environment(monkeypatch):
    with AnthropicServer() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SENTINEL)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        api = build_model_api("anthropic:claude-env")
        response = generate_once(api, judge_request())
        base_url = srv.base_url  # a stopped simulator has no address
    assert response.tool_input is not None and srv.requests[0].body["model"] == "claude-env"
    # The endpoint is recorded and keys the cache (two servers never share answers); the key is not.
    assert api.settings() == {"model": "claude-env", "base_url": base_url}
    assert build_model_api("anthropic:claude-env?base_url=http://gw.test/").settings()["base_url"] == "http://gw.test"
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert build_model_api("anthropic:claude-env").settings()["base_url"] == "https://api.anthropic.com"


def test_missing_key_is_a_config_error():
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY") as caught:
        AnthropicAPI("claude-test")
    # The CLI user cannot "pass api_key=...": the message names the variable and the keyless judge only.
    assert "api_key=" not in str(caught.value) and "--judge offline" in str(caught.value)


def test_rate_limit_then_success_through_the_model_wrapper():
    verdict = {"label_reason": "ok", "label": "supported"}
    script = [error_reply(429, retry_after=0.01), tool_reply("record_verdict", verdict)]
    with AnthropicServer(script=script) as srv:
        model = Model(_api(srv), backoff_base=0.0)
        response = generate_once(model, judge_request())
        assert len(srv.requests) == 2
    assert response.tool_input == verdict and model.retries == 1 and model.usage.calls == 1


UNREADABLE = "anthropic:claude-test: reply body was not valid JSON (truncated?)"


@pytest.mark.parametrize("cut", ["json-cut-in-half", "cut-inside-a-character"])
def test_a_truncated_200_body_is_a_retryable_provider_error(cut):
    """The SDK's own decoding error (JSONDecodeError, UnicodeDecodeError) never escapes."""
    if cut == "json-cut-in-half":
        options = {"faults": truncated_once()}
    else:
        options = {"script": [cut_inside_a_character(text_reply("café au lait").body)]}
    with AnthropicServer(**options) as srv:
        exc = expect_provider_error(_api(srv))
        assert len(srv.requests) == 1  # SDK retries are off: the wrapper is the only layer that retries
    assert exc.retryable and exc.cause == "unreadable_body" and exc.status is None
    assert str(exc) == UNREADABLE


@pytest.mark.parametrize("mode", list(Mode))
def test_the_pipeline_runs_end_to_end_against_the_default_server(mode):
    sample = Sample(id="s1", context="The sky is blue.", response="The sky is blue. It rains every day.")
    with AnthropicServer() as srv:
        options = {"model_options": {"api_key": SENTINEL, "base_url": srv.base_url}}
        extractor = build_extractor("anthropic:claude-test", **options)
        judge = build_judge("anthropic:claude-test", mode, **options)
        (result,) = asyncio.run(measure_samples([sample], extractor, judge))
        calls = len(srv.requests)
    assert result.error is None and result.n_claims == 2 and result.n_evaluated == 2 and result.n_errors == 0
    assert calls == 1 + (1 + 2 if mode.one_claim else 1)  # extraction, then a cache warm-up and one call per claim
    assert result.usage.calls == calls and result.usage.input_tokens > 0
