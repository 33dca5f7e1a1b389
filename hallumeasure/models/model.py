"""The one wrapper around a provider: retries, deadline, concurrency, rate limits, cache, usage and
batch mode live here only."""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from hallumeasure.core.errors import ConfigError, HalluMeasureError, ProviderError, RunStoppedError
from hallumeasure.core.types import Usage
from hallumeasure.models.base import ATTEMPT_DEADLINE, GenerateRequest, GenerateResponse, ModelAPI
from hallumeasure.models.cache import RequestCache, request_key
from hallumeasure.models.limits import TokenEstimate

if TYPE_CHECKING:
    from hallumeasure.models.batch import Batcher
    from hallumeasure.models.budget import ModelSpend

log = logging.getLogger(__name__)


class Limiter(Protocol):
    """Admission control before a call (requests and tokens per minute): ``hallumeasure.models.limits.RateLimiter``.

    ``admit`` waits until a request's estimated count fits and reserves it, ``settle``
    replaces the reservation with the real count, ``answered`` remembers what the request cached (so
    later estimates leave cache reads out) and ``pause`` holds every caller back (a retry-after).
    """

    async def admit(self, request: GenerateRequest) -> TokenEstimate: ...

    def settle(self, reserved: TokenEstimate, used: TokenEstimate) -> None: ...

    def answered(self, request: GenerateRequest, *, min_cache_tokens: int | None) -> None: ...

    def pause(self, seconds: float) -> None: ...

    def settings(self) -> dict[str, Any]: ...


#: Set by a caller (the guard's LLM step) to a list that collects each retried failure of the calls made in its
#: context, as "Type: message": a deadline that passes while a provider keeps failing can then say so.
failed_attempts: ContextVar[list[str] | None] = ContextVar("failed_attempts", default=None)


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and exc.retryable


class ProviderUnreachableError(ConfigError, RunStoppedError):
    """No call of this model has ever reached its provider, and the first ones could not connect at all.

    A configuration problem (a wrong base URL or endpoint, no network), not a bad answer: the run
    stops instead of turning every sample into an error row. The message names the endpoint (never a
    key). Stages let it through; ``Model`` raises it for every later call too.
    """


def _cannot_connect(exc: BaseException) -> bool:
    """A failure before any HTTP answer: refused, unresolvable, unreachable (a timeout is not one)."""
    if not isinstance(exc, ProviderError) or exc.status is not None:
        return False
    cause = (exc.cause or "").lower()
    return cause == "connection" or "connect" in cause


class _Flight:
    """A request in flight and how many callers wait for its answer."""

    def __init__(self, task: asyncio.Future[GenerateResponse]) -> None:
        self.task = task
        self.waiters = 0


