"""Verdicts back where traces live: gen_ai.evaluation.result events on the judged spans, as an OTLP JSON file,
through the OpenTelemetry SDK (in memory) and over OTLP/HTTP to a collector started here."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

import hallumeasure
from hallumeasure.export.evaluations import CLAIM_EVALUATION, RESPONSE_EVALUATION, evaluation_results
from hallumeasure.export.otlp_json import EVENT_NAME, write_otlp_json

TRACE, SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
MESSAGES = [
    {"role": "user", "content": "When does flight BA117 leave?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "flight_status"}}],
    },
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "is_error": True,
        "content": "Error: timeout. Cached: flight BA117 departs at 9:40.",
    },
    {"role": "assistant", "content": "Flight BA117 departs at 9:40."},
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> hallumeasure.Run:
    folder = tmp_path_factory.mktemp("evaluations")
    rows = [{"id": "r1", "messages": MESSAGES, "metadata": {"trace_id": TRACE, "span_id": SPAN}}]
    return hallumeasure.measure(rows, out=folder / "run")


def test_each_response_and_claim_is_a_result_on_its_span(run: hallumeasure.Run) -> None:
    response, claim = evaluation_results(run)
    assert (response.name, response.label, response.score) == (RESPONSE_EVALUATION, "hallucinated", 1.0)
    assert "evidence from tool result call_1" in response.explanation
    assert (claim.name, claim.label, claim.source_kind, claim.source_id) == (
        CLAIM_EVALUATION,
        "absent",
        "tool_result",
        "call_1",
    )
    assert (claim.trace_id, claim.span_id) == (TRACE, SPAN)


def test_the_otlp_json_file_holds_evaluation_events_on_the_span(run: hallumeasure.Run, tmp_path: Path) -> None:
    path = write_otlp_json(run, tmp_path / "evaluations.json")
    request = json.loads(path.read_text(encoding="utf-8"))
    records = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert [r["eventName"] for r in records] == [EVENT_NAME, EVENT_NAME]
    assert {(r["traceId"], r["spanId"]) for r in records} == {(TRACE, SPAN)}
    attributes = {a["key"]: a["value"] for a in records[1]["attributes"]}
    assert attributes["gen_ai.evaluation.name"] == {"stringValue": CLAIM_EVALUATION}
    assert attributes["gen_ai.evaluation.score.label"] == {"stringValue": "absent"}
    assert attributes["hallumeasure.evidence.source_kind"] == {"stringValue": "tool_result"}


def test_the_sdk_emits_the_events_in_the_span_context(run: hallumeasure.Run) -> None:
    pytest.importorskip("opentelemetry.sdk._logs", reason="needs the otel extra")
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter

    from hallumeasure.export.otlp_http import emit_events

    exporter = InMemoryLogRecordExporter()
    emit_events(evaluation_results(run), exporter=exporter)
    records = [item.log_record for item in exporter.get_finished_logs()]
    assert [r.event_name for r in records] == [EVENT_NAME, EVENT_NAME]
    assert {(format(r.trace_id, "032x"), format(r.span_id, "016x")) for r in records} == {(TRACE, SPAN)}
    assert records[1].attributes["gen_ai.evaluation.score.label"] == "absent"


def test_the_sdk_exports_in_batches(run: hallumeasure.Run) -> None:
    pytest.importorskip("opentelemetry.sdk._logs", reason="needs the otel extra")
    from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

    from hallumeasure.export.otlp_http import emit_events

    class Calls(LogRecordExporter):
        def __init__(self) -> None:
            self.batches: list[int] = []

        def export(self, batch):  # type: ignore[no-untyped-def]
            self.batches.append(len(batch))
            return LogRecordExportResult.SUCCESS

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return True

    results = evaluation_results(run) * 5
    calls = Calls()
    emit_events(results, exporter=calls, batch=4)
    assert calls.batches == [4, 4, 2]


class _Collector(BaseHTTPRequestHandler):
    """A tiny OTLP/HTTP receiver: keeps the body of every POST to /v1/logs."""

    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/logs":
            type(self).bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_events_reach_a_collector_over_otlp_http(run: hallumeasure.Run) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs the otel extra")
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    from hallumeasure.export.otlp_http import send_otlp

    _Collector.bodies.clear()
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        sent = send_otlp(run, f"http://127.0.0.1:{server.server_port}/v1/logs")
    finally:
        server.shutdown()
    assert sent == 2 and len(_Collector.bodies) == 1  # one request for the batch, not one per event
    request = ExportLogsServiceRequest()
    request.ParseFromString(b"".join(_Collector.bodies))
    records = [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    assert [r.event_name for r in records] == [EVENT_NAME, EVENT_NAME]
    assert {(r.trace_id.hex(), r.span_id.hex()) for r in records} == {(TRACE, SPAN)}
    labels = [
        next(a.value.string_value for a in r.attributes if a.key == "gen_ai.evaluation.score.label") for r in records
    ]
    assert labels == ["hallucinated", "absent"]
