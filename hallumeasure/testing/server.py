"""The shared core of the provider simulators: a local HTTP server that records every request and
answers it through a protocol front-end (Anthropic Messages or Bedrock Converse).

A front-end knows its wire format only: how to route a path, how to read a request into a
protocol-neutral ``Call``, and how to write an ``Answer`` or an error back. Everything else
(recording, scripts, handlers, latency, the default answer) lives here once, so that later
behaviours such as rate limits or prompt-cache accounting are added in one place (``respond``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import urlsplit

from hallumeasure.models.base import GenerateRequest, Message, TextBlock, ToolSpec
from hallumeasure.models.fake import count_tokens, demo_responder


@dataclass
class Reply:
    """An HTTP answer: status, JSON body and extra headers; ``delay`` seconds are waited before sending."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it (header names lower-cased, body parsed from JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Segment:
    """A piece of prompt text; ``cache_after`` marks a cache breakpoint right after it."""

    role: str  # "system", "user" or "assistant"
    text: str
    cache_after: bool = False


@dataclass(frozen=True)
class Call:
    """A request in protocol-neutral terms, as the default handler and any accounting read it."""

    model: str
    segments: tuple[Segment, ...]
    tool: dict[str, Any] | None = None  # {"name", "description", "input_schema"} of the tool to answer with
    forced: bool = False
    max_tokens: int | None = None

    @property
    def system(self) -> str:
        return "".join(s.text for s in self.segments if s.role == "system")

    @property
    def prompt_text(self) -> str:
        return "".join(s.text for s in self.segments)

    def to_request(self) -> GenerateRequest:
        """The request as hallumeasure would have built it (consecutive same-role segments form one message)."""
        messages: list[Message] = []
        for segment in (s for s in self.segments if s.role != "system"):
            block = TextBlock(text=segment.text, cache_after=segment.cache_after)
            if messages and messages[-1].role == segment.role:
                messages[-1] = Message(role=segment.role, content=(*messages[-1].content, block))
            else:
                messages.append(Message(role=segment.role, content=(block,)))
        return GenerateRequest(
            system=self.system,
            messages=tuple(messages),
            tool=ToolSpec(**self.tool) if self.tool is not None else None,
            max_tokens=self.max_tokens or 1,
            cache_system=any(s.cache_after for s in self.segments if s.role == "system"),
        )


