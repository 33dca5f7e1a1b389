"""The client-side rate limiter (with an injected clock, so nothing here waits for real time) and the
wrapper's backoff: retry-after honoured, capped and jittered; throttled calls pause every caller."""

import asyncio
import time

import pytest
from provider_fixtures import TOOL
from testdata import aws_session

from hallumeasure.core.errors import ConfigError, ProviderError
from hallumeasure.core.types import Usage
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import GenerateRequest, Message, TextBlock, ToolCallBlock, ToolResultBlock
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.limits import RateLimiter, TokenEstimate, parse_limit, shared_limiter
from hallumeasure.models.model import Model
from hallumeasure.testing import AnthropicServer, BedrockServer
from hallumeasure.testing.accounting import PromptCache, RateLimits
from hallumeasure.testing.faults import Fault, FaultPlan


class FakeTime:
    """A clock that only moves when someone sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def _admissions(limiter: RateLimiter, time: FakeTime, tokens: list[int]) -> list[float]:
    stamps = []

    async def one(n):
        await limiter.acquire(n)
        stamps.append(time.now)

    async def go():
        await asyncio.gather(*(one(n) for n in tokens))

    asyncio.run(go())
    return stamps


def _max_in_window(stamps: list[float], window: float, weights: list[float] | None = None) -> float:
    weights = weights or [1.0] * len(stamps)
    pairs = sorted(zip(stamps, weights, strict=True))
    return max(sum(w for t, w in pairs if start <= t < start + window) for start, _ in pairs)


def test_requests_per_minute_are_never_exceeded():
    time = FakeTime()
    limiter = RateLimiter(rpm=120, burst=1.0, clock=time.clock, sleep=time.sleep)  # 2 per second
    stamps = _admissions(limiter, time, [0] * 50)
    assert len(stamps) == 50 and stamps == sorted(stamps)
    # In any window of t seconds at most burst + rate * t requests start.
    for window in (1.0, 5.0, 10.0):
        assert _max_in_window(stamps, window) <= 2 + 2 * window + 1e-9
    assert stamps[-1] == pytest.approx((50 - 2) / 2, abs=0.01)  # and the limiter does not hold back more


def test_tokens_per_minute_are_never_exceeded_and_settle_refunds():
    time = FakeTime()
    limiter = RateLimiter(tpm=6000, burst=1.0, clock=time.clock, sleep=time.sleep)  # 100 tokens per second
    tokens = [40, 80, 10, 100, 30, 60] * 5
    stamps = _admissions(limiter, time, tokens)
    for window in (1.0, 3.0):
        assert _max_in_window(stamps, window, tokens) <= 100 + 100 * window + 1e-9
    before = time.now
    limiter.settle(100, 20)  # the call used 20 of the 100 it reserved: 80 come back
    _admissions(limiter, time, [80])
    assert time.now == before


def test_an_oversized_request_waits_for_a_full_bucket_instead_of_forever():
    time = FakeTime()
    limiter = RateLimiter(tpm=600, burst=1.0, clock=time.clock, sleep=time.sleep)  # capacity 10
    stamps = _admissions(limiter, time, [50, 5])
    assert stamps[0] == 0.0 and stamps[1] > 0


def test_pause_holds_everyone_back_and_waiters_are_served_in_order():
    time = FakeTime()
    limiter = RateLimiter(rpm=6000, clock=time.clock, sleep=time.sleep)
    limiter.pause(3.0)
    order = []

    async def one(i):
        await limiter.acquire(0)
        order.append((i, time.now))

    async def go():
        await asyncio.gather(*(one(i) for i in range(5)))

    asyncio.run(go())
    assert [i for i, _ in order] == list(range(5)) and all(t >= 3.0 for _, t in order)


def test_limits_are_shared_per_spec_and_parsed_from_the_command_line():
    a = shared_limiter("anthropic:claude-a", rpm=50)
    assert shared_limiter("anthropic:claude-a", rpm=50) is a and shared_limiter("anthropic:claude-b", rpm=50) is not a
    assert parse_limit("40k") == 40_000 and parse_limit("2m") == 2_000_000 and parse_limit("50") == 50
    assert parse_limit(None) is None
    with pytest.raises(ConfigError):
        parse_limit("fast")
    for not_a_rate in ("nan", "inf", "-5", "0k"):
        with pytest.raises(ConfigError, match="positive finite"):
            parse_limit(not_a_rate)
    with pytest.raises(ConfigError):
        RateLimiter(rpm=0)


def _request(text: str = "hello") -> GenerateRequest:
    return GenerateRequest(system="sys", messages=(Message.user(text),), max_tokens=100)


def test_every_attempt_is_admitted_and_usage_settles_the_estimate():
    time = FakeTime()
    limiter = RateLimiter(rpm=60, tpm=60_000, clock=time.clock, sleep=time.sleep)
    api = FakeAPI(script=[ProviderError("503", retryable=True), "ok"])
    model = Model(api, limiter=limiter, sleep=time.sleep, backoff_base=0.0)
    response = asyncio.run(model.generate(_request()))
    assert response.text == "ok" and limiter.admitted == 2 and api.calls == 2
    assert model.settings()["rate_limits"] == {"rpm": 60, "tpm": 60_000}


def test_retry_after_is_honoured_capped_and_jittered():
    time = FakeTime()
    script = [
        ProviderError("429", retryable=True, retry_after=7.0, status=429),
        ProviderError("429", retryable=True, retry_after=3600.0, status=429),
        "ok",
    ]
    model = Model(FakeAPI(script=script), sleep=time.sleep, backoff_base=0.4, backoff_max=30.0, seed=1)
    assert asyncio.run(model.generate(_request())).text == "ok"
    first, second = time.sleeps
    assert 7.0 <= first <= 7.0 + 0.4 / 4 and 30.0 <= second <= 30.0 + 0.4 / 4


def test_without_retry_after_the_backoff_is_exponential_with_full_jitter():
    time = FakeTime()
    model = Model(
        FakeAPI(script=[ProviderError("x", retryable=True)] * 4 + ["ok"]),
        sleep=time.sleep,
        backoff_base=1.0,
        backoff_max=5.0,
        seed=3,
    )
    asyncio.run(model.generate(_request()))
    assert len(time.sleeps) == 4
    for attempt, wait in enumerate(time.sleeps, start=1):
        assert 0 <= wait <= min(5.0, 2 ** (attempt - 1))


def test_a_throttled_call_pauses_the_shared_limiter_and_refunds_its_tokens():
    time = FakeTime()
    limiter = RateLimiter(tpm=60_000, clock=time.clock, sleep=time.sleep)
    level_before = limiter._input.level
    model = Model(
        FakeAPI(script=[ProviderError("429", retryable=True, retry_after=2.0, status=429), "ok"]),
        limiter=limiter,
        sleep=time.sleep,
    )
    asyncio.run(model.generate(_request()))
    assert limiter._paused_until == pytest.approx(2.0) and limiter.admitted == 2
    assert limiter._input.level <= level_before  # the successful call's tokens are spent, the 429's refunded


def test_the_server_retry_after_reaches_the_backoff():
    time = FakeTime()
    plan = FaultPlan.at({0: Fault.RATE_LIMIT, 1: Fault.OVERLOADED}, retry_after=4.5, overload_retry_after=1.5)
    with AnthropicServer(faults=plan) as srv:
        model = Model(AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url), sleep=time.sleep, backoff_base=0.0)

        async def go():
            try:
                return await model.generate(_request())
            finally:
                await model.aclose()

        response = asyncio.run(go())
        assert [r.status for r in srv.log] == [429, 529, 200]
    assert response.tool_input is None and time.sleeps == [4.5, 1.5] and model.retries == 2


def test_bedrock_throttling_without_retry_after_backs_off_exponentially(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    time = FakeTime()
    with BedrockServer(faults=FaultPlan.at([Fault.RATE_LIMIT_NO_RETRY_AFTER] * 2)) as srv:
        api = BedrockAPI("anthropic.claude-x", region_name="us-east-1", endpoint_url=srv.url, session=aws_session())
        model = Model(api, sleep=time.sleep, backoff_base=0.5, seed=0)

        async def go():
            try:
                return await model.generate(_request())
            finally:
                await model.aclose()

        asyncio.run(go())
        assert [r.status for r in srv.log] == [429, 429, 200]
    assert len(time.sleeps) == 2 and time.sleeps[0] <= 0.5 and time.sleeps[1] <= 1.0
    assert model.usage.calls == 1 and isinstance(model.usage, Usage)


# --- what is counted, reservation and settlement, at the wire level ------------------------------------


def _long_request(claim: str, max_tokens: int = 64) -> GenerateRequest:
    """A judge-like request: a long cacheable context (about 2,000 tokens), then a short claim."""
    context = TextBlock(
        text="<context>" + "The bridge opened in 2019 after six years of work. " * 160 + "</context>", cache_after=True
    )
    return GenerateRequest(
        system="You judge claims against a context.",
        messages=(Message.user(context, claim),),
        tool=TOOL,
        max_tokens=max_tokens,
    )


def _api(provider: str, srv):
    if provider == "anthropic":
        api = AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url)
    else:
        api = BedrockAPI("anthropic.claude-x", region_name="us-east-1", endpoint_url=srv.url, session=aws_session())
    api.min_cache_tokens = 1  # as the simulator's PromptCache(min_tokens=1)
    return api


def test_the_estimate_leaves_out_a_prefix_that_an_answered_call_cached():
    limiter = RateLimiter(tpm=60_000)
    first, second = _long_request("Claim: it opened in 2019."), _long_request("Claim: it took six years.")
    cold = limiter.estimate(second)
    limiter.answered(first, min_cache_tokens=1024)
    warm = limiter.estimate(second)
    assert cold.input_tokens > 2000 and warm.input_tokens < 20 and warm.output_tokens == second.max_tokens
    # A provider that caches nothing, or a prefix below its minimum, leaves the estimate whole.
    other = RateLimiter(tpm=60_000)
    other.answered(first, min_cache_tokens=None)
    other.answered(first, min_cache_tokens=100_000)
    assert other.estimate(second) == cold


def test_a_reask_with_a_tool_call_and_its_result_is_estimated():
    # A re-ask continues the conversation with the model's tool call and an error tool result; those
    # blocks have no cache breakpoint (the estimate used to fail on them with an AttributeError).
    first = _long_request("Claim: it opened in 2019.")
    call = ToolCallBlock(call_id="c1", name=TOOL.name, raw="{not json")
    result = ToolResultBlock(call_id="c1", result="Your previous answer could not be used.")
    reask = first.model_copy(
        update={
            "messages": (
                *first.messages,
                Message(role="assistant", content=(call,)),
                Message(role="user", content=(result,)),
            )
        }
    )
    assert RateLimiter(tpm=60_000).estimate(reask).input_tokens > 2000  # nothing known cached
    limiter = RateLimiter(tpm=60_000)
    limiter.answered(first, min_cache_tokens=1024)
    assert 0 < limiter.estimate(reask).input_tokens < 100  # the context prefix is cached


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_settling_refunds_the_estimate_and_wakes_the_next_caller_at_once(provider, monkeypatch):
    """A call whose prefix another client cached counts ~20 input tokens, not the ~2,000 reserved: the
    refund lets the next call go within a fraction of a second, not after the ~20 s the reservation implied."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    server = AnthropicServer if provider == "anthropic" else BedrockServer
    limits = RateLimits(input_tpm=6000)  # 100 input tokens per second, as the client's limit
    with server(prompt_cache=PromptCache(min_tokens=1), latency=0.1, limits=limits) as srv:
        request = _long_request("Claim: it opened in 2019.")
        unlimited = Model(_api(provider, srv), backoff_base=0.0)
        limits.input_tpm = None  # the warming call from "another client" is not limited
        asyncio.run(_close_after(unlimited, unlimited.generate(request, use_cache=False)))
        limits.input_tpm = 6000
        limiter = RateLimiter(tpm=6000)
        model = Model(_api(provider, srv), limiter=limiter, backoff_base=0.0, max_retries=0)
        claims = [_long_request(f"Claim: the span is {n} metres.") for n in (100, 200)]
        estimate = limiter.estimate(claims[0])

        async def both():
            return await asyncio.gather(*(model.generate(c, use_cache=False) for c in claims))

        responses = asyncio.run(_close_after(model, both()))
        log = srv.log[1:]
    assert estimate.input_tokens > 2000  # nothing known to this limiter: the whole prompt is reserved
    assert [r.status for r in log] == [200, 200]  # the simulator's own limiter refused nothing
    assert all(r.usage.input_tokens + r.usage.cache_write_tokens < 30 for r in responses)
    assert log[1].arrived - log[0].arrived < 1.5 and limiter.waited < 1.5
    assert limiter.admitted == 2


