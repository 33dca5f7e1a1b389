"""Client-side rate limits: admission control before a provider call, shared per provider and model.

Providers enforce requests and tokens per minute with continuously refilled token buckets; a
client that sends faster only collects 429s and retry delays. ``RateLimiter`` keeps the same
buckets on our side so that calls leave at the rate the provider will accept:

    limiter = shared_limiter("anthropic:claude-sonnet-4-5", rpm=50, tpm=40_000)
    model = Model(api, limiter=limiter)

``acquire(estimated_tokens)`` waits until one request and the estimated tokens fit; ``settle``
refunds what the estimate overstated once the real usage is known (our estimate counts the whole
``max_tokens`` budget as output); ``pause(seconds)`` holds everyone back when the provider says
so (a 429's retry-after), so that concurrent callers do not walk into the same wall. Waiters are
served in arrival order, so a large request is not starved by small ones. The clock and the sleep
function are injectable for tests.
"""

from __future__ import annotations

import math

import asyncio
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from hallumeasure.errors import ConfigError

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class _Bucket:
    def __init__(self, per_minute: float, burst: float, clock: Clock) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst)
        self.level = self.capacity
        self.clock = clock
        self._at = clock()

    def refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + max(0.0, now - self._at) * self.rate)
        self._at = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` fits; an amount above the capacity fits when the bucket is full."""
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need - 1e-9 else (need - self.level) / self.rate


class RateLimiter:
    """Requests per minute and tokens per minute, as token buckets holding ``burst`` seconds' worth.

    ``burst`` defaults to one second: providers may enforce a per-minute limit over shorter windows,
    and a client burst smaller than the provider's leaves a margin for network jitter (requests
    that leave evenly can arrive bunched).
    """

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        burst: float = 1.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if rpm is not None and rpm <= 0 or tpm is not None and tpm <= 0:
            raise ConfigError("rate limits must be positive (leave a limit out to disable it)")
        if burst <= 0:
            raise ConfigError("burst must be positive")
        self.rpm, self.tpm, self.burst = rpm, tpm, burst
        self.clock, self.sleep = clock, sleep
        self._requests = _Bucket(rpm, burst, clock) if rpm else None
        self._tokens = _Bucket(tpm, burst, clock) if tpm else None
        self._paused_until = 0.0
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()  # the buckets may be shared by event loops in several threads
        #: Calls admitted and seconds spent waiting, for reports and tests.
        self.admitted = 0
        self.waited = 0.0

    def settings(self) -> dict[str, Any]:
        return {k: v for k, v in (("rpm", self.rpm), ("tpm", self.tpm)) if v}

    def _lock(self) -> asyncio.Lock:
        # An asyncio.Lock belongs to one event loop; sync wrappers may run a fresh loop per call.
        loop = asyncio.get_running_loop()
        with self._guard:
            lock = self._locks.get(loop)
            if lock is None:
                lock = self._locks[loop] = asyncio.Lock()
            return lock

    def _wait_or_take(self, tokens: float) -> float:
        with self._guard:
            now = self.clock()
            if now < self._paused_until:
                return self._paused_until - now
            buckets = [(b, a) for b, a in ((self._requests, 1.0), (self._tokens, tokens)) if b is not None]
            for bucket, _ in buckets:
                bucket.refill()
            wait = max((bucket.wait_for(amount) for bucket, amount in buckets), default=0.0)
            if wait > 0:
                return wait
            for bucket, amount in buckets:
                bucket.level -= amount
            self.admitted += 1
            return 0.0

    async def acquire(self, estimated_tokens: int = 0) -> None:
        """Wait until one request of ``estimated_tokens`` fits under every limit, then count it."""
        async with self._lock():  # first come, first served
            while True:
                wait = self._wait_or_take(max(0, estimated_tokens))
                if wait <= 0:
                    return
                self.waited += wait
                await self.sleep(wait)

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        """Give back what the estimate overstated (or take the shortfall) once a call has answered."""
        if self._tokens is None:
            return
        with self._guard:
            self._tokens.refill()
            self._tokens.level = min(self._tokens.capacity, self._tokens.level + estimated_tokens - actual_tokens)

    def pause(self, seconds: float) -> None:
        """Admit nothing for ``seconds`` (the provider asked us to wait)."""
        with self._guard:
            self._paused_until = max(self._paused_until, self.clock() + max(0.0, seconds))


_SHARED: dict[tuple[str, float | None, float | None], RateLimiter] = {}
_SHARED_GUARD = threading.Lock()


def shared_limiter(spec: str, rpm: float | None = None, tpm: float | None = None, **options: Any) -> RateLimiter:
    """The one limiter of this process for ``spec`` (``provider:model``) and these limits.

    Every ``Model`` built for the same provider and model with the same limits gets the same
    buckets, so the limits hold for the process as a whole, not per stage.
    """
    key = (spec, rpm, tpm)
    with _SHARED_GUARD:
        if key not in _SHARED:
            _SHARED[key] = RateLimiter(rpm, tpm, **options)
        return _SHARED[key]


def parse_limit(text: str | None) -> float | None:
    """A limit from the command line: ``50``, ``40k``, ``2m`` (None or empty: no limit)."""
    if text is None or not str(text).strip():
        return None
    raw = str(text).strip().lower().replace("_", "")
    scale = {"k": 1e3, "m": 1e6}.get(raw[-1], 1.0)
    try:
        value = float(raw[:-1] if scale != 1.0 else raw) * scale
    except ValueError:
        raise ConfigError(f"a rate limit must be a number such as 50, 40k or 2m, not {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"a rate limit must be a positive finite number, not {text!r}")
    return value