@dataclass(frozen=True)
class Tokens:
    """Usage in neutral names (those of ``hallumeasure.types.Usage``); input excludes cache reads and writes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @classmethod
    def of(cls, value: Tokens | Mapping[str, int] | None) -> Tokens:
        if value is None:
            return cls()
        return value if isinstance(value, Tokens) else cls(**value)


@dataclass(frozen=True)
class Answer:
    """A successful reply in neutral terms; the front-end renders it as its wire JSON."""

    text: str = ""
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    #: Neutral names: end_turn, tool_use, max_tokens, refusal, stop_sequence (others pass through as is).
    stop_reason: str = "end_turn"
    usage: Tokens = Tokens()
    model: str | None = None

    @property
    def digest(self) -> str:
        """A stable id suffix, so that rendered ids are deterministic."""
        payload = json.dumps([self.text, self.tool_name, self.tool_input], sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:20]


Result = Reply | Answer | Mapping[str, Any]
Handler = Callable[[Any], Result]


class Protocol(ABC):
    """One provider's wire format, and the reply helpers built on it."""

    name: ClassVar[str]
    #: HTTP status -> the error code this provider sends with it.
    error_codes: ClassVar[Mapping[int, str]]
    default_error_code: ClassVar[str]

    @abstractmethod
    def route(self, method: str, path: str) -> dict[str, str] | None:
        """Path parameters when this front-end serves ``method path``, else None."""

    @abstractmethod
    def parse(self, body: Any, params: Mapping[str, str]) -> Call:
        """The neutral view of a request body; raise ``ValueError`` when the body is malformed."""

    @abstractmethod
    def render(self, answer: Answer) -> dict[str, Any]:
        """The wire JSON of a successful answer."""

    @abstractmethod
    def error_body(self, status: int, code: str, message: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The wire JSON and headers of an error."""

    # --- helpers for handlers and tests --------------------------------------------------------------

    def text_reply(
        self,
        text: str,
        *,
        usage: Tokens | Mapping[str, int] | None = None,
        stop_reason: str = "end_turn",
        model: str | None = None,
    ) -> Reply:
        """A plain text answer."""
        return Reply(200, self.render(Answer(text=text, stop_reason=stop_reason, usage=Tokens.of(usage), model=model)))

    def tool_reply(
        self,
        name: str,
        input: dict[str, Any],  # noqa: A002 - the wire name
        *,
        usage: Tokens | Mapping[str, int] | None = None,
        text: str = "",
        stop_reason: str = "tool_use",
        model: str | None = None,
    ) -> Reply:
        """An answer that calls tool ``name`` with ``input``."""
        answer = Answer(
            text=text, tool_name=name, tool_input=input, stop_reason=stop_reason, usage=Tokens.of(usage), model=model
        )
        return Reply(200, self.render(answer))

    def error_reply(
        self,
        status: int,
        message: str | None = None,
        *,
        code: str | None = None,
        retry_after: float | datetime | None = None,
        retry_after_ms: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """An error as the provider sends it; ``retry_after`` (seconds or a date) sets the retry-after header."""
        code = code or self.error_codes.get(status, self.default_error_code)
        body, extra = self.error_body(status, code, message or f"simulated {code}")
        extra = {**extra, **(headers or {})}
        if isinstance(retry_after, datetime):
            extra["retry-after"] = format_datetime(retry_after, usegmt=True)
        elif retry_after is not None:
            extra["retry-after"] = f"{retry_after:g}"
        if retry_after_ms is not None:
            extra["retry-after-ms"] = f"{retry_after_ms:g}"
        return Reply(status, body, extra)


# --- default answers: schema-valid tool inputs with deterministic usage ---------------------------------

AnswerFn = Callable[[Call], Answer]


def schema_answer(call: Call) -> Answer:
    """Answer a tool request with an input built from the tool's JSON Schema, else with a short text."""
    if call.tool is not None:
        tool_input = schema_example(call.tool.get("input_schema") or {"type": "object"})
        return _tool_answer(call, tool_input if isinstance(tool_input, dict) else {"value": tool_input})
    text = "This is a simulated answer."
    usage = Tokens(input_tokens=count_tokens(call.prompt_text), output_tokens=count_tokens(text))
    return Answer(text=text, usage=usage, model=call.model)


def default_answer(call: Call) -> Answer:
    """``schema_answer``, except that hallumeasure's own prompts get the fake demo model's answers.

    The demo answers read the prompt (claims from the response, claim ids, word overlap with the
    context), so that every classify mode runs end to end; any other tool gets a schema example.
    """
    if call.tool is not None:
        demo = demo_responder(call.to_request())
        if isinstance(demo, dict):
            return _tool_answer(call, demo)
    return schema_answer(call)


def _tool_answer(call: Call, tool_input: dict[str, Any]) -> Answer:
    assert call.tool is not None
    input_tokens = count_tokens(call.prompt_text) + count_tokens(json.dumps(call.tool, sort_keys=True))
    return Answer(
        tool_name=call.tool["name"],
        tool_input=tool_input,
        stop_reason="tool_use",
        usage=Tokens(input_tokens=input_tokens, output_tokens=count_tokens(json.dumps(tool_input, sort_keys=True))),
        model=call.model,
    )


_MAX_DEPTH = 16


def schema_example(schema: Mapping[str, Any], *, root: Mapping[str, Any] | None = None, name: str = "value") -> Any:
    """A deterministic instance of a JSON Schema (the subset pydantic emits: refs, anyOf, enums, bounds)."""
    return _example(schema, root if root is not None else schema, name, 0)


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part.replace("~1", "/").replace("~0", "~")]
    merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return _resolve(merged, root)


