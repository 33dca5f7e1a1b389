"""The ``otlp-json`` target: ``gen_ai.evaluation.result`` events as one line of OTLP JSON logs, the OpenTelemetry
collector's file format, each event on the trace and span it judges. No dependency."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from hallumeasure.export.evaluations import EvaluationOptions, EvaluationResult, evaluation_results
from hallumeasure.export.exporter import ExportOutcome, FileOptions, refuse_existing
from hallumeasure.runs.run import Run

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE = "hallumeasure"
_HEX = re.compile(r"^[0-9a-f]+$")


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def otel_id(value: str | None, length: int) -> str | None:
    """``value`` as an OTLP id (``length`` lowercase hex digits), or None when it is not one."""
    if value is None:
        return None
    text = value.lower().removeprefix("0x")
    return text if len(text) == length and _HEX.match(text) else None


def otlp_json(results: Sequence[EvaluationResult], *, time_unix_nano: int = 0) -> dict[str, Any]:
    """``gen_ai.evaluation.result`` events as one OTLP JSON logs request, each on its span."""
    records = []
    for r in results:
        record: dict[str, Any] = {
            "timeUnixNano": str(time_unix_nano),
            "observedTimeUnixNano": str(time_unix_nano),
            "eventName": EVENT_NAME,
            "severityNumber": 9,
            "severityText": "INFO",
            "body": {"stringValue": r.explanation},
            "attributes": [
                {"key": "event.name", "value": {"stringValue": EVENT_NAME}},
                *({"key": k, "value": _any_value(v)} for k, v in r.attributes().items()),
            ],
        }
        trace_id, span_id = otel_id(r.trace_id, 32), otel_id(r.span_id, 16)
        if trace_id and span_id:
            record["traceId"], record["spanId"] = trace_id, span_id
        records.append(record)
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": SCOPE}}]},
                "scopeLogs": [{"scope": {"name": SCOPE}, "logRecords": records}],
            }
        ]
    }


def write_otlp_json(run: Run, path: str | Path, *, claims: bool = True) -> Path:
    """Write ``run``'s evaluation results to ``path`` as one line of OTLP JSON logs (the collector's file format)."""
    path = Path(path)
    request = otlp_json(evaluation_results(run, claims=claims), time_unix_nano=time.time_ns())
    path.write_text(json.dumps(request, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


class OtlpJsonOptions(EvaluationOptions, FileOptions):
    out: Path = Field(description="the file to write")


class OtlpJsonExporter:
    """OpenTelemetry ``gen_ai.evaluation.result`` events written to a file as OTLP JSON logs."""

    name = "otlp-json"
    options = OtlpJsonOptions

    def export(self, run: Run, options: OtlpJsonOptions) -> ExportOutcome:
        """Write the events to ``options.out`` (an existing file only with ``overwrite``)."""
        refuse_existing([options.out], options)
        return ExportOutcome(self.name, files=(write_otlp_json(run, options.out, claims=options.claims),))
