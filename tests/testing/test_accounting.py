"""The simulators' bill and clock: prompt-cache reads and writes, rate limits, latency.

Unit tests drive the accounting with a fake clock; end-to-end tests read the usage that the real
SDKs (anthropic, boto3) parse from the simulators' answers.
"""

import asyncio

import pytest
from testdata import aws_session

from hallumeasure.core.errors import ProviderError
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import GenerateRequest, Message, TextBlock, ToolSpec
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.testing import AnthropicServer, BedrockServer
from hallumeasure.testing.accounting import Latency, Piece, PromptCache, RateLimits


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _pieces(*specs):
    return [Piece(text, tokens, cache) for text, tokens, cache in specs]


SYSTEM = ("system", 100, True)
CONTEXT_A = ("context A", 50, True)
CONTEXT_B = ("context B", 60, True)


def test_first_request_writes_the_prefix_then_others_read_it():
    clock = Clock()
    cache = PromptCache(clock=clock, min_tokens=1)
    bill, commit = cache.bill("m", _pieces(SYSTEM, CONTEXT_A, ("claim 1", 10, False)))
    assert (bill.cache_write_tokens, bill.cache_read_tokens, bill.input_tokens) == (150, 0, 10)
    commit(clock.now)
    bill, commit = cache.bill("m", _pieces(SYSTEM, CONTEXT_A, ("claim 2", 12, False)))
    assert (bill.cache_write_tokens, bill.cache_read_tokens, bill.input_tokens) == (0, 150, 12)
    commit(clock.now)
    # Another response: the system prefix is read, its context is written.
    bill, _ = cache.bill("m", _pieces(SYSTEM, CONTEXT_B, ("claim", 10, False)))
    assert (bill.cache_write_tokens, bill.cache_read_tokens, bill.input_tokens) == (60, 100, 10)


def test_a_prefix_is_readable_only_once_its_writer_has_answered():
    clock = Clock()
    cache = PromptCache(clock=clock, min_tokens=1)
    _, commit = cache.bill("m", _pieces(SYSTEM, ("claim 1", 10, False)))
    commit(clock.now + 2.0)  # the writing request answers in two seconds
    clock.now += 1.0
    concurrent, commit2 = cache.bill("m", _pieces(SYSTEM, ("claim 2", 10, False)))
    assert concurrent.cache_write_tokens == 100 and concurrent.cache_read_tokens == 0
    commit2(clock.now + 2.0)
    clock.now += 1.5
    later, _ = cache.bill("m", _pieces(SYSTEM, ("claim 3", 10, False)))
    assert later.cache_read_tokens == 100 and later.cache_write_tokens == 0


def test_entries_expire_after_the_ttl_and_a_read_refreshes_them():
    clock = Clock()
    cache = PromptCache(clock=clock, ttl=300, min_tokens=1)
    _, commit = cache.bill("m", _pieces(SYSTEM, ("q", 1, False)))
    commit(clock.now)
    clock.now += 299
    bill, commit = cache.bill("m", _pieces(SYSTEM, ("q", 1, False)))
    assert bill.cache_read_tokens == 100
    commit(clock.now)  # refreshed: lives until now + 300
    clock.now += 299
    assert cache.bill("m", _pieces(SYSTEM, ("q", 1, False)))[0].cache_read_tokens == 100
    clock.now += 301
    assert cache.bill("m", _pieces(SYSTEM, ("q", 1, False)))[0].cache_write_tokens == 100


def test_prefixes_below_the_minimum_are_not_cached_and_models_do_not_share():
    clock = Clock()
    cache = PromptCache(clock=clock, min_tokens=120)
    bill, commit = cache.bill("m", _pieces(SYSTEM, CONTEXT_A, ("claim", 10, False)))
    # The system prefix (100) is too short; the prefix through the context (150) is written.
    assert (bill.cache_write_tokens, bill.input_tokens) == (150, 10)
    commit(clock.now)
    assert cache.bill("other-model", _pieces(SYSTEM, CONTEXT_A, ("claim", 10, False)))[0].cache_read_tokens == 0


def test_rate_limits_refuse_with_the_time_to_wait():
    clock = Clock()
    limits = RateLimits(rpm=60, burst=2, clock=clock)
    assert limits.admit(10, 5) == (0.0, None)
    assert limits.admit(10, 5) == (0.0, None)
    wait, limit = limits.admit(10, 5)
    assert limit == "rpm" and wait == pytest.approx(1.0)
    clock.now += 1.0
    assert limits.admit(10, 5) == (0.0, None)


