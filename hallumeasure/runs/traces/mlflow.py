"""MLflow traces: what ``mlflow.search_traces`` returns, saved as JSON or JSON Lines.

Accepted: ``Trace.to_json()`` objects (``{"info": ..., "data": {"spans": [...]}}``), one per line or as a
JSON array, and the rows of the ``search_traces`` DataFrame (records with a ``spans`` column; pass the
DataFrame itself to ``hallumeasure.measure``). Spans are MLflow 3's (``span_id``, ``trace_id``,
``start_time_unix_nano``, ``status.code``) or MLflow 2's (``context.span_id``, ``start_time``,
``status_code``); their type, inputs and outputs are the JSON-encoded attributes ``mlflow.spanType``,
``mlflow.spanInputs`` and ``mlflow.spanOutputs``. ``LLM`` / ``CHAT_MODEL`` spans are LLM calls (inputs
``{"messages": [...]}``, outputs a chat completion, a message or text), ``RETRIEVER`` spans' outputs are
documents (``page_content`` with ``metadata.doc_uri`` / ``chunk_id``, or ``id``), ``TOOL`` spans are tool
calls, failed when their status is an error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hallumeasure.runs.inputs import OnHeader
from hallumeasure.runs.messages import content_text, mapping
from hallumeasure.runs.traces.spans import (
    TraceSource,
    TraceSpan,
    head_objects,
    hex_id,
    loads_maybe,
    text_of,
    trace_rows,
)

LLM_TYPES = ("LLM", "CHAT_MODEL")


def mlflow_rows(
    path: TraceSource, *, delimiter: str | None = None, on_header: OnHeader | None = None, outputs: str = "final"
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Samples of MLflow traces."""
    return trace_rows(path, _trace_spans, outputs=outputs, source_format="mlflow")


def _trace_spans(obj: Any) -> list[TraceSpan] | str:
    raw = _spans(obj)
    if raw is None:
        return "an MLflow trace (info and data.spans, or a spans column) was expected"
    trace_id = _trace_id(obj)
    return [span_of(s, trace_id) for s in raw if isinstance(s, Mapping)]


def sniff_mlflow(path: TraceSource) -> bool:
    """Whether ``path`` holds MLflow traces."""
    for obj in head_objects(path)[:1]:
        raw = _spans(obj)
        return raw is not None and any(
            isinstance(s, Mapping) and isinstance(s.get("attributes"), Mapping) and "mlflow.spanType" in s["attributes"]
            for s in raw
        )
    return False


def _spans(obj: Any) -> list[Any] | None:
    if not isinstance(obj, Mapping):
        return None
    data = loads_maybe(obj.get("data"))
    spans = data.get("spans") if isinstance(data, Mapping) else loads_maybe(obj.get("spans"))
    return spans if isinstance(spans, list) else None


def _trace_id(obj: Mapping[str, Any]) -> str:
    info = loads_maybe(obj.get("info"))
    info = info if isinstance(info, Mapping) else obj
    return str(info.get("trace_id") or info.get("request_id") or "")


def span_of(raw: Mapping[str, Any], trace_id: str) -> TraceSpan:
    # MLflow stores every attribute value JSON-encoded (a string type is ``"\"LLM\""``).
    attributes = {k: loads_maybe(v, scalars=True) for k, v in (raw.get("attributes") or {}).items()}
    context = mapping(raw.get("context"))
    status = mapping(raw.get("status"))
    code = str(status.get("code") or raw.get("status_code") or "")
    kind = str(attributes.get("mlflow.spanType") or "").upper()
    span = TraceSpan(
        trace_id=str(attributes.get("mlflow.traceRequestId") or trace_id or raw.get("trace_id") or ""),
        span_id=hex_id(raw.get("span_id") or context.get("span_id")),
        parent_id=hex_id(raw.get("parent_span_id") or raw.get("parent_id")) or None,
        name=str(raw.get("name") or ""),
        start=raw.get("start_time_unix_nano") or raw.get("start_time") or 0,
        end=raw.get("end_time_unix_nano") or raw.get("end_time") or 0,
        failed=code.upper() in ("ERROR", "STATUS_CODE_ERROR"),
    )
    inputs, outputs = attributes.get("mlflow.spanInputs"), attributes.get("mlflow.spanOutputs")
    if kind in LLM_TYPES:
        span.role = "llm"
        messages = inputs.get("messages") if isinstance(inputs, Mapping) else inputs
        if isinstance(messages, list):
            span.messages = [dict(m) for m in messages if isinstance(m, Mapping) and m.get("role")]
        elif inputs is not None:
            span.messages = [{"role": "user", "content": text_of(inputs)}]
        span.output = _answer(outputs)
        span.model = inputs.get("model") if isinstance(inputs, Mapping) else None
    elif kind == "RETRIEVER":
        span.role = "retriever"
        span.documents = [_document(d) for d in outputs or ()] if isinstance(outputs, list) else []
    elif kind == "TOOL":
        span.role = "tool"
        span.tool_name = span.name
        span.result = text_of(outputs) if outputs is not None else (status.get("message") or None)
        call = inputs.get("tool_call_id") if isinstance(inputs, Mapping) else None
        span.call_id = str(call) if call else None
    return span


def _answer(output: Any) -> str | None:
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping):
        if isinstance(output.get("choices"), list) and output["choices"]:
            return content_text((output["choices"][-1].get("message") or {}).get("content"))
        return content_text(output.get("content"))
    return None


def _document(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, Mapping):
        return {"id": None, "text": text_of(doc)}
    meta = mapping(doc.get("metadata"))
    pid = doc.get("id") or meta.get("chunk_id") or meta.get("doc_uri")
    text = doc.get("page_content", doc.get("content", doc.get("text")))
    return {"id": str(pid) if pid else None, "text": text_of(text), "title": meta.get("doc_uri")}
