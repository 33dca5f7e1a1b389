"""The guard as an ASGI app (FastAPI): ``POST /v1/check``, ``POST /v1/check/stream``, health and metrics.

FastAPI gives an OpenAPI page and routing; uvicorn serves it (``hallumeasure serve``). This module holds the
routes, the check's handling and the drain on SIGTERM; the protection around them is in its own modules: bearer
keys compared in constant time, the declared-size limit and logs that carry no request text nor query string
(``middleware.py``), bounded concurrency with a queue and 429 beyond it (``gate.py``), the error answers
(``answers.py``), the streamed check (``stream_check.py``). Limits on bytes and on work (source characters,
sentences, claims) and a deadline per check cover queueing and judging; keyless judging runs in worker
processes (``workers.py``) so that the event loop always answers.

Every admission (a check slot, a stream slot) is an ``async with``: it is given back on every path,
whether the request succeeds, fails, is malformed, times out, or its client leaves.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError

from hallumeasure.core.types import Sample
from hallumeasure.guard.answers import (
    ERRORS,
    JSON_TYPES,
    NDJSON_TYPES,
    busy,
    past_deadline,
    refused,
    too_large,
    validation_errors,
    wrong_media_type,
)
from hallumeasure.guard.connections import STATE_KEY, ConnectionLimits
from hallumeasure.guard.core import CheckRequest, CheckResult, CheckSize, Guard, JudgeCall
from hallumeasure.guard.fairness import ClientCaps, client_of
from hallumeasure.guard.gate import BusyError, Gate
from hallumeasure.guard.metrics import GuardMetrics
from hallumeasure.guard.middleware import GuardMiddleware
from hallumeasure.guard.settings import GuardSettings, PolicyError, WorkLimitError, judge_worker_count
from hallumeasure.guard.stream_check import StreamCheck
from hallumeasure.guard.traffic import TrafficLog
from hallumeasure.guard.workers import JudgeWorkers, WorkerError
from hallumeasure.pipeline.judging import Judged
from hallumeasure.version import __version__

log = logging.getLogger("hallumeasure.guard")


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    ready: bool
    judge: str
    draining: bool = False
    #: Judge worker processes that can take a check (None: the server judges on its event loop).
    judge_workers_alive: int | None = None


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
        responses=ERRORS,
        openapi_extra={"requestBody": _body("CheckRequest")},
    )
    async def check(request: Request) -> Response:
        wrong_type = wrong_media_type(request, JSON_TYPES)
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
            return too_large(settings.max_request_bytes)
        try:
            payload = CheckRequest.model_validate_json(body)
        except ValidationError as exc:
            return JSONResponse({"detail": validation_errors(exc.errors())}, status_code=422)
        request_id = uuid.uuid4().hex
        started = time.perf_counter()
        the_guard: Guard = state["guard"]
        try:
            size = the_guard.check_size(payload.sample())
            async with asyncio.timeout_at(deadline), checks.slot():
                result = await the_guard.run(payload, request_id, judge_with=judge_call(request), size=size)
        except BusyError:
            metrics.rejected.inc()
            return busy()
        except TimeoutError:
            metrics.timeouts.inc()
            return past_deadline(settings.timeout_s, request_id)
        except (PolicyError, WorkLimitError, WorkerError) as exc:
            return refused(exc, request_id)
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
        responses={200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}, **ERRORS},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        },
    )
    async def check_stream(request: Request) -> Response:
        """The response arrives as NDJSON: a first line with the source, then lines of ``{"text": delta}``."""
        wrong_type = wrong_media_type(request, NDJSON_TYPES)
        if wrong_type is not None:
            return wrong_type
        return StreamCheck(settings, state, checks, streams, metrics, traffic, judge_call(request))

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


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None once it passes ``limit`` bytes (a chunked body has no length to check first)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _body(model: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}}}}


__all__ = ["GuardMiddleware", "create_app"]


__all__ = ["GuardMiddleware", "create_app"]
