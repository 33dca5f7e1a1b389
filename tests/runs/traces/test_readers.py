"""Each trace format read into samples: sources with kinds and ids, trace and span ids kept, outputs chosen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hallumeasure.core.errors import InputError
from hallumeasure.core.types import SourceKind
from hallumeasure.runs.inputs import format_of, load_samples

TRACE = "5b8efff798038103d269b633813fc60c"


def _kv(key: str, value: object) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def _otlp_span(span_id: str, name: str, start: int, end: int, attrs: dict, *, error: bool = False, events=()) -> dict:
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [_kv(k, v) for k, v in attrs.items()],
        "events": list(events),
        "status": {"code": 2, "message": "timeout"} if error else {},
    }


def _otlp_file(tmp_path: Path, spans: list[dict]) -> Path:
    path = tmp_path / "traces.json"
    request = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
    path.write_text(json.dumps(request) + "\n", encoding="utf-8")
    return path


def test_otlp_current_conventions_give_every_source_its_kind(tmp_path: Path) -> None:
    spans = [
        _otlp_span(
            "a1",
            "retrieval docs",
            1,
            2,
            {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.documents": [{"id": "doc-7", "content": "The museum opens at 10 am."}],
            },
        ),
        _otlp_span(
            "a2",
            "execute_tool weather",
            3,
            4,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "weather",
                "gen_ai.tool.call.id": "call_9",
                "error.type": "TimeoutError",
            },
            error=True,
        ),
        _otlp_span(
            "a3",
            "chat gpt-4o",
            5,
            6,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.system_instructions": [{"type": "text", "content": "You are the museum's guide."}],
                "gen_ai.input.messages": [
                    {"role": "user", "parts": [{"type": "text", "content": "When does it open?"}]},
                    {
                        "role": "assistant",
                        "parts": [{"type": "tool_call", "id": "call_9", "name": "weather", "arguments": {}}],
                    },
                    {
                        "role": "tool",
                        "parts": [{"type": "tool_call_response", "id": "call_9", "response": "error: timeout"}],
                    },
                ],
                "gen_ai.output.messages": [
                    {"role": "assistant", "parts": [{"type": "text", "content": "It opens at 10 am."}]}
                ],
            },
        ),
    ]
    path = _otlp_file(tmp_path, spans)
    assert format_of(path) == "otlp"
    (sample,) = load_samples(path).samples
    assert sample.response == "It opens at 10 am."
    assert sample.question == "When does it open?"
    assert sample.model == "gpt-4o"
    assert sample.metadata["trace_id"] == TRACE and sample.metadata["span_id"] == "a3"
    kinds = {p.id: (p.kind, p.failed, p.tool_name) for p in sample.passages}
    assert kinds == {
        "doc-7": (SourceKind.PASSAGE, False, None),
        "system": (SourceKind.SYSTEM_PROMPT, False, None),
        "call_9": (SourceKind.TOOL_RESULT, True, "weather"),
    }  # the question ("When does it open?") is no source


def test_otlp_older_conventions_attributes_and_events(tmp_path: Path) -> None:
    attrs = {
        "gen_ai.system": "openai",
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": "Shop hours: 9 to 5.",
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": "Hours?",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "We open at 9.",
    }
    events = [
        {"name": "gen_ai.system.message", "attributes": [_kv("content", "Museum: closed Mondays.")]},
        {"name": "gen_ai.user.message", "attributes": [_kv("content", "Open Monday?")]},
        {"name": "gen_ai.choice", "attributes": [_kv("message", {"content": "No, it is closed on Mondays."})]},
    ]
    path = _otlp_file(
        tmp_path,
        [_otlp_span("b1", "chat", 1, 2, attrs), _otlp_span("b2", "chat", 3, 4, {"gen_ai.system": "x"}, events=events)],
    )
    rows = load_samples(path, fmt="otlp?outputs=all").samples
    assert [s.response for s in rows] == ["We open at 9.", "No, it is closed on Mondays."]
    assert rows[0].passages[0].text == "Shop hours: 9 to 5."
    assert rows[1].passages[0].kind is SourceKind.SYSTEM_PROMPT
    # by default only the final answer of the trace
    assert [s.response for s in load_samples(path).samples] == ["No, it is closed on Mondays."]


def test_an_unknown_reader_option_is_refused(tmp_path: Path) -> None:
    path = _otlp_file(tmp_path, [])
    with pytest.raises(InputError, match="outputs must be one of"):
        load_samples(path, fmt="otlp?outputs=some")
    with pytest.raises(InputError, match="unknown option answers; valid options: outputs"):
        load_samples(path, fmt="otlp?answers=all")


def _phoenix_span(span_id: str, kind: str, start: str, attributes: dict, status: str = "OK") -> dict:
    return {
        "name": kind.lower(),
        "context": {"trace_id": "t1", "span_id": span_id},
        "parent_id": None,
        "span_kind": kind,
        "start_time": start,
        "end_time": start,
        "status_code": status,
        "attributes": {"openinference": {"span": {"kind": kind}}, **attributes},
    }


def test_openinference_jsonl_as_phoenix_exports_it(tmp_path: Path) -> None:
    spans = [
        _phoenix_span(
            "s1",
            "RETRIEVER",
            "2025-01-01T00:00:01",
            {"retrieval": {"documents": [{"document": {"id": "kb-3", "content": "Refunds take 5 days."}}]}},
        ),
        _phoenix_span(
            "s2",
            "LLM",
            "2025-01-01T00:00:02",
            {
                "llm": {
                    "model_name": "gpt-4o-mini",
                    "input_messages": [
                        {"message": {"role": "system", "content": "Answer from the documents."}},
                        {"message": {"role": "user", "content": "How long do refunds take?"}},
                    ],
                    "output_messages": [{"message": {"role": "assistant", "content": "Refunds take 5 days."}}],
                }
            },
        ),
    ]
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in spans) + "\n", encoding="utf-8")
    assert format_of(path) == "openinference"
    (sample,) = load_samples(path).samples
    assert sample.response == "Refunds take 5 days."
    assert [(p.id, p.kind) for p in sample.passages] == [
        ("kb-3", SourceKind.PASSAGE),
        ("system", SourceKind.SYSTEM_PROMPT),
    ]
    assert sample.metadata["span_id"] == "s2"


def test_openinference_context_pasted_into_the_user_message_is_a_source(tmp_path: Path) -> None:
    question = "Context: The Zephyr bridge is 2.4 km long.\n\nQuestion: How long is the Zephyr bridge?"
    span = _phoenix_span(
        "s1",
        "LLM",
        "2025-01-01T00:00:01",
        {
            "llm": {
                "input_messages": [
                    {"message": {"role": "system", "content": "Answer from the context only."}},
                    {"message": {"role": "user", "content": question}},
                ],
                "output_messages": [{"message": {"role": "assistant", "content": "The Zephyr bridge is 2.4 km long."}}],
            }
        },
    )
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(span) + "\n", encoding="utf-8")
    (sample,) = load_samples(path).samples
    assert [(p.id, p.kind, p.text) for p in sample.passages] == [
        ("system", SourceKind.SYSTEM_PROMPT, "Answer from the context only."),
        ("user-context-1", SourceKind.USER_CONTEXT, "The Zephyr bridge is 2.4 km long."),
    ]
    assert sample.question == "How long is the Zephyr bridge?"


def test_openinference_span_dataframe_records(tmp_path: Path) -> None:
    # The columns of Phoenix's get_spans_dataframe(), as DataFrame.to_json writes its records.
    record = {
        "name": "ChatCompletion",
        "span_kind": "LLM",
        "parent_id": None,
        "start_time": "2025-01-01T00:00:02.000Z",
        "end_time": "2025-01-01T00:00:03.000Z",
        "status_code": "OK",
        "context.span_id": "f1",
        "context.trace_id": "t9",
        "attributes.openinference.span.kind": "LLM",
        "attributes.llm.input_messages": [
            {"message.role": "system", "message.content": "Parcels ship on Tuesdays."},
            {"message.role": "user", "message.content": "When?"},
        ],
        "attributes.llm.output_messages": [{"message.role": "assistant", "message.content": "On Tuesdays."}],
    }
    path = tmp_path / "frame.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    (sample,) = load_samples(path).samples
    assert sample.response == "On Tuesdays."
    assert sample.passages[0].text == "Parcels ship on Tuesdays."


def test_langfuse_trace_export(tmp_path: Path) -> None:
    trace = {
        "id": "lf-trace",
        "observations": [
            {
                "id": "o1",
                "traceId": "lf-trace",
                "type": "RETRIEVER",
                "name": "kb",
                "startTime": "2025-01-01T00:00:01Z",
                "endTime": "2025-01-01T00:00:01Z",
                "output": [{"id": "faq-2", "content": "Support is open 24/7."}],
            },
            {
                "id": "o2",
                "traceId": "lf-trace",
                "type": "TOOL",
                "name": "ticket_lookup",
                "level": "ERROR",
                "startTime": "2025-01-01T00:00:02Z",
                "endTime": "2025-01-01T00:00:02Z",
                "output": "ticket 55 is resolved",
                "metadata": {"tool_call_id": "tc-1"},
            },
            {
                "id": "o3",
                "traceId": "lf-trace",
                "type": "GENERATION",
                "name": "answer",
                "model": "claude",
                "startTime": "2025-01-01T00:00:03Z",
                "endTime": "2025-01-01T00:00:04Z",
                "input": [{"role": "user", "content": "Is support open now?"}],
                "output": {"role": "assistant", "content": "Yes, support is open 24/7."},
            },
        ],
    }
    path = tmp_path / "langfuse.json"
    path.write_text(json.dumps([trace]), encoding="utf-8")
    assert format_of(path) == "langfuse"
    (sample,) = load_samples(path).samples
    assert sample.metadata["trace_id"] == "lf-trace"
    tool = next(p for p in sample.passages if p.kind is SourceKind.TOOL_RESULT)
    assert (tool.id, tool.tool_name, tool.failed) == ("tc-1", "ticket_lookup", True)
    assert any(p.id == "faq-2" for p in sample.passages)


def test_mlflow_traces_as_json(tmp_path: Path) -> None:
    def attrs(kind: str, inputs: object, outputs: object) -> dict:
        return {
            "mlflow.spanType": json.dumps(kind),
            "mlflow.spanInputs": json.dumps(inputs),
            "mlflow.spanOutputs": json.dumps(outputs),
        }

    trace = {
        "info": {"trace_id": "tr-1"},
        "data": {
            "spans": [
                {
                    "span_id": "m1",
                    "trace_id": "x",
                    "name": "retrieve",
                    "start_time_unix_nano": 1,
                    "end_time_unix_nano": 2,
                    "status": {"code": "STATUS_CODE_OK"},
                    "attributes": attrs(
                        "RETRIEVER", {"q": "x"}, [{"page_content": "Ski passes cost 50 euros.", "id": "p-1"}]
                    ),
                },
                {
                    "span_id": "m2",
                    "trace_id": "x",
                    "name": "chat",
                    "start_time_unix_nano": 3,
                    "end_time_unix_nano": 4,
                    "status": {"code": "STATUS_CODE_OK"},
                    "attributes": attrs(
                        "CHAT_MODEL",
                        {"messages": [{"role": "user", "content": "Price?"}], "model": "gpt-4o"},
                        {"choices": [{"message": {"role": "assistant", "content": "A pass costs 50 euros."}}]},
                    ),
                },
            ]
        },
    }
    path = tmp_path / "mlflow.jsonl"
    path.write_text(json.dumps(trace) + "\n", encoding="utf-8")
    assert format_of(path) == "mlflow"
    (sample,) = load_samples(path).samples
    assert sample.response == "A pass costs 50 euros."
    assert sample.metadata["trace_id"] == "tr-1" and sample.metadata["span_id"] == "m2"
    assert sample.passages[0].id == "p-1"


def test_plain_samples_are_still_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"context": "a b c", "response": "a"}) + "\n", encoding="utf-8")
    assert format_of(path) == "jsonl"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("otlp.json", "otlp"),
        ("phoenix_spans.jsonl", "openinference"),
        ("langfuse.json", "langfuse"),
        ("mlflow_traces.jsonl", "mlflow"),
    ],
)
def test_each_example_export_measures_and_names_its_sources(name: str, fmt: str, tmp_path: Path) -> None:
    """examples/traces/: the OTLP and Phoenix files were written by the instrumented agent of support_app.py,
    the MLflow one by MLflow's autologging (tests/report/test_mlflow_round_trip.py), the Langfuse one by hand."""
    import hallumeasure
    from hallumeasure.core.labels import Label

    path = Path(__file__).resolve().parents[3] / "examples" / "traces" / name
    assert format_of(path) == fmt
    run = hallumeasure.measure(path, out=tmp_path / "run")
    samples = {s.id: s for s in run.samples}
    seen = set()
    for result in run.results:
        tool = next(p for p in samples[result.sample_id].passages if p.kind is SourceKind.TOOL_RESULT)
        first = result.verdicts[0]
        assert first.label is (Label.ABSENT if tool.failed else Label.SUPPORTED)
        assert first.evidence[0].source_kind is SourceKind.TOOL_RESULT
        assert first.evidence[0].passage_id == tool.id
        seen.add(tool.failed)
    assert seen == {True, False}
