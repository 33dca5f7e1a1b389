"""BedrockAPI against the local Converse simulator: real boto3 and botocore over real HTTP, nothing of ours mocked."""

import asyncio
import functools
import json
import socket
import threading
import time

import boto3
import pytest
from provider_fixtures import (
    SCHEMA,
    TOOL,
    cut_inside_a_character,
    expect_provider_error,
    generate_once,
    judge_request,
    truncated_once,
)

from hallumeasure import Mode, Sample, build_extractor, build_judge, measure_samples
from hallumeasure.core.errors import ConfigError
from hallumeasure.judges.llm.outputs import CotVerdict, ExtractedClaims, tool_schema
from hallumeasure.judges.llm.parsing import parse_output
from hallumeasure.models.base import Message, ToolSpec
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.factory import build_model_api
from hallumeasure.models.model import Model
from hallumeasure.testing import BedrockServer, Reply
from hallumeasure.testing.bedrock_server import error_reply, text_reply, throttling_reply, tool_reply

ACCESS_KEY = "TESTKEYIDSENTINEL0NEVERPRINT"
SECRET_KEY = "secret-SENTINEL-never-print-me-0123456789"
MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"  # the colon must survive the path encoding


@pytest.fixture(autouse=True)
def dummy_aws(monkeypatch, tmp_path):
    """Sentinel credentials from the environment, and no AWS files or instance metadata to fall back on."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)


@functools.cache
def _session() -> boto3.Session:
    # One session for the module, so that botocore parses its service models once rather than per test.
    return boto3.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)


def _api(srv: BedrockServer, **options) -> BedrockAPI:
    options.setdefault("session", _session())
    return BedrockAPI(MODEL_ID, region_name="us-east-1", endpoint_url=srv.endpoint_url, **options)


def test_forced_tool_round_trip_sends_cache_points_and_reads_usage():
    usage = {"input_tokens": 12, "output_tokens": 7, "cache_read_tokens": 300, "cache_write_tokens": 40}
    verdict = {"label_reason": "The context says so.", "label": "supported"}
    with BedrockServer(script=[tool_reply("record_verdict", verdict, usage=usage)]) as srv:
        response = generate_once(_api(srv), judge_request())
        (seen,) = srv.requests
        (call,) = srv.calls

    assert response.tool_input == verdict and response.stop_reason == "tool_use" and response.text == ""
    assert (response.usage.calls, response.usage.input_tokens, response.usage.output_tokens) == (1, 12, 7)
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (300, 40)
    assert response.model == f"bedrock:{MODEL_ID}"

    assert call.model == MODEL_ID
    body = seen.body
    assert body["toolConfig"] == {
        "tools": [
            {"toolSpec": {"name": "record_verdict", "description": TOOL.description, "inputSchema": {"json": SCHEMA}}}
        ],
        "toolChoice": {"tool": {"name": "record_verdict"}},
    }
    assert body["inferenceConfig"] == {"maxTokens": 512}
    assert body["system"] == [{"text": "You judge claims against a context."}, {"cachePoint": {"type": "default"}}]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"text": "<context>The sky is blue.</context>"},
                {"cachePoint": {"type": "default"}},
                {"text": "Claim: blue."},
            ],
        }
    ]
    assert seen.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")


def test_no_cache_points_unless_asked_and_no_tool_config_without_a_tool():
    messages = (Message.user("a"), Message.assistant("b"), Message.user("c"))
    request = judge_request(cache_system=False, tool=None, messages=messages)
    with BedrockServer(script=[text_reply("plain answer")]) as srv:
        response = generate_once(_api(srv), request)
        body = srv.requests[0].body
    assert response.text == "plain answer" and response.tool_input is None and response.stop_reason == "end_turn"
    assert "cachePoint" not in json.dumps(body) and "toolConfig" not in body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


@pytest.mark.parametrize(
    ("wire", "ours"),
    [
        ("end_turn", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("guardrail_intervened", "refusal"),
        ("content_filtered", "refusal"),
        ("model_context_window_exceeded", "max_tokens"),
        ("malformed_tool_use", "other"),
    ],
)
def test_stop_reasons_are_mapped(wire, ours):
    with BedrockServer(script=[text_reply("partial", stop_reason=wire)]) as srv:
        response = generate_once(_api(srv), judge_request(tool=None))
    assert response.stop_reason == ours and response.text == "partial"


@pytest.mark.parametrize("contract", [CotVerdict, ExtractedClaims])
def test_default_server_answers_schema_valid_tool_input_with_deterministic_usage(contract):
    tool = ToolSpec(name="record", description="Record it.", input_schema=tool_schema(contract))
    with BedrockServer() as srv:
        api = _api(srv)
        first = generate_once(api, judge_request(tool=tool))
        second = generate_once(api, judge_request(tool=tool))  # the same provider works again after aclose()
    assert parse_output(contract, first) is not None
    assert first.usage == second.usage and first.usage.input_tokens > 0 and first.usage.output_tokens > 0


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (429, "ThrottlingException", True),
        (503, "ServiceUnavailableException", True),
        (429, "ModelNotReadyException", True),
        (500, "InternalServerException", True),
        (408, "ModelTimeoutException", True),
        (400, "ValidationException", False),
        (403, "AccessDeniedException", False),
        (404, "ResourceNotFoundException", False),
    ],
)
def test_error_codes_map_to_retryable_or_not_and_botocore_does_not_retry(status, code, retryable):
    with BedrockServer(script=[error_reply(status, "something is wrong", code=code)]) as srv:
        exc = expect_provider_error(_api(srv))
        assert len(srv.requests) == 1  # botocore retries are off: the wrapper is the only layer that retries
    assert (exc.status, exc.cause, exc.retryable) == (status, code, retryable)
    assert "something is wrong" in str(exc) and MODEL_ID in str(exc)


def test_throttling_carries_retry_after():
    with BedrockServer(script=[throttling_reply(retry_after=0.01)]) as srv:
        exc = expect_provider_error(_api(srv))
        assert len(srv.requests) == 1
    assert exc.retryable and exc.status == 429 and exc.retry_after == 0.01


def test_credentials_never_appear_in_errors_or_settings():
    def echo_headers(body):  # a hostile server that reflects the credentials it received
        return error_reply(400, str(srv.requests[-1].headers) + " " + SECRET_KEY)

    with BedrockServer(handler=echo_headers) as srv:
        api = _api(srv)
        exc = expect_provider_error(api)
    assert ACCESS_KEY in str(srv.requests[0].headers)  # the test is meaningful: the key id was on the wire
    for text in (str(exc), repr(exc), repr(exc.args), exc.cause, json.dumps(api.settings()), api.spec):
        assert ACCESS_KEY not in text and SECRET_KEY not in text


def test_connection_refused_is_retryable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    api = BedrockAPI(MODEL_ID, region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{port}")
    exc = expect_provider_error(api)
    assert exc.retryable and exc.cause == "connection"


def test_read_timeout_is_retryable():
    with BedrockServer(script=[Reply(200, {}, delay=0.5)]) as srv:
        exc = expect_provider_error(_api(srv, read_timeout=0.1))
        assert len(srv.requests) == 1
    assert exc.retryable and exc.cause == "timeout"


def test_calls_run_off_the_event_loop_in_a_bounded_pool():
    lock, in_flight, peak = threading.Lock(), 0, 0

    def slow(body):
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.05)
        with lock:
            in_flight -= 1
        return text_reply("ok")

    async def go(api):
        ticks = 0

        async def ticker():  # keeps running only if the loop is not blocked by boto3
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        results = await asyncio.gather(*(api.generate(judge_request(tool=None)) for _ in range(6)))
        task.cancel()
        await api.aclose()
        return results, ticks

    with BedrockServer(handler=slow) as srv:
        results, ticks = asyncio.run(go(_api(srv, max_workers=2)))
    assert [r.text for r in results] == ["ok"] * 6
    assert peak == 2 and ticks >= 5


def test_registry_builds_bedrock_with_the_endpoint_from_the_environment(monkeypatch):
    with BedrockServer() as srv:
        monkeypatch.setenv("HALLUMEASURE_BEDROCK_ENDPOINT", srv.endpoint_url)
        api = build_model_api(f"bedrock:{MODEL_ID}", region_name="eu-west-1")
        response = generate_once(api, judge_request())
        endpoint_url = srv.endpoint_url  # a stopped simulator has no address
    assert response.tool_input is not None
    # Region and endpoint are recorded and key the cache: another region never shares answers.
    assert api.settings() == {"model": MODEL_ID, "region": "eu-west-1", "endpoint_url": endpoint_url}
    assert api.region_name == "eu-west-1"


def test_throttling_then_success_through_the_model_wrapper():
    verdict = {"label_reason": "ok", "label": "supported"}
    script = [throttling_reply(retry_after=0.01), tool_reply("record_verdict", verdict)]
    with BedrockServer(script=script) as srv:
        model = Model(_api(srv), backoff_base=0.0)
        response = generate_once(model, judge_request())
        assert len(srv.requests) == 2
    assert response.tool_input == verdict and model.retries == 1 and model.usage.calls == 1


UNREADABLE = f"bedrock:{MODEL_ID}: reply body was not valid JSON or not a Converse answer (truncated?)"


@pytest.mark.parametrize("cut", ["json-cut-in-half", "cut-inside-a-character", "no-converse-fields"])
def test_a_truncated_200_body_is_a_retryable_provider_error_not_an_empty_answer(cut):
    """botocore reads a 200 body that is not JSON as a result without fields, and raises
    UnicodeDecodeError for one cut inside a character: neither may pass as an (empty) answer."""
    if cut == "json-cut-in-half":
        options = {"faults": truncated_once()}
    elif cut == "cut-inside-a-character":
        options = {"script": [cut_inside_a_character(text_reply("café au lait").body)]}
    else:
        options = {"script": [Reply(200, {"usage": {"inputTokens": 1, "outputTokens": 0}})]}
    with BedrockServer(**options) as srv:
        exc = expect_provider_error(_api(srv))
        assert len(srv.requests) == 1  # botocore retries are off: the wrapper is the only layer that retries
    assert exc.retryable and exc.cause == "unreadable_body" and exc.status is None
    assert str(exc) == UNREADABLE


def test_unknown_profile_and_conflicting_options_are_config_errors():
    with pytest.raises(ConfigError, match="not found"):
        BedrockAPI(MODEL_ID, profile="no-such-profile")
    with pytest.raises(ConfigError, match="not both"):
        BedrockAPI(MODEL_ID, profile="p", session=_session())


def test_the_pipeline_runs_end_to_end_against_the_default_server():
    sample = Sample(id="s1", context="The sky is blue.", response="The sky is blue. It rains every day.")
    with BedrockServer() as srv:
        options = {"model_options": {"session": _session(), "endpoint_url": srv.endpoint_url}}
        extractor = build_extractor(f"bedrock:{MODEL_ID}", **options)
        judge = build_judge(f"bedrock:{MODEL_ID}", Mode.COT_ALL, **options)
        (result,) = asyncio.run(measure_samples([sample], extractor, judge))
        assert len(srv.requests) == 2
    assert result.error is None and result.n_claims == 2 and result.n_evaluated == 2 and result.n_errors == 0
    assert result.usage.calls == 2 and result.usage.input_tokens > 0


def test_no_credentials_fail_when_the_model_is_built_like_a_missing_anthropic_key(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    for build in (
        lambda: BedrockAPI(MODEL_ID, region_name="us-east-1"),
        lambda: build_model_api(f"bedrock:{MODEL_ID}", region_name="us-east-1"),
        lambda: BedrockAPI(MODEL_ID, session=boto3.Session(region_name="us-east-1")),
    ):
        with pytest.raises(ConfigError, match=r"no AWS credentials found: set AWS_PROFILE, or AWS_ACCESS_KEY_ID"):
            build()


def test_credentials_from_a_session_or_a_bedrock_api_key_are_enough(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert BedrockAPI(MODEL_ID, region_name="us-east-1", session=_session()).spec == f"bedrock:{MODEL_ID}"
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-for-tests")
    BedrockAPI(MODEL_ID, region_name="us-east-1")


def test_a_credential_source_that_fails_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    config = tmp_path / "config"
    config.write_text("[profile broken]\ncredential_process = /nonexistent/credential-helper\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    with pytest.raises(ConfigError, match="AWS credentials cannot be loaded"):
        BedrockAPI(MODEL_ID, region_name="us-east-1", profile="broken")
