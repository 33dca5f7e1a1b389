"""Client-side rate limits: admission control before a provider call, shared per provider and model.

Providers enforce requests and tokens per minute with continuously refilled token buckets; a
client that sends faster only collects 429s and retry delays. ``RateLimiter`` keeps the same
buckets on our side so that calls leave at the rate the provider will accept:

    limiter = shared_limiter("anthropic:claude-sonnet-4-5", rpm=50, tpm=40_000)
    model = Model(api, limiter=limiter)

What is counted is what the providers count. ``tpm`` limits input tokens as Anthropic's input
limit counts them: uncached input and cache writes, not cache reads (a one-claim call that reads a
2,500-token prefix from the cache costs its ~40 new tokens, not 2,500). ``output_tpm`` limits
output tokens separately, where the provider has such a limit.

A call reserves an estimate before it leaves (``estimate``: the prompt minus the longest prefix
that an answered call has cached, within the cache lifetime; ``max_tokens`` for the output) and
``settle`` replaces the reservation with the real usage once the answer is in. A refund wakes the
waiters at once: nobody sleeps on a deficit that no longer exists. A request larger than a bucket
passes when the bucket is full (so the burst is at least one request), and ``pause(seconds)``
holds everyone back when the provider says so (a 429's retry-after). Waiters are served in arrival
order, so a large request is not starved by small ones; a waiter sleeps only until its own turn or
the next refund, whichever comes first. The clock and the sleep function are injectable for tests.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hallumeasure.core.errors import ConfigError
from hallumeasure.models.base import GenerateRequest, TextBlock

_T = TypeVar("_T")

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

#: Characters per token for estimates (English prose and JSON run at about four).
CHARS_PER_TOKEN = 4
#: How long the providers keep a cached prefix after its last use (Anthropic and Bedrock: 5 minutes).
CACHE_LIFETIME = 300.0


class _Bucket:
    """``rate`` per second up to ``capacity``. A request above the capacity goes when the bucket is full
    (the burst is at least one request); while such a request waits at the head, the bucket may fill
    past its capacity up to that request (``ceiling``), so that a late wake-up loses nothing."""

    def __init__(self, per_minute: float, burst: float, clock: Clock) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst)
        self.ceiling = self.capacity
        self.level = self.capacity
        self.clock = clock
        self._at = clock()

    def refill(self) -> None:
        now = self.clock()
        if self.level < self.ceiling:
            self.level = min(self.ceiling, self.level + max(0.0, now - self._at) * self.rate)
        self._at = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` fits; an amount above the capacity fits when the bucket is full."""
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need - 1e-9 else (need - self.level) / self.rate

    def give_back(self, amount: float) -> None:
        self.refill()
        self.level = min(max(self.ceiling, self.level), self.level + amount)


@dataclass(frozen=True)
class TokenEstimate:
    """What a call is expected to count against the token limits."""

    input_tokens: int = 0
    output_tokens: int = 0


def text_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def _prefixes(request: GenerateRequest) -> list[tuple[str, int]]:
    """(key, tokens) of every cacheable prefix of ``request``, shortest first, and of the whole prompt last.

    The order is the providers': tool definitions, system prompt, messages; a prefix ends at a
    cache breakpoint (the system prompt when ``cache_system``, a block with ``cache_after``).
    """
    digest = hashlib.sha256()
    tokens = 0
    out: list[tuple[str, int]] = []

    def add(text: str, ends_prefix: bool) -> None:
        nonlocal tokens
        digest.update(b"\x00" + text.encode("utf-8", "surrogatepass"))
        tokens += text_tokens(text)
        if ends_prefix:
            out.append((digest.hexdigest(), tokens))

    if request.tool is not None:
        add(json.dumps(request.tool.model_dump(), sort_keys=True), False)
    add(request.system, request.cache_system and bool(request.system))
    for message in request.messages:
        for block in message.content:
            # Only text blocks mark a cache breakpoint; a re-ask's tool call and tool result never do.
            add(f"{message.role}\x00{block.text}", isinstance(block, TextBlock) and block.cache_after)
    out.append(("", tokens))
    return out


