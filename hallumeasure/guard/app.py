"""The guard as an ASGI app (FastAPI): ``POST /v1/check``, ``POST /v1/check/stream``, health and metrics.

FastAPI gives request validation with pydantic (the same models as in-process use), clear 422
errors and an OpenAPI page; uvicorn serves it (``hallumeasure serve``). Protection lives here:
bearer keys compared in constant time, a request-size limit, bounded concurrency with a queue and
429 beyond it, a deadline per check, and logs that carry no request text.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError

from hallumeasure.guard.core import CheckRequest, CheckResult, Guard
from hallumeasure.guard.metrics import GuardMetrics, endpoint_label
from hallumeasure.guard.settings import GuardSettings, PolicyError
from hallumeasure.guard.stream import SentenceStream, sentence_events
from hallumeasure.guard.traffic import TrafficLog
from hallumeasure.version import __version__

log = logging.getLogger("hallumeasure.guard")

#: Paths open without a key (probes and scrapes carry no request data).
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class Gate:
    """At most ``limit`` checks at once and ``queue`` waiting; beyond that a request is refused at once."""

    def __init__(self, limit: int, queue: int) -> None:
        self._slots = asyncio.Semaphore(limit)
        self._capacity = limit + queue
        self.pending = 0  # running + waiting

    def try_enter(self) -> bool:
        if self.pending >= self._capacity:
            return False
        self.pending += 1
        return True

    async def __aenter__(self) -> None:
        await self._slots.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._slots.release()
        self.pending -= 1

    def leave_unentered(self) -> None:
        self.pending -= 1


def create_app(settings: GuardSettings | None = None, *, guard: Guard | None = None) -> FastAPI:
    """The guard's ASGI app. The judge is built when the app starts (``/readyz`` says when it is)."""
    settings = settings or GuardSettings()
    metrics = GuardMetrics()
    state: dict[str, Any] = {"guard": guard}
    keys = [k.get_secret_value().encode() for k in settings.api_keys]
    traffic = TrafficLog(settings.log_dir, settings.log_sample) if settings.log_dir and settings.log_sample else None

    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if state["guard"] is None:
            state["guard"] = await asyncio.to_thread(Guard, settings)
        yield

    app = FastAPI(
        title="hallumeasure guard",
        version=__version__,
        lifespan=lifespan,  # type: ignore[arg-type]
        docs_url="/docs",
        redoc_url=None,
    )
    gate = Gate(settings.max_concurrency, settings.max_queue)
    metrics.queue_depth.set_function(lambda: gate.pending)

    @app.middleware("http")
    async def protect(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        path = request.url.path
        endpoint = endpoint_label(path)
        if keys and path not in OPEN_PATHS and not _authorised(request.headers.get("authorization", ""), keys):
            metrics.requests.labels(endpoint=endpoint, status="401").inc()
            return JSONResponse(
                {"detail": "missing or wrong API key (send 'Authorization: Bearer <key>')"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > settings.max_request_bytes:
            metrics.requests.labels(endpoint=endpoint, status="413").inc()
            return _too_large(settings.max_request_bytes)
        response = await call_next(request)
        metrics.requests.labels(endpoint=endpoint, status=str(response.status_code)).inc()
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _errors(exc.errors())}, status_code=422)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        ready = state["guard"] is not None
        return JSONResponse({"ready": ready, "judge": settings.judge}, status_code=200 if ready else 503)

    @app.get("/metrics")
    async def prometheus() -> Response:
        body, content_type = metrics.render()
        return Response(body, media_type=content_type)

    @app.post("/v1/check", response_model=CheckResult)
    async def check(request: Request) -> Response:
        body = await _read_limited(request, settings.max_request_bytes)
        if body is None:
            return _too_large(settings.max_request_bytes)
        try:
            payload = CheckRequest.model_validate_json(body)
        except ValidationError as exc:
            return JSONResponse({"detail": _errors(exc.errors())}, status_code=422)
        if not gate.try_enter():
            metrics.rejected.inc()
            return _busy()
        request_id = uuid.uuid4().hex
        started = time.perf_counter()
        try:
            async with gate:
                result = await asyncio.wait_for(state["guard"].run(payload, request_id), settings.timeout_s)
        except PolicyError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=422)
        except TimeoutError:
            metrics.timeouts.inc()
            return JSONResponse(
                {"detail": f"the check did not finish within {settings.timeout_s:g} s", "request_id": request_id},
                status_code=504,
            )
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

    @app.post("/v1/check/stream")
    async def check_stream(request: Request) -> Response:
        """The response arrives as NDJSON: a first line with the source, then lines of ``{"text": delta}``."""
        if not gate.try_enter():
            metrics.rejected.inc()
            return _busy()
        lines = _ndjson(request, settings.max_request_bytes)
        try:
            head = await anext(lines)
            stream = SentenceStream.open(head)
        except (StopAsyncIteration, ValueError, ValidationError) as exc:
            gate.leave_unentered()
            return JSONResponse({"detail": f"the first line must give the source: {exc}"}, status_code=422)

        async def events() -> AsyncIterator[str]:
            async with gate:
                async for event in sentence_events(state["guard"], stream, lines, settings.timeout_s):
                    if event.final is not None:
                        metrics.observe(event.final)
                        if traffic is not None:
                            traffic.maybe_write(stream.head.model_copy(update={"response": stream.text}), event.final)
                    yield event.encode()

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    return app


#: Where ``hallumeasure serve --workers N`` hands the settings to its worker processes (as JSON).
SETTINGS_ENV = "HALLUMEASURE_GUARD_SETTINGS"


def app_from_env() -> FastAPI:
    """The app of one worker process of ``serve --workers N`` (uvicorn imports it by name)."""
    import os

    data = json.loads(os.environ[SETTINGS_ENV])
    return create_app(GuardSettings.model_validate(data))


def _authorised(header: str, keys: list[bytes]) -> bool:
    scheme, _, token = header.partition(" ")
    given = token.strip().encode() if scheme.lower() == "bearer" else b""
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


async def _ndjson(request: Request, limit: int) -> AsyncIterator[dict[str, Any]]:
    """The request body's JSON lines as they arrive, refusing more than ``limit`` bytes in all."""
    buffer, size = b"", 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ValueError(f"the stream passed the {limit}-byte request limit")
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)
    if buffer.strip():
        yield json.loads(buffer)


def _busy() -> JSONResponse:
    return JSONResponse(
        {"detail": "the guard is at its concurrency limit; retry shortly"},
        status_code=429,
        headers={"Retry-After": "1"},
    )


def _too_large(limit: int) -> JSONResponse:
    return JSONResponse({"detail": f"request body over the {limit}-byte limit"}, status_code=413)


def _errors(errors: Any) -> list[dict[str, Any]]:
    """Validation errors without the input echoed back (it may be long, or hostile)."""
    return [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "invalid")} for e in errors]
