"""OpenAIAPI against the local OpenAI simulator: the real ``openai`` SDK over real HTTP on 127.0.0.1,
nothing of ours mocked. Chat Completions with strict function calls, cached-token usage, errors and
retries (counted at the server), timeouts, Azure OpenAI's paths, secrets, and the Batch API. What every
provider must do is in test_providers.py and test_truncated_bodies.py."""

import asyncio
import json

import openai
import pytest
from provider_fixtures import (
    AZURE_KEY,
    OPENAI,
    OPENAI_KEY,
    SCHEMA,
    TOOL,
    VERDICT,
    expect_provider_error,
    generate_once,
    judge_request,
    judge_with_a_scripted_verdict,
)

from hallumeasure import Mode, Sample, build_extractor, build_judge, measure_samples
from hallumeasure.core.errors import ConfigError
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.judges.llm.outputs import CotVerdict, ExtractedClaims, PlainVerdicts, tool_schema
from hallumeasure.judges.llm.parsing import parse_output
from hallumeasure.models.base import Message, TextBlock, ToolCallBlock, ToolResultBlock, ToolSpec
from hallumeasure.models.batch import Batcher, BatchLedger
from hallumeasure.models.factory import build_model_api
from hallumeasure.models.model import Model
from hallumeasure.models.openai import OpenAIAPI, restore_optional, strict_schema
from hallumeasure.testing import Fault, FaultPlan, OpenAIServer, Reply
from hallumeasure.testing.openai_server import error_reply, raw_tool_reply, text_reply, tool_reply

FAST = {"collect_window": 0.02, "poll_interval": 0.01, "max_poll_interval": 0.02}


@pytest.fixture(autouse=True)
def _keys(monkeypatch, tmp_path):
    OPENAI.environment(monkeypatch, tmp_path)


def _azure(srv: OpenAIServer, deployment: str = "hm-deploy", **options) -> OpenAIAPI:
    return OpenAIAPI(deployment, azure_endpoint=srv.url, api_version="2024-10-21", **options)


# structured output ------------------------------------------------------------------------------------


def test_forced_strict_function_round_trip_and_usage_with_cached_tokens():
    # OpenAI counts cached tokens inside prompt_tokens; ours keep them apart, as the other providers do.
    usage = {"input_tokens": 12, "output_tokens": 7, "cache_read_tokens": 300}
    response, srv = judge_with_a_scripted_verdict(OPENAI, usage)
    (seen,) = srv.requests
    assert response.tool_call_id and response.model == "openai:simulated-open-model"

    body = seen.body
    assert seen.path == "/v1/chat/completions" and seen.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert body["model"] == "gpt-test" and body["max_tokens"] == 512 and "max_completion_tokens" not in body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "record_verdict"}}
    assert body["parallel_tool_calls"] is False and "temperature" not in body
    (tool,) = body["tools"]
    assert tool == {
        "type": "function",
        "function": {
            "name": "record_verdict",
            "description": TOOL.description,
            "parameters": {**SCHEMA, "additionalProperties": False},
            "strict": True,
        },
    }
    assert body["messages"] == [
        {"role": "system", "content": "You judge claims against a context."},
        {"role": "user", "content": "<context>The sky is blue.</context>Claim: blue."},
    ]
    assert seen.headers.get("x-stainless-retry-count", "0") == "0"


@pytest.mark.parametrize("contract", [CotVerdict, ExtractedClaims, PlainVerdicts])
def test_every_contract_is_accepted_in_strict_mode_and_answers_parse(contract):
    """The simulator refuses what OpenAI refuses in a strict function (if/then, default, open objects,
    optional properties); hallumeasure's real contracts pass, and the answers validate."""
    schema = tool_schema(contract)
    tool = ToolSpec(name="record", description="Record it.", input_schema=schema)
    with OpenAIServer() as srv:
        response = generate_once(OPENAI.api(srv), judge_request(tool=tool))
        sent = srv.bodies[0]["tools"][0]["function"]["parameters"]
    assert parse_output(contract, response) is not None and not srv.errors
    text = json.dumps(sent)
    assert '"if"' not in text and '"default"' not in text and '"minLength"' not in text
    assert sent["$defs"].keys() == schema["$defs"].keys()