class RateLimiter:
    """Requests, input tokens and output tokens per minute, as token buckets holding ``burst`` seconds' worth.

    ``burst`` defaults to one second: providers may enforce a per-minute limit over shorter windows,
    and a client burst smaller than the provider's leaves a margin for network jitter (requests
    that leave evenly can arrive bunched).
    """

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        output_tpm: float | None = None,
        burst: float = 1.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        cache_lifetime: float = CACHE_LIFETIME,
    ) -> None:
        for limit in (rpm, tpm, output_tpm):
            if limit is not None and not (math.isfinite(limit) and limit > 0):
                raise ConfigError("rate limits must be positive finite numbers (leave a limit out to disable it)")
        if not (math.isfinite(burst) and burst > 0):
            raise ConfigError("burst must be a positive number of seconds")
        self.rpm, self.tpm, self.output_tpm, self.burst = rpm, tpm, output_tpm, burst
        self.clock, self.sleep = clock, sleep
        self.cache_lifetime = cache_lifetime
        self._requests = _Bucket(rpm, burst, clock) if rpm else None
        self._input = _Bucket(tpm, burst, clock) if tpm else None
        self._output = _Bucket(output_tpm, burst, clock) if output_tpm else None
        self._paused_until = 0.0
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._wakeups: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Event] = weakref.WeakKeyDictionary()
        self._cached: dict[str, float] = {}  # prefix key -> when its cache entry expires (by our estimate)
        self._guard = threading.Lock()  # the buckets may be shared by event loops in several threads
        #: Calls admitted and seconds spent waiting, for reports and tests.
        self.admitted = 0
        self.waited = 0.0

    def settings(self) -> dict[str, Any]:
        limits = (("rpm", self.rpm), ("tpm", self.tpm), ("output_tpm", self.output_tpm))
        return {k: v for k, v in limits if v}

    # --- estimates ---

    def estimate(self, request: GenerateRequest) -> TokenEstimate:
        """What ``request`` will count: its prompt less the longest prefix known to be cached, and ``max_tokens``."""
        if self._input is None and self._output is None:
            return TokenEstimate()  # only requests are limited: nothing to count
        prefixes = _prefixes(request)
        total = prefixes[-1][1]
        now = self.clock()
        with self._guard:
            cached = max((tokens for key, tokens in prefixes[:-1] if self._cached.get(key, -1.0) > now), default=0)
        return TokenEstimate(input_tokens=total - cached, output_tokens=request.max_tokens)

    def answered(self, request: GenerateRequest, *, min_cache_tokens: int | None) -> None:
        """Remember the prefixes that ``request`` cached (or refreshed), for the estimates of later calls."""
        if min_cache_tokens is None or self._input is None:
            return  # the provider caches nothing, or input tokens are not limited
        now = self.clock()
        learned = False
        with self._guard:
            for key, tokens in _prefixes(request)[:-1]:
                if tokens >= min_cache_tokens:
                    learned = learned or self._cached.get(key, -1.0) <= now
                    self._cached[key] = now + self.cache_lifetime
            if len(self._cached) > 10_000:  # forget expired prefixes now and then
                self._cached = {k: t for k, t in self._cached.items() if t > now}
        if learned:
            self._wake_all()  # the waiter at the head may now count less

    # --- admission ---

    def _lock(self) -> asyncio.Lock:
        return self._of_this_loop(self._locks, asyncio.Lock)

    def _wakeup(self) -> asyncio.Event:
        return self._of_this_loop(self._wakeups, asyncio.Event)

    def _of_this_loop(
        self, made: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _T], make: Callable[[], _T]
    ) -> _T:
        """The running loop's own object from ``made``, made on its first use there.

        An asyncio.Lock or Event belongs to one event loop; sync wrappers may run a fresh loop per call.
        """
        loop = asyncio.get_running_loop()
        with self._guard:
            item = made.get(loop)
            if item is None:
                item = made[loop] = make()
            return item

    def _demands(self, estimate: TokenEstimate) -> list[tuple[_Bucket, float]]:
        pairs = ((self._requests, 1.0), (self._input, estimate.input_tokens), (self._output, estimate.output_tokens))
        return [(bucket, float(max(0, amount))) for bucket, amount in pairs if bucket is not None]

    def _wait_or_take(self, estimate: TokenEstimate) -> float:
        with self._guard:
            now = self.clock()
            if now < self._paused_until:
                return self._paused_until - now
            demands = self._demands(estimate)
            for bucket, amount in demands:
                bucket.refill()
                bucket.ceiling = max(bucket.capacity, amount)
            wait = max((bucket.wait_for(amount) for bucket, amount in demands), default=0.0)
            if wait > 0:
                return wait
            for bucket, amount in demands:
                bucket.level -= amount
                bucket.ceiling = bucket.capacity
            self.admitted += 1
            return 0.0

    async def acquire(self, estimate: TokenEstimate | int = 0) -> None:
        """Wait until one request of ``estimate`` fits under every limit, then reserve it."""
        fixed = estimate if isinstance(estimate, TokenEstimate) else TokenEstimate(input_tokens=estimate)
        await self._admit(lambda: fixed)

    async def admit(self, request: GenerateRequest) -> TokenEstimate:
        """Wait until ``request`` fits under every limit, reserve its estimate and return it (for ``settle``).

        The estimate is taken again each time the request reaches the head of the queue: a prefix that
        another call cached meanwhile is no longer counted (the first of many calls sharing a new prefix
        writes it; the others, admitted after it answered, only read it).
        """
        return await self._admit(lambda: self.estimate(request))

    async def _admit(self, estimate: Callable[[], TokenEstimate]) -> TokenEstimate:
        # Waiters go first come, first served; the one at the head sleeps until its turn or until
        # ``settle`` or ``pause`` changes the buckets, and then looks again.
        async with self._lock():
            wakeup = self._wakeup()
            while True:
                wakeup.clear()
                current = estimate()
                wait = self._wait_or_take(current)
                if wait <= 0:
                    return current
                started = self.clock()
                await self._sleep_until_woken(wait, wakeup)
                self.waited += max(0.0, self.clock() - started)

    async def _sleep_until_woken(self, seconds: float, wakeup: asyncio.Event) -> None:
        sleeper = asyncio.ensure_future(self.sleep(seconds))
        woken = asyncio.ensure_future(wakeup.wait())
        try:
            await asyncio.wait({sleeper, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, woken):
                if not task.done():
                    task.cancel()

    def _wake_all(self) -> None:
        with self._guard:
            pairs = list(self._wakeups.items())
        for loop, event in pairs:
            if loop.is_closed():
                continue
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                event.set()
            else:
                loop.call_soon_threadsafe(event.set)

    def settle(self, reserved: TokenEstimate | int, used: TokenEstimate | int) -> None:
        """Replace a call's reservation with what it really counted; a refund wakes the waiters.

        A throttled call counts nothing: settle it with ``TokenEstimate()``.
        """
        reserved = reserved if isinstance(reserved, TokenEstimate) else TokenEstimate(input_tokens=reserved)
        used = used if isinstance(used, TokenEstimate) else TokenEstimate(input_tokens=used)
        refund = False
        with self._guard:
            for bucket, back in (
                (self._input, reserved.input_tokens - used.input_tokens),
                (self._output, reserved.output_tokens - used.output_tokens),
            ):
                if bucket is not None and back != 0:
                    bucket.give_back(back)
                    refund = refund or back > 0
        if refund:
            self._wake_all()

    def pause(self, seconds: float) -> None:
        """Admit nothing for ``seconds`` (the provider asked us to wait)."""
        with self._guard:
            self._paused_until = max(self._paused_until, self.clock() + max(0.0, seconds))
        self._wake_all()  # a sleeper whose turn was sooner must now wait for the pause


_SHARED: dict[tuple[str, float | None, float | None, float | None], RateLimiter] = {}
_SHARED_GUARD = threading.Lock()


#: Makes the limiter of a spec and its limits (rpm, tpm, output tpm) where they must hold beyond this process.
LimiterSource = Callable[[str, float | None, float | None, float | None], RateLimiter]
_source: LimiterSource | None = None


def share_limits_through(source: LimiterSource | None) -> None:
    """Have ``shared_limiter`` make its limiters with ``source`` from now on (None: this process's own buckets).

    An engine that spreads one run over processes (the Ray engine) sets a source whose limiters draw on buckets
    all its workers share, so that ``--rpm`` and ``--tpm`` hold for the run, not per process.
    """
    global _source
    with _SHARED_GUARD:
        _source = source
        _SHARED.clear()


def shared_limiter(
    spec: str, rpm: float | None = None, tpm: float | None = None, *, output_tpm: float | None = None, **options: Any
) -> RateLimiter:
    """The one limiter of this process for ``spec`` (``provider:model``) and these limits.

    Every ``Model`` built for the same provider and model with the same limits gets the same
    buckets, so the limits hold for the process as a whole, not per stage (and for every process of a run
    when an engine shares them: ``share_limits_through``).
    """
    key = (spec, rpm, tpm, output_tpm)
    with _SHARED_GUARD:
        if key not in _SHARED:
            made = _source(spec, rpm, tpm, output_tpm) if _source is not None else None
            _SHARED[key] = made or RateLimiter(rpm, tpm, output_tpm=output_tpm, **options)
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
