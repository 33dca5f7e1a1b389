"""What every trace format is read into, and how spans become samples.

A reader of a trace format (OTLP JSON, OpenInference, Langfuse, MLflow) turns its file into ``TraceSpan``s:
LLM calls with their input messages (OpenAI-style, system prompt included) and answer, retrievals with
their documents, tool calls with their result and whether they failed. ``sample_rows`` then makes one
input record per measured LLM answer, in the same vocabulary as a JSONL row (``messages``, ``contexts``,
``metadata``), so that the one row reader (``runs/inputs.py``) checks and builds every sample alike.

Which answers are measured (``outputs``):

- ``final`` (the default): the last LLM answer of each trace, the one its user saw;
- ``all``: every LLM span's answer.

The sources of an answer are its LLM span's input messages (system prompt, earlier user turns, tool results
in the conversation), the documents of every retrieval in the same trace that ended before the LLM call
started, and the results of the trace's tool spans that ended before it and are not in the messages already.
A tool message whose call id names a failed tool span is marked failed. Each record carries the trace and
span ids (``metadata.trace_id``, ``metadata.span_id``), so that verdicts can be written back to the span.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hallumeasure.core.errors import InputError

Role = Literal["llm", "retriever", "tool", "other"]
Outputs = Literal["final", "all"]
OUTPUTS: tuple[str, ...] = ("final", "all")


@dataclass
class TraceSpan:
    """One span of a trace, as much of it as measuring needs."""

    trace_id: str
    span_id: str
    name: str = ""
    role: Role = "other"
    parent_id: str | None = None
    #: Start and end, in any one unit per file (nanoseconds, seconds, ISO strings compare as text).
    start: Any = 0
    end: Any = 0
    failed: bool = False
    #: LLM spans: the input messages (OpenAI-style dicts) and the answer's text.
    messages: list[dict[str, Any]] = field(default_factory=list)
    output: str | None = None
    model: str | None = None
    #: Retriever spans: ``{"id", "text", "title"?}`` per document.
    documents: list[dict[str, Any]] = field(default_factory=list)
    #: Tool spans: the tool, the call id and what the call returned.
    tool_name: str | None = None
    call_id: str | None = None
    result: str | None = None


def check_outputs(outputs: str) -> Outputs:
    if outputs not in OUTPUTS:
        raise InputError(f"outputs must be one of {', '.join(OUTPUTS)}, got {outputs!r}")
    return "final" if outputs == "final" else "all"


def sample_rows(
    spans: Iterable[TraceSpan], *, outputs: str = "final", source_format: str
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(row number, sample record) per measured LLM answer; a trace with no LLM answer is an error row."""
    which = check_outputs(outputs)
    traces: dict[str, list[TraceSpan]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    number = 0
    for trace_id, members in traces.items():
        answers = [s for s in members if s.role == "llm" and s.output is not None and s.output.strip()]
        if not answers:
            if any(s.role == "llm" for s in members):
                number += 1
                yield number, f"trace {trace_id}: its LLM spans have no answer to measure"
            continue
        answers.sort(key=lambda s: (_order(s.end), _order(s.start)))
        for span in answers if which == "all" else answers[-1:]:
            number += 1
            yield number, _record(span, members, source_format)


def _order(value: Any) -> tuple[int, Any]:
    # Numbers and strings never compare with each other: keep each in its own band.
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))


def _record(answer: TraceSpan, members: Sequence[TraceSpan], source_format: str) -> dict[str, Any]:
    before = [s for s in members if s is not answer and _order(s.end) <= _order(answer.start)]
    tool_spans = [s for s in before if s.role == "tool"]
    names = {
        str(call.get("id")): str((call.get("function") or {}).get("name") or call.get("name") or "")
        for message in answer.messages
        for call in message.get("tool_calls") or ()
        if isinstance(call, Mapping)
    }
    used: set[int] = set()
    messages = []
    for message in answer.messages:
        message = dict(message)
        if message.get("role") == "tool":
            span = _tool_span(message, names, tool_spans, used)
            if span is not None:
                used.add(id(span))
                message["is_error"] = message.get("is_error") or span.failed
                message.setdefault("name", span.tool_name)
        messages.append(message)
    for tool in (s for s in tool_spans if id(s) not in used and s.result):
        messages.append(
            {
                "role": "tool",
                "tool_call_id": tool.call_id or tool.span_id,
                "name": tool.tool_name or tool.name,
                "content": tool.result,
                "is_error": tool.failed,
            }
        )
    messages.append({"role": "assistant", "content": answer.output})
    contexts = []
    taken: set[str] = set()
    for retrieval in (s for s in before if s.role == "retriever"):
        for position, doc in enumerate(retrieval.documents, start=1):
            text = doc.get("text")
            if not isinstance(text, str) or not text.strip():
                continue
            pid = str(doc.get("id") or f"{retrieval.span_id}-{position}")
            while pid in taken:
                pid += "'"
            taken.add(pid)
            contexts.append({"id": pid, "text": text, **({"title": doc["title"]} if doc.get("title") else {})})
    return {
        "id": answer.span_id,
        "messages": messages,
        "contexts": contexts,
        "model": answer.model,
        "metadata": {
            "trace_id": answer.trace_id,
            "span_id": answer.span_id,
            "span_name": answer.name,
            "source_format": source_format,
        },
    }


