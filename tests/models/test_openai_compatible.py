"""LangChain's ChatOpenAI against a local OpenAI-compatible simulator (the API of vLLM, llama.cpp,
Ollama and TGI), at the wire level: the real langchain-openai and openai SDKs run, nothing of ours is
mocked. Each test is one of the defects of issue #19, reproduced and fixed."""

import asyncio
import json
from typing import Literal

import pytest
from provider_fixtures import judge_request
from pydantic import BaseModel

from hallumeasure.core.errors import ConfigError, ProviderError
from hallumeasure.judges.llm.parsing import ask_structured
from hallumeasure.models.cache import RequestCache
from hallumeasure.models.factory import build_model_api
from hallumeasure.models.model import Model
from hallumeasure.registry.specs import with_options
from hallumeasure.testing import Fault, FaultPlan
from hallumeasure.testing.openai_server import OpenAIServer, error_reply, raw_tool_reply, text_reply, tool_reply

KEY = "sk-local-SENTINEL-never-print-me-0123456789"
CLASS = "langchain_openai:ChatOpenAI"
GOOD = {"label_reason": "The context says the sky is blue.", "label": "supported"}
BAD = {"label_reason": "The context says the sky is blue.", "label": "maybe"}


class Verdict(BaseModel):
    label_reason: str
    label: Literal["supported", "absent"]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # local servers take any key; ChatOpenAI insists on one
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)


def _spec(srv, **options) -> str:
    return with_options(
        f"langchain:{CLASS}",
        [f"{k}={v}" for k, v in {"model": "qwen-local", "base_url": srv.base_url, **options}.items()],
    )


def _model(srv, **wrapper) -> Model:
    return Model(build_model_api(_spec(srv)), backoff_base=0.0, **wrapper)


def _ask(model: Model, request=None, max_reasks: int = 2):
    async def go():
        try:
            return await ask_structured(model, request or judge_request(), Verdict, max_reasks=max_reasks)
        finally:
            await model.aclose()

    return asyncio.run(go())


# 1. one retry layer ----------------------------------------------------------------------------------


@pytest.mark.parametrize("max_retries", [0, 2])
def test_a_server_that_always_fails_gets_one_request_per_attempt_of_the_wrapper(max_retries):
    with OpenAIServer(faults=FaultPlan.random(1.0, [Fault.UNAVAILABLE])) as srv:
        model = _model(srv, max_retries=max_retries)
        result = _ask(model)
        assert len(srv.requests) == max_retries + 1  # the openai SDK's own retries are off
    assert result.error and "503" in result.error and model.retries == max_retries
    assert model.settings()["client_max_retries"] == 0 and model.settings()["max_retries"] == max_retries


def test_max_retries_is_refused_as_a_chat_model_option(tmp_path):
    with pytest.raises(ConfigError, match="--max-retries"):
        build_model_api(f"langchain:{CLASS}?max_retries=3")


# 2. tool calls whose arguments do not parse -----------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        "```json\n" + json.dumps(GOOD) + "\n```",
        json.dumps(GOOD) + "<|im_end|>",
        "Here is the verdict: " + json.dumps(GOOD) + " <|eot_id|>",
    ],
    ids=["code-fence", "im_end", "prose-and-eot"],
)
def test_invalid_tool_call_arguments_are_repaired_like_text(arguments):
    with OpenAIServer(script=[raw_tool_reply("record_verdict", arguments)]) as srv:
        result = _ask(_model(srv))
        assert len(srv.requests) == 1
    assert result.value == Verdict(**GOOD) and result.error is None


def test_an_unrepairable_call_is_shown_back_as_written_and_the_error_row_keeps_it():
    broken = '{"label_reason": "The context says so", "label": supp'
    with OpenAIServer(script=[raw_tool_reply("record_verdict", broken)] * 3) as srv:
        result = _ask(_model(srv))
        bodies = srv.bodies
    # The same broken call after the re-ask: a second re-ask would only get it again, so it is not sent.
    assert len(bodies) == 2 and result.value is None
    assert result.raw_output == broken and "no tool input and no JSON" in result.error
    assert "re-asking stopped" in result.error
    # The re-ask: the assistant's own call as written, an error tool result, and the reason as text.
    assistant, tool, note = bodies[1]["messages"][-3:]
    (call,) = assistant["tool_calls"]
    assert call["function"] == {"name": "record_verdict", "arguments": broken}
    assert tool["role"] == "tool" and tool["tool_call_id"] == call["id"]
    assert "could not be used" in tool["content"] and "could not be used" in note["content"]


def test_a_schema_violation_is_re_asked_with_the_call_and_an_error_result_then_succeeds():
    with OpenAIServer(script=[tool_reply("record_verdict", BAD), tool_reply("record_verdict", GOOD)]) as srv:
        result = _ask(_model(srv))
        first, second = srv.bodies
    assert result.value == Verdict(**GOOD) and result.attempts == 2
    assert second["messages"][:-3] == first["messages"]  # the re-ask continues the first request
    call = second["messages"][-3]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == BAD
    # Content beside the call is a string, never null: llama-cpp-python's server refuses null (500).
    assert isinstance(second["messages"][-2]["content"], str) and second["messages"][-2]["content"]
    assert "label" in second["messages"][-1]["content"]


