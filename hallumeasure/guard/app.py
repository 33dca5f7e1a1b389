"""The guard as an ASGI app (FastAPI): ``POST /v1/check``, ``POST /v1/check/stream``, health and metrics.

FastAPI gives an OpenAPI page and routing; uvicorn serves it (``hallumeasure serve``). Protection
lives here: bearer keys compared in constant time, limits on bytes and on work (source characters,
sentences, claims), bounded concurrency with a queue and 429 beyond it, a deadline per check that
covers queueing and judging, keyless judging in worker processes (``workers.py``) so that the event
loop always answers, a drain on SIGTERM, and logs that carry no request text nor query string.

Every admission (a check slot, a stream slot) is an ``async with``: it is given back on every path,
whether the request succeeds, fails, is malformed, times out, or its client leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re
import signal
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pydantic_core
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hallumeasure.core.text import visible
from hallumeasure.core.types import Sample
from hallumeasure.guard.connections import STATE_KEY, ConnectionLimits
from hallumeasure.guard.core import CheckRequest, CheckResult, CheckSize, Guard, JudgeCall
from hallumeasure.guard.fairness import ClientCaps, client_of
from hallumeasure.guard.metrics import GuardMetrics, endpoint_label
from hallumeasure.guard.settings import GuardSettings, PolicyError, WorkLimitError, judge_worker_count
from hallumeasure.guard.stream import SentenceStream, done_event, error_event, sentence_event
from hallumeasure.guard.traffic import TrafficLog
from hallumeasure.guard.workers import JudgeWorkers, WorkerError
from hallumeasure.pipeline.judging import Judged
from hallumeasure.version import __version__

log = logging.getLogger("hallumeasure.guard")
access_log = logging.getLogger("hallumeasure.guard.access")

#: Paths open without a key (probes and scrapes carry no request data).
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class BusyError(Exception):
    """No slot and no room in the queue: the request gets 429."""


class Gate:
    """At most ``limit`` holders at once and ``queue`` waiting; beyond that ``slot`` raises ``BusyError`` at once."""

    def __init__(self, limit: int, queue: int) -> None:
        self._slots = asyncio.Semaphore(limit)
        self._capacity = limit + queue
        self.pending = 0  # holding + waiting

    @asynccontextmanager
    async def slot(self, *, always_queue: bool = False) -> AsyncIterator[None]:
        """Hold a slot for the block; ``always_queue`` waits even when the queue is full (a stream already
        admitted is bounded by its own gate, and must not fail half-way for a burst of checks)."""
        if self.pending >= self._capacity and not always_queue:
            raise BusyError
        self.pending += 1
        try:
            async with self._slots:
                yield
        finally:
            self.pending -= 1


class Detail(BaseModel):
    """An error: what went wrong and what to do; never the request's own text."""

    detail: str | list[dict[str, Any]]
    request_id: str | None = None


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    ready: bool
    judge: str
    draining: bool = False
    #: Judge worker processes that can take a check (None: the server judges on its event loop).
    judge_workers_alive: int | None = None


_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Detail, "description": "missing or wrong API key"},
    413: {
        "model": Detail,
        "description": "over a limit: bytes, source characters, response characters, sentences or claims",
    },
    408: {"model": Detail, "description": "the request's headers or body did not arrive in time"},
    415: {"model": Detail, "description": "a Content-Type the endpoint does not read (the types it reads are named)"},
    422: {"model": Detail, "description": "the request is not a valid check (the fields and problems are named)"},
    429: {"model": Detail, "description": "at the concurrency limit; retry after Retry-After seconds"},
    500: {"model": Detail, "description": "the guard failed (counted in the metrics)"},
    504: {"model": Detail, "description": "the check passed its deadline"},
}


