"""A reply body cut short on the way is a retryable error on every provider, is retried by the model
wrapper, and never becomes an empty answer: after the bounded retries it is an error row."""

import asyncio

import pytest
from provider_fixtures import (
    ANTHROPIC,
    BEDROCK,
    OPENAI,
    cut_inside_a_character,
    each_provider,
    expect_provider_error,
    generate_once,
    judge_request,
    per_provider,
    truncated_always,
    truncated_once,
)

from hallumeasure import Mode, Sample, build_extractor, build_judge, measure_samples
from hallumeasure.models.model import Model
from hallumeasure.testing import Fault, Reply

CUTS = {
    "json-cut-in-half": lambda provider: {"faults": truncated_once()},
    "cut-inside-a-character": lambda provider: {
        "script": [cut_inside_a_character(provider.text_reply("café au lait").body)]
    },
    # botocore reads a 200 body that is not JSON as a result without fields: Bedrock's own case.
    "no-converse-fields": lambda provider: {"script": [Reply(200, {"usage": {"inputTokens": 1, "outputTokens": 0}})]},
}


@per_provider(
    "cut",
    {
        ANTHROPIC: ["json-cut-in-half", "cut-inside-a-character"],
        OPENAI: ["json-cut-in-half", "cut-inside-a-character"],
        BEDROCK: ["json-cut-in-half", "cut-inside-a-character", "no-converse-fields"],
    },
)
def test_a_truncated_200_body_is_a_retryable_provider_error_not_an_empty_answer(provider, cut):
    """The SDK's own decoding error (JSONDecodeError, UnicodeDecodeError) never escapes, and a body that
    botocore reads as a result without fields never passes as an (empty) answer."""
    with provider.server(**CUTS[cut](provider)) as srv:
        exc = expect_provider_error(provider.api(srv))
        assert len(srv.requests) == 1  # SDK retries are off: the wrapper is the only layer that retries
    assert exc.retryable and exc.cause == "unreadable_body" and exc.status is None
    assert str(exc) == provider.unreadable


@each_provider(ANTHROPIC, BEDROCK)
def test_a_truncated_body_then_a_good_one_through_the_model_wrapper(provider):
    with provider.server(faults=truncated_once()) as srv:
        model = Model(provider.api(srv), backoff_base=0.0)
        response = generate_once(model, judge_request())
        assert len(srv.requests) == 2 and srv.injected == [(0, Fault.TRUNCATED_BODY)]
    assert response.tool_input is not None and response.stop_reason == "tool_use"
    assert model.retries == 1 and model.usage.calls == 1


@each_provider(ANTHROPIC, BEDROCK)
def test_a_body_truncated_every_time_fails_after_the_bounded_retries(provider):
    with provider.server(faults=truncated_always()) as srv:
        model = Model(provider.api(srv), max_retries=2, backoff_base=0.0)
        exc = expect_provider_error(model)
        assert len(srv.requests) == 3
    assert exc.retryable and str(exc) == provider.unreadable and model.retries == 2 and model.usage.calls == 0


@each_provider(ANTHROPIC, BEDROCK)
@pytest.mark.parametrize("tool", ["record_claims", "record_verdict"])
def test_bodies_always_truncated_end_as_error_rows_not_empty_answers(provider, tool):
    sample = Sample(id="s1", context="The sky is blue.", response="The sky is blue. It rains every day.")
    with provider.server(faults=truncated_always(tool)) as srv:
        options = {"model_options": provider.options(srv.base_url), "max_retries": 2, "backoff_base": 0.0}
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