def test_token_limits_count_input_and_cache_writes_and_output():
    clock = Clock()
    limits = RateLimits(input_tpm=600, output_tpm=6000, burst=1, clock=clock)  # 10 and 100 per second
    assert limits.admit(10, 50)[0] == 0
    wait, limit = limits.admit(5, 10)
    assert limit == "input_tpm" and wait == pytest.approx(0.5)


def test_latency_depends_on_uncached_input_and_output_tokens():
    latency = Latency(base=0.1, per_input_token=0.001, per_cache_read_token=0.0001, per_output_token=0.01)
    assert latency.seconds(100, 0, 0, 10) == pytest.approx(0.3)
    assert latency.seconds(0, 1000, 0, 10) == pytest.approx(0.3)
    assert latency.seconds(0, 0, 100, 0) == pytest.approx(0.2)


# --- end to end, through the SDKs ---------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"label": {"enum": ["supported"]}}, "required": ["label"]}
TOOL = ToolSpec(name="record_verdict", description="Record it.", input_schema=SCHEMA)
CONTEXT = "The bridge is 24 km long and opened in 2019 after six years of work."


def _request(claim: str, context: str = CONTEXT) -> GenerateRequest:
    return GenerateRequest(
        system="You judge claims against a context. " * 5,
        messages=(Message.user(TextBlock(text=f"<context>\n{context}\n</context>", cache_after=True), claim),),
        tool=TOOL,
    )


def _usages(api, requests):
    async def go():
        try:
            return [(await api.generate(r)).usage for r in requests]
        finally:
            await api.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_the_sdks_read_cache_writes_then_reads(provider, aws):
    server = AnthropicServer if provider == "anthropic" else BedrockServer
    with server(prompt_cache=PromptCache(min_tokens=1)) as srv:
        api = (
            AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url)
            if provider == "anthropic"
            else BedrockAPI("anthropic.claude-x", region_name="us-east-1", endpoint_url=srv.url, session=aws_session())
        )
        first, second, third = _usages(
            api,
            [
                _request("Claim: 24 km."),
                _request("Claim: 2019."),
                _request("Claim: six years.", context="Another context entirely."),
            ],
        )
        billed = srv.billed()
    assert first.cache_write_tokens > 0 and first.cache_read_tokens == 0
    assert second.cache_read_tokens == first.cache_write_tokens and second.cache_write_tokens == 0
    # A new context: the tools + system prefix is read, the new context written.
    assert 0 < third.cache_read_tokens < first.cache_write_tokens and third.cache_write_tokens > 0
    assert billed.cache_read_tokens == second.cache_read_tokens + third.cache_read_tokens
    # The whole prompt is accounted for: the same number of tokens, split differently.
    total = lambda u: u.input_tokens + u.cache_read_tokens + u.cache_write_tokens  # noqa: E731
    assert abs(total(first) - total(second)) <= 3


def test_without_prompt_cache_everything_is_plain_input():
    with AnthropicServer() as srv:
        usages = _usages(
            AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url),
            [_request("Claim: 24 km."), _request("Claim: 24 km.")],
        )
    assert all(u.cache_read_tokens == u.cache_write_tokens == 0 and u.input_tokens > 0 for u in usages)


def test_server_rate_limit_answers_429_with_retry_after_on_anthropic():
    with AnthropicServer(limits=RateLimits(rpm=60, burst=1)) as srv:
        api = AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url)
        _usages(api, [_request("a")])
        with pytest.raises(ProviderError) as info:
            _usages(api, [_request("b")])
        assert [r.status for r in srv.log] == [200, 429]
    assert info.value.status == 429 and info.value.retryable and 0.5 < info.value.retry_after <= 1.001


def test_server_rate_limit_is_a_throttling_exception_without_retry_after_on_bedrock(aws):
    with BedrockServer(limits=RateLimits(rpm=60, burst=1)) as srv:
        api = BedrockAPI("anthropic.claude-x", region_name="us-east-1", endpoint_url=srv.url, session=aws_session())
        _usages(api, [_request("a")])
        with pytest.raises(ProviderError) as info:
            _usages(api, [_request("b")])
    assert info.value.cause == "ThrottlingException" and info.value.retryable and info.value.retry_after is None


def test_latency_holds_the_answer_back():
    with AnthropicServer(latency=Latency(base=0.05, per_output_token=0.001)) as srv:
        _usages(AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url), [_request("a")])
        (record,) = srv.log
    assert record.replied is not None and record.replied - record.arrived >= 0.05
