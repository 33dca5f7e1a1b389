"""The shared core of the provider simulators: a local HTTP server that records every request and
answers it through a protocol front-end (Anthropic Messages or Bedrock Converse).

A front-end knows its wire format only: how to route a path, how to read a request into a
protocol-neutral ``Call``, and how to write an ``Answer``, an error or a batch result back.
Everything else lives here once, in ``SimServer.respond`` and ``SimServer.answer_call``: recording,
scripts, handlers, injected faults (``faults.FaultPlan``), rate limits, prompt-cache billing and
latency (``accounting``), the default answer, and the processing of batch jobs.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import socket
import struct
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self
from urllib.parse import urlsplit

from hallumeasure.core.text import count_tokens
from hallumeasure.testing.accounting import Latency, PromptCache, RateLimits
from hallumeasure.testing.answers import AnswerFn, default_answer
from hallumeasure.testing.calls import Answer, Call, Handler, RecordedRequest, Reply, Result, Tokens
from hallumeasure.testing.faults import Fault, FaultPlan, break_schema, cut_short


class Protocol(ABC):
    """One provider's wire format, and the reply helpers built on it."""

    name: ClassVar[str]
    #: HTTP status -> the error code this provider sends with it.
    error_codes: ClassVar[Mapping[int, str]]
    default_error_code: ClassVar[str]
    #: The status this provider answers with when it is overloaded.
    overloaded_status: ClassVar[int] = 529
    #: Whether the provider's own rate limiter sends a retry-after header with its 429s.
    sends_retry_after: ClassVar[bool] = True

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