def create_app(settings: GuardSettings | None = None, *, guard: Guard | None = None) -> FastAPI:
    """The guard's ASGI app. The judge (and its worker processes) is built when the app starts
    (``/readyz`` says when). A ``guard`` given here is used as it is, judging on the event loop."""
    settings = settings or GuardSettings()
    metrics = GuardMetrics()
    state: dict[str, Any] = {"guard": guard, "workers": None, "draining": False}
    traffic = TrafficLog(settings.log_dir, settings.log_sample) if settings.log_dir and settings.log_sample else None
    n_workers = judge_worker_count(settings) if guard is None else 0

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[dict[str, Any]]:
        if state["guard"] is None:
            state["guard"] = await asyncio.to_thread(Guard, settings)
        if n_workers:
            workers = JudgeWorkers(
                settings, n_workers, spares=settings.spare_workers, max_checks=settings.worker_max_checks
            )
            await workers.start()
            state["workers"] = workers
            metrics.watch_pool(lambda: workers.status)
        restore = _drain_on_sigterm(state, settings.drain_s)
        try:
            # uvicorn's lifespan state: GuardHttpProtocol (connections.py) reads the connection limits there
            yield {STATE_KEY: ConnectionLimits.of(settings)}
        finally:
            restore()
            if state["workers"] is not None:
                await state["workers"].aclose()

    app = FastAPI(title="hallumeasure guard", version=__version__, lifespan=lifespan, docs_url="/docs", redoc_url=None)
    app.state.guard_state = state
    checks = Gate(settings.max_concurrency, settings.max_queue)
    streams = Gate(settings.max_streams, 0)
    metrics.queue_depth.set_function(lambda: checks.pending)
    metrics.open_streams.set_function(lambda: streams.pending)
    app.add_middleware(
        GuardMiddleware,
        keys=[k.get_secret_value().encode() for k in settings.api_keys],
        max_bytes=settings.max_request_bytes,
        metrics=metrics,
        state=state,
    )

    caps = ClientCaps(settings.max_worker_checks_per_client)

    def judge_call(request: Request) -> JudgeCall | None:
        workers: JudgeWorkers | None = state["workers"]
        if workers is None:
            return None
        guard: Guard = state["guard"]
        client = client_of(request, keyed=bool(settings.api_keys))

        async def judged(sample: Sample, claims_from: int = 0, size: CheckSize | None = None, /) -> Judged:
            size = size or CheckSize.of(sample)
            # A small check is judged here, at once: no hop to a worker, and no wait behind heavy checks there.
            if guard.is_small(size):
                return await guard.judged(sample, claims_from, size)
            async with caps.slot(client):  # one client never holds more than its share of the workers
                return await workers.judged(sample, claims_from, size)

        return judged

    @app.get("/healthz", response_model=Health)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
    async def readyz() -> JSONResponse:
        workers: JudgeWorkers | None = state["workers"]
        # Not ready while no judge worker can take a check (all of them starting again): a load balancer
        # then sends checks elsewhere rather than let them wait out their deadline here.
        ready = state["guard"] is not None and not state["draining"] and (workers is None or workers.ready)
        body = {
            "ready": ready,
            "judge": settings.judge,
            "draining": state["draining"],
            "judge_workers_alive": workers.status.alive if workers is not None else None,
        }
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    async def prometheus() -> Response:
        body, content_type = metrics.render()
        return Response(body, media_type=content_type)

    @app.post(
        "/v1/check",
        response_model=CheckResult,
        responses=_ERRORS,
        openapi_extra={"requestBody": _body("CheckRequest")},
    )
    async def check(request: Request) -> Response:
        wrong_type = _wrong_media_type(request, JSON_TYPES)
        if wrong_type is not None:
            return wrong_type
        # One deadline from arrival: reading the body counts (a client that trickles it holds no slot, but a task).
        deadline = asyncio.get_running_loop().time() + settings.timeout_s
        try:
            async with asyncio.timeout_at(deadline):
                body = await _read_limited(request, settings.max_request_bytes)
        except TimeoutError:
            metrics.timeouts.inc()
            detail = f"the request body did not arrive within {settings.timeout_s:g} s (setting timeout_s)"
            return JSONResponse({"detail": detail}, status_code=408, headers={"Connection": "close"})
        if body is None:
            return _too_large(settings.max_request_bytes)
        try:
            payload = CheckRequest.model_validate_json(body)
        except ValidationError as exc:
            return JSONResponse({"detail": _errors(exc.errors())}, status_code=422)
        request_id = uuid.uuid4().hex
        started = time.perf_counter()
        the_guard: Guard = state["guard"]
        try:
            size = the_guard.check_size(payload.sample())
            async with asyncio.timeout_at(deadline), checks.slot():
                result = await the_guard.run(payload, request_id, judge_with=judge_call(request), size=size)
        except BusyError:
            metrics.rejected.inc()
            return _busy()
        except TimeoutError:
            metrics.timeouts.inc()
            return _deadline(settings.timeout_s, request_id)
        except (PolicyError, WorkLimitError, WorkerError) as exc:
            return _refused(exc, request_id)
        metrics.observe(result)
        if traffic is not None:
            traffic.maybe_write(payload, result)
        log.info(
            "request %s: %s, %d claims, %d unsupported, %.1f ms",
            request_id,
            result.decision.value,
            result.n_claims,
            result.n_unsupported,
            (time.perf_counter() - started) * 1000,
        )
        return Response(result.model_dump_json(), media_type="application/json")

    @app.post(
        "/v1/check/stream",
        response_class=Response,
        responses={200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}, **_ERRORS},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        },
    )
    async def check_stream(request: Request) -> Response:
        """The response arrives as NDJSON: a first line with the source, then lines of ``{"text": delta}``."""
        wrong_type = _wrong_media_type(request, NDJSON_TYPES)
        if wrong_type is not None:
            return wrong_type
        return _StreamCheck(settings, state, checks, streams, metrics, traffic, judge_call(request))

    original_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = original_openapi()
            models = schema.setdefault("components", {}).setdefault("schemas", {})
            request_schema = CheckRequest.model_json_schema(ref_template="#/components/schemas/{model}")
            models.update(request_schema.pop("$defs", {}))
            models["CheckRequest"] = request_schema
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


