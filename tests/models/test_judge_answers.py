"""Answers of real (and small local) models are kept when they can be, at the wire level: claim ids
limited to the request's, ids matched by position as a recorded fallback, a cut tool call read as cut
and asked again with room, warm-ups retried, and a failed extraction's answer kept in the run."""

import asyncio

from testdata import aws_session  # noqa: F401 - the fixtures module sets up the AWS test environment

from hallumeasure.core.types import Mode, Sample
from hallumeasure.judges.llm.classify import CUT_OFF_GROWTH, LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor, make_claims
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import GenerateRequest, Message
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.langchain import LangChainAPI
from hallumeasure.models.model import Model
from hallumeasure.testing import AnthropicServer, Fault, FaultPlan, OpenAIServer
from hallumeasure.testing.accounting import PromptCache
from hallumeasure.testing.openai_server import raw_tool_reply

SAMPLE = Sample(
    id="s1",
    context="The bridge is 24 km long. It opened in 2019.",
    response="The bridge is 42 km long. It opened in 2019.",
)
CLAIMS = make_claims(SAMPLE, [("The bridge is 42 km long.", None), ("It opened in 2019.", None)])


def _judge(model: Model, mode: Mode, claims=CLAIMS):
    async def go():
        judge = LLMJudge(model, mode)
        try:
            return judge, await judge.judge(SAMPLE, claims)
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_the_all_claims_tool_limits_claim_ids_to_the_requests_own():
    judge = LLMJudge(Model(FakeAPI()), Mode.COT_ALL)
    schema = judge.request(SAMPLE, CLAIMS).tool.input_schema
    assert schema["$defs"]["CotClaimVerdict"]["properties"]["claim_id"] == {"enum": ["c0", "c1"], "type": "string"}
    # The tool the judge was built with is untouched: another response gets its own ids.
    assert "enum" not in judge.spec.tool.input_schema["$defs"]["CotClaimVerdict"]["properties"]["claim_id"]
    with AnthropicServer() as srv:  # the provider takes the schema, and the simulator's answer follows it
        model = Model(AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url))
        _, judgement = _judge(model, Mode.COT_ALL)
        sent = srv.bodies[0]["tools"][0]["input_schema"]
    assert sent["$defs"]["CotClaimVerdict"]["properties"]["claim_id"]["enum"] == ["c0", "c1"]
    assert all(v.ok for v in judgement.verdicts)


def test_invented_ids_fall_back_to_position_with_a_note_instead_of_error_rows():
    verdicts = [
        {"claim_id": "claim-A", "label_reason": "24 km, not 42.", "label": "contradicted", "subtype": "number"},
        {"claim_id": "claim-B", "label_reason": "It says 2019.", "label": "supported"},
    ]
    api = FakeAPI(script=[{"verdicts": verdicts}])
    _, judgement = _judge(Model(api), Mode.COT_ALL)
    first, second = judgement.verdicts
    assert (first.claim_id, first.label, first.subtype) == (CLAIMS[0].id, "contradicted", "number")
    assert (second.claim_id, second.label) == (CLAIMS[1].id, "supported")
    for verdict in judgement.verdicts:
        assert verdict.ok and "matched to claims by position" in verdict.raw_output and "claim-A" in verdict.raw_output
    assert api.calls == 1


def test_a_verdict_without_its_subtype_keeps_its_label_and_records_the_repair():
    answer = {"label_reason": "24 km, not 42.", "evidence": [], "label": "contradicted", "subtype_reason": None}
    api = FakeAPI(script=[answer])
    _, judgement = _judge(Model(api), Mode.COT_ONE, claims=CLAIMS[:1])
    (verdict,) = judgement.verdicts
    assert verdict.ok and verdict.label == "contradicted" and verdict.subtype == "other"
    assert verdict.raw_output.startswith("repaired: no subtype given") and "24 km, not 42." in verdict.raw_output
    assert api.calls == 1  # kept, not re-asked


