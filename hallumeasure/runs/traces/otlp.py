"""OTLP JSON traces (what the OpenTelemetry collector's file exporter writes), read with the GenAI semantic
conventions, current and older, or with OpenInference attributes.

The file is JSON Lines of ``ExportTraceServiceRequest`` objects (``{"resourceSpans": [...]}``), or one such
object. Span attributes are OTLP ``AnyValue``s (``stringValue``, ``intValue``, ``arrayValue``,
``kvlistValue`` ...). What is read of a span:

- current conventions: ``gen_ai.operation.name`` (``chat``, ``text_completion``, ``generate_content``,
  ``execute_tool``, ``retrieval``), ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
  ``gen_ai.output.messages`` with ``text``, ``tool_call`` and ``tool_call_response`` parts (JSON text or
  structured), ``gen_ai.retrieval.documents``; ``execute_tool`` spans' ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id`` and ``gen_ai.tool.call.result``, failed when the status is an error or
  ``error.type`` is set;
- older conventions: ``gen_ai.prompt.N.{role,content,tool_call_id}`` and ``gen_ai.completion.N.content``
  attributes, and the per-message span events (``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``; ``gen_ai.content.prompt`` /
  ``gen_ai.content.completion``);
- OpenInference attributes sent over OTLP (``openinference.span.kind``): as the OpenInference reader reads them.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any

from hallumeasure.runs.inputs import OnHeader
from hallumeasure.runs.messages import content_text
from hallumeasure.runs.traces.openinference import KIND, span_from_attributes
from hallumeasure.runs.traces.spans import (
    TraceSource,
    TraceSpan,
    flatten,
    head_objects,
    hex_id,
    indexed,
    loads_maybe,
    text_of,
    trace_rows,
)

LLM_OPERATIONS = ("chat", "text_completion", "generate_content", "completion")
RETRIEVAL_OPERATIONS = ("retrieval", "retrieve", "search")


def otlp_rows(
    path: TraceSource, *, delimiter: str | None = None, on_header: OnHeader | None = None, outputs: str = "final"
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Samples of the GenAI (or OpenInference) spans of an OTLP JSON file."""
    return trace_rows(path, _spans, outputs=outputs, source_format="otlp")


def _spans(obj: Any) -> list[TraceSpan] | str:
    if not isinstance(obj, Mapping) or "resourceSpans" not in obj:
        return "an OTLP JSON object with resourceSpans was expected"
    spans: list[TraceSpan] = []
    for resource in obj.get("resourceSpans") or ():
        for scope in resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or ():
            spans += [span_of(s) for s in scope.get("spans") or ()]
    return spans


def sniff_otlp(path: TraceSource) -> bool:
    """Whether ``path`` holds OTLP JSON traces."""
    head = head_objects(path)
    return bool(head) and isinstance(head[0], Mapping) and "resourceSpans" in head[0]


def any_value(value: Any) -> Any:
    """The Python value of an OTLP ``AnyValue``."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values") or ()]
    if "kvlistValue" in value:
        return attributes_of((value["kvlistValue"] or {}).get("values") or ())
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"]).decode("utf-8", errors="replace")
    return None


def attributes_of(items: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` list to a dict."""
    return {str(kv.get("key")): any_value(kv.get("value")) for kv in items or () if isinstance(kv, Mapping)}


def span_of(raw: Mapping[str, Any]) -> TraceSpan:
    attributes = attributes_of(raw.get("attributes"))
    status = raw.get("status") or {}
    code = status.get("code")
    failed = code in (2, "2", "STATUS_CODE_ERROR", "ERROR") or bool(attributes.get("error.type"))
    identity: dict[str, Any] = {
        "trace_id": hex_id(raw.get("traceId")),
        "span_id": hex_id(raw.get("spanId")),
        "parent_id": hex_id(raw.get("parentSpanId")) or None,
        "name": str(raw.get("name") or ""),
        "start": int(raw.get("startTimeUnixNano") or 0),
        "end": int(raw.get("endTimeUnixNano") or 0),
        "failed": failed,
    }
    if KIND in attributes:
        flat: dict[str, Any] = {}
        for key, value in attributes.items():
            flat[key] = value
            parsed = loads_maybe(value)
            if isinstance(parsed, (list, dict)):
                flat.update(flatten(parsed, f"{key}."))
        return span_from_attributes(flat, kind=str(attributes[KIND]), **identity)
    span = TraceSpan(**identity)
    operation = str(attributes.get("gen_ai.operation.name") or "")
    events = [(str(e.get("name") or ""), attributes_of(e.get("attributes"))) for e in raw.get("events") or ()]
    span.model = text_or_none(attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model"))
    if operation == "execute_tool":
        span.role = "tool"
        span.tool_name = text_or_none(attributes.get("gen_ai.tool.name")) or span.name
        span.call_id = text_or_none(attributes.get("gen_ai.tool.call.id"))
        span.result = text_of(attributes.get("gen_ai.tool.call.result"))
        if span.result is None and span.failed:
            span.result = text_or_none(status.get("message")) or text_or_none(attributes.get("error.type"))
    elif operation in RETRIEVAL_OPERATIONS or "gen_ai.retrieval.documents" in attributes:
        span.role = "retriever"
        docs = loads_maybe(attributes.get("gen_ai.retrieval.documents")) or []
        span.documents = [
            {"id": text_or_none(d.get("id")), "text": text_of(d.get("content", d.get("text")))}
            for d in docs
            if isinstance(d, Mapping)
        ]
    elif operation in LLM_OPERATIONS or _has_llm_content(attributes, events):
        span.role = "llm"
        span.messages, span.output = _conversation(attributes, events)
    return span


def _has_llm_content(attributes: Mapping[str, Any], events: list[tuple[str, dict[str, Any]]]) -> bool:
    return (
        "gen_ai.input.messages" in attributes
        or "gen_ai.output.messages" in attributes
        or any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in attributes)
        or any(name.startswith("gen_ai.") for name, _ in events)
    )