def _tool_span(
    message: Mapping[str, Any], names: Mapping[str, str], spans: Sequence[TraceSpan], used: set[int]
) -> TraceSpan | None:
    """The tool span that produced a tool message: by call id, else by the same result text, else the first
    unused span of the tool the call named (instrumentations rarely put the call id on the tool span)."""
    call_id = str(message.get("tool_call_id") or "")
    free = [s for s in spans if id(s) not in used]
    for span in free:
        if call_id and span.call_id == call_id:
            return span
    content = message.get("content")
    for span in free:
        if span.result is not None and isinstance(content, str) and span.result.strip() == content.strip():
            return span
    name = names.get(call_id)
    return next((s for s in free if name and (s.tool_name or s.name) == name), None)


# --- reading JSON and JSON Lines ------------------------------------------------------------------------


#: A format's spans of one JSON object of its export, or why the object is not one of its traces.
SpansOf = Callable[[Any], "list[TraceSpan] | str"]
#: A trace export: its file, or its JSON values already in memory (the records of a span DataFrame). Every
#: built-in trace reader and sniff takes either (``runs.inputs.read_records``).
TraceSource = Path | Sequence[Any]


def trace_rows(
    path: TraceSource, spans_of: SpansOf, *, outputs: str, source_format: str
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """The rows every trace reader yields: each JSON object of the export read by ``spans_of`` (a problem becomes an
    error row of that object), then one sample per measured LLM answer of all the spans together."""
    spans: list[TraceSpan] = []
    for number, obj in json_objects(path):
        found = obj if isinstance(obj, str) else spans_of(obj)
        if isinstance(found, str):
            yield number, found
        else:
            spans += found
    yield from sample_rows(spans, outputs=outputs, source_format=source_format)


def json_objects(path: TraceSource) -> Iterator[tuple[int, Any]]:
    """The JSON values of a file: its items when it is one JSON array, itself when one object, else one per line.

    A line that is not JSON is yielded as an error message (a string starting with "not valid JSON").
    Values already in memory are numbered from 1 as they come.
    """
    if not isinstance(path, Path):
        yield from enumerate(path, start=1)
        return
    text = path.read_text(encoding="utf-8-sig")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    else:
        if isinstance(whole, list):
            yield from enumerate(whole, start=1)
            return
        yield 1, whole
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, f"not valid JSON ({exc.msg} at column {exc.colno})"


def head_objects(path: TraceSource, limit: int = 1 << 16) -> list[Any]:
    """The first JSON values of a file, read from at most ``limit`` bytes (for detecting its format); of values
    already in memory, the first five."""
    if not isinstance(path, Path):
        return list(path[:5])
    try:
        with open(path, "rb") as handle:
            head = handle.read(limit)
    except OSError:
        return []
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff").lstrip()
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        return whole[:5]
    if whole is not None:
        return [whole]
    out = []
    for line in text.splitlines()[:5]:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break
    if not out and text.startswith("["):
        # A long array cut by the limit: read its first object.
        try:
            first, _ = json.JSONDecoder().raw_decode(text[1:].lstrip())
            out.append(first)
        except json.JSONDecodeError:
            pass
    return out


def hex_id(value: Any) -> str:
    """A trace or span id as lowercase hex: OTLP JSON writes hex, protobuf's JSON mapping and MLflow base64."""
    text = str(value or "")
    if not text or all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        return text
    return raw.hex() if len(raw) in (8, 16) else text


def loads_maybe(value: Any, *, scalars: bool = False) -> Any:
    """``value`` parsed when it is a JSON string of an object or list (with ``scalars``, of any JSON value);
    else as it is."""
    if isinstance(value, str) and (scalars or value[:1] in "[{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def text_of(value: Any) -> str | None:
    """Readable text of a logged value: a string, or JSON of anything else; None when absent."""
    value = loads_maybe(value)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested objects and lists as dotted keys (``llm.input_messages.0.message.role``): one shape for the
    nested attributes of an export, the flattened ones of OTLP and the columns of a DataFrame alike."""
    out: dict[str, Any] = {}
    if isinstance(value, Mapping):
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}{key}."))
    elif isinstance(value, list) and value and all(isinstance(v, (Mapping, list)) for v in value):
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}{index}."))
    elif prefix:
        out[prefix[:-1]] = value
    return out


def indexed(flat: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The items under ``prefix.<n>.`` of a flat mapping, in index order, each with the keys after the index."""
    items: dict[int, dict[str, Any]] = {}
    for key, value in flat.items():
        if not key.startswith(prefix + "."):
            continue
        index, _, rest = key[len(prefix) + 1 :].partition(".")
        if index.isdigit() and rest:
            items.setdefault(int(index), {})[rest] = value
    return [items[i] for i in sorted(items)]
