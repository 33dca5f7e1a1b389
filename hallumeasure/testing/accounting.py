"""What a simulated provider charges and how long it takes: prompt-cache billing, rate limits, latency.

These are protocol-neutral: both front-ends (Anthropic, Bedrock) get the same behaviour from the
core server, which feeds them the prompt as ``Piece``s (tool definitions, then system and message
segments, in the order the providers build the prompt) and the answer's token counts.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Clock = Callable[[], float]


@dataclass(frozen=True)
class Piece:
    """A stretch of prompt with its token count; ``cache_after`` is a cache breakpoint right after it."""

    text: str
    tokens: int
    cache_after: bool = False


@dataclass(frozen=True)
class CacheBill:
    """How the input side of one request is billed."""

    input_tokens: int  # neither read from nor written to the cache
    cache_read_tokens: int
    cache_write_tokens: int


@dataclass
class _Entry:
    ready_at: float  # a prefix becomes readable only once the request that wrote it has answered
    expires_at: float


class PromptCache:
    """Prefix-cache accounting as Anthropic and Bedrock document it.

    A request's breakpoints (Anthropic ``cache_control``, Bedrock ``cachePoint``) each close a
    prefix: everything from the tool definitions up to the breakpoint. The longest prefix seen
    within ``ttl`` seconds is billed as a cache read (and its lifetime refreshed); from there up to
    the last breakpoint whose prefix reaches ``min_tokens`` is billed as a cache write; the rest is
    plain input. A prefix written by a request that is still being answered cannot be read yet, so
    concurrent requests with a cold prefix all pay the write, as with the real services.
    """

    def __init__(self, *, ttl: float = 300.0, min_tokens: int = 8, clock: Clock = time.monotonic) -> None:
        self.ttl = ttl
        self.min_tokens = min_tokens
        self.clock = clock
        self._entries: dict[str, _Entry] = {}

    def bill(
        self,
        namespace: str,
        pieces: Sequence[Piece],
        *,
        at: float | None = None,
    ) -> tuple[CacheBill, Callable[[float], None]]:
        """The bill for a request that arrived at ``at`` (default: now), and ``commit(ready_at)`` that
        stores the prefixes it writes. Call ``commit`` with the time its answer goes out, and only
        when it is answered (a throttled request writes nothing)."""
        now = self.clock() if at is None else at
        total = sum(p.tokens for p in pieces)
        breakpoints: list[tuple[int, str]] = []  # (prefix tokens, prefix key)
        digest = hashlib.sha256(namespace.encode())
        tokens = 0
        for piece in pieces:
            digest.update(b"\x00" + piece.text.encode())
            tokens += piece.tokens
            if piece.cache_after:
                breakpoints.append((tokens, digest.copy().hexdigest()))
        hit = -1
        for i in range(len(breakpoints) - 1, -1, -1):
            entry = self._entries.get(breakpoints[i][1])
            if entry is not None and entry.ready_at <= now < entry.expires_at:
                hit = i
                break
        read = breakpoints[hit][0] if hit >= 0 else 0
        writes = [bp for bp in breakpoints[hit + 1 :] if bp[0] >= self.min_tokens]
        write = writes[-1][0] - read if writes else 0
        hit_key = breakpoints[hit][1] if hit >= 0 else None

        def commit(ready_at: float) -> None:
            if hit_key is not None:
                self._entries[hit_key].expires_at = max(self._entries[hit_key].expires_at, now + self.ttl)
            for _, key in writes:
                old = self._entries.get(key)
                if old is not None and old.ready_at <= ready_at and old.expires_at > now:
                    old.expires_at = max(old.expires_at, ready_at + self.ttl)
                else:
                    self._entries[key] = _Entry(ready_at=ready_at, expires_at=ready_at + self.ttl)

        return CacheBill(input_tokens=total - read - write, cache_read_tokens=read, cache_write_tokens=write), commit

    def clear(self) -> None:
        self._entries.clear()


# --- rate limits ------------------------------------------------------------------------------------


class TokenBucket:
    """``rate`` units per second, holding at most ``capacity``; a request larger than the capacity
    passes when the bucket is full (and drives it negative), so that it is slow but never stuck."""

    def __init__(self, rate: float, capacity: float, clock: Clock) -> None:
        if rate <= 0 or capacity <= 0:
            raise ValueError("a token bucket needs a positive rate and capacity")
        self.rate = rate
        self.capacity = capacity
        self.clock = clock
        self.level = capacity
        self._at = clock()

    def _refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self._at) * self.rate)
        self._at = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` can be taken (0 when it can be now)."""
        self._refill()
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float) -> None:
        self._refill()
        self.level -= amount


@dataclass
class RateLimits:
    """Per-minute limits a simulated provider enforces with token buckets (continuous refill, as
    Anthropic documents its limits). ``burst`` is how many seconds' worth of each limit may be spent
    at once. Token limits count uncached input and cache writes (cache reads are free, as for
    Anthropic's current models) and, for ``tpm`` and ``output_tpm``, output tokens.
    """

    rpm: float | None = None
    tpm: float | None = None
    input_tpm: float | None = None
    output_tpm: float | None = None
    burst: float = 1.0
    clock: Clock = time.monotonic
    _buckets: dict[str, TokenBucket] = field(default_factory=dict, init=False, repr=False)

    def _bucket(self, name: str, per_minute: float) -> TokenBucket:
        if name not in self._buckets:
            rate = per_minute / 60.0
            self._buckets[name] = TokenBucket(rate, max(1.0, rate * self.burst), self.clock)
        return self._buckets[name]

    def _limits(self) -> list[tuple[str, float | None]]:
        """The four limits by name, in the order a refusal names the one that binds first."""
        return [("rpm", self.rpm), ("tpm", self.tpm), ("input_tpm", self.input_tpm), ("output_tpm", self.output_tpm)]

    def _demands(self, input_tokens: int, output_tokens: int) -> list[tuple[TokenBucket, float]]:
        tokens = input_tokens + output_tokens
        amounts = {"rpm": 1, "tpm": tokens, "input_tpm": input_tokens, "output_tpm": output_tokens}
        return [(self._bucket(name, limit), amounts[name]) for name, limit in self._limits() if limit]

    def admit(self, input_tokens: int, output_tokens: int) -> tuple[float, str | None]:
        """(0, None) and the request is counted; or (seconds to wait, the limit that refused it)."""
        demands = self._demands(input_tokens, output_tokens)
        names = [name for name, limit in self._limits() if limit]
        waits = [bucket.wait_for(amount) for bucket, amount in demands]
        worst = max(range(len(waits)), key=waits.__getitem__, default=None)
        if worst is not None and waits[worst] > 0:
            return waits[worst], names[worst]
        for bucket, amount in demands:
            bucket.take(amount)
        return 0.0, None

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in (*self._limits(), ("burst", self.burst)) if v}


# --- latency ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Latency:
    """Seconds a simulated answer takes: a fixed part, prefill per uncached input token (cache reads
    are much cheaper), and generation per output token, which dominates for long answers."""

    base: float = 0.0
    per_input_token: float = 0.0
    per_cache_read_token: float = 0.0
    per_output_token: float = 0.0

    def seconds(self, input_tokens: int, cache_read_tokens: int, cache_write_tokens: int, output_tokens: int) -> float:
        value = (
            self.base
            + (input_tokens + cache_write_tokens) * self.per_input_token
            + cache_read_tokens * self.per_cache_read_token
            + output_tokens * self.per_output_token
        )
        return max(0.0, value) if math.isfinite(value) else 0.0
