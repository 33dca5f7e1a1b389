"""A reply body cut short on the way is retried by the model wrapper, on every provider, and never
becomes an empty answer: after the bounded retries it is an error row."""

import asyncio

import pytest
from provider_fixtures import expect_provider_error, generate_once, judge_request, truncated_always, truncated_once
from testdata import aws_session

from hallumeasure import Mode, Sample, build_extractor, build_judge, measure_samples
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.model import Model
from hallumeasure.testing import AnthropicServer, BedrockServer, Fault

BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"


class Anthropic:
    server = AnthropicServer
    spec = "anthropic:claude-test"
    unreadable = "anthropic:claude-test: reply body was not valid JSON (truncated?)"

    @staticmethod
    def options(srv) -> dict:
        return {"api_key": "test-key", "base_url": srv.base_url}

    @classmethod
    def api(cls, srv) -> AnthropicAPI:
        return AnthropicAPI("claude-test", **cls.options(srv))


class Bedrock:
    server = BedrockServer
    spec = f"bedrock:{BEDROCK_MODEL}"
    unreadable = f"bedrock:{BEDROCK_MODEL}: reply body was not valid JSON or not a Converse answer (truncated?)"

    @staticmethod
    def options(srv) -> dict:
        return {"session": aws_session(), "endpoint_url": srv.endpoint_url}

    @classmethod
    def api(cls, srv) -> BedrockAPI:
        return BedrockAPI(BEDROCK_MODEL, region_name="us-east-1", **cls.options(srv))


PROVIDERS = pytest.mark.parametrize("provider", [Anthropic, Bedrock], ids=["anthropic", "bedrock"])


@PROVIDERS
def test_a_truncated_body_then_a_good_one_through_the_model_wrapper(provider):
    with provider.server(faults=truncated_once()) as srv:
        model = Model(provider.api(srv), backoff_base=0.0)
        response = generate_once(model, judge_request())
        assert len(srv.requests) == 2 and srv.injected == [(0, Fault.TRUNCATED_BODY)]
    assert response.tool_input is not None and response.stop_reason == "tool_use"
    assert model.retries == 1 and model.usage.calls == 1


@PROVIDERS
def test_a_body_truncated_every_time_fails_after_the_bounded_retries(provider):
    with provider.server(faults=truncated_always()) as srv:
        model = Model(provider.api(srv), max_retries=2, backoff_base=0.0)
        exc = expect_provider_error(model)
        assert len(srv.requests) == 3
    assert exc.retryable and str(exc) == provider.unreadable and model.retries == 2 and model.usage.calls == 0


@PROVIDERS
@pytest.mark.parametrize("tool", ["record_claims", "record_verdict"])
def test_bodies_always_truncated_end_as_error_rows_not_empty_answers(provider, tool, aws):
    sample = Sample(id="s1", context="The sky is blue.", response="The sky is blue. It rains every day.")
    with provider.server(faults=truncated_always(tool)) as srv:
        options = {"model_options": provider.options(srv), "max_retries": 2, "backoff_base": 0.0}
        extractor = build_extractor(provider.spec, **options)
        judge = build_judge(provider.spec, Mode.COT_ONE, **options)
        judge.warm_cache = False  # the counts below are per claim (tests/judges/test_warm_up.py covers warm-ups)
        (result,) = asyncio.run(measure_samples([sample], extractor, judge))
        calls = len(srv.requests)
    if tool == "record_claims":  # the sample fails as a whole after three attempts of its extraction
        assert calls == 3 and result.n_claims == 0 and provider.unreadable in result.error
    else:  # the claims are kept; each verdict is an error row after three attempts
        assert calls == 1 + 2 * 3 and result.error is None and result.n_claims == 2 and result.n_errors == 2
        assert all(v.label is None and provider.unreadable in v.error for v in result.verdicts)
