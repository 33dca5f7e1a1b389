"""The guard's checks as OpenTelemetry spans and metrics (the ``otel`` extra; the API alone records nothing).

    from hallumeasure.guard import Guard
    from hallumeasure.guard.telemetry import GuardTelemetry

    guard = Guard(telemetry=GuardTelemetry())          # the global tracer and meter providers

Each check is a span ``hallumeasure.guard.check`` in the caller's current context (so it sits in the
application's trace, beside the LLM span it checked), with the decision, the claim counts, the rate and
the judge as attributes and one event per unsupported claim (its label, reason and the source of its
evidence). Metrics: ``hallumeasure.guard.checks`` (by decision), ``hallumeasure.guard.unsupported_claims``
and ``hallumeasure.guard.duration`` (milliseconds).
"""

from __future__ import annotations

from typing import Any

from hallumeasure.api.check import Result
from hallumeasure.core.errors import ConfigError

SCOPE = "hallumeasure.guard"


class GuardTelemetry:
    """Records guard checks through OpenTelemetry (``tracer_provider`` / ``meter_provider``: the global ones)."""

    def __init__(self, *, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        try:
            from opentelemetry import metrics, trace
        except ImportError as exc:
            raise ConfigError(
                f"guard telemetry needs OpenTelemetry: pip install 'hallumeasure[otel]' ({exc})"
            ) from None
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self.checks = meter.create_counter("hallumeasure.guard.checks", description="Responses checked, by decision")
        self.unsupported = meter.create_counter(
            "hallumeasure.guard.unsupported_claims", description="Unsupported claims found"
        )
        self.duration = meter.create_histogram(
            "hallumeasure.guard.duration", unit="ms", description="Time to check one response"
        )

    def record(self, result: Result, *, decision: str, request_id: str, start_ns: int, end_ns: int) -> None:
        """One check: its span (timed as it ran), events and metrics."""
        attributes: dict[str, Any] = {
            "hallumeasure.guard.decision": decision,
            "hallumeasure.guard.request_id": request_id,
            "hallumeasure.judge": result.judge,
            "hallumeasure.claims": result.n_claims,
            "hallumeasure.claims.unsupported": result.n_unsupported,
            "hallumeasure.claims.errors": result.n_errors,
        }
        if result.unsupported_rate is not None:
            attributes["hallumeasure.unsupported_rate"] = result.unsupported_rate
        span = self.tracer.start_span("hallumeasure.guard.check", start_time=start_ns, attributes=attributes)
        for claim in result.unsupported:
            source = next((e for e in claim.evidence if e.verified), None)
            span.add_event(
                "hallumeasure.claim.unsupported",
                {
                    "hallumeasure.claim.text": claim.text,
                    "hallumeasure.claim.label": claim.label.value if claim.label else "",
                    "hallumeasure.claim.reason": claim.label_reason or "",
                    "hallumeasure.evidence.source_kind": source.source_kind.value
                    if source is not None and source.source_kind
                    else "",
                    "hallumeasure.evidence.source_id": source.passage_id or "" if source is not None else "",
                },
                timestamp=end_ns,
            )
        span.end(end_time=end_ns)
        labels = {"decision": decision, "judge": result.judge}
        self.checks.add(1, labels)
        self.unsupported.add(result.n_unsupported, labels)
        self.duration.record((end_ns - start_ns) / 1e6, labels)