class Model:
    """Calls a ``ModelAPI`` with bounded concurrency, bounded retries, a deadline and a request cache.

    Provider SDK retries must be off: this is the only layer that retries. A retryable failure is
    retried after the server's retry-after (capped at ``backoff_max``, plus a little jitter) or
    else after an exponential backoff with full jitter. With a ``limiter``, each attempt first
    waits for admission under the rate limits, and a retry-after pauses the limiter for everyone.

    With ``batch`` (a ``hallumeasure.models.batch.Batcher``), requests go through the provider's batch
    service instead: ``generate`` waits for the batch that carries the request, and a failed item
    is retried here like a failed call (it joins a later batch). The deadline, the concurrency bound
    and the limiter do not apply to batched requests; ``batch_usage`` counts what was batched (billed
    at the batch discount).

    What the three bounds mean: ``timeout`` bounds each attempt end to end (connect, send, read),
    counted from the moment the call leaves, never the time it waited for a concurrency slot or a
    rate-limit token; ``max_concurrency`` bounds the provider calls in flight at once, and sizes the
    provider's connection and thread pools (``ModelAPI.bound``); a pipeline's ``concurrency`` bounds
    the samples in flight, above this.

    Identical requests in flight at the same moment are sent once (single flight): the first caller
    sends it, the others wait for its answer and get it with no usage of their own (counted as
    ``cached_calls``), or its error.
    """

    def __init__(
        self,
        api: ModelAPI,
        *,
        max_retries: int = 4,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        cache: RequestCache | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        limiter: Limiter | None = None,
        seed: int | None = None,
        batch: Batcher | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        spend: ModelSpend | None = None,
    ) -> None:
        self.api = api
        self.max_retries = max_retries
        self.timeout = timeout
        self.cache = cache
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.limiter = limiter
        self.batch = batch
        #: The run's budget (``--max-cost``), asked before every request that leaves for the provider.
        self.spend = spend
        self._sleep = sleep or asyncio.sleep  # injectable, so that tests can see the waits without waiting
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._max_concurrency = max_concurrency
        self._random = random.Random(seed)
        self.usage = Usage()
        #: The part of ``usage`` that went through batches.
        self.batch_usage = Usage()
        self.retries = 0
        #: Requests answered by sharing an identical request that was in flight (single flight).
        self.shared = 0
        #: Whether any call has reached the provider (an answer, or an HTTP error); until then, calls that
        #: cannot connect after their retries stop the run (``ProviderUnreachableError``).
        self.reached = False
        self._unreachable: ProviderUnreachableError | None = None
        self._flights: dict[str, _Flight] = {}
        self._flights_loop: asyncio.AbstractEventLoop | None = None
        self._window_asked = False
        self._window_lock: asyncio.Lock | None = None
        self._window_lock_loop: asyncio.AbstractEventLoop | None = None
        api.bound(timeout=timeout, max_concurrency=max_concurrency)

    @property
    def batched(self) -> bool:
        """Whether requests go through the provider's batch service."""
        return self.batch is not None

    @property
    def spec(self) -> str:
        return self.api.spec

    def settings(self) -> dict[str, Any]:
        """Settings recorded in the manifest (the cache key uses only the provider's own settings)."""
        settings = {
            **self.api.settings(),
            "max_retries": self.max_retries,
            "timeout": self.timeout,
            "max_concurrency": self._max_concurrency,
        }
        if self.limiter is not None and self.limiter.settings():
            settings["rate_limits"] = self.limiter.settings()
        if self.batch is not None:
            settings["batch"] = True
        return settings

    async def window(self) -> int | None:
        """The model's context window in tokens: what its server says (asked once), else the spec option or the
        facts table; None when nothing is known. A server that cannot be asked leaves the known value."""
        loop = asyncio.get_running_loop()
        if self._window_lock is None or self._window_lock_loop is not loop:
            self._window_lock, self._window_lock_loop = asyncio.Lock(), loop
        async with self._window_lock:
            if not self._window_asked:
                self._window_asked = True
                try:
                    async with asyncio.timeout(min(self.timeout, 30.0)):
                        said = await self.api.ask_window()
                except (HalluMeasureError, TimeoutError, OSError) as exc:
                    log.info("%s: could not ask the server for its context window (%s)", self.spec, exc)
                    said = None
                if said:
                    log.info("%s: the server serves a context window of %d tokens", self.spec, said)
                    self.api.context_window = said
        return self.api.context_window

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = exc.retry_after if isinstance(exc, ProviderError) else None  # only they are retried
        if retry_after is not None:
            # Honour the server, capped, plus a little jitter so that callers do not stampede.
            return min(self.backoff_max, float(retry_after)) + self._random.uniform(0, self.backoff_base / 4)
        exp = self.backoff_base * 2 ** (state.attempt_number - 1)
        return self._random.uniform(0, min(self.backoff_max, exp))

    async def generate(
        self, request: GenerateRequest, *, use_cache: bool = True, max_retries: int | None = None
    ) -> GenerateResponse:
        """One answer for ``request``: from the cache if seen before, from an identical request in flight,
        else from the provider.

        ``max_retries`` overrides the wrapper's bound for this request (0: one attempt only).
        """
        key = request_key(self.spec, request, self.api.settings())
        if use_cache and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                log.debug("%s: answered from the request cache (key %s)", self.spec, key[:12])
                self.usage = self.usage + Usage(cached_calls=1)
                return hit.model_copy(update={"cached": True, "usage": Usage(cached_calls=1)})
        return await self._single_flight(key, request, use_cache=use_cache, max_retries=max_retries)

    async def _single_flight(
        self, key: str, request: GenerateRequest, *, use_cache: bool, max_retries: int | None
    ) -> GenerateResponse:
        """Send ``request`` unless an identical one is in flight; then wait for that one's answer.

        A call whose last waiter gave up is cancelled and leaves the table at once, so no later request joins it.
        A request that joined it just before (its wait ended by a cancellation that is not its own) sends it
        again: a shared call's cancellation never reaches a caller that did not ask for it."""
        loop = asyncio.get_running_loop()
        if self._flights_loop is not loop:  # tasks of another event loop (a sync wrapper's earlier run)
            self._flights, self._flights_loop = {}, loop
        resent = 0
        while True:
            flight = self._flights.get(key)
            leader = flight is None
            if flight is None:
                flight = _Flight(
                    asyncio.ensure_future(self._send(key, request, use_cache=use_cache, max_retries=max_retries))
                )
                self._flights[key] = flight
                flight.task.add_done_callback(functools.partial(self._land, key, flight))
            flight.waiters += 1
            try:
                response = await asyncio.shield(flight.task)
            except asyncio.CancelledError:
                flight.waiters -= 1
                if flight.waiters == 0 and not flight.task.done():
                    flight.task.cancel()  # nobody wants the answer any more
                    self._land(key, flight)
                me = asyncio.current_task()
                if (me is not None and me.cancelling()) or not flight.task.cancelled() or resent >= 3:
                    raise  # this caller was cancelled (its deadline, its client gone)
                resent += 1
                log.debug("%s: a shared call was cancelled by its other callers; sending it again", self.spec)
                continue
            break
        flight.waiters -= 1
        if leader:
            return response
        self.shared += 1
        self.usage = self.usage + Usage(cached_calls=1)
        log.debug("%s: answered by an identical request in flight (key %s)", self.spec, key[:12])
        return response.model_copy(update={"usage": Usage(cached_calls=1)})

    def _land(self, key: str, flight: _Flight, _task: object = None) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
        if flight.task.done() and not flight.task.cancelled():
            flight.task.exception()  # retrieved, so that an error nobody awaited is not logged as lost

    async def _send(
        self, key: str, request: GenerateRequest, *, use_cache: bool, max_retries: int | None
    ) -> GenerateResponse:
        retrying = AsyncRetrying(
            stop=stop_after_attempt((self.max_retries if max_retries is None else max_retries) + 1),
            wait=self._wait,
            retry=retry_if_exception(_is_retryable),
            reraise=True,
            before_sleep=self._before_sleep,
            sleep=self._sleep,
        )
        if self._unreachable is not None:
            raise self._unreachable
        try:
            async for attempt in retrying:
                with attempt:
                    response = await self._attempt(request, key)
        except ProviderError as exc:
            if _cannot_connect(exc) and not self.reached:
                self._unreachable = ProviderUnreachableError(
                    f"{self.spec}: cannot connect to {self._endpoint()} "
                    f"({retrying.statistics.get('attempt_number', 1)} attempt(s); the last: {exc}); "
                    "check the base URL or endpoint setting (ANTHROPIC_BASE_URL, HALLUMEASURE_BEDROCK_ENDPOINT, "
                    "the base_url option) and the network"
                )
                raise self._unreachable from None
            raise
        if use_cache and self.cache is not None and response.stop_reason != "refusal" and not response.cached:
            self.cache.put(key, self.spec, response)
        return response

    def _before_sleep(self, state: RetryCallState) -> None:
        self.retries += 1
        exc = state.outcome.exception() if state.outcome else None
        collected = failed_attempts.get()
        if collected is not None and exc is not None:
            collected.append(f"{type(exc).__name__}: {str(exc)[:200]}")
        log.info("retrying %s after %s (attempt %d)", self.spec, type(exc).__name__, state.attempt_number)

    async def _attempt(self, request: GenerateRequest, key: str) -> GenerateResponse:
        if self.batch is not None:
            started = time.perf_counter()
            response = await self.batch.submit(request, key)
            if response is not None and response.cached:  # an identical request in flight paid for it
                self.usage = self.usage + response.usage
                return response
            if response is not None:  # None: too few requests for a batch, so send it on demand
                usage = response.usage.model_copy(
                    update={"calls": max(1, response.usage.calls), "seconds": time.perf_counter() - started}
                )
                self.usage = self.usage + usage
                self.batch_usage = self.batch_usage + usage
                return response.model_copy(update={"usage": usage})
        return await self._call_once(request)

    async def _call_once(self, request: GenerateRequest) -> GenerateResponse:
        async with self._semaphore:
            if self.spend is None:
                return await self._timed_call(request)
            # The run's budget first: a request it refuses stops the run before it waits for a rate-limit turn.
            money = await self.spend.admit(request)
            paid: Usage | None = None
            try:
                response = await self._timed_call(request)
                paid = response.usage
            finally:
                self.spend.settle(money, paid)  # a failed attempt is not billed
            return response

    async def _timed_call(self, request: GenerateRequest) -> GenerateResponse:
        """One call under the rate limits and the deadline, its usage counted (inside the concurrency bound)."""
        limiter = self.limiter
        reserved = TokenEstimate()
        if limiter is not None:
            reserved = await limiter.admit(request)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout) as deadline:
                token = ATTEMPT_DEADLINE.set((deadline, self.timeout))
                try:
                    response = await self.api.generate(request)
                finally:
                    ATTEMPT_DEADLINE.reset(token)
        except TimeoutError as exc:
            # The provider may have counted it: keep the reservation.
            raise ProviderError(
                f"{self.spec}: no answer within the {self.timeout:g} s deadline",
                retryable=True,
                cause="timeout",
            ) from exc
        except ProviderError as exc:
            self.reached = self.reached or exc.status is not None
            self._tell_limiter(exc, reserved)
            raise
        elapsed = time.perf_counter() - started
        self.reached = True
        usage = response.usage.model_copy(update={"calls": max(1, response.usage.calls), "seconds": elapsed})
        log.debug(
            "%s: call answered in %.2f s (%d input, %d output, %d cache-read tokens; stop %s)",
            self.spec,
            elapsed,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            response.stop_reason,
        )
        if limiter is not None:
            # What the provider's limits count: input that was not read from the cache, and the output.
            limiter.settle(
                reserved,
                TokenEstimate(
                    input_tokens=usage.input_tokens + usage.cache_write_tokens, output_tokens=usage.output_tokens
                ),
            )
            limiter.answered(request, min_cache_tokens=self.api.min_cache_tokens)
        self.usage = self.usage + usage
        return response.model_copy(update={"usage": usage})

    def _endpoint(self) -> str:
        """Where the provider's calls go, as the manifest records it (no user, query or key)."""
        settings = self.api.settings()
        for name in ("base_url", "endpoint_url", "endpoint", "api_base", "host"):
            if settings.get(name):
                return str(settings[name])
        region = settings.get("region")
        return f"the {self.api.provider} endpoint of region {region}" if region else f"the {self.api.provider} API"

    def _tell_limiter(self, exc: ProviderError, reserved: TokenEstimate) -> None:
        """A throttled call counted nothing against the limits; a retry-after holds every caller back."""
        if self.limiter is None:
            return
        if exc.status == 429:
            self.limiter.settle(reserved, TokenEstimate())
        if exc.retryable and exc.retry_after is not None:
            self.limiter.pause(min(self.backoff_max, exc.retry_after))

    async def aclose(self) -> None:
        if self.batch is not None:
            await self.batch.aclose()
        await self.api.aclose()
