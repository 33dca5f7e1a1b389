"""Rate limits that hold for a whole run on Ray: one bucket per model in a Ray actor, drawn on by every worker.

Each worker's ``Model`` keeps its own ``RateLimiter`` for what it knows alone (the estimate of a request, the
prompt prefixes its calls cached) and asks the run's actor for admission, so N workers send at most ``--rpm``
together, not N times it; a provider's retry-after pauses every worker. The actors are named by the run and
the model spec, made by the driver before the workers start and ended with the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from hallumeasure.models.base import GenerateRequest
from hallumeasure.models.limits import RateLimiter, TokenEstimate, share_limits_through

Limits = tuple[float | None, float | None, float | None]


class ClusterBuckets:
    """The body of the run's actor for one model: the buckets every worker draws on (an async actor, so that
    callers wait their turn in its event loop)."""

    def __init__(self, rpm: float | None, tpm: float | None, output_tpm: float | None) -> None:
        self.limiter = RateLimiter(rpm, tpm, output_tpm=output_tpm)

    async def acquire(self, input_tokens: int, output_tokens: int) -> None:
        await self.limiter.acquire(TokenEstimate(input_tokens, output_tokens))

    async def settle(self, reserved: tuple[int, int], used: tuple[int, int]) -> None:
        self.limiter.settle(TokenEstimate(*reserved), TokenEstimate(*used))

    async def pause(self, seconds: float) -> None:
        self.limiter.pause(seconds)

    async def admitted(self) -> int:
        return self.limiter.admitted


class ClusterLimiter(RateLimiter):
    """A worker's limiter: its own estimates, the run's buckets (``ClusterBuckets`` in a Ray actor)."""

    def __init__(self, actor: Any, rpm: float | None, tpm: float | None, output_tpm: float | None) -> None:
        super().__init__(rpm, tpm, output_tpm=output_tpm)
        self.actor = actor

    async def admit(self, request: GenerateRequest) -> TokenEstimate:
        estimate = self.estimate(request)
        await self.actor.acquire.remote(estimate.input_tokens, estimate.output_tokens)
        self.admitted += 1
        return estimate

    def settle(self, reserved: TokenEstimate | int, used: TokenEstimate | int) -> None:
        self.actor.settle.remote(_pair(reserved), _pair(used))

    def pause(self, seconds: float) -> None:
        self.actor.pause.remote(seconds)


def _pair(count: TokenEstimate | int) -> tuple[int, int]:
    return (count, 0) if isinstance(count, int) else (count.input_tokens, count.output_tokens)


def actor_name(run: str, spec: str, limits: Limits) -> str:
    """The name of the run's actor for ``spec`` under ``limits``."""
    return f"hallumeasure-limits:{run}:{spec}:{limits}"


@contextmanager
def cluster_limits(ray: Any, run: str, specs: Iterable[str], limits: Limits) -> Iterator[None]:
    """The run's actors, one per model spec, for as long as the run goes (none when no limit is set)."""
    if not any(limits):
        yield
        return
    remote = ray.remote(num_cpus=0)(ClusterBuckets)
    actors = [remote.options(name=actor_name(run, spec, limits)).remote(*limits) for spec in specs]
    try:
        yield
    finally:
        for actor in actors:
            ray.kill(actor)


def draw_on_cluster_limits(ray: Any, run: str) -> None:
    """In a worker: make this process's limiters draw on the run's actors (``cluster_limits``)."""

    def source(spec: str, rpm: float | None, tpm: float | None, output_tpm: float | None) -> RateLimiter:
        actor = ray.get_actor(actor_name(run, spec, (rpm, tpm, output_tpm)))
        return ClusterLimiter(actor, rpm, tpm, output_tpm)

    share_limits_through(source)