# 3. bounded output and cut-offs -----------------------------------------------------------------------


def test_max_tokens_is_sent_and_a_length_finish_is_a_cut_off_that_is_not_re_asked():
    cut = raw_tool_reply("record_verdict", '{"label_reason": "The context', finish_reason="length")
    with OpenAIServer(script=[cut]) as srv:
        result = _ask(_model(srv), judge_request(max_tokens=321))
        (body,) = srv.bodies
    # ChatOpenAI's name for it, and the older name that some servers (llama-cpp-python) read only.
    assert body["max_completion_tokens"] == 321 and body["max_tokens"] == 321
    assert result.stop_reason == "max_tokens" and "cut off" in result.error
    assert result.raw_output == '{"label_reason": "The context'


@pytest.mark.parametrize(
    ("finish", "ours"), [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal")]
)
def test_finish_reasons_of_text_answers(finish, ours):
    with OpenAIServer(
        script=[
            text_reply(
                "Just text.",
                stop_reason={"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"}[finish],
            )
        ]
    ) as srv:
        response = asyncio.run(build_model_api(_spec(srv)).generate(judge_request()))
        assert srv.bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "record_verdict"}}
    assert response.stop_reason == ours and response.text == "Just text."


def test_usage_counts_cached_prompt_tokens_apart():
    reply = tool_reply("record_verdict", GOOD, usage={"input_tokens": 30, "cache_read_tokens": 70, "output_tokens": 9})
    with OpenAIServer(script=[reply]) as srv:
        response = asyncio.run(build_model_api(_spec(srv)).generate(judge_request()))
        assert srv.bodies[0]["messages"][0]["role"] == "system"
    usage = response.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens, usage.calls) == (30, 70, 9, 1)


# 4. every re-ask reaches the model, and a resumed run pays for none of them again -------------------------


def test_a_repeated_bad_answer_stops_the_re_asks_and_is_replayed_from_the_cache(tmp_path):
    cache = RequestCache(tmp_path / "cache.sqlite")
    with OpenAIServer(handler=lambda body: tool_reply("record_verdict", BAD)) as srv:
        result = _ask(_model(srv, cache=cache))
        assert len(srv.requests) == 2 and result.usage.cached_calls == 0 and result.attempts == 2
        again = _ask(_model(srv, cache=cache))  # a resumed run: every attempt is answered from the cache
        assert len(srv.requests) == 2
    assert again.usage.cached_calls == 2 and again.error == result.error


# 5. the cache key and the manifest name the server and the model, never the key ---------------------


def test_two_servers_and_two_models_never_share_cached_answers(tmp_path, monkeypatch):
    cache = RequestCache(tmp_path / "cache.sqlite")
    with OpenAIServer() as one, OpenAIServer() as two:
        for srv in (one, two):
            _ask(_model(srv, cache=cache))
        monkeypatch.setenv("OPENAI_BASE_URL", two.base_url)  # the SDK's own variable: resolved the same way
        from_env = Model(build_model_api(f"langchain:{CLASS}?model=other-model"), cache=cache)
        _ask(from_env)
        assert (len(one.requests), len(two.requests)) == (1, 2)
        assert two.bodies[-1]["model"] == "other-model"
        settings = from_env.settings()
        assert settings["base_url"] == two.base_url and settings["model"] == "other-model"
    assert settings["class"] == CLASS and from_env.spec == f"langchain:{CLASS}"
    assert KEY not in json.dumps(settings) and "api_key" not in json.dumps(settings)


def test_options_are_typed_recorded_and_secrets_are_refused(tmp_path):
    with OpenAIServer() as srv:
        api = build_model_api(_spec(srv, temperature=0, top_p=0.5, seed=7))
        asyncio.run(api.generate(judge_request()))
        (body,) = srv.bodies
    assert (body["temperature"], body["top_p"], body["seed"], body["model"]) == (0, 0.5, 7, "qwen-local")
    settings = api.settings()
    assert (settings["temperature"], settings["top_p"], settings["seed"]) == (0, 0.5, 7)
    for option in ("api_key=sk-xyz", "openai_api_key=sk-xyz", "password=x"):
        with pytest.raises(ConfigError, match="looks like a secret") as caught:
            with_options(f"langchain:{CLASS}", [option])
        assert "sk-xyz" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"no option temprature \(did you mean temperature"):
        build_model_api(f"langchain:{CLASS}?temprature=0")
    with pytest.raises(ConfigError, match="not key=value"):
        with_options(f"langchain:{CLASS}", ["temperature"])


