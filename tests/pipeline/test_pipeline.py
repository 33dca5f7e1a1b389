"""The four classifier modes, error rows and aggregation, driven by the scripted fake."""

import asyncio

import pytest
from testdata import EXAMPLES

from hallumeasure.core.labels import Label, Policy
from hallumeasure.core.types import ErrorKind, Mode, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.base import GenerateResponse
from hallumeasure.models.fake import FakeAPI, demo_responder, prompt_blocks
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.runs.inputs import load_samples

SAMPLE = Sample(
    id="s1",
    context="The bridge is 24 km long. It opened in 2019.",
    response="The bridge is 42 km long. It opened in 2019. Is it the longest?",
)


def _run(samples, mode, responder=None, **judge_options):
    api = FakeAPI(responder=responder)
    model = Model(api)
    results = asyncio.run(
        measure_samples(samples, LLMExtractor(model), LLMJudge(model, mode, **judge_options), Policy())
    )
    return results, api


@pytest.mark.parametrize("mode", list(Mode))
def test_every_mode_gives_one_verdict_per_claim(mode):
    samples = load_samples(EXAMPLES).samples
    results, api = _run(samples, mode)
    assert len(results) == len(samples)
    for result in results:
        assert result.error is None
        assert len(result.verdicts) == len(result.claims) > 0
        assert all(v.ok for v in result.verdicts)
        assert [v.claim_id for v in result.verdicts] == [c.id for c in result.claims]
    n_claims = sum(r.n_claims for r in results)
    expected_calls = len(samples) + (n_claims if mode.one_claim else len(samples))
    assert api.calls == expected_calls


def test_labels_and_aggregate_on_a_known_case():
    (result,), _ = _run([SAMPLE], Mode.COT_ONE)
    labels = [v.label for v in result.verdicts]
    assert labels == [Label.CONTRADICTED, Label.SUPPORTED, Label.UNEVALUATABLE]
    assert result.verdicts[0].subtype == "number"
    assert result.n_evaluated == 2 and result.n_unsupported == 1
    assert result.unsupported_rate == pytest.approx(0.5) and result.hallucinated is True
    assert result.claims[0].spans and SAMPLE.response[result.claims[0].spans[0].start :].startswith("The bridge is 42")


def test_requests_delimit_untrusted_text_and_put_the_claim_last():
    _, api = _run([SAMPLE], Mode.COT_ONE)
    judge_requests = [r for r in api.requests if r.tool.name == "record_verdict"]
    message = judge_requests[0].messages[0]
    assert message.content[0].cache_after and "<context>" in message.content[0].text
    assert "<claim" in message.content[-1].text and "<context>" not in message.content[-1].text
    # Every per-claim request of one response shares the same cacheable prefix.
    assert len({r.messages[0].content[0].text for r in judge_requests}) == 1


def test_all_claims_mode_reasks_a_forgotten_claim_alone_and_ignores_extras():
    def forgetful(request):
        if request.tool.name == "record_verdicts":
            ids = [i for i, _ in prompt_blocks(request, "claim")]
            answer = demo_responder(request)
            if len(ids) > 1:
                answer["verdicts"] = [*answer["verdicts"][1:], {"claim_id": "c99", "label": "supported"}]
            return answer
        return demo_responder(request)

    api = FakeAPI(responder=forgetful)
    model = Model(api)
    judge = LLMJudge(model, Mode.NOCOT_ALL)
    (result,) = asyncio.run(measure_samples([SAMPLE], LLMExtractor(model), judge))
    assert all(v.ok for v in result.verdicts) and len(result.verdicts) == 3
    assert judge.extra_verdicts == 1
    assert api.calls == 1 + 1 + 1  # extraction, the batch, the forgotten claim alone


def test_cut_off_all_claims_answer_is_split_into_smaller_batches():
    def short_window(request):
        if request.tool.name == "record_verdicts" and len(prompt_blocks(request, "claim")) > 1:
            return GenerateResponse(text='{"verdicts": [{"claim_id": "c0"', stop_reason="max_tokens")
        return demo_responder(request)

    (result,), api = _run([SAMPLE], Mode.COT_ALL, responder=short_window)
    assert all(v.ok for v in result.verdicts) and result.n_claims == 3
    assert result.usage.calls == api.calls


def test_malformed_answers_become_error_rows_with_the_raw_output():
    def broken(request):
        if request.tool.name == "record_verdict":
            return {"label": "very true"}
        return demo_responder(request)

    (result,), api = _run([SAMPLE], Mode.NOCOT_ONE, responder=broken)
    assert result.n_errors == 3 and result.n_evaluated == 0
    assert all(v.error and "very true" in v.raw_output for v in result.verdicts)
    assert result.hallucinated is None and result.unsupported_rate is None
    assert api.calls == 1 + 3 * 2  # each claim: first answer + a re-ask, which repeats it, so re-asking stops


def test_failed_extraction_is_an_error_row_not_a_crash():
    def no_claims(request):
        if request.tool.name == "record_claims":
            return "I cannot help with that."
        return demo_responder(request)

    (result,), _ = _run([SAMPLE], Mode.COT_ONE, responder=no_claims)
    assert result.error and "extraction failed" in result.error and result.error_kind is ErrorKind.EXTRACTION_FAILED
    assert result.hallucinated is None and result.claims == []


def test_empty_response_has_no_claims_and_costs_no_call():
    sample = Sample(id="e", context="Something.", response="   ")
    (result,), api = _run([sample], Mode.COT_ONE)
    assert result.n_claims == 0 and result.error is None and api.calls == 0


def test_an_unexpected_exception_is_an_error_row_of_its_kind():
    class Broken(LLMJudge):
        async def judge(self, sample, claims, **_):
            raise RuntimeError("boom")

    model = Model(FakeAPI())
    (result,) = asyncio.run(measure_samples([SAMPLE], LLMExtractor(model), Broken(model, Mode.COT_ONE), Policy()))
    assert (result.error, result.error_kind) == ("RuntimeError: boom", ErrorKind.UNEXPECTED)
    assert type(result).model_validate(result.model_dump() | {"error": None}).error_kind is None
