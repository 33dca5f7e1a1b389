"""The ``otlp-http`` target: evaluation results sent through the OpenTelemetry SDK (the ``otel`` extra) as
``gen_ai.evaluation.result`` events, each emitted in the context of the span it judges, to an OTLP/HTTP
collector or any log exporter: in batches (``BATCH`` events a request), not one request per event."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.export.evaluations import EvaluationOptions, EvaluationResult, evaluation_results
from hallumeasure.export.exporter import ExportOutcome
from hallumeasure.export.otlp_json import EVENT_NAME, SCOPE, otel_id
from hallumeasure.runs.run import Run

#: Events per export request: the SDK's default batch size.
BATCH = 512

if TYPE_CHECKING:
    from opentelemetry.sdk._logs.export import LogRecordExporter


def emit_events(
    results: Sequence[EvaluationResult],
    *,
    endpoint: str | None = None,
    headers: dict[str, str] | None = None,
    exporter: LogRecordExporter | None = None,
    batch: int = BATCH,
) -> None:
    """Emit one ``gen_ai.evaluation.result`` event per result and flush them in batches of ``batch`` (one
    export call, so one HTTP request, per batch): to ``exporter`` when given (an in-memory one in tests),
    else over OTLP/HTTP to ``endpoint`` (``http://127.0.0.1:4318/v1/logs``)."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
    except ImportError as exc:
        raise ConfigError(f"sending to OpenTelemetry needs its SDK: pip install 'hallumeasure[otel]' ({exc})") from None
    if exporter is None:
        if endpoint is None:
            raise ConfigError("give the collector's OTLP/HTTP logs endpoint (http://host:4318/v1/logs)")
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        exporter = OTLPLogExporter(endpoint=endpoint, headers=headers)
    provider = LoggerProvider(resource=Resource.create({"service.name": SCOPE}))
    # The queue holds every event, so none is dropped before the flush; the timer never fires first.
    processor = BatchLogRecordProcessor(
        exporter,
        schedule_delay_millis=3_600_000,
        max_export_batch_size=batch,
        max_queue_size=max(len(results), batch),
    )
    provider.add_log_record_processor(processor)
    logger = provider.get_logger(SCOPE)
    now = time.time_ns()
    try:
        for result in results:
            trace_id, span_id = otel_id(result.trace_id, 32), otel_id(result.span_id, 16)
            context = None
            if trace_id and span_id:
                span = trace.NonRecordingSpan(
                    trace.SpanContext(
                        trace_id=int(trace_id, 16),
                        span_id=int(span_id, 16),
                        is_remote=True,
                        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
                    )
                )
                context = trace.set_span_in_context(span)
            logger.emit(
                timestamp=now,
                observed_timestamp=now,
                context=context,
                body=result.explanation,
                attributes=result.attributes(),
                event_name=EVENT_NAME,
            )
    finally:
        provider.force_flush()
        provider.shutdown()


def send_otlp(run: Run, endpoint: str, *, claims: bool = True, headers: dict[str, str] | None = None) -> int:
    """Send ``run``'s evaluation results to an OTLP/HTTP collector (``http://host:4318/v1/logs``); returns how
    many events were sent."""
    results = evaluation_results(run, claims=claims)
    emit_events(results, endpoint=endpoint, headers=headers)
    return len(results)


class OtlpHttpOptions(EvaluationOptions):
    out: str = Field(description="the collector's OTLP/HTTP logs endpoint (http://host:4318/v1/logs)")


class OtlpHttpExporter:
    """OpenTelemetry ``gen_ai.evaluation.result`` events sent to a collector over OTLP/HTTP (extra ``otel``)."""

    name = "otlp-http"
    options = OtlpHttpOptions

    def export(self, run: Run, options: OtlpHttpOptions) -> ExportOutcome:
        """Send the events to the endpoint ``options.out``."""
        sent = send_otlp(run, options.out, claims=options.claims)
        return ExportOutcome(self.name, delivered=sent, unit="events", verb="sent", destination=options.out)