def test_a_refund_wakes_a_sleeping_waiter_before_its_computed_turn():
    clock = [0.0]  # a clock that stands still: only a wake-up can let the waiter in
    limiter = RateLimiter(tpm=600, clock=lambda: clock[0])  # 10 tokens per second, capacity 10

    async def go():
        await limiter.acquire(TokenEstimate(input_tokens=50))  # fits a full bucket, leaves it at -40
        waiter = asyncio.ensure_future(limiter.acquire(TokenEstimate(input_tokens=10)))  # would sleep 5 s
        await asyncio.sleep(0.05)
        assert not waiter.done()
        started = time.perf_counter()
        limiter.settle(TokenEstimate(input_tokens=50), TokenEstimate(input_tokens=0))  # the call counted nothing
        await asyncio.wait_for(waiter, timeout=1.0)
        return time.perf_counter() - started

    assert asyncio.run(go()) < 0.5 and limiter.admitted == 2


def test_output_tokens_are_limited_separately_and_settled_with_the_real_count():
    time_ = FakeTime()
    limiter = RateLimiter(output_tpm=600, clock=time_.clock, sleep=time_.sleep)  # 10 output tokens per second
    assert limiter.settings() == {"output_tpm": 600}
    reservation = TokenEstimate(input_tokens=10_000, output_tokens=10)  # input is not limited here

    async def go():
        await limiter.acquire(reservation)
        limiter.settle(reservation, TokenEstimate(input_tokens=10_000, output_tokens=2))
        await limiter.acquire(TokenEstimate(output_tokens=8))  # the 8 refunded tokens are there: no wait

    asyncio.run(go())
    assert time_.now == 0.0 and limiter.admitted == 2