class GuardMiddleware:
    """Keys, the declared-size limit, one count per request by status (500 included), an access log
    without query strings, and ``Connection: close`` while draining. Pure ASGI: it never reads the body,
    so the endpoint is the body's only reader."""

    def __init__(
        self, app: ASGIApp, *, keys: list[bytes], max_bytes: int, metrics: GuardMetrics, state: dict[str, Any]
    ) -> None:
        self.app = app
        self.keys = keys
        self.max_bytes = max_bytes
        self.metrics = metrics
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        started = time.perf_counter()
        status = 499  # the client left before an answer began
        headers = dict(scope["headers"])

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if self.state["draining"]:
                    message["headers"] = [*message.get("headers", []), (b"connection", b"close")]
            await send(message)

        try:
            if self.keys and path not in OPEN_PATHS and not _authorised(headers.get(b"authorization", b""), self.keys):
                answer: Response = JSONResponse(
                    {"detail": "missing or wrong API key (send 'Authorization: Bearer <key>')"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await answer(scope, receive, send_counted)
                return
            declared = headers.get(b"content-length", b"")
            if declared.isdigit() and int(declared) > self.max_bytes:
                await _too_large(self.max_bytes)(scope, receive, send_counted)
                return
            await self.app(scope, receive, send_counted)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # This request itself was cancelled: the server is stopping (past its graceful timeout).
                if status == 499:
                    with contextlib.suppress(Exception):
                        await _shutting_down()(scope, receive, send_counted)
                raise
            # A cancellation that is not ours (a shared call someone else cancelled) is a failure like another.
            await self._failed(asyncio.CancelledError(), path, status, scope, receive, send_counted)
            status = 500
        except Exception as exc:  # noqa: BLE001 - counted, answered 500, logged without its message (request text)
            await self._failed(exc, path, status, scope, receive, send_counted)
            status = 500
        finally:
            self.metrics.requests.labels(endpoint=endpoint_label(path), status=str(status)).inc()
            # The path only: a query string may hold a secret (a key pasted into a URL).
            access_log.info(
                "%s %s %s %d %.1f ms",
                (scope.get("client") or ("-",))[0],
                scope["method"],
                path,
                status,
                (time.perf_counter() - started) * 1000,
            )

    @staticmethod
    async def _failed(exc: BaseException, path: str, status: int, scope: Scope, receive: Receive, send: Send) -> None:
        """Log ``exc`` by type and place (never its message: it may hold request text), and answer 500 in
        JSON unless an answer has begun."""
        frame = exc.__traceback__
        while frame is not None and frame.tb_next is not None:
            frame = frame.tb_next
        where = f"{frame.tb_frame.f_code.co_filename}:{frame.tb_lineno}" if frame is not None else "?"
        log.error("unhandled %s at %s while answering %s", type(exc).__name__, where, endpoint_label(path))
        if status == 499:
            await JSONResponse({"detail": "the guard failed; see its log"}, status_code=500)(scope, receive, send)


class _ClientGoneError(Exception):
    pass


class _RefusedError(Exception):
    def __init__(self, status: int, detail: str | list[dict[str, Any]]) -> None:
        self.status, self.detail = status, detail


class _BodyLines:
    """The one reader of a streamed request body: its lines as they arrive, within a byte limit and an
    idle timeout. Nothing else calls ``receive`` until the body has ended, so no chunk is lost."""

    def __init__(self, receive: Receive, limit: int, idle_s: float) -> None:
        self.receive = receive
        self.limit = limit
        self.idle_s = idle_s
        self.size = 0
        self.buffer = bytearray()
        self.ended = False

    async def next(self) -> bytes | None:
        """The next non-empty line, or None at the end of the body."""
        while True:
            at = self.buffer.find(b"\n")
            if at >= 0:
                line = bytes(self.buffer[:at])
                del self.buffer[: at + 1]
                if line.strip():
                    return line
                continue
            if self.ended:
                line, self.buffer = bytes(self.buffer), bytearray()
                return line if line.strip() else None
            try:
                message = await asyncio.wait_for(self.receive(), self.idle_s)
            except TimeoutError:
                raise _RefusedError(
                    408, f"the stream sent nothing for {self.idle_s:g} s (setting stream_idle_s)"
                ) from None
            if message["type"] == "http.disconnect":
                raise _ClientGoneError
            chunk = message.get("body", b"")
            self.size += len(chunk)
            if self.size > self.limit:
                raise _RefusedError(413, f"request body over the {self.limit}-byte limit (setting max_request_bytes)")
            self.buffer += chunk
            self.ended = not message.get("more_body", False)

    async def json(self) -> Any:
        line = await self.next()
        if line is None:
            return None
        try:
            # pydantic's parser, as /v1/check's: it refuses a lone surrogate (text no UTF-8 answer can carry)
            return pydantic_core.from_json(line)
        except ValueError:
            raise _RefusedError(422, "a line of the stream is not JSON (or holds a lone surrogate)") from None


class _StreamCheck(Response):
    """``/v1/check/stream``'s answer; it reads the body itself, so that the body has one reader."""

    def __init__(
        self,
        settings: GuardSettings,
        state: dict[str, Any],
        checks: Gate,
        streams: Gate,
        metrics: GuardMetrics,
        traffic: TrafficLog | None,
        judge: JudgeCall | None,
    ) -> None:
        super().__init__(media_type="text/event-stream")
        self.settings, self.state, self.checks, self.streams = settings, state, checks, streams
        self.metrics, self.traffic, self.judge = metrics, traffic, judge
        self.started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        settings = self.settings
        body = _BodyLines(receive, settings.max_request_bytes, settings.stream_idle_s)
        try:
            async with self.streams.slot(), asyncio.timeout(settings.stream_timeout_s):
                await self._run(body, send)
        except BusyError:
            self.metrics.rejected.inc()
            await _busy()(scope, receive, send)
        except _ClientGoneError:
            return
        except _RefusedError as exc:
            await self._fail(scope, receive, send, exc.status, exc.detail)
        except TimeoutError:
            self.metrics.timeouts.inc()
            detail = f"the stream did not finish within {settings.stream_timeout_s:g} s (setting stream_timeout_s)"
            await self._fail(scope, receive, send, 504, detail)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # the server stops (past its graceful timeout)
                with contextlib.suppress(Exception):
                    await self._fail(scope, receive, send, 503, _SHUTTING_DOWN)
            raise

    async def _run(self, body: _BodyLines, send: Send) -> None:
        guard: Guard = self.state["guard"]
        head = await body.json()
        if not isinstance(head, dict):
            raise _RefusedError(422, "the first line must be a JSON object giving the source ('context' or 'passages')")
        try:
            stream = SentenceStream.open(head)
        except ValidationError as exc:
            raise _RefusedError(422, _errors(exc.errors())) from None
        try:
            guard.check_size(stream.head.sample())
            guard.settings.resolve(stream.head.policy)
        except (WorkLimitError, PolicyError) as exc:
            raise _RefusedError(_status(exc), str(exc)) from None
        index = 0
        while True:
            line = await body.json()
            if line is None:
                break
            piece = line.get("text") if isinstance(line, dict) else None
            if not isinstance(piece, str):
                raise _RefusedError(422, 'every line after the first must be {"text": "..."}')
            try:
                guard.check_response_chars(len(stream.text) + len(piece))
            except WorkLimitError as exc:
                raise _RefusedError(413, str(exc)) from None
            for sentence in stream.feed(piece):
                await self._sentence(guard, stream, sentence, index, send)
                index += 1
        for sentence in stream.close():
            await self._sentence(guard, stream, sentence, index, send)
            index += 1
        if not visible(stream.text):
            raise _RefusedError(422, "the stream held no response text (or only characters that show nothing)")
        request = stream.head.model_copy(update={"response": stream.text})
        result = await self._checked(guard.run(request, judge_with=self.judge))
        self.metrics.observe(result)
        if self.traffic is not None:
            self.traffic.maybe_write(request, result)
        await self._emit(send, done_event(result).encode())
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _sentence(
        self, guard: Guard, stream: SentenceStream, sentence: tuple[str, int, int], index: int, send: Send
    ) -> None:
        if stream.reported > self.settings.max_sentences:
            limit = WorkLimitError("response sentences", stream.reported, self.settings.max_sentences, "max_sentences")
            raise _RefusedError(413, str(limit))
        event = await self._checked(sentence_event(guard, stream, sentence, index, self.judge or guard.judged))
        await self._emit(send, event.encode())

    async def _checked(self, work: Any) -> Any:
        """One check of the stream: it holds a check slot only while it runs, under the check deadline."""
        try:
            async with asyncio.timeout(self.settings.timeout_s), self.checks.slot(always_queue=True):
                return await work
        except TimeoutError:
            self.metrics.timeouts.inc()
            raise _RefusedError(504, f"a check did not finish within {self.settings.timeout_s:g} s") from None
        except WorkerError as exc:
            log.error("a stream's check failed: %s", exc)
            raise _RefusedError(500, _GUARD_FAILED) from None
        except (WorkLimitError, PolicyError) as exc:
            raise _RefusedError(_status(exc), str(exc)) from None
        finally:
            if asyncio.iscoroutine(work):
                work.close()

    async def _emit(self, send: Send, data: bytes) -> None:
        if not self.started:
            self.started = True
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream; charset=utf-8"),
                        (b"cache-control", b"no-store"),
                    ],
                }
            )
        await send({"type": "http.response.body", "body": data, "more_body": True})

    async def _fail(self, scope: Scope, receive: Receive, send: Send, status: int, detail: Any) -> None:
        if not self.started:  # still time for a real status
            await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)
            return
        message = detail if isinstance(detail, str) else json.dumps(detail)
        await send({"type": "http.response.body", "body": error_event(status, message).encode(), "more_body": False})