def test_strict_schema_closes_objects_and_makes_optional_properties_nullable_then_drops_the_nulls():
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "count": {"type": "integer", "default": 3},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        },
        "required": ["name", "items"],
        "$defs": {"Item": {"type": "object", "properties": {"x": {"type": "number"}}}},
    }
    strict = strict_schema(schema)
    assert strict["required"] == ["name", "count", "note", "items"] and strict["additionalProperties"] is False
    assert strict["properties"]["name"] == {"type": "string"}
    assert strict["properties"]["count"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert strict["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}  # null was allowed
    assert strict["$defs"]["Item"] == {
        "type": "object",
        "properties": {"x": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
        "required": ["x"],
        "additionalProperties": False,
    }
    answer = {"name": "a", "count": None, "note": None, "items": [{"x": None}, {"x": 2}]}
    # Nulls the original schema does not allow are dropped; a null it allows stays.
    assert restore_optional(answer, schema) == {"name": "a", "note": None, "items": [{}, {"x": 2}]}

    tool = ToolSpec(name="record", description="d", input_schema=schema)
    reply = tool_reply("record", answer)
    with OpenAIServer(script=[reply]) as srv:
        response = generate_once(OPENAI.api(srv), judge_request(tool=tool))
    assert response.tool_input == {"name": "a", "note": None, "items": [{}, {"x": 2}]}


def test_strict_false_sends_the_schema_as_given_and_the_simulator_refuses_a_loose_strict_function():
    with OpenAIServer(script=[tool_reply("record_verdict", VERDICT)]) as srv:
        generate_once(OPENAI.api(srv, strict=False), judge_request())
        function = srv.bodies[0]["tools"][0]["function"]
    assert function["parameters"] == SCHEMA and "strict" not in function

    loose = {"type": "function", "function": {"name": "f", "parameters": SCHEMA, "strict": True}}
    with OpenAIServer() as srv:
        client = openai.OpenAI(api_key="k", base_url=srv.base_url, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="'additionalProperties' is required"):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], tools=[loose], tool_choice="required"
            )


def test_a_re_ask_sends_the_call_back_and_answers_it_with_a_tool_message():
    call = ToolCallBlock(call_id="call_1", name="record_verdict", input={"label": "maybe"})
    result = ToolResultBlock(call_id="call_1", result="label: not one of the labels")
    messages = (
        Message.user("Claim: blue."),
        Message(role="assistant", content=(call,)),
        Message(role="user", content=(result, TextBlock(text="Again."))),
    )
    with OpenAIServer(script=[tool_reply("record_verdict", VERDICT)]) as srv:
        generate_once(OPENAI.api(srv), judge_request(messages=messages))
        wire = srv.bodies[0]["messages"]
    assert wire[1:] == [
        {"role": "user", "content": "Claim: blue."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "record_verdict", "arguments": '{"label": "maybe"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "label: not one of the labels"},
        {"role": "user", "content": "Again."},
    ]


def test_finish_reasons_refusals_and_arguments_that_are_not_json():
    refusal = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": None, "refusal": "No."}}
        ],
    }
    script = [
        Reply(200, refusal),
        raw_tool_reply("record_verdict", json.dumps(VERDICT), finish_reason="stop"),  # a forced call ends in "stop"
        raw_tool_reply("record_verdict", '{"label_reason": "cut', finish_reason="length"),
        text_reply("filtered", stop_reason="refusal"),
    ]
    with OpenAIServer(script=script) as srv:
        api = OPENAI.api(srv)
        refused, forced, cut, filtered = (generate_once(api, judge_request()) for _ in range(4))
    assert (refused.stop_reason, refused.text) == ("refusal", "No.")
    assert (forced.stop_reason, forced.tool_input) == ("tool_use", VERDICT)
    assert (cut.stop_reason, cut.tool_input, cut.tool_raw) == ("max_tokens", None, '{"label_reason": "cut')
    assert filtered.stop_reason == "refusal"


def test_the_simulated_prompt_cache_reports_cached_tokens_on_the_second_call():
    with OpenAIServer(prompt_cache=True) as srv:
        api = OPENAI.api(srv)
        first = generate_once(api, judge_request())
        second = generate_once(api, judge_request())
    assert first.usage.cache_read_tokens == 0 and second.usage.cache_read_tokens > 0
    assert second.usage.input_tokens + second.usage.cache_read_tokens == first.usage.input_tokens


# errors, retries, timeouts ----------------------------------------------------------------------------


def test_a_non_retryable_error_is_not_retried():
    with OpenAIServer(script=[error_reply(400, "bad"), tool_reply("record_verdict", VERDICT)]) as srv:
        expect_provider_error(Model(OPENAI.api(srv), backoff_base=0.0))
        assert len(srv.requests) == 1


def test_read_timeout_is_retryable_and_the_wrapper_deadline_bounds_each_attempt():
    with OpenAIServer(script=[Reply(200, {}, delay=0.5)]) as srv:
        exc = expect_provider_error(OPENAI.api(srv, timeout=0.1))
    assert exc.retryable and exc.cause == "timeout"
    with OpenAIServer(faults=FaultPlan.at({0: Fault.READ_TIMEOUT}, hang=5.0)) as srv:
        model = Model(OPENAI.api(srv), backoff_base=0.0, timeout=0.3)  # bound() gives the SDK the same deadline
        response = generate_once(model, judge_request())
        assert len(srv.requests) == 2
    assert response.tool_input is not None and model.retries == 1