async def _close_after(model: Model, coro):
    try:
        return await coro
    finally:
        await model.aclose()


def test_a_late_wake_up_of_an_oversized_request_loses_none_of_the_refill():
    """A request above the bucket's capacity goes when the bucket is full; if its waiter wakes late (a busy
    event loop), the refill meanwhile still counts for it instead of spilling over the capacity."""
    time_ = FakeTime()

    async def oversleep(seconds: float) -> None:
        await time_.sleep(seconds + 3.0)  # every wake-up comes 3 s late

    limiter = RateLimiter(tpm=600, clock=time_.clock, sleep=oversleep)  # 10 tokens per second, capacity 10

    async def go():
        await limiter.acquire(50)  # a full bucket lets it through: level -40
        await limiter.acquire(50)  # full again after 5 s, woken at 8 s: 80 accrued, level 40 - 50 = -10
        at = time_.now
        await limiter.acquire(10)  # needs 20 more tokens: 2 s (+3 late), not 5 s (+3 late)
        return at, time_.now - at

    woken_at, third_wait = asyncio.run(go())
    assert woken_at == pytest.approx(8.0) and third_wait == pytest.approx(2.0 + 3.0)


def test_the_cli_limits_requests_input_and_output_tokens_and_records_them(tmp_path):
    import json

    from testdata import EXAMPLES
    from typer.testing import CliRunner

    from hallumeasure.cli import app

    out = tmp_path / "run"
    args = [
        "measure",
        str(EXAMPLES),
        "--out",
        str(out),
        "--extractor",
        "fake",
        "--judge",
        "fake",
        "--rpm",
        "60k",
        "--tpm",
        "40m",
        "--otpm",
        "90m",
        "--no-cache",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 3), result.output
    settings = json.loads((out / "manifest.json").read_text())["settings"]["judge"]
    assert settings["rate_limits"] == {"rpm": 60_000, "tpm": 40_000_000, "output_tpm": 90_000_000}