def _example(schema: Mapping[str, Any], root: Mapping[str, Any], name: str, depth: int) -> Any:
    schema = _resolve(schema, root)
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if schema.get("enum"):
        return copy.deepcopy(schema["enum"][0])
    if "default" in schema:
        return copy.deepcopy(schema["default"])
    for key in ("anyOf", "oneOf"):
        if options := schema.get(key):
            non_null = [o for o in options if _resolve(o, root).get("type") != "null"]
            return _example(non_null[0], root, name, depth + 1) if non_null else None
    if all_of := schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in all_of:
            part = _resolve(part, root)
            merged.update({k: v for k, v in part.items() if k not in ("properties", "required")})
            merged.setdefault("properties", {}).update(part.get("properties", {}))
            merged.setdefault("required", []).extend(part.get("required", []))
        return _example(merged, root, name, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "object":
        properties = schema.get("properties", {})
        if depth >= _MAX_DEPTH:  # recursive schemas: stop at the required properties
            properties = {k: v for k, v in properties.items() if k in schema.get("required", ())}
        return {key: _example(sub, root, key, depth + 1) for key, sub in properties.items()}
    if kind == "array":
        low = schema.get("minItems", 0)
        count = low if depth >= _MAX_DEPTH else max(low, 1)
        if "maxItems" in schema:
            count = min(count, schema["maxItems"])
        items = schema.get("items", {})
        return [_example(items, root, f"{name} {i + 1}", depth + 1) for i in range(count)]
    if kind in ("integer", "number"):
        value: float = 0
        if "minimum" in schema:
            value = schema["minimum"]
        elif "exclusiveMinimum" in schema:
            value = schema["exclusiveMinimum"] + 1
        if "maximum" in schema:
            value = min(value, schema["maximum"])
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string_example(schema, name)


def _string_example(schema: Mapping[str, Any], name: str) -> str:
    formats = {"date-time": "2024-01-01T00:00:00Z", "date": "2024-01-01", "email": "someone@example.com"}
    text = formats.get(schema.get("format", ""), f"simulated {name}")
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if len(text) < low:
        text = text + "x" * (low - len(text))
    return text[:high] if high is not None else text


# --- the server ---------------------------------------------------------------------------------------


class SimServer:
    """A provider simulator on 127.0.0.1 with an ephemeral port; use it as a context manager.

    Each request is answered, in order of precedence, by the next item of ``script``, by
    ``handler(body)`` (the parsed wire body), or by ``answer(call)`` (the neutral view; by default
    ``default_answer``). A result may be a wire body dict, a ``Reply`` or a neutral ``Answer``.
    ``latency`` seconds are added to every answer.
    """

    protocol: ClassVar[Protocol]

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        script: Iterable[Result] = (),
        answer: AnswerFn | None = None,
        latency: float = 0.0,
        host: str = "127.0.0.1",
    ) -> None:
        self.handler = handler
        self.answer = answer or default_answer
        self.latency = latency
        self.requests: list[RecordedRequest] = []
        self.calls: list[Call] = []
        #: Exceptions raised by the handler (each was answered with a 500).
        self.errors: list[BaseException] = []
        self._script = list(script)
        self._lock = threading.Lock()
        self._host = host
        self._http: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---

    def start(self) -> SimServer:
        http = ThreadingHTTPServer((self._host, 0), _RequestHandler)
        http.daemon_threads = True
        http.sim = self  # type: ignore[attr-defined]
        self._http = http
        self._thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        if self._http is None:
            raise RuntimeError("the simulator is not running: use it as a context manager or call start()")
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    #: The Anthropic SDK calls it base_url, boto3 calls it endpoint_url: both are the same address.
    base_url = url
    endpoint_url = url

    @property
    def bodies(self) -> list[Any]:
        """The parsed bodies of the requests received so far."""
        return [r.body for r in self.requests]

    def push(self, *results: Result) -> None:
        """Queue answers for the next requests (before the handler or default is consulted)."""
        with self._lock:
            self._script.extend(results)

    # --- answering ---

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        """Decide the answer to one request. The one place where server-side behaviour is added."""
        protocol = self.protocol
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            self.requests.append(RecordedRequest(method, path, headers, body))
        params = protocol.route(method, urlsplit(path).path)
        if params is None:
            return protocol.error_reply(404, f"the simulator does not serve {method} {path}")
        try:
            call = protocol.parse(body, params)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return protocol.error_reply(400, f"malformed request: {exc}")
        with self._lock:
            self.calls.append(call)
            scripted = self._script.pop(0) if self._script else None
        try:
            if scripted is not None:
                result = scripted
            elif self.handler is not None:
                result = self.handler(body)
            else:
                result = self.answer(call)
            reply = self._as_reply(result, call)
        except Exception as exc:  # a broken handler is a test bug: answer 500 and keep it for the test to see
            self.errors.append(exc)
            return protocol.error_reply(500, f"simulator handler failed: {type(exc).__name__}: {exc}")
        if self.latency:
            reply.delay += self.latency
        return reply

    def _as_reply(self, result: Result, call: Call) -> Reply:
        if isinstance(result, Reply):
            return Reply(result.status, result.body, dict(result.headers), result.delay)
        if isinstance(result, Answer):
            if result.model is None:
                result = replace(result, model=call.model)
            return Reply(200, self.protocol.render(result))
        if isinstance(result, Mapping):
            return Reply(200, dict(result))
        raise TypeError(f"a handler must return a dict, a Reply or an Answer, not {type(result).__name__}")


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs expect

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.server.sim.respond(self.command, self.path, headers, raw)  # type: ignore[attr-defined]
        if reply.delay > 0:
            time.sleep(reply.delay)
        payload = b"" if reply.body is None else json.dumps(reply.body).encode("utf-8")
        try:
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            self.close_connection = True

    do_POST = do_GET = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # tests and benchmarks read srv.requests instead of stderr