# keys, settings, Azure --------------------------------------------------------------------------------


def test_the_key_never_appears_in_errors_settings_or_the_manifest(tmp_path):
    def echo_headers(body):  # a hostile server that reflects the credentials it received
        return error_reply(400, str(srv.requests[-1].headers))

    with OpenAIServer(handler=echo_headers) as srv:
        api = OPENAI.api(srv)
        exc = expect_provider_error(api)
        azure = _azure(srv)
        azure_exc = expect_provider_error(azure)
    assert OPENAI_KEY in str(srv.requests[0].headers) and AZURE_KEY in str(srv.requests[1].headers)
    for text in (
        str(exc),
        repr(exc),
        exc.cause,
        str(azure_exc),
        json.dumps(api.settings()),
        json.dumps(azure.settings()),
    ):
        assert OPENAI_KEY not in text and AZURE_KEY not in text

    from hallumeasure import measure

    sample = {"id": "s1", "context": "The sky is blue.", "response": "The sky is blue."}
    with OpenAIServer() as srv:
        spec = f"openai:gpt-test?base_url={srv.base_url}"
        measure([sample], judge=spec, extractor=spec, out=tmp_path / "run", no_cache=True)
    written = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert written and all(OPENAI_KEY.encode() not in p.read_bytes() for p in written)
    assert "openai:gpt-test" in (tmp_path / "run" / "manifest.json").read_text()


