"""A small support agent traced by real instrumentation, for the trace tests.

The agent retrieves documents (a RETRIEVER span with OpenInference attributes, as an app writes for its own
retriever), asks the model (the real ``openai`` client against ``hallumeasure.testing.OpenAIServer``, traced
by ``openinference-instrumentation-openai``), runs the tool the model calls (a TOOL span, an error when the
tool fails) and asks again with the tool's result; the second answer is the final one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hallumeasure.testing import Answer, OpenAIServer

DOCUMENTS = [("kb-12", "Orders ship from the Leeds warehouse. Standard delivery takes 3 working days.")]
SYSTEM = "You are the support agent of Parcelly. Answer from the documents and the tools only."
TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Status of an order",
        "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
    },
}
#: What the tool returns: a working call, and a failed one that still carries stale text.
RESULTS = {
    "ok": "Order 4417 shipped on Monday from Leeds.",
    "failed": "ERROR 503 order service unavailable; last cached status: order 4417 shipped on Monday.",
}
ANSWER = "Order 4417 shipped on Monday. Delivery takes 3 working days."


@contextmanager
def traced(exporter: Any) -> Iterator[Any]:
    """An OpenTelemetry tracer provider exporting to ``exporter``, with the OpenAI client instrumented."""
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"openinference.project.name": "support"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider
    finally:
        instrumentor.uninstrument()
        provider.force_flush()


def run_agent(provider: Any, tool_outcome: str, question: str = "Where is my order 4417?") -> None:
    """One conversation of the agent: retrieval, a tool call that works or fails, the final answer."""
    import openai
    from opentelemetry.trace import Status, StatusCode

    tracer = provider.get_tracer("support-app")
    script = [Answer(tool_name="lookup_order", tool_input={"order": "4417"}), Answer(text=ANSWER)]
    with OpenAIServer(script=script) as server, tracer.start_as_current_span("agent") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute("openinference.span.kind", "RETRIEVER")
            span.set_attribute("input.value", question)
            for i, (doc_id, text) in enumerate(DOCUMENTS):
                span.set_attribute(f"retrieval.documents.{i}.document.id", doc_id)
                span.set_attribute(f"retrieval.documents.{i}.document.content", text)
        context = "\n".join(text for _, text in DOCUMENTS)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": f"{SYSTEM}\nDocuments:\n{context}"},
            {"role": "user", "content": question},
        ]
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[TOOL])
        call = first.choices[0].message.tool_calls[0]
        with tracer.start_as_current_span("lookup_order") as span:
            span.set_attribute("openinference.span.kind", "TOOL")
            span.set_attribute("tool.name", call.function.name)
            span.set_attribute("input.value", call.function.arguments)
            span.set_attribute("output.value", RESULTS[tool_outcome])
            if tool_outcome == "failed":
                span.set_status(Status(StatusCode.ERROR, "order service unavailable"))
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": RESULTS[tool_outcome]},
        ]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[TOOL])


def otlp_json_lines(spans: Any) -> str:
    """Finished SDK spans as the OpenTelemetry collector's file exporter writes them: OTLP JSON, one request
    per line, with hex ids (encoded by the SDK's own OTLP encoder)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    request = MessageToDict(encode_spans(spans))
    for resource in request.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _b64_to_hex(span[key])
    return json.dumps(request) + "\n"


def _b64_to_hex(value: str) -> str:
    import base64

    return base64.b64decode(value).hex()