def _drain_on_sigterm(state: dict[str, Any], drain_s: float) -> Any:
    """On SIGTERM: ``/readyz`` says 503 at once and answers close their connections; ``drain_s`` later the
    server's own handler (uvicorn's: stop accepting, finish in-flight work) runs. A second SIGTERM stops
    at once. Returns what undoes it. Only the main thread may set signal handlers: elsewhere (tests that
    run the server in a thread) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGTERM)

    def forward(sig: int, frame: Any) -> None:
        if callable(previous):
            previous(sig, frame)

    def on_sigterm(sig: int, frame: Any) -> None:
        if state["draining"]:
            forward(sig, frame)
            return
        state["draining"] = True
        log.info("SIGTERM: draining for %g s (readyz 503, answers close their connections), then stopping", drain_s)
        loop.call_soon_threadsafe(loop.call_later, drain_s, forward, sig, None)

    signal.signal(signal.SIGTERM, on_sigterm)
    return lambda: signal.signal(signal.SIGTERM, previous)


#: Where ``hallumeasure serve --workers N`` hands the settings to its worker processes (as JSON).
SETTINGS_ENV = "HALLUMEASURE_GUARD_SETTINGS"


def app_from_env() -> FastAPI:
    """The app of one worker process of ``serve --workers N`` (uvicorn imports it by name)."""
    import os

    data = json.loads(os.environ[SETTINGS_ENV])
    return create_app(GuardSettings.model_validate(data))


def _authorised(header: bytes, keys: list[bytes]) -> bool:
    scheme, _, token = header.partition(b" ")
    given = token.strip() if scheme.lower() == b"bearer" else b""
    # Compare with every key, always, so the time taken does not say which key (or how much of one) matched.
    matches = [hmac.compare_digest(given, key) for key in keys]
    return any(matches)


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None once it passes ``limit`` bytes (a chunked body has no length to check first)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


#: The Content-Types ``/v1/check`` reads. A request without one is read as JSON (raw bytes sent by most
#: clients carry none); another one gets 415: plain text, or a form (what ``curl -d`` sends unless told).
JSON_TYPES = ("application/json",)
#: The Content-Types ``/v1/check/stream`` reads: NDJSON under its usual names, and JSON for clients that
#: send every body as JSON. A request without one is read as NDJSON.
NDJSON_TYPES = ("application/x-ndjson", "application/ndjson", "application/jsonl", "application/json")


def _wrong_media_type(request: Request, accepted: tuple[str, ...]) -> JSONResponse | None:
    """A 415 that names the types the endpoint reads, when the request declares another; None otherwise.
    The declared type is not echoed (a header is the client's text)."""
    declared = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if not declared or declared in accepted:
        return None
    detail = f"the body must be sent as {' or '.join(accepted)} (header Content-Type), not another type"
    return JSONResponse({"detail": detail}, status_code=415)


def _body(model: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}}}}


