"""The wrapper owns retries, deadlines, concurrency, the cache and usage; tested with the scripted fake."""

import asyncio

import pytest

from hallumeasure.core.errors import ProviderError
from hallumeasure.core.types import Usage
from hallumeasure.models.base import GenerateRequest, GenerateResponse, Message
from hallumeasure.models.cache import RequestCache
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model


def _request(text: str = "hello") -> GenerateRequest:
    return GenerateRequest(system="sys", messages=(Message.user(text),))


def test_retryable_error_is_retried_and_honours_retry_after():
    api = FakeAPI(script=[ProviderError("429", retryable=True, retry_after=0.05), "ok"])
    model = Model(api, backoff_base=0.0)
    started = asyncio.run(_timed(model.generate(_request())))
    response, elapsed = started
    assert response.text == "ok" and api.calls == 2 and model.retries == 1
    assert elapsed >= 0.05


async def _timed(coro):
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    value = await coro
    return value, loop.time() - t0


def test_retry_after_is_capped():
    api = FakeAPI(script=[ProviderError("429", retryable=True, retry_after=3600), "ok"])
    model = Model(api, backoff_max=0.01, backoff_base=0.0)
    response, elapsed = asyncio.run(_timed(model.generate(_request())))
    assert response.text == "ok" and elapsed < 1


def test_non_retryable_error_fails_at_once():
    api = FakeAPI(script=[ProviderError("bad request", retryable=False), "never"])
    with pytest.raises(ProviderError, match="bad request"):
        asyncio.run(Model(api).generate(_request()))
    assert api.calls == 1


def test_retries_are_bounded():
    api = FakeAPI(script=[ProviderError("503", retryable=True, retry_after=0)] * 10)
    with pytest.raises(ProviderError):
        asyncio.run(Model(api, max_retries=2, backoff_base=0.0).generate(_request()))
    assert api.calls == 3


def test_deadline_turns_a_hang_into_a_retryable_error():
    class Slow(FakeAPI):
        async def generate(self, request):
            self.requests.append(request)
            await asyncio.sleep(10)

    api = Slow()
    with pytest.raises(ProviderError, match="deadline"):
        asyncio.run(Model(api, timeout=0.05, max_retries=1, backoff_base=0.0).generate(_request()))
    assert api.calls == 2


def test_cache_answers_identical_requests_without_a_call(tmp_path):
    cache = RequestCache(tmp_path / "c.sqlite")
    api = FakeAPI(responder=lambda req: {"answer": req.messages[0].text})
    model = Model(api, cache=cache)

    async def go():
        first = await model.generate(_request("a"))
        second = await model.generate(_request("a"))
        third = await model.generate(_request("b"))
        return first, second, third

    first, second, _ = asyncio.run(go())
    assert api.calls == 2
    assert second.cached and not first.cached and second.tool_input == first.tool_input
    assert model.usage.calls == 2 and model.usage.cached_calls == 1
    # A new wrapper over the same file (a later run) pays nothing either.
    api2 = FakeAPI(script=[])
    again = asyncio.run(Model(api2, cache=RequestCache(tmp_path / "c.sqlite")).generate(_request("a")))
    assert again.tool_input == {"answer": "a"} and api2.calls == 0


def test_concurrency_is_bounded():
    in_flight, peak = 0, 0

    class Counting(FakeAPI):
        async def generate(self, request):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return GenerateResponse(text="x", usage=Usage(calls=1))

    model = Model(Counting(), max_concurrency=3)

    async def go():
        await asyncio.gather(*(model.generate(_request(str(i))) for i in range(12)))

    asyncio.run(go())
    assert peak == 3 and model.usage.calls == 12


def test_usage_is_accumulated():
    api = FakeAPI(
        script=[
            GenerateResponse(
                text="a",
                usage=Usage(calls=1, input_tokens=10, output_tokens=3, cache_read_tokens=7, cache_write_tokens=2),
            )
        ]
    )
    model = Model(api)
    asyncio.run(model.generate(_request()))
    assert (
        model.usage.input_tokens,
        model.usage.output_tokens,
        model.usage.cache_read_tokens,
        model.usage.cache_write_tokens,
    ) == (10, 3, 7, 2)


def test_a_shared_call_cancelled_by_its_other_caller_is_sent_again_not_raised_as_a_cancellation():
    """Issue #46: a caller gives up on a call (its deadline), which cancels it; a second caller of the same
    request that joined it just then was given the CancelledError (a bare 500 in the guard). It sends the
    request again and gets the answer."""
    from provider_fixtures import ANTHROPIC, judge_request

    from hallumeasure.testing import AnthropicServer
    from hallumeasure.testing.anthropic_server import text_reply

    async def scenario(model: Model) -> GenerateResponse:
        request = judge_request()
        first = asyncio.create_task(model.generate(request, use_cache=False))
        await asyncio.sleep(0.3)  # the first call hangs at the provider
        first.cancel()  # its caller gives up: the shared call is cancelled
        # joins at once, in the same turn of the loop: on main it joined the call being cancelled
        second = asyncio.create_task(model.generate(request, use_cache=False))
        with pytest.raises(asyncio.CancelledError):
            await first
        return await asyncio.wait_for(second, 10)

    hung = text_reply("late")
    hung.delay = 5.0  # a provider that stops answering
    with AnthropicServer(script=[hung, text_reply("answer")]) as srv:
        model = Model(ANTHROPIC.api(srv), max_retries=0)
        response = asyncio.run(scenario(model))
    assert response.text == "answer"
