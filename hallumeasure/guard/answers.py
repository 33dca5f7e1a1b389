"""The guard's HTTP answers other than a result: each error with its status, in words that say what to do and
never repeat the request's text (a key, a header, a field's value), and the Content-Types each endpoint reads."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from hallumeasure.guard.settings import WorkLimitError
from hallumeasure.guard.workers import WorkerError

log = logging.getLogger("hallumeasure.guard")


class Detail(BaseModel):
    """An error: what went wrong and what to do; never the request's own text."""

    detail: str | list[dict[str, Any]]
    request_id: str | None = None


#: The error answers of the check endpoints, as the OpenAPI page lists them.
ERRORS: dict[int | str, dict[str, Any]] = {
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


#: The Content-Types ``/v1/check`` reads. A request without one is read as JSON (raw bytes sent by most
#: clients carry none); another one gets 415: plain text, or a form (what ``curl -d`` sends unless told).
JSON_TYPES = ("application/json",)
#: The Content-Types ``/v1/check/stream`` reads: NDJSON under its usual names, and JSON for clients that
#: send every body as JSON. A request without one is read as NDJSON.
NDJSON_TYPES = ("application/x-ndjson", "application/ndjson", "application/jsonl", "application/json")


def wrong_media_type(request: Request, accepted: tuple[str, ...]) -> JSONResponse | None:
    """A 415 that names the types the endpoint reads, when the request declares another; None otherwise.
    The declared type is not echoed (a header is the client's text)."""
    declared = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if not declared or declared in accepted:
        return None
    detail = f"the body must be sent as {' or '.join(accepted)} (header Content-Type), not another type"
    return JSONResponse({"detail": detail}, status_code=415)


def status_of(exc: Exception) -> int:
    if isinstance(exc, WorkLimitError):
        return 413
    if isinstance(exc, WorkerError):
        return 500
    return 422


#: What a client is told of a failure of the guard's own (the log has the rest: exit statuses, exception types).
GUARD_FAILED = "the guard failed; see its log"
SHUTTING_DOWN = "the server is shutting down; send the request again (to another server)"


def refused(exc: Exception, request_id: str) -> JSONResponse:
    if isinstance(exc, WorkerError):
        log.error("request %s: %s", request_id, exc)
        return JSONResponse({"detail": GUARD_FAILED, "request_id": request_id}, status_code=500)
    return JSONResponse({"detail": str(exc), "request_id": request_id}, status_code=status_of(exc))


def shutting_down() -> JSONResponse:
    return JSONResponse({"detail": SHUTTING_DOWN}, status_code=503, headers={"Connection": "close"})


def busy() -> JSONResponse:
    return JSONResponse(
        {"detail": "the guard is at its concurrency limit; retry shortly"},
        status_code=429,
        headers={"Retry-After": "1"},
    )


def past_deadline(seconds: float, request_id: str) -> JSONResponse:
    return JSONResponse(
        {"detail": f"the check did not finish within {seconds:g} s (setting timeout_s)", "request_id": request_id},
        status_code=504,
    )


def too_large(limit: int) -> JSONResponse:
    # The rest of the body is not read: the connection closes after the answer (lingering, so that a client
    # still sending reads the 413 rather than a reset), rather than read an unbounded body to keep it alive.
    return JSONResponse(
        {"detail": f"request body over the {limit}-byte limit (setting max_request_bytes)"},
        status_code=413,
        headers={"Connection": "close"},
    )


#: An unknown key that a 422 may name: a plain field name (a long or odd one may be hostile, and is not echoed).
_PLAIN_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def validation_errors(errors: Any) -> list[dict[str, Any]]:
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