def check_tool_schema(index: int, schema: Any) -> None:
    """Refuse a tool input schema as Claude's APIs (Anthropic and Bedrock) document: an object schema,
    without ``oneOf``, ``allOf`` or ``anyOf`` at its top level (``if``/``then`` and nested combinators
    are allowed)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError(f"tools.{index}.custom.input_schema: input_schema must be a JSON Schema of type object")
    if any(key in schema for key in ("oneOf", "allOf", "anyOf")):
        raise ValueError(
            f"tools.{index}.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"
        )


def check_tool_results(
    messages: list[dict[str, Any]],
    use_id: Callable[[dict[str, Any]], str | None],
    result_id: Callable[[dict[str, Any]], str | None],
) -> None:
    """Refuse tool results that do not answer a tool call of the assistant message just before them,
    as both Claude APIs do (``use_id`` / ``result_id`` read a content block's call id, or None)."""
    previous: set[str] = set()
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        for block in blocks:
            answered = result_id(block)
            if answered is not None and (message.get("role") != "user" or answered not in previous):
                raise ValueError(
                    f"messages.{index}: unexpected tool_use_id found in tool_result blocks: {answered}. "
                    "Each tool_result block must have a corresponding tool_use block in the previous "
                    "message."
                )
        previous = {i for b in blocks if (i := use_id(b)) is not None} if message.get("role") == "assistant" else set()


# --- batches ---------------------------------------------------------------------------------------


@dataclass
class BatchItem:
    """One request of a batch job and, once processed, its outcome and reply."""

    custom_id: str
    body: Any
    outcome: str = "processing"  # succeeded, errored, expired or canceled
    reply: Reply | None = None
    #: The neutral answer of a succeeded item (what the front-end renders as its result).
    answer: Answer | None = None


@dataclass
class BatchJob:
    """A batch the simulator accepted: every item is answered through ``answer_call`` at once, but the
    job only reports that it has ended ``batch_delay`` seconds after it was created."""

    id: str
    items: list[BatchItem]
    created_at: datetime
    ends_at: float
    meta: dict[str, Any] = field(default_factory=dict)
    canceled: bool = False
    polls: int = 0

    def ended(self, now: float | None = None) -> bool:
        return self.canceled or (time.monotonic() if now is None else now) >= self.ends_at

    def cancel(self) -> None:
        """Cancel the job unless it has ended: nothing has ended yet, so every request is canceled."""
        if not self.ended():
            for item in self.items:
                item.outcome = "canceled"
            self.canceled = True

    def counts(self) -> dict[str, int]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if not self.ended():
            counts["processing"] = len(self.items)
            return counts
        for item in self.items:
            counts[item.outcome] += 1
        return counts


# --- the server ---------------------------------------------------------------------------------------


@dataclass
class CallRecord:
    """One model call as the server handled it, in arrival order (batch items included)."""

    index: int
    call: Call
    arrived: float  # time.monotonic() at arrival
    status: int = 0
    fault: Fault | None = None
    usage: Tokens | None = None  # what the call was billed (None when it was refused)
    batch_id: str | None = None
    replied: float | None = None  # when the last byte of the reply was written
    cache_arrival: float = field(default=0.0, repr=False)  # arrival on the prompt cache's clock

    @property
    def tool_name(self) -> str | None:
        return self.call.tool.get("name") if self.call.tool else None


LatencyFn = Callable[[Call, Tokens], float]


class SimServer:
    """A provider simulator on 127.0.0.1 with an ephemeral port; use it as a context manager.

    Each model call is answered, in order of precedence, by the next item of ``script``, by an
    injected fault (``faults``), by a 429 when ``limits`` are exceeded, by ``handler(body)`` (the
    parsed wire body), or by ``answer(call)`` (the neutral view; by default ``default_answer``). A
    result may be a wire body dict, a ``Reply`` or a neutral ``Answer``.

    ``latency`` is seconds added to every answer: a number, a ``Latency`` (depends on the billed
    tokens) or a function ``(call, tokens) -> seconds``. ``prompt_cache`` (a ``PromptCache``, or
    True for the defaults) bills cache reads and writes at the breakpoints of each request; without
    it, every input token is plain input. Answers given as ``Answer`` get honest usage from the
    server: input from its own tokenizer (and cache), output counted when the answer gives none.
    Batch jobs end ``batch_delay`` seconds after they are created.
    """

    protocol: ClassVar[Protocol]

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        script: Iterable[Result] = (),
        answer: AnswerFn | None = None,
        latency: float | Latency | LatencyFn = 0.0,
        faults: FaultPlan | None = None,
        limits: RateLimits | None = None,
        prompt_cache: PromptCache | bool | None = None,
        batch_delay: float = 0.05,
        host: str = "127.0.0.1",
    ) -> None:
        self.handler = handler
        self.answer = answer or default_answer
        self.latency = latency
        self.faults = faults
        self.limits = limits
        self.prompt_cache = PromptCache() if prompt_cache is True else (prompt_cache or None)
        self.batch_delay = batch_delay
        self.requests: list[RecordedRequest] = []
        self.calls: list[Call] = []
        #: Every model call with its timing, fault and bill, in arrival order.
        self.log: list[CallRecord] = []
        #: (arrival index, fault) of every fault the plan injected.
        self.injected: list[tuple[int, Fault]] = []
        #: Exceptions raised by the handler (each was answered with a 500).
        self.errors: list[BaseException] = []
        self.batches: dict[str, BatchJob] = {}
        self._script = list(script)
        self._lock = threading.RLock()
        self._closing = threading.Event()
        self._ids = itertools.count(1)
        self._host = host
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---

    def start(self) -> Self:
        self._closing.clear()
        http = _HTTPServer((self._host, 0), _RequestHandler)
        http.daemon_threads = True
        http.sim = self  # type: ignore[attr-defined]
        self._http = http
        self._thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes answers that are being held back (read-timeout faults)
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        if self._http is None:
            raise RuntimeError("the simulator is not running: use it as a context manager or call start()")
        host, port = self._http.server_address[:2]
        return f"http://{host.decode() if isinstance(host, bytes | bytearray) else host}:{port}"

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

    def billed(self, *, tool: str | None = None) -> Tokens:
        """Tokens billed so far (all calls, or those answering with ``tool``)."""
        total = Tokens()
        with self._lock:
            for record in self.log:
                if record.usage is not None and (tool is None or record.tool_name == tool):
                    total = total + record.usage
        return total

    # --- answering ---

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        """Decide the answer to one HTTP request. Model calls go through ``answer_call``."""
        protocol = self.protocol
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            self.requests.append(RecordedRequest(method, path, headers, body))
        try:
            other = self.serve_other(method, path, headers, raw, body)
        except Exception as exc:  # noqa: BLE001 - a simulator bug is answered, and kept for the test to see
            self.errors.append(exc)
            return protocol.error_reply(500, f"simulator failed: {type(exc).__name__}: {exc}")
        if other is not None:
            return other
        params = protocol.route(method, urlsplit(path).path)
        if params is None:
            return protocol.error_reply(404, f"the simulator does not serve {method} {path}")
        try:
            call = protocol.parse(body, params)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return protocol.error_reply(400, f"malformed request: {exc}")
        return self.answer_call(call, body)

    def serve_other(self, method: str, path: str, headers: dict[str, str], raw: bytes, body: Any) -> Reply | None:
        """Endpoints besides model calls (batches, object storage); front-ends override this."""
        return None

    def answer_call(self, call: Call, body: Any, *, batch_id: str | None = None) -> Reply:
        """Answer one model call: script, fault, rate limit, handler or answer; bill it; add latency.

        Batch items (``batch_id`` given) are neither rate limited nor delayed.
        """
        arrived = time.monotonic()
        with self._lock:
            record = CallRecord(len(self.log), call, arrived, batch_id=batch_id)
            # The prompt cache may run on its own (test) clock: it judges the request at its arrival.
            record.cache_arrival = self.prompt_cache.clock() if self.prompt_cache is not None else arrived
            self.log.append(record)
            self.calls.append(call)
            scripted = self._script.pop(0) if self._script else None
            fault = None
            if scripted is None and self.faults is not None:
                digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
                fault = self.faults.choose(record.index, call, digest, batch=batch_id is not None)
                if fault is not None:
                    self.injected.append((record.index, fault))
            record.fault = fault
        reply, usage, commit = self._decide(call, body, record, scripted, fault, batched=batch_id is not None)
        if batch_id is None:
            reply.delay += self._latency(call, usage or Tokens())
        if fault is Fault.READ_TIMEOUT:
            reply.delay = max(reply.delay, self.faults.hang if self.faults else 30.0)
        elif fault is Fault.TRUNCATED_BODY:
            reply.cut_body = len(reply.payload()) // 2
        elif fault is Fault.CONNECTION_RESET:
            reply.reset_after = len(reply.payload()) // 2
        if commit is not None and self.prompt_cache is not None:  # a commit comes from the prompt cache
            with self._lock:
                commit(self.prompt_cache.clock() + reply.delay)  # readable once this answer is out
        record.status, record.usage = reply.status, usage
        reply.on_sent = lambda: setattr(record, "replied", time.monotonic())
        return reply

    def _decide(
        self, call: Call, body: Any, record: CallRecord, scripted: Result | None, fault: Fault | None, *, batched: bool
    ) -> tuple[Reply, Tokens | None, Callable[[float], None] | None]:
        """The reply, what it is billed, and the prompt-cache commit to run once its timing is known."""
        protocol = self.protocol
        if fault is not None and fault.is_error:
            return self._fault_error(fault), None, None
        try:
            if scripted is not None:
                result = scripted
            elif self.handler is not None:
                result = self.handler(body)
            else:
                result = self.answer(call)
            if fault is not None:
                result = self._spoil(fault, result, call)
            reply, answer = self._as_reply(result, call)
        except Exception as exc:  # noqa: BLE001 - a broken handler is a test bug: answer 500, keep it for the test
            self.errors.append(exc)
            return protocol.error_reply(500, f"simulator handler failed: {type(exc).__name__}: {exc}"), None, None
        if answer is None:
            return reply, None, None
        usage, commit = answer.usage, None
        if self.prompt_cache is not None or usage == Tokens():
            output = usage.output_tokens or _output_tokens(answer)
            pieces = call.pieces()
            with self._lock:
                if self.prompt_cache is not None:
                    bill, commit = self.prompt_cache.bill(call.model, pieces, at=record.cache_arrival)
                    usage = Tokens(bill.input_tokens, output, bill.cache_read_tokens, bill.cache_write_tokens)
                else:
                    usage = Tokens(input_tokens=sum(p.tokens for p in pieces), output_tokens=output)
        if call.max_tokens is not None and usage.output_tokens > call.max_tokens:
            # Generation stops at max_tokens, as the providers do: what was written so far, billed as such.
            answer, usage = _stopped_at_max_tokens(answer), replace(usage, output_tokens=call.max_tokens)
        if self.limits is not None and scripted is None and not batched:
            with self._lock:
                wait, limit = self.limits.admit(usage.input_tokens + usage.cache_write_tokens, usage.output_tokens)
            if wait > 0:  # refused: nothing is billed and nothing is written to the cache
                retry_after = round(wait + 0.0005, 3) if protocol.sends_retry_after else None
                return (
                    protocol.error_reply(429, f"simulated {limit} limit exceeded", retry_after=retry_after),
                    None,
                    None,
                )
        answer = replace(answer, usage=usage)
        return Reply(200, protocol.render(answer), answer=answer), usage, commit

    def _fault_error(self, fault: Fault) -> Reply:
        protocol, plan = self.protocol, self.faults
        assert plan is not None
        if fault is Fault.RATE_LIMIT:
            return protocol.error_reply(429, "simulated rate limit", retry_after=plan.retry_after)
        if fault is Fault.RATE_LIMIT_NO_RETRY_AFTER:
            return protocol.error_reply(429, "simulated rate limit")
        if fault is Fault.OVERLOADED:
            return protocol.error_reply(
                protocol.overloaded_status, "simulated overload", retry_after=plan.overload_retry_after
            )
        return protocol.error_reply(500 if fault is Fault.SERVER_ERROR else 503, f"simulated {fault.value}")

    def _spoil(self, fault: Fault, result: Result, call: Call) -> Result:
        """Turn a good answer into the bad one the fault names (transport faults spoil it later)."""
        if fault.is_transport or not isinstance(result, Answer):
            return result
        if fault is Fault.REFUSAL:
            return replace(
                result,
                text="I can't help with that request.",
                tool_name=None,
                tool_input=None,
                stop_reason="refusal",
                usage=Tokens(),
            )
        if fault is Fault.EMPTY:
            return replace(result, text="", tool_name=None, tool_input=None, stop_reason="end_turn", usage=Tokens())
        if fault is Fault.SCHEMA_VIOLATION and result.tool_input is not None:
            schema = (call.tool or {}).get("input_schema") or {}
            return replace(result, tool_input=break_schema(result.tool_input, schema), usage=Tokens())
        if fault is Fault.MAX_TOKENS:
            if result.tool_input is not None:
                return replace(
                    result, tool_input=cut_short(result.tool_input), stop_reason="max_tokens", usage=Tokens()
                )
            return replace(result, text=result.text[: len(result.text) // 2], stop_reason="max_tokens", usage=Tokens())
        return result

    def _as_reply(self, result: Result, call: Call) -> tuple[Reply, Answer | None]:
        if isinstance(result, Reply):
            return replace(result, headers=dict(result.headers)), None
        if isinstance(result, Answer):
            if result.model is None:
                result = replace(result, model=call.model)
            return Reply(200), result
        if isinstance(result, Mapping):
            return Reply(200, dict(result)), None
        raise TypeError(f"a handler must return a dict, a Reply or an Answer, not {type(result).__name__}")

    def _latency(self, call: Call, usage: Tokens) -> float:
        latency = self.latency
        if isinstance(latency, Latency):
            return latency.seconds(
                usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens
            )
        if callable(latency):
            return float(latency(call, usage))
        return float(latency or 0.0)

    # --- batches (the front-ends translate the wire format; the processing is here) ---

    def create_batch(
        self,
        items: Iterable[tuple[str, Any, Mapping[str, str]]],
        *,
        prefix: str = "batch_",
        meta: Mapping[str, Any] | None = None,
    ) -> BatchJob:
        """Accept a batch of ``(custom id, wire body, route params)`` and answer every item now."""
        job_id = f"{prefix}{next(self._ids):06d}{hashlib.sha256(str(time.time_ns()).encode()).hexdigest()[:12]}"
        job = BatchJob(
            id=job_id,
            items=[],
            created_at=datetime.now(UTC),
            ends_at=time.monotonic() + self.batch_delay,
            meta=dict(meta or {}),
        )
        for custom_id, body, params in items:
            item = BatchItem(custom_id, body)
            try:
                call = self.protocol.parse(body, params)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                item.outcome, item.reply = "errored", self.protocol.error_reply(400, f"malformed request: {exc}")
                job.items.append(item)
                continue
            reply = self.answer_call(call, body, batch_id=job_id)
            with self._lock:
                fault = next((r.fault for r in reversed(self.log) if r.batch_id == job_id), None)
            item.reply, item.answer = reply, reply.answer
            if fault is Fault.READ_TIMEOUT:
                item.outcome = "expired"
            elif fault is not None and fault.is_transport:
                item.outcome, item.reply = "errored", self.protocol.error_reply(500, "simulated internal error")
            else:
                item.outcome = "succeeded" if reply.status == 200 else "errored"
            job.items.append(item)
        with self._lock:
            self.batches[job.id] = job
        return job

    def batch_or_reply(
        self, method: str, batch_id: str | None, body: Any, create: Callable[[Any], Reply], missing: str
    ) -> BatchJob | Reply:
        """The batch ``batch_id`` names, or the reply when there is none to act on: without an id, a POST
        creates one (``create(body)``) and listing is not simulated; an unknown id is a 404 (``missing``)."""
        if batch_id is None:
            if method != "POST":
                return self.protocol.error_reply(405, "listing batches is not simulated")
            return create(body)
        job = self.find_batch(batch_id)
        return self.protocol.error_reply(404, missing) if job is None else job

    def find_batch(self, job_id: str) -> BatchJob | None:
        with self._lock:
            job = self.batches.get(job_id)
            if job is not None:
                job.polls += 1
            return job


def _stopped_at_max_tokens(answer: Answer) -> Answer:
    tool_input = cut_short(answer.tool_input) if answer.tool_input is not None else None
    return replace(answer, text=answer.text[: len(answer.text) // 2], tool_input=tool_input, stop_reason="max_tokens")


def _output_tokens(answer: Answer) -> int:
    return count_tokens(answer.text) + (
        count_tokens(json.dumps(answer.tool_input, sort_keys=True)) if answer.tool_input is not None else 0
    )


class _HTTPServer(ThreadingHTTPServer):
    # The default listen backlog (5) overflows when a client opens dozens of connections at once, and
    # the kernel then resets some of them: a fault nobody asked for.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # a client that went away (killed, or timed out) is not a simulator failure
        super().handle_error(request, client_address)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs expect

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            raw = _read_chunked(self.rfile)
        headers = {k.lower(): v for k, v in self.headers.items()}
        sim: SimServer = self.server.sim  # type: ignore[attr-defined]
        reply = sim.respond(self.command, self.path, headers, raw)
        if reply.delay > 0 and sim._closing.wait(reply.delay):
            self.close_connection = True
            return  # the server is closing: drop the held-back answer
        payload = reply.payload()
        sent = payload[: reply.cut_body] if reply.cut_body is not None else payload
        try:
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(sent)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if reply.reset_after is not None:
                self.wfile.write(sent[: reply.reset_after])
                self.wfile.flush()
                self._reset()
                return
            self.wfile.write(sent)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            self.close_connection = True
        finally:
            if reply.on_sent is not None:
                reply.on_sent()

    def _reset(self) -> None:
        """Abort the connection with a TCP reset (SO_LINGER 0), as a crashed proxy would."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    def finish(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # the connection was reset on purpose
            super().finish()

    do_POST = do_GET = do_PUT = do_DELETE = do_HEAD = _serve  # noqa: N815 - the names http.server dispatches to

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # tests and benchmarks read srv.requests instead of stderr


def _read_chunked(stream: Any) -> bytes:
    chunks: list[bytes] = []
    while True:
        size = int(stream.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while stream.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(chunks)
        chunks.append(stream.read(size))
        stream.readline()