def _conversation(
    attributes: Mapping[str, Any], events: list[tuple[str, dict[str, Any]]]
) -> tuple[list[dict[str, Any]], str | None]:
    """Input messages (OpenAI-style) and the answer, from whichever conventions the span follows."""
    messages: list[dict[str, Any]] = []
    instructions = loads_maybe(attributes.get("gen_ai.system_instructions"))
    if instructions:
        messages.append({"role": "system", "content": _parts_text(instructions)})
    current = loads_maybe(attributes.get("gen_ai.input.messages"))
    if isinstance(current, list):
        for message in current:
            if isinstance(message, Mapping):
                messages += _from_parts(message)
    answer = None
    output = loads_maybe(attributes.get("gen_ai.output.messages"))
    if isinstance(output, list) and output:
        texts = [_parts_text(m.get("parts")) for m in output if isinstance(m, Mapping)]
        answer = next((t for t in reversed(texts) if t.strip()), None)
    if not current:
        messages += _older_attributes(attributes)
    if answer is None:
        completions = indexed(attributes, "gen_ai.completion")
        answer = next((str(c["content"]) for c in reversed(completions) if c.get("content")), None)
    event_messages, event_answer = _from_events(events)
    if not current and not indexed(attributes, "gen_ai.prompt"):
        messages += event_messages
    return messages, answer if answer is not None else event_answer


def _parts_text(parts: Any) -> str:
    parts = loads_maybe(parts)
    if isinstance(parts, str):
        return parts
    texts = []
    for part in parts or ():
        if isinstance(part, Mapping) and part.get("type", "text") == "text":
            content = part.get("content", part.get("text"))
            if isinstance(content, str):
                texts.append(content)
    return "\n".join(texts)


def _from_parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """OpenAI-style messages of one current-conventions message (its tool responses become tool messages)."""
    role = str(message.get("role") or "user")
    parts = message.get("parts")
    if parts is None:
        return [{"role": role, "content": content_text(message.get("content"))}]
    out: list[dict[str, Any]] = []
    calls = []
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "tool_call":
            calls.append(
                {
                    "id": str(part.get("id") or ""),
                    "type": "function",
                    "function": {"name": part.get("name"), "arguments": part.get("arguments")},
                }
            )
        elif kind == "tool_call_response":
            result = part.get("response", part.get("result"))
            out.append({"role": "tool", "tool_call_id": str(part.get("id") or ""), "content": text_of(result)})
    text = _parts_text(parts)
    if text or calls or role != "tool":
        main: dict[str, Any] = {"role": role, "content": text}
        if calls:
            main["tool_calls"] = calls
        if role != "tool" or not out:
            out.insert(0, main)
    return out


def _older_attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for item in indexed(attributes, "gen_ai.prompt"):
        message: dict[str, Any] = {"role": str(item.get("role") or "user"), "content": item.get("content")}
        if item.get("tool_call_id"):
            message["tool_call_id"] = str(item["tool_call_id"])
        calls = indexed(item, "tool_calls")
        if calls:
            message["tool_calls"] = [
                {"id": str(c.get("id") or ""), "type": "function", "function": {"name": c.get("name")}} for c in calls
            ]
        out.append(message)
    return out


_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _from_events(events: list[tuple[str, dict[str, Any]]]) -> tuple[list[dict[str, Any]], str | None]:
    messages: list[dict[str, Any]] = []
    answer = None
    for name, attributes in events:
        body = loads_maybe(attributes.get("gen_ai.event.content") or attributes.get("body"))
        body = body if isinstance(body, Mapping) else attributes
        if name in _EVENT_ROLES:
            message: dict[str, Any] = {"role": _EVENT_ROLES[name], "content": content_text(body.get("content"))}
            if body.get("id") and name == "gen_ai.tool.message":
                message["tool_call_id"] = str(body["id"])
            messages.append(message)
        elif name == "gen_ai.choice":
            choice = loads_maybe(body.get("message")) or body
            if isinstance(choice, Mapping) and choice.get("content"):
                answer = content_text(choice.get("content"))
        elif name == "gen_ai.content.prompt":
            prompt = loads_maybe(attributes.get("gen_ai.prompt"))
            if isinstance(prompt, list):
                messages += [dict(m) for m in prompt if isinstance(m, Mapping)]
        elif name == "gen_ai.content.completion":
            completion = loads_maybe(attributes.get("gen_ai.completion"))
            if isinstance(completion, list) and completion and isinstance(completion[-1], Mapping):
                answer = content_text(completion[-1].get("content"))
            elif isinstance(completion, str):
                answer = completion
    return messages, answer


def text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None
