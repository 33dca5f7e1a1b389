"""Langfuse exports: traces with their observations, or observations alone (JSON array or JSON Lines).

A trace object (``GET /api/public/traces/{id}``, or an export of traces) holds ``observations``; an
observation export holds objects with ``traceId`` and ``type``. An observation of type ``GENERATION`` is an
LLM call (``input``: messages, or ``{"messages": [...]}``; ``output``: a message or text; ``model``);
``RETRIEVER`` observations' ``output`` are the documents (text, or objects with ``id`` and
``content``/``page_content``/``text``); ``TOOL`` observations are tool calls (``output`` the result,
failed when ``level`` is ``ERROR``). Times are ``startTime`` / ``endTime`` (ISO 8601).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hallumeasure.runs.inputs import OnHeader
from hallumeasure.runs.messages import content_text, mapping
from hallumeasure.runs.traces.spans import TraceSource, TraceSpan, head_objects, loads_maybe, text_of, trace_rows


def langfuse_rows(
    path: TraceSource, *, delimiter: str | None = None, on_header: OnHeader | None = None, outputs: str = "final"
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Samples of the generations of a Langfuse export."""
    return trace_rows(path, _spans, outputs=outputs, source_format="langfuse")


def _spans(obj: Any) -> list[TraceSpan] | str:
    items = obj["data"] if isinstance(obj, Mapping) and isinstance(obj.get("data"), list) else [obj]  # an API page
    spans: list[TraceSpan] = []
    for item in items:
        if isinstance(item, Mapping) and isinstance(item.get("observations"), list):
            spans += [span_of(o, str(item.get("id") or "")) for o in item["observations"] if isinstance(o, Mapping)]
        elif isinstance(item, Mapping) and "traceId" in item:
            spans.append(span_of(item, ""))
        else:
            return "a Langfuse trace (with observations) or observation (with traceId) was expected"
    return spans


def sniff_langfuse(path: TraceSource) -> bool:
    """Whether ``path`` holds a Langfuse export."""
    for obj in head_objects(path)[:1]:
        if isinstance(obj, Mapping) and isinstance(obj.get("data"), list) and obj["data"]:
            obj = obj["data"][0]
        if not isinstance(obj, Mapping):
            return False
        observations = obj.get("observations")
        if isinstance(observations, list):
            return "resourceSpans" not in obj
        return "traceId" in obj and "type" in obj and ("startTime" in obj or "input" in obj)
    return False


def span_of(obs: Mapping[str, Any], trace_id: str) -> TraceSpan:
    kind = str(obs.get("type") or "").upper()
    span = TraceSpan(
        trace_id=str(obs.get("traceId") or trace_id),
        span_id=str(obs.get("id") or ""),
        parent_id=obs.get("parentObservationId"),
        name=str(obs.get("name") or ""),
        start=str(obs.get("startTime") or ""),
        end=str(obs.get("endTime") or obs.get("startTime") or ""),
        failed=str(obs.get("level") or "").upper() == "ERROR",
        model=obs.get("model") or None,
    )
    output = loads_maybe(obs.get("output"))
    if kind == "GENERATION":
        span.role = "llm"
        source = loads_maybe(obs.get("input"))
        if isinstance(source, Mapping) and isinstance(source.get("messages"), list):
            source = source["messages"]
        if isinstance(source, list):
            span.messages = [dict(m) for m in source if isinstance(m, Mapping) and m.get("role")]
        elif source is not None:
            span.messages = [{"role": "user", "content": text_of(source)}]
        span.output = _answer(output)
    elif kind == "RETRIEVER":
        span.role = "retriever"
        docs = output.get("documents") if isinstance(output, Mapping) else output
        span.documents = [_document(d) for d in docs or ()] if isinstance(docs, list) else []
    elif kind == "TOOL":
        span.role = "tool"
        span.tool_name = span.name
        metadata = mapping(obs.get("metadata"))
        span.call_id = metadata.get("tool_call_id") or metadata.get("call_id")
        span.result = text_of(output) if output is not None else obs.get("statusMessage")
    return span


def _answer(output: Any) -> str | None:
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping):
        if "choices" in output:
            choices = output["choices"] or [{}]
            return content_text((choices[-1].get("message") or {}).get("content"))
        return content_text(output.get("content"))
    if isinstance(output, list) and output and isinstance(output[-1], Mapping):
        return content_text(output[-1].get("content"))
    return None


def _document(doc: Any) -> dict[str, Any]:
    if isinstance(doc, Mapping):
        meta = mapping(doc.get("metadata"))
        text = doc.get("content", doc.get("page_content", doc.get("text")))
        return {"id": doc.get("id") or meta.get("id"), "text": text_of(text), "title": meta.get("title")}
    return {"id": None, "text": text_of(doc)}
