"""Prometheus metrics of one guard app, in a registry of its own (two apps in one process never mix).

Every label takes values from a fixed set (endpoint paths, status codes, decisions, stage names),
never from request text, so hostile input cannot reach a label or blow up the series count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from hallumeasure.guard.core import CheckResult
from hallumeasure.guard.workers import PoolStatus

#: Seconds; the fast keyless path sits in the low milliseconds, a rewrite or an LLM step far above.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
ENDPOINTS = frozenset({"/v1/check", "/v1/check/stream", "/healthz", "/readyz", "/metrics"})


class GuardMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = self._counter(
            "hallumeasure_guard_requests", "HTTP requests by endpoint and status", ["endpoint", "status"]
        )
        self.decisions = self._counter("hallumeasure_guard_decisions", "Checked responses by decision", ["decision"])
        self.undecided = self._counter(
            "hallumeasure_guard_undecided", "Checked responses the keyless judge could not decide"
        )
        self.stage_seconds = Histogram(
            "hallumeasure_guard_stage_seconds",
            "Time per stage of a check",
            ["stage"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.rejected = self._counter(
            "hallumeasure_guard_rejected", "Requests refused with 429 at the concurrency limit"
        )
        self.timeouts = self._counter("hallumeasure_guard_timeouts", "Checks that passed their deadline")
        self.fallbacks = self._counter(
            "hallumeasure_guard_llm_fallbacks", "Checks whose LLM step failed or passed its deadline"
        )
        self.explained = self._counter(
            "hallumeasure_guard_llm_explained", "Checks whose flagged claims an LLM explained"
        )
        self.queue_depth = Gauge(
            "hallumeasure_guard_queue_depth", "Checks running or waiting for a slot", registry=self.registry
        )
        self.open_streams = Gauge(
            "hallumeasure_guard_open_streams",
            "Streams open (each holds a check slot only while judging)",
            registry=self.registry,
        )

    def _counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        """A counter in this app's registry."""
        return Counter(name, documentation, labels, registry=self.registry)

    def watch_pool(self, status: Callable[[], PoolStatus | None]) -> None:
        """Show the judge worker pool that ``status`` describes at each scrape (nothing while it returns None)."""
        self.registry.register(_PoolCollector(status))

    def observe(self, result: CheckResult) -> None:
        self.decisions.labels(decision=result.decision.value).inc()
        if result.decided is False:
            self.undecided.inc()
        if result.fallback is not None:
            self.fallbacks.inc()
        if result.explained:
            self.explained.inc()
        for stage, ms in result.latency_ms.items():
            self.stage_seconds.labels(stage=stage).observe(ms / 1000)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def endpoint_label(path: str) -> str:
    return path if path in ENDPOINTS else "other"


class _PoolCollector:
    """The judge worker pool, read at each scrape from the pool itself (it is the one record of its state)."""

    def __init__(self, status: Callable[[], PoolStatus | None]) -> None:
        self.status = status

    def collect(self) -> Iterator[Metric]:
        pool = self.status()
        if pool is None:
            return
        yield GaugeMetricFamily("hallumeasure_guard_judge_workers", "Judge worker processes wanted", value=pool.size)
        yield GaugeMetricFamily(
            "hallumeasure_guard_judge_workers_alive", "Judge workers ready or judging", value=pool.alive
        )
        yield GaugeMetricFamily(
            "hallumeasure_guard_judge_workers_starting",
            "Judge workers being started in place of ones that ended (backoff included)",
            value=pool.starting,
        )
        yield CounterMetricFamily(
            "hallumeasure_guard_judge_worker_restarts",
            "Judge workers started in place of one that ended (crashed, killed, or stopped at a deadline)",
            value=pool.restarts,
        )
        yield GaugeMetricFamily(
            "hallumeasure_guard_judge_workers_spare",
            "Judge workers started and held out of rotation, to take an ended worker's place at once",
            value=pool.spare,
        )
        yield CounterMetricFamily(
            "hallumeasure_guard_judge_worker_recycled",
            "Judge workers retired after worker_max_checks checks (each also counts as a restart)",
            value=pool.recycled,
        )
        yield CounterMetricFamily(
            "hallumeasure_guard_judge_worker_start_failures",
            "Judge workers that ended before they were ready",
            value=pool.start_failures,
        )
        last = GaugeMetricFamily(
            "hallumeasure_guard_judge_worker_last_exit",
            "Unix time the last judge worker ended; its label says how (SIGKILL, code 1, start timeout)",
            labels=["status"],
        )
        if pool.last_exit is not None and pool.last_exit_at is not None:
            last.add_metric([pool.last_exit], pool.last_exit_at)
        yield last
