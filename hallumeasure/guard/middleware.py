"""The guard's ASGI middleware: API keys, the declared-size limit, a count per request and an access log that
carries no request text nor query string."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from typing import Any

from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hallumeasure.guard.answers import shutting_down, too_large
from hallumeasure.guard.metrics import GuardMetrics, endpoint_label

log = logging.getLogger("hallumeasure.guard")
access_log = logging.getLogger("hallumeasure.guard.access")

#: Paths open without a key (probes and scrapes carry no request data).
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


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
            if self.keys and path not in OPEN_PATHS and not authorised(headers.get(b"authorization", b""), self.keys):
                answer: Response = JSONResponse(
                    {"detail": "missing or wrong API key (send 'Authorization: Bearer <key>')"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await answer(scope, receive, send_counted)
                return
            declared = headers.get(b"content-length", b"")
            if declared.isdigit() and int(declared) > self.max_bytes:
                await too_large(self.max_bytes)(scope, receive, send_counted)
                return
            await self.app(scope, receive, send_counted)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # This request itself was cancelled: the server is stopping (past its graceful timeout).
                if status == 499:
                    with contextlib.suppress(Exception):
                        await shutting_down()(scope, receive, send_counted)
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


def authorised(header: bytes, keys: list[bytes]) -> bool:
    scheme, _, token = header.partition(b" ")
    given = token.strip() if scheme.lower() == b"bearer" else b""
    # Compare with every key, always, so the time taken does not say which key (or how much of one) matched.
    matches = [hmac.compare_digest(given, key) for key in keys]
    return any(matches)
