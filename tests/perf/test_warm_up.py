"""Warm-up then fan-out: in one-claim mode, the first claim of a response is judged alone, and the other
claims are sent only once it has answered, so the shared prefix is written once per response."""

import asyncio
import threading

from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.classify import LLMJudge
from hallumeasure.pipeline.extract import LLMExtractor, make_claims
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.testing import AnthropicServer, default_answer
from hallumeasure.testing.accounting import PromptCache
from hallumeasure.types import Mode, Sample

SAMPLE = Sample(
    id="s1",
    context="The bridge is 24 km long. It opened in 2019. It cost 3 billion dollars. It has six lanes.",
    response="The bridge is 42 km long. It opened in 2019. It cost 3 billion dollars. It has six lanes.",
)
CLAIMS = make_claims(SAMPLE, [(t, None) for t in ("The bridge is 42 km long.", "It opened in 2019.",
                                                    "It cost 3 billion dollars.", "It has six lanes.")])


def _judge(srv, **options):
    model = Model(AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url), backoff_base=0.0)
    return LLMJudge(model, Mode.COT_ONE, **options)


def _is_judge_call(call) -> bool:
    return call.tool is not None and call.tool["name"] == "record_verdict"


def test_the_first_claim_is_judged_alone_before_the_fan_out():
    others_arrived = threading.Event()
    first_claim: list[str] = []

    def answer(call):
        if _is_judge_call(call):
            if not first_claim:
                first_claim.append(call.segments[-1].text)
                # Hold the warm-up answer: no other claim of the response may arrive meanwhile.
                others_arrived.wait(0.3)
            else:
                others_arrived.set()
        return default_answer(call)

    with AnthropicServer(answer=answer, prompt_cache=PromptCache(min_tokens=1)) as srv:
        judgement = asyncio.run(_judge(srv).judge(SAMPLE, CLAIMS))
        log = [r for r in srv.log if _is_judge_call(r.call)]
    assert len(log) == 4 and all(v.ok for v in judgement.verdicts)
    assert "42 km" in first_claim[0]  # the first claim warms the cache
    # The warm-up wrote the prefix (system + context); every fan-out call read it and wrote nothing.
    warm, *fan_out = log
    assert warm.usage.cache_write_tokens > 0 and warm.usage.cache_read_tokens == 0
    assert all(r.usage.cache_write_tokens == 0 and r.usage.cache_read_tokens == warm.usage.cache_write_tokens
               for r in fan_out)


def test_without_warm_up_the_claims_go_out_together_and_each_pays_the_write():
    barrier = threading.Barrier(4, timeout=5)  # only passes if all four claims are in flight at once

    def answer(call):
        if _is_judge_call(call):
            barrier.wait()
        return default_answer(call)

    with AnthropicServer(answer=answer, prompt_cache=PromptCache(min_tokens=1)) as srv:
        judge = _judge(srv, warm_cache=False)
        judgement = asyncio.run(judge.judge(SAMPLE, CLAIMS))
        log = [r for r in srv.log if _is_judge_call(r.call)]
    assert all(v.ok for v in judgement.verdicts) and len(log) == 4
    assert all(r.usage.cache_write_tokens > 0 for r in log)  # nobody could read what the others wrote
    assert judge.settings()["warm_cache"] is False


def test_the_pipeline_order_at_the_server_is_extract_warm_up_fan_out():
    with AnthropicServer(prompt_cache=PromptCache(min_tokens=1)) as srv:
        model = Model(AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url), backoff_base=0.0)
        judge = LLMJudge(model, Mode.COT_ONE)
        (result,) = asyncio.run(measure_samples([SAMPLE], LLMExtractor(model), judge))
        names = [r.tool_name for r in srv.log]
        writes = [r.usage.cache_write_tokens for r in srv.log]
    assert result.n_claims == 4 and result.n_errors == 0
    assert names == ["record_claims"] + ["record_verdict"] * 4
    assert writes[1] > 0 and writes[2:] == [0, 0, 0]
    assert judge.settings()["warm_cache"] is True


def test_a_single_claim_and_the_all_claims_modes_need_no_warm_up():
    with AnthropicServer() as srv:
        model = Model(AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url), backoff_base=0.0)
        one = asyncio.run(LLMJudge(model, Mode.COT_ONE).judge(SAMPLE, CLAIMS[:1]))
        every = asyncio.run(LLMJudge(model, Mode.COT_ALL).judge(SAMPLE, CLAIMS))
    assert len(srv.log) == 2 and len(one.verdicts) == 1 and len(every.verdicts) == 4