def _status(exc: Exception) -> int:
    if isinstance(exc, WorkLimitError):
        return 413
    if isinstance(exc, WorkerError):
        return 500
    return 422


#: What a client is told of a failure of the guard's own (the log has the rest: exit statuses, exception types).
_GUARD_FAILED = "the guard failed; see its log"
_SHUTTING_DOWN = "the server is shutting down; send the request again (to another server)"


def _refused(exc: Exception, request_id: str) -> JSONResponse:
    if isinstance(exc, WorkerError):
        log.error("request %s: %s", request_id, exc)
        return JSONResponse({"detail": _GUARD_FAILED, "request_id": request_id}, status_code=500)
    return JSONResponse({"detail": str(exc), "request_id": request_id}, status_code=_status(exc))


def _shutting_down() -> JSONResponse:
    return JSONResponse({"detail": _SHUTTING_DOWN}, status_code=503, headers={"Connection": "close"})


def _busy() -> JSONResponse:
    return JSONResponse(
        {"detail": "the guard is at its concurrency limit; retry shortly"},
        status_code=429,
        headers={"Retry-After": "1"},
    )


def _deadline(seconds: float, request_id: str) -> JSONResponse:
    return JSONResponse(
        {"detail": f"the check did not finish within {seconds:g} s (setting timeout_s)", "request_id": request_id},
        status_code=504,
    )


