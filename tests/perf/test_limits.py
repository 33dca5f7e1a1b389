"""The client-side rate limiter (with an injected clock, so nothing here waits for real time) and the
wrapper's backoff: retry-after honoured, capped and jittered; throttled calls pause every caller."""

import asyncio

import pytest

from hallumeasure.errors import ConfigError, ProviderError
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import GenerateRequest, Message
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.limits import RateLimiter, parse_limit, shared_limiter
from hallumeasure.models.model import Model
from hallumeasure.testing import AnthropicServer, BedrockServer
from hallumeasure.testing.faults import Fault, FaultPlan
from hallumeasure.types import Usage
from testdata import aws_session


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
    script = [ProviderError("429", retryable=True, retry_after=7.0, status=429),
              ProviderError("429", retryable=True, retry_after=3600.0, status=429), "ok"]
    model = Model(FakeAPI(script=script), sleep=time.sleep, backoff_base=0.4, backoff_max=30.0, seed=1)
    assert asyncio.run(model.generate(_request())).text == "ok"
    first, second = time.sleeps
    assert 7.0 <= first <= 7.0 + 0.4 / 4 and 30.0 <= second <= 30.0 + 0.4 / 4


def test_without_retry_after_the_backoff_is_exponential_with_full_jitter():
    time = FakeTime()
    model = Model(FakeAPI(script=[ProviderError("x", retryable=True)] * 4 + ["ok"]), sleep=time.sleep,
                  backoff_base=1.0, backoff_max=5.0, seed=3)
    asyncio.run(model.generate(_request()))
    assert len(time.sleeps) == 4
    for attempt, wait in enumerate(time.sleeps, start=1):
        assert 0 <= wait <= min(5.0, 2 ** (attempt - 1))


def test_a_throttled_call_pauses_the_shared_limiter_and_refunds_its_tokens():
    time = FakeTime()
    limiter = RateLimiter(tpm=60_000, clock=time.clock, sleep=time.sleep)
    level_before = limiter._tokens.level
    model = Model(FakeAPI(script=[ProviderError("429", retryable=True, retry_after=2.0, status=429), "ok"]),
                  limiter=limiter, sleep=time.sleep)
    asyncio.run(model.generate(_request()))
    assert limiter._paused_until == pytest.approx(2.0) and limiter.admitted == 2
    assert limiter._tokens.level <= level_before  # the successful call's tokens are spent, the 429's refunded


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
