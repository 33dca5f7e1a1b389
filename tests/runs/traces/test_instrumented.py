"""Traces made by real instrumentation (the OpenTelemetry SDK and openinference-instrumentation-openai around
the openai client and the local OpenAI simulator), written as the collector writes them, then measured."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra (opentelemetry-sdk)")
pytest.importorskip("openinference.instrumentation.openai", reason="needs openinference-instrumentation-openai")

from runs.traces.support_app import otlp_json_lines, run_agent, traced

import hallumeasure
from hallumeasure.core.labels import Label
from hallumeasure.core.types import SourceKind


def _record(tmp_path: Path) -> Path:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    with traced(exporter) as provider:
        run_agent(provider, "ok")
        run_agent(provider, "failed")
    path = tmp_path / "traces.json"
    path.write_text(otlp_json_lines(exporter.get_finished_spans()), encoding="utf-8")
    return path


def test_an_instrumented_agent_measures_from_its_otlp_export(tmp_path: Path) -> None:
    path = _record(tmp_path)
    run = hallumeasure.measure(path, out=tmp_path / "run")
    assert len(run.results) == 2  # the final answer of each trace
    samples = {s.id: s for s in run.samples}
    by_tool = {}
    for result in run.results:
        sample = samples[result.sample_id]
        assert sample.metadata["source_format"] == "otlp" and len(sample.metadata["trace_id"]) == 32
        tool = next(p for p in sample.passages if p.kind is SourceKind.TOOL_RESULT)
        assert tool.tool_name == "lookup_order" and tool.call_id
        by_tool[tool.failed] = (sample, result)
    ok_sample, ok = by_tool[False]
    failed = by_tool[True][1]
    kinds = {p.kind for p in ok_sample.passages}
    # the user's question is no source (it never supports its answer)
    assert kinds == {SourceKind.PASSAGE, SourceKind.SYSTEM_PROMPT, SourceKind.TOOL_RESULT}
    # "Order 4417 shipped on Monday." rests on the tool's result: supported when the call worked ...
    shipped_ok = ok.verdicts[0]
    assert shipped_ok.label is Label.SUPPORTED
    assert shipped_ok.evidence[0].source_kind is SourceKind.TOOL_RESULT
    # ... and unsupported, saying why, when the call failed
    shipped_failed = failed.verdicts[0]
    assert shipped_failed.label is Label.ABSENT
    assert "failed tool call (lookup_order" in (shipped_failed.label_reason or "")
    # the delivery time is in the retrieved document either way
    for delivery in (ok.verdicts[1], failed.verdicts[1]):
        assert delivery.label is Label.SUPPORTED
        assert delivery.evidence[0].source_kind in (SourceKind.PASSAGE, SourceKind.SYSTEM_PROMPT)


def test_every_llm_span_when_asked(tmp_path: Path) -> None:
    path = _record(tmp_path)
    loaded = hallumeasure.measure(path, out=tmp_path / "all", input_format="otlp?outputs=all")
    # the first LLM call of each trace answered with a tool call only: no text to measure
    assert len(loaded.results) == 2