# 6. text tool calls of open models ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "record_verdict", "arguments": ' + json.dumps(GOOD) + "}\n</tool_call>",
        '<tool_call>{"name": "record_verdict", "arguments": '
        + json.dumps(json.dumps(GOOD))
        + "}</tool_call><|im_end|>",
        '<|python_tag|>{"name": "record_verdict", "parameters": ' + json.dumps(GOOD) + "}",
        '[TOOL_CALLS] [{"name": "record_verdict", "arguments": ' + json.dumps(GOOD) + "}]",
    ],
    ids=["hermes", "qwen-string-arguments", "llama3.1", "mistral"],
)
def test_text_tool_calls_of_open_models_are_read(text):
    with OpenAIServer(script=[text_reply(text)]) as srv:
        result = _ask(_model(srv))
        assert len(srv.requests) == 1
    assert result.value == Verdict(**GOOD)


# faults ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "retryable", "status", "retry_after"),
    [
        (error_reply(429, retry_after=0.02), True, 429, 0.02),
        (error_reply(503), True, 503, None),
        (error_reply(400, "bad request"), False, 400, None),
        (error_reply(401, f"wrong key {KEY}"), False, 401, None),
    ],
)
def test_http_errors_map_to_provider_errors_without_the_key(reply, retryable, status, retry_after):
    with OpenAIServer(script=[reply]) as srv:
        with pytest.raises(ProviderError) as caught:
            asyncio.run(build_model_api(_spec(srv)).generate(judge_request()))
        assert len(srv.requests) == 1
    exc = caught.value
    assert (exc.retryable, exc.status, exc.retry_after) == (retryable, status, retry_after)
    assert KEY not in str(exc) and exc.__cause__ is None and exc.__context__ is None


@pytest.mark.parametrize("fault", [Fault.READ_TIMEOUT, Fault.CONNECTION_RESET, Fault.TRUNCATED_BODY])
def test_transport_faults_are_retried_by_the_wrapper(fault):
    with OpenAIServer(faults=FaultPlan.at({0: fault}, hang=5.0)) as srv:
        model = _model(srv, max_retries=1, timeout=1.0)
        result = _ask(model)
        assert len(srv.requests) == 2
    assert result.error is None and model.retries == 1


def test_malformed_request_bodies_are_refused_like_a_server_would():
    with OpenAIServer() as srv:
        api = build_model_api(_spec(srv))
        bad_tool = judge_request().tool.model_copy(update={"input_schema": {"type": "array"}})
        with pytest.raises(ProviderError) as caught:
            asyncio.run(api.generate(judge_request(tool=bad_tool)))
    assert caught.value.status == 400 and not caught.value.retryable and 'type: "object"' in str(caught.value)


# the whole pipeline under every fault of the plan --------------------------------------------------------


@pytest.mark.parametrize("mode", ["cot-all", "cot-one"])
def test_the_pipeline_loses_nothing_under_every_fault_on_the_openai_wire(mode):
    from pipeline.reliability.samples import SAMPLES

    from hallumeasure.core.types import Mode
    from hallumeasure.judges.llm.classify import LLMJudge
    from hallumeasure.judges.llm.extract import LLMExtractor
    from hallumeasure.pipeline.run import measure_samples

    # Every kind of fault once, on the first calls in turn, then a seeded share of them at random.
    plan = FaultPlan(schedule=list(Fault), rate=0.2, faults=list(Fault), seed=7, hang=1.5)
    with OpenAIServer(faults=plan) as srv:
        model = _model(srv, max_retries=2, timeout=0.5)
        results = asyncio.run(measure_samples(SAMPLES, LLMExtractor(model), LLMJudge(model, Mode(mode))))
        injected = {fault for _, fault in srv.injected}
    assert injected == set(Fault)  # every kind of fault happened at least once
    assert sorted(r.sample_id for r in results) == sorted(s.id for s in SAMPLES)  # one result per sample
    for result in results:
        assert result.error or result.verdicts or result.n_claims == 0
        for verdict in result.verdicts:
            assert verdict.ok or verdict.error  # an error row always says why


def test_structured_and_url_options_are_recorded_without_what_they_may_hide():
    with OpenAIServer() as srv:
        spec = with_options(
            f"langchain:{CLASS}",
            [
                "model=m",
                f"base_url={srv.url.replace('://', '://user:pw@')}/v1",
                'default_headers={"X-Org": "team-token-123456"}',
            ],
        )
        api = build_model_api(spec)
        asyncio.run(api.generate(judge_request()))
        assert srv.requests[0].headers["x-org"] == "team-token-123456"  # the option did reach the client
        recorded = json.dumps(api.settings())
        assert api.settings()["base_url"] == srv.base_url
    assert "team-token-123456" not in recorded and "pw@" not in recorded


def test_openai_itself_gets_only_its_own_name_for_the_bound():
    api = build_model_api(f"langchain:{CLASS}?model=gpt-4o-mini&base_url=https://api.openai.com/v1")
    bounded = api._bounded_chat(99)
    assert bounded.max_tokens == 99 and "max_tokens" not in (bounded.extra_body or {})
