"""Prompt-cache warm-up in the one-claim modes, at the wire level against both simulators.

In a pipeline run, a warm-up request carrying the claims' shared prefix alone leaves together with
the extraction call, and every claim leaves at once when both have answered, reading the cache. The
run's first warm-up writes the run-wide prefix (tools + system) before the others go, so it is
written once per run. Called on its own (no warm-up), the judge sends the first claim alone. Where
nothing can be cached (short prefix, a provider without caching, all-claims modes), none of this.
"""

import asyncio
import threading

import pytest
from testdata import aws_session

from hallumeasure.core.types import Mode, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor, make_claims
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.testing import AnthropicServer, BedrockServer, default_answer
from hallumeasure.testing.accounting import PromptCache

SAMPLE = Sample(
    id="s1",
    context="The bridge is 24 km long. It opened in 2019. It cost 3 billion dollars. It has six lanes.",
    response="The bridge is 42 km long. It opened in 2019. It cost 3 billion dollars. It has six lanes.",
)
CLAIMS = make_claims(
    SAMPLE,
    [
        (t, None)
        for t in ("The bridge is 42 km long.", "It opened in 2019.", "It cost 3 billion dollars.", "It has six lanes.")
    ],
)
SERVERS = {"anthropic": AnthropicServer, "bedrock": BedrockServer}


def _api(provider: str, srv, *, min_cache_tokens: int | None = 1):
    if provider == "anthropic":
        api = AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url)
    else:
        api = BedrockAPI("anthropic.claude-x", region_name="us-east-1", endpoint_url=srv.url, session=aws_session())
    # The simulators cache prefixes from 1 token on (PromptCache(min_tokens=1)); tell the client so.
    api.min_cache_tokens = min_cache_tokens
    return api


def _model(provider: str, srv, **options) -> Model:
    return Model(_api(provider, srv, **options), backoff_base=0.0)


def _is_judge_call(call) -> bool:
    return call.tool is not None and call.tool["name"] == "record_verdict"


def _run(model: Model, samples, judge: LLMJudge, concurrency: int = 4):
    async def go():
        try:
            return await measure_samples(samples, LLMExtractor(model), judge, concurrency=concurrency)
        finally:
            await model.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_the_warm_up_leaves_with_the_extraction_and_the_claims_fan_out_at_once(provider):
    extraction_started = threading.Event()

    def answer(call):
        if call.tool and call.tool["name"] == "record_claims":
            extraction_started.set()
        elif call.max_tokens == 1:  # the warm-up: it must be in flight while the extraction is
            assert extraction_started.wait(2.0)
        return default_answer(call)

    # 0.3 s per answer: long enough that "together" and "after" mean what they say on a loaded machine.
    with SERVERS[provider](answer=answer, prompt_cache=PromptCache(min_tokens=1), latency=0.3) as srv:
        model = _model(provider, srv)
        judge = LLMJudge(model, Mode.COT_ONE)
        (result,) = _run(model, [SAMPLE], judge)
        log = list(srv.log)
        warm_body = srv.requests[[r.max_tokens for r in srv.calls].index(1)].body
    assert result.n_claims == 4 and result.n_errors == 0 and not srv.errors
    extraction = next(r for r in log if r.tool_name == "record_claims")
    warm, *claims = [r for r in log if _is_judge_call(r.call)]
    assert warm.call.max_tokens == 1 and len(claims) == 4
    assert warm.arrived < extraction.replied  # sent together, not one after the other
    assert warm.usage.output_tokens == 1 and warm.usage.cache_write_tokens > 0
    # Every claim left after both had answered, and read the whole prefix the warm-up wrote.
    assert all(c.arrived >= max(extraction.replied, warm.replied) for c in claims)
    prefix = warm.usage.cache_write_tokens + warm.usage.cache_read_tokens
    assert all(c.usage.cache_write_tokens == 0 and c.usage.cache_read_tokens == prefix for c in claims)
    # The four claims were in flight together (no claim waited for another).
    assert max(c.arrived for c in claims) < min(c.replied for c in claims)
    # The warm-up's cost is in the result; the forced tool stays in the request (it is part of the prefix).
    assert result.usage.calls == 6 and ("tool_choice" in warm_body or "toolConfig" in warm_body)


def test_the_run_wide_prefix_is_written_once_per_run():
    samples = [Sample(id=f"s{i}", context=f"{SAMPLE.context} Report {i}.", response=SAMPLE.response) for i in range(4)]
    with AnthropicServer(prompt_cache=PromptCache(min_tokens=1)) as srv:
        model = _model("anthropic", srv)
        results = _run(model, samples, LLMJudge(model, Mode.COT_ONE), concurrency=4)
        warm_ups = [r for r in srv.log if _is_judge_call(r.call) and r.call.max_tokens == 1]
    assert all(r.n_errors == 0 for r in results) and len(warm_ups) == 4
    # One warm-up wrote tools + system + its context; the others read tools + system and wrote their context.
    writers_of_everything = [w for w in warm_ups if w.usage.cache_read_tokens == 0]
    assert len(writers_of_everything) == 1
    (first,) = writers_of_everything
    assert all(w.arrived >= first.replied for w in warm_ups if w is not first)
    assert all(0 < w.usage.cache_read_tokens < first.usage.cache_write_tokens for w in warm_ups if w is not first)


