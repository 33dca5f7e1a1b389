"""OpenInference spans, as Arize Phoenix exports them: JSON Lines of spans, or its span DataFrame.

A span is read from its ``context.trace_id`` / ``context.span_id``, ``parent_id``, ``span_kind`` (or the
``openinference.span.kind`` attribute), its start and end, ``status_code`` and its attributes, nested
(``{"llm": {"input_messages": [...]}}``) or flat (``llm.input_messages.0.message.role``, the DataFrame's
``attributes.llm.input_messages`` columns): ``llm.input_messages`` / ``llm.output_messages`` (roles,
contents, tool calls, ``message.tool_call_id``), ``output.value``, ``llm.model_name``,
``retrieval.documents.N.document.{id,content}`` and, for TOOL spans, ``tool.name`` and ``output.value``.
The same attributes sent over OTLP are read by the OTLP reader through ``span_from_attributes``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hallumeasure.runs.inputs import OnHeader
from hallumeasure.runs.traces.spans import (
    Role,
    TraceSource,
    TraceSpan,
    flatten,
    head_objects,
    indexed,
    loads_maybe,
    text_of,
    trace_rows,
)

KIND = "openinference.span.kind"
_ROLES: dict[str, Role] = {"LLM": "llm", "RETRIEVER": "retriever", "TOOL": "tool"}


def openinference_rows(
    path: TraceSource, *, delimiter: str | None = None, on_header: OnHeader | None = None, outputs: str = "final"
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Samples of OpenInference spans (Phoenix's JSONL export, or its span DataFrame as records)."""
    return trace_rows(
        path,
        lambda obj: [span_of(obj)] if isinstance(obj, Mapping) else "a span object was expected",
        outputs=outputs,
        source_format="openinference",
    )


def sniff_openinference(path: TraceSource) -> bool:
    """Whether ``path`` holds OpenInference spans (a span kind and a span context, nested or flat)."""
    for obj in head_objects(path)[:1]:
        if not isinstance(obj, Mapping):
            return False
        flat = flatten(obj)
        has_context = "context.span_id" in flat
        has_kind = "span_kind" in flat or any(k.endswith(KIND) for k in flat)
        return has_context and has_kind
    return False


def span_of(obj: Mapping[str, Any]) -> TraceSpan:
    """One exported span: nested (Phoenix JSONL) or flat (DataFrame records) alike."""
    flat = flatten(obj)
    attributes = {k.removeprefix("attributes."): v for k, v in flat.items() if k.startswith("attributes.")}
    # A DataFrame record keeps some attributes as JSON text; nested ones flatten further.
    for key in [k for k, v in attributes.items() if isinstance(v, str) and v[:1] in "[{"]:
        parsed = loads_maybe(attributes[key])
        if isinstance(parsed, (list, dict)):
            attributes.update(flatten(parsed, f"{key}."))
    kind = str(attributes.get(KIND) or flat.get("span_kind") or "")
    status = str(flat.get("status_code") or "")
    return span_from_attributes(
        attributes,
        trace_id=str(flat.get("context.trace_id") or ""),
        span_id=str(flat.get("context.span_id") or ""),
        parent_id=_text_or_none(flat.get("parent_id")),
        name=str(flat.get("name") or ""),
        kind=kind,
        start=flat.get("start_time") or 0,
        end=flat.get("end_time") or 0,
        failed=status.upper() in ("ERROR", "STATUS_CODE_ERROR"),
    )


def span_from_attributes(
    attributes: Mapping[str, Any],
    *,
    trace_id: str,
    span_id: str,
    parent_id: str | None,
    name: str,
    kind: str,
    start: Any,
    end: Any,
    failed: bool,
) -> TraceSpan:
    """A span from its flat OpenInference attributes and its identity."""
    role = _ROLES.get(kind.upper(), "other")
    span = TraceSpan(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id,
        name=name,
        role=role,
        start=start,
        end=end,
        failed=failed,
        model=_text_or_none(attributes.get("llm.model_name")),
    )
    if role == "llm":
        span.messages = [_message(m) for m in indexed(attributes, "llm.input_messages")]
        outputs = [_message(m) for m in indexed(attributes, "llm.output_messages")]
        answer = next((m["content"] for m in reversed(outputs) if m.get("content")), None)
        if not outputs and attributes.get("output.mime_type") != "application/json":
            # No output messages: the output value is the answer, unless it is the raw response (JSON).
            answer = text_of(attributes.get("output.value"))
        span.output = answer
        if not span.messages and attributes.get("input.value") is not None:
            span.messages = [{"role": "user", "content": text_of(attributes.get("input.value"))}]
    elif role == "retriever":
        span.documents = [
            {"id": _text_or_none(d.get("document.id")), "text": text_of(d.get("document.content"))}
            for d in indexed(attributes, "retrieval.documents")
        ]
    elif role == "tool":
        span.tool_name = _text_or_none(attributes.get("tool.name")) or name
        span.call_id = _text_or_none(attributes.get("tool_call.id") or attributes.get("tool.id"))
        span.result = text_of(attributes.get("output.value"))
    return span


def _message(item: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI-style message from an OpenInference one (``message.role``, ``message.content`` ...)."""
    role = str(item.get("message.role") or "user")
    content = item.get("message.content")
    if content is None:
        parts = indexed(item, "message.contents")
        content = "\n".join(str(p["message_content.text"]) for p in parts if p.get("message_content.text"))
    message: dict[str, Any] = {"role": role, "content": content}
    if item.get("message.tool_call_id"):
        message["tool_call_id"] = str(item["message.tool_call_id"])
    calls = indexed(item, "message.tool_calls")
    if calls:
        message["tool_calls"] = [
            {
                "id": str(c.get("tool_call.id") or ""),
                "type": "function",
                "function": {
                    "name": c.get("tool_call.function.name"),
                    "arguments": c.get("tool_call.function.arguments"),
                },
            }
            for c in calls
        ]
    return message


def _text_or_none(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip()
    return text or None
