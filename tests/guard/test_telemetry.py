"""The guard's checks as OpenTelemetry spans and metrics (the otel extra), read back from the SDK in memory."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hallumeasure.guard import Guard
from hallumeasure.guard.telemetry import GuardTelemetry

CONTEXT = "The Storebaelt bridge is 6.8 km long. It opened to traffic in 1998."


def test_each_check_is_a_span_in_the_callers_trace_with_metrics() -> None:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    guard = Guard(telemetry=GuardTelemetry(tracer_provider=tracer_provider, meter_provider=MeterProvider([reader])))
    with tracer_provider.get_tracer("app").start_as_current_span("answer") as app_span:
        result = guard.check("The Storebaelt bridge is 42 km long.", context=CONTEXT)
    assert result.decision.value != "pass"
    check = next(s for s in spans.get_finished_spans() if s.name == "hallumeasure.guard.check")
    assert check.parent is not None and check.parent.span_id == app_span.get_span_context().span_id
    assert check.attributes["hallumeasure.guard.decision"] == result.decision.value
    assert check.attributes["hallumeasure.claims.unsupported"] == 1
    (event,) = check.events
    assert event.attributes["hallumeasure.claim.label"] == "contradicted"
    assert event.attributes["hallumeasure.evidence.source_kind"] == "passage"
    metrics = {
        m.name: m for rm in reader.get_metrics_data().resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    (point,) = metrics["hallumeasure.guard.checks"].data.data_points
    assert point.value == 1 and point.attributes["decision"] == result.decision.value
    assert metrics["hallumeasure.guard.duration"].data.data_points[0].count == 1