def test_called_alone_the_judge_sends_the_first_claim_before_the_others():
    others_arrived = threading.Event()
    first_claim: list[str] = []

    def answer(call):
        if _is_judge_call(call):
            if not first_claim:
                first_claim.append(call.segments[-1].text)
                others_arrived.wait(0.3)  # hold the first answer: no other claim may arrive meanwhile
            else:
                others_arrived.set()
        return default_answer(call)

    with AnthropicServer(answer=answer, prompt_cache=PromptCache(min_tokens=1)) as srv:
        judgement = asyncio.run(LLMJudge(_model("anthropic", srv), Mode.COT_ONE).judge(SAMPLE, CLAIMS))
        log = [r for r in srv.log if _is_judge_call(r.call)]
    assert len(log) == 4 and all(v.ok for v in judgement.verdicts)
    assert "42 km" in first_claim[0]
    first, *rest = log
    assert first.usage.cache_write_tokens > 0 and first.usage.cache_read_tokens == 0
    assert all(
        r.usage.cache_write_tokens == 0 and r.usage.cache_read_tokens == first.usage.cache_write_tokens for r in rest
    )


def _claims_went_out_together(srv) -> list:
    log = [r for r in srv.log if _is_judge_call(r.call)]
    assert all(r.call.max_tokens != 1 for r in log)  # no warm-up
    assert max(r.arrived for r in log) < min(r.replied for r in log)  # all four in flight at once
    return log


def test_no_warm_up_below_the_providers_minimum_cacheable_prefix():
    with AnthropicServer(prompt_cache=PromptCache(min_tokens=1), latency=0.05) as srv:
        model = _model("anthropic", srv, min_cache_tokens=100_000)
        (result,) = _run(model, [SAMPLE], LLMJudge(model, Mode.COT_ONE))
        log = _claims_went_out_together(srv)
    assert result.n_errors == 0 and len(log) == 4


def test_no_warm_up_with_warm_cache_off():
    with AnthropicServer(prompt_cache=PromptCache(min_tokens=1), latency=0.05) as srv:
        model = _model("anthropic", srv)
        judge = LLMJudge(model, Mode.COT_ONE, warm_cache=False)
        (result,) = _run(model, [SAMPLE], judge)
        log = _claims_went_out_together(srv)
    assert result.n_errors == 0 and all(r.usage.cache_write_tokens > 0 for r in log)
    assert judge.settings()["warm_cache"] is False


def test_no_warm_up_for_a_provider_without_prompt_caching():
    api = FakeAPI()
    assert api.min_cache_tokens is None
    model = Model(api)
    (result,) = _run(model, [SAMPLE], LLMJudge(model, Mode.COT_ONE))
    assert result.n_errors == 0 and all(r.max_tokens != 1 for r in api.requests)
    assert len(api.requests) == 1 + result.n_claims


def test_the_all_claims_modes_send_no_warm_up():
    with AnthropicServer(prompt_cache=PromptCache(min_tokens=1)) as srv:
        model = _model("anthropic", srv)
        (result,) = _run(model, [SAMPLE], LLMJudge(model, Mode.COT_ALL))
        names = [r.tool_name for r in srv.log]
    assert result.n_errors == 0 and names == ["record_claims", "record_verdicts"]


def test_a_failed_warm_up_falls_back_to_the_first_claim_alone():
    def answer(call):
        if call.max_tokens == 1:
            raise RuntimeError("warm-up refused")  # the simulator answers 500 (and retries answer 500 too)
        return default_answer(call)

    with AnthropicServer(answer=answer, prompt_cache=PromptCache(min_tokens=1)) as srv:
        model = Model(_api("anthropic", srv), backoff_base=0.0, max_retries=0)
        (result,) = _run(model, [SAMPLE], LLMJudge(model, Mode.COT_ONE))
        claims = [r for r in srv.log if _is_judge_call(r.call) and r.call.max_tokens != 1]
    assert result.n_claims == 4 and result.n_errors == 0
    first, *rest = claims
    assert all(r.arrived >= first.replied for r in rest) and first.usage.cache_write_tokens > 0


def test_samples_sharing_a_context_share_one_warm_up_and_a_cached_one_is_not_trusted(tmp_path):
    from hallumeasure.models.cache import RequestCache

    twins = [SAMPLE, Sample(id="s2", context=SAMPLE.context, response="The bridge has six lanes. It is 24 km long.")]
    with AnthropicServer(prompt_cache=PromptCache(min_tokens=1), latency=0.1) as srv:
        model = Model(_api("anthropic", srv), backoff_base=0.0, cache=RequestCache(tmp_path / "cache"))
        results = _run(model, twins, LLMJudge(model, Mode.COT_ONE))
        warm_ups = [r for r in srv.log if r.call.max_tokens == 1]
        assert all(r.n_errors == 0 for r in results) and len(warm_ups) == 1
        # A new run over a third response of the same context: the warm-up comes from the request cache
        # (nothing paid twice), so the judge does not count on the provider's cache and sends one claim first.
        srv.log.clear()
        third = Sample(id="s3", context=SAMPLE.context, response="It opened in 2019. It cost 3 billion dollars.")
        model = Model(_api("anthropic", srv), backoff_base=0.0, cache=RequestCache(tmp_path / "cache"))
        (result,) = _run(model, [third], LLMJudge(model, Mode.COT_ONE))
        calls = [r for r in srv.log if _is_judge_call(r.call)]
    assert result.n_errors == 0 and all(r.call.max_tokens != 1 for r in calls) and len(calls) == 2
    first, second = calls
    assert second.arrived >= first.replied