def test_a_tool_call_cut_at_max_tokens_is_read_as_cut_and_asked_again_with_room():
    cut = '{"label_reason": "The context says the bridge is 24 km long, which'
    good = '{"label_reason": "24 km, not 42.", "evidence": [], "label": "supported", "subtype_reason": null}'
    # llama.cpp's server ends a cut tool call with finish_reason "tool_calls"; only the usage tells.
    script = [
        raw_tool_reply("record_verdict", cut, usage={"output_tokens": 1024}),
        raw_tool_reply("record_verdict", good),
    ]
    with OpenAIServer(script=script) as srv:
        api = LangChainAPI("langchain_openai:ChatOpenAI", model="local", base_url=srv.base_url, api_key="unused")
        _, judgement = _judge(Model(api), Mode.COT_ONE, claims=CLAIMS[:1])
        budgets = [b.get("max_tokens") or b.get("max_completion_tokens") for b in srv.bodies]
    (verdict,) = judgement.verdicts
    assert verdict.ok and verdict.label == "supported"
    assert budgets == [1024, 1024 * CUT_OFF_GROWTH]  # no re-ask with the same budget


def test_a_cut_tool_call_is_a_max_tokens_stop_on_the_openai_compatible_path():
    from provider_fixtures import judge_request

    with OpenAIServer(
        script=[raw_tool_reply("record_verdict", '{"label_reason": "cut', usage={"output_tokens": 64})]
    ) as srv:
        api = LangChainAPI("langchain_openai:ChatOpenAI", model="local", base_url=srv.base_url, api_key="unused")
        response = asyncio.run(api.generate(judge_request(max_tokens=64)))
    assert response.stop_reason == "max_tokens"


def test_a_failed_warm_up_is_retried_within_one_deadline():
    plan = FaultPlan.at({0: Fault.SERVER_ERROR}, match=lambda call: call.max_tokens == 1)
    for retries, expected_ok, expected_calls in ((None, True, 2), (0, False, 1)):
        with AnthropicServer(faults=plan, prompt_cache=PromptCache(min_tokens=1)) as srv:
            api = AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url)
            api.min_cache_tokens = 1
            model = Model(api, backoff_base=0.0, timeout=2.0)
            judge = LLMJudge(model, Mode.COT_ONE, warm_up_retries=retries)
            warm = asyncio.run(judge.warm_up(SAMPLE))
            assert warm.ok is expected_ok and len(srv.log) == expected_calls


def test_a_failed_extraction_keeps_the_models_answer_in_the_error():
    api = FakeAPI(script=[{"nothing": "useful"}] + [{"still": "nothing"}] * 2)
    extraction = asyncio.run(LLMExtractor(Model(api)).extract(SAMPLE))
    assert extraction.error and "extraction failed" in extraction.error
    assert "the answer was:" in extraction.error and '"still"' in extraction.error
    assert extraction.raw_output and "still" in extraction.raw_output


def test_requests_differ_only_by_attempt_are_not_merged_by_single_flight():
    api = FakeAPI(script=[{"a": 1}, {"a": 2}])
    model = Model(api)
    request = GenerateRequest(system="s", messages=(Message.user("u"),))

    async def go():
        return await asyncio.gather(model.generate(request), model.generate(request.model_copy(update={"attempt": 1})))

    first, second = asyncio.run(go())
    assert api.calls == 2 and first.tool_input != second.tool_input


def test_a_prefix_written_a_moment_ago_is_not_warmed_again():
    with AnthropicServer(prompt_cache=PromptCache(min_tokens=1)) as srv:
        api = AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url)
        api.min_cache_tokens = 1
        judge = LLMJudge(Model(api), Mode.COT_ONE)

        async def one_after_another():
            twin = SAMPLE.model_copy(update={"id": "s2", "response": "It opened in 2019."})
            return [await judge.warm_up(SAMPLE), await judge.warm_up(twin)]

        first, second = asyncio.run(one_after_another())
        warm_ups = [r for r in srv.log if r.call.max_tokens == 1]
    assert first.ok and second.ok and len(warm_ups) == 1 and second.usage.calls == 0