def test_keys_come_from_the_environment_only(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIAPI("gpt-test")
    monkeypatch.delenv("AZURE_OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="AZURE_OPENAI_API_KEY"):
        OpenAIAPI("deploy", azure_endpoint="https://x.openai.azure.com")
    with pytest.raises(ConfigError, match="looks like a secret"):
        build_model_api("openai:gpt-test?api_key=sk-123")
    with pytest.raises(ConfigError, match="not both"):
        OpenAIAPI("x", base_url="http://a", azure_endpoint="http://b")


def test_settings_and_cache_minimum_name_the_endpoint(monkeypatch):
    hosted = build_model_api("openai:gpt-4o")
    assert hosted.settings() == {"model": "gpt-4o", "strict": True, "base_url": "https://api.openai.com/v1"}
    assert hosted.min_cache_tokens == 1024
    local = build_model_api("openai:qwen?base_url=http://127.0.0.1:8000/v1&strict=false&reasoning_effort=low")
    assert local.settings() == {
        "model": "qwen",
        "strict": False,
        "reasoning_effort": "low",
        "base_url": "http://127.0.0.1:8000/v1",
    }
    assert local.request_params(judge_request())["reasoning_effort"] == "low"
    assert local.min_cache_tokens is None  # no warm-up calls where caching is not known
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gw.test/v1/")
    assert build_model_api("openai:gpt-4o").settings()["base_url"] == "http://gw.test/v1"


def test_azure_deployment_path_api_version_and_key_header():
    with OpenAIServer(script=[tool_reply("record_verdict", VERDICT, usage={"cache_read_tokens": 5})]) as srv:
        api = build_model_api(f"openai:hm-deploy?azure_endpoint={srv.url}&api_version=2024-10-21")
        response = generate_once(api, judge_request())
        (seen,) = srv.requests
        url = srv.url
    assert seen.path == "/openai/deployments/hm-deploy/chat/completions?api-version=2024-10-21"
    assert seen.headers["api-key"] == AZURE_KEY and "authorization" not in seen.headers
    assert seen.body["model"] == "hm-deploy" and seen.body["max_completion_tokens"] == 512
    assert response.tool_input == VERDICT and response.usage.cache_read_tokens == 5
    assert api.settings() == {"model": "hm-deploy", "strict": True, "azure_endpoint": url, "api_version": "2024-10-21"}
    assert api.min_cache_tokens == 1024


def test_azure_without_an_api_version_is_refused_by_the_simulator():
    with OpenAIServer() as srv:
        client = openai.OpenAI(api_key="k", base_url=f"{srv.url}/openai/deployments/d", max_retries=0)
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="d", messages=[{"role": "user", "content": "hi"}])


# the pipeline -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [Mode.COT_ONE, Mode.NOCOT_ALL])
def test_the_pipeline_classifies_end_to_end_through_the_model_wrapper(mode):
    sample = Sample(id="s1", context="The sky is blue.", response="The sky is blue. It rains every day.")
    with OpenAIServer() as srv:
        options = {"model_options": {"base_url": srv.base_url}}
        extractor = build_extractor("openai:gpt-test", **options)
        judge = build_judge("openai:gpt-test", mode, **options)
        (result,) = asyncio.run(measure_samples([sample], extractor, judge))
        calls = len(srv.requests)
        strict = [b["tools"][0]["function"]["strict"] for b in srv.bodies]
    assert result.error is None and result.n_claims == 2 and result.n_evaluated == 2 and result.n_errors == 0
    # Extraction, then one call per claim (a local server caches nothing: no warm-up) or one for all.
    assert calls == 1 + (2 if mode.one_claim else 1) and all(strict)
    assert result.usage.calls == calls and result.usage.input_tokens > 0


# the Batch API ----------------------------------------------------------------------------------------

SAMPLES = [
    Sample(id=f"s{i}", context=f"The bridge is {20 + i} km long.", response=f"The bridge is {30 + i} km long.")
    for i in range(3)
]


def _measure(model):
    async def go():
        try:
            return await measure_samples(SAMPLES, LLMExtractor(model), LLMJudge(model), concurrency=len(SAMPLES))
        finally:
            await model.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("azure", [False, True])
def test_batch_round_trip_one_batch_per_stage_through_files_and_batches(tmp_path, azure):
    with OpenAIServer(batch_delay=0.01) as srv:
        api = _azure(srv) if azure else OPENAI.api(srv)
        ledger = BatchLedger.for_run(tmp_path / "run")
        model = Model(api, batch=Batcher(api, ledger=ledger, **FAST), backoff_base=0.0)
        results = _measure(model)
        created = [r for r in srv.requests if r.method == "POST" and r.path.split("?")[0].endswith("/batches")]
        uploads = [f for f in srv.files.values() if f["purpose"] == "batch"]
        paths = {r.path.split("?")[0] for r in srv.requests}
    assert all(r.n_claims == 1 and r.n_errors == 0 for r in results)
    assert not any(p.endswith("/chat/completions") for p in paths)  # nothing was sent on demand
    endpoint = "/chat/completions" if azure else "/v1/chat/completions"
    assert [r.body["endpoint"] for r in created] == [endpoint, endpoint]
    assert [r.body["completion_window"] for r in created] == ["24h", "24h"]
    lines = [[json.loads(line) for line in f["data"].decode().splitlines()] for f in uploads]
    assert [len(batch) for batch in lines] == [3, 3]  # extraction, then classification
    first = lines[1][0]
    assert first["method"] == "POST" and first["url"] == endpoint and len(first["custom_id"]) == 64
    assert first["body"]["tools"][0]["function"]["strict"] is True
    assert all(p.startswith("/openai/") for p in paths) if azure else all(p.startswith("/v1/") for p in paths)
    assert model.batch_usage == model.usage and model.usage.calls == 6
    assert [b["status"] for b in ledger.batches()] == ["ended", "ended"]


def test_a_failed_batch_item_is_retried_in_a_later_batch(tmp_path):
    plan = FaultPlan.at({3: Fault.OVERLOADED})  # the first classification item, once
    with OpenAIServer(batch_delay=0.0, faults=plan) as srv:
        api = OPENAI.api(srv)
        model = Model(api, batch=Batcher(api, ledger=BatchLedger.for_run(tmp_path), **FAST), backoff_base=0.0)
        results = _measure(model)
        error_files = [f for f in srv.files.values() if f["filename"].endswith("_error.jsonl")]
        batches = len(srv.batches)
    assert all(r.n_errors == 0 for r in results) and batches == 3 and model.retries == 1
    (error_file,) = error_files
    (line,) = [json.loads(x) for x in error_file["data"].decode().splitlines()]
    assert line["response"]["status_code"] == 503


def test_a_batch_whose_input_is_refused_fails_every_request_without_retry():
    request = judge_request()
    with OpenAIServer(batch_delay=0.0) as srv:
        api = OPENAI.api(srv)
        bad = srv.add_file(
            b'{"custom_id": "a", "method": "GET", "url": "/v1/chat/completions"}\n', purpose="batch", filename="x"
        )
        client = openai.OpenAI(api_key="k", base_url=srv.base_url, max_retries=0)
        batch = client.batches.create(input_file_id=bad["id"], endpoint="/v1/chat/completions", completion_window="24h")

        async def read():
            try:
                return await api.poll_batch(batch.id), await api.batch_results(batch.id, {"a": request})
            finally:
                await api.aclose()

        status, results = asyncio.run(read())
    assert status.ended and status.state == "failed"
    assert not results["a"].retryable and "method must be POST" in str(results["a"])