def _too_large(limit: int) -> JSONResponse:
    # The rest of the body is not read: the connection closes after the answer (lingering, so that a client
    # still sending reads the 413 rather than a reset), rather than read an unbounded body to keep it alive.
    return JSONResponse(
        {"detail": f"request body over the {limit}-byte limit (setting max_request_bytes)"},
        status_code=413,
        headers={"Connection": "close"},
    )


#: An unknown key that a 422 may name: a plain field name (a long or odd one may be hostile, and is not echoed).
_PLAIN_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def _errors(errors: Any) -> list[dict[str, Any]]:
    """Validation errors that name the field and the problem, never the input; an unknown key is named only
    when it is a plain field name (a long or odd one may be hostile)."""
    out = []
    for e in errors:
        loc = [p if isinstance(p, int) else str(p) for p in e.get("loc", ())]
        if e.get("type") == "extra_forbidden":
            key = str(loc[-1]) if loc else ""
            named = f"'{key}' is " if _PLAIN_KEY_RE.fullmatch(key) else ""
            out.append({"loc": loc[:-1], "msg": f"{named}an unknown field (this API does not take it)"})
        else:
            out.append({"loc": loc, "msg": str(e.get("msg", "invalid"))[:300]})
    return out


__all__ = ["GuardMiddleware", "create_app"]
