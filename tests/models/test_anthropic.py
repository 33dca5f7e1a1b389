"""AnthropicAPI against the local Messages API simulator: the real SDK over real HTTP, nothing of ours mocked.
What every provider must do is in test_providers.py and test_truncated_bodies.py."""

import pytest
from provider_fixtures import (
    ANTHROPIC,
    ANTHROPIC_KEY,
    SCHEMA,
    TOOL,
    expect_provider_error,
    generate_once,
    judge_request,
    judge_with_a_scripted_verdict,
)

from hallumeasure.core.errors import ConfigError
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import Message, TextBlock
from hallumeasure.models.factory import build_model_api
from hallumeasure.testing import AnthropicServer
from hallumeasure.testing.anthropic_server import overloaded_reply, text_reply


def test_forced_tool_round_trip_sends_cache_markers_and_reads_usage():
    usage = {"input_tokens": 12, "output_tokens": 7, "cache_read_tokens": 300, "cache_write_tokens": 40}
    response, srv = judge_with_a_scripted_verdict(ANTHROPIC, usage)
    (seen,) = srv.requests
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
    assert ANTHROPIC_KEY in seen.headers.get("x-api-key", "") + seen.headers.get("authorization", "")


def test_empty_block_passes_its_cache_marker_to_the_block_before():
    request = judge_request(messages=(Message.user("context", TextBlock(text="", cache_after=True), "claim"),))
    with AnthropicServer(script=[text_reply("x")]) as srv:
        generate_once(ANTHROPIC.api(srv), request)
        content = srv.requests[0].body["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "context", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "claim"},
    ]


def test_overloaded_529_is_retryable():
    with AnthropicServer(script=[overloaded_reply(retry_after=0.01)]) as srv:
        exc = expect_provider_error(ANTHROPIC.api(srv))
        assert len(srv.requests) == 1
    assert exc.retryable and exc.status == 529 and exc.cause == "overloaded_error" and exc.retry_after == 0.01


def test_a_broken_handler_is_answered_with_500_and_kept_for_the_test():
    with AnthropicServer(handler=lambda body: 1 / 0) as srv:
        exc = expect_provider_error(ANTHROPIC.api(srv))
    assert exc.status == 500 and exc.retryable and "ZeroDivisionError" in str(exc)
    assert [type(e) for e in srv.errors] == [ZeroDivisionError]


def test_key_and_base_url_from_the_environment(monkeypatch):
    with AnthropicServer() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
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
