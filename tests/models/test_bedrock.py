"""BedrockAPI against the local Converse simulator: real boto3 and botocore over real HTTP, nothing of ours mocked.
What every provider must do is in test_providers.py and test_truncated_bodies.py."""

import asyncio
import threading
import time

import boto3
import pytest
from provider_fixtures import (
    AWS_ACCESS_KEY,
    BEDROCK,
    BEDROCK_MODEL,
    SCHEMA,
    TOOL,
    bedrock_session,
    generate_once,
    judge_request,
    judge_with_a_scripted_verdict,
)

from hallumeasure.core.errors import ConfigError
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.factory import build_model_api
from hallumeasure.testing import BedrockServer
from hallumeasure.testing.bedrock_server import text_reply


@pytest.fixture(autouse=True)
def dummy_aws(monkeypatch, tmp_path):
    """Sentinel credentials from the environment, and no AWS files or instance metadata to fall back on."""
    BEDROCK.environment(monkeypatch, tmp_path)


def test_forced_tool_round_trip_sends_cache_points_and_reads_usage():
    usage = {"input_tokens": 12, "output_tokens": 7, "cache_read_tokens": 300, "cache_write_tokens": 40}
    response, srv = judge_with_a_scripted_verdict(BEDROCK, usage)
    (seen,) = srv.requests
    (call,) = srv.calls
    assert response.model == BEDROCK.spec

    assert call.model == BEDROCK_MODEL
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
    assert seen.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={AWS_ACCESS_KEY}/")


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
        results, ticks = asyncio.run(go(BEDROCK.api(srv, max_workers=2)))
    assert [r.text for r in results] == ["ok"] * 6
    assert peak == 2 and ticks >= 5


def test_registry_builds_bedrock_with_the_endpoint_from_the_environment(monkeypatch):
    with BedrockServer() as srv:
        monkeypatch.setenv("HALLUMEASURE_BEDROCK_ENDPOINT", srv.endpoint_url)
        api = build_model_api(f"bedrock:{BEDROCK_MODEL}", region_name="eu-west-1")
        response = generate_once(api, judge_request())
        endpoint_url = srv.endpoint_url  # a stopped simulator has no address
    assert response.tool_input is not None
    # Region and endpoint are recorded and key the cache: another region never shares answers.
    assert api.settings() == {"model": BEDROCK_MODEL, "region": "eu-west-1", "endpoint_url": endpoint_url}
    assert api.region_name == "eu-west-1"


def test_unknown_profile_and_conflicting_options_are_config_errors():
    with pytest.raises(ConfigError, match="not found"):
        BedrockAPI(BEDROCK_MODEL, profile="no-such-profile")
    with pytest.raises(ConfigError, match="not both"):
        BedrockAPI(BEDROCK_MODEL, profile="p", session=bedrock_session())


def test_no_credentials_fail_when_the_model_is_built_like_a_missing_anthropic_key(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    for build in (
        lambda: BedrockAPI(BEDROCK_MODEL, region_name="us-east-1"),
        lambda: build_model_api(f"bedrock:{BEDROCK_MODEL}", region_name="us-east-1"),
        lambda: BedrockAPI(BEDROCK_MODEL, session=boto3.Session(region_name="us-east-1")),
    ):
        with pytest.raises(ConfigError, match=r"no AWS credentials found: set AWS_PROFILE, or AWS_ACCESS_KEY_ID"):
            build()


def test_credentials_from_a_session_or_a_bedrock_api_key_are_enough(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert BedrockAPI(BEDROCK_MODEL, region_name="us-east-1", session=bedrock_session()).spec == BEDROCK.spec
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-for-tests")
    BedrockAPI(BEDROCK_MODEL, region_name="us-east-1")


def test_a_credential_source_that_fails_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    config = tmp_path / "config"
    config.write_text("[profile broken]\ncredential_process = /nonexistent/credential-helper\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    with pytest.raises(ConfigError, match="AWS credentials cannot be loaded"):
        BedrockAPI(BEDROCK_MODEL, region_name="us-east-1", profile="broken")
