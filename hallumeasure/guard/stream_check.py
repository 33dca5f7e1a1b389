"""``POST /v1/check/stream``'s answer: the NDJSON body read line by line as it arrives, each complete sentence
checked and sent as an event, and the whole response's result at the end (``stream.py`` holds the sentences
and the events). Every way a stream can end early (too large, idle, past its deadline, its client gone, the
server stopping) ends it with a status or an ``error`` event, and gives back its slots."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import pydantic_core
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from hallumeasure.core.text import visible
from hallumeasure.guard.answers import GUARD_FAILED, SHUTTING_DOWN, busy, status_of, validation_errors
from hallumeasure.guard.core import Guard, JudgeCall
from hallumeasure.guard.gate import BusyError, Gate
from hallumeasure.guard.metrics import GuardMetrics
from hallumeasure.guard.settings import GuardSettings, PolicyError, WorkLimitError
from hallumeasure.guard.stream import SentenceStream, done_event, error_event, sentence_event
from hallumeasure.guard.traffic import TrafficLog
from hallumeasure.guard.workers import WorkerError

log = logging.getLogger("hallumeasure.guard")


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


class StreamCheck(Response):
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
            await busy()(scope, receive, send)
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
                    await self._fail(scope, receive, send, 503, SHUTTING_DOWN)
            raise

    async def _run(self, body: _BodyLines, send: Send) -> None:
        guard: Guard = self.state["guard"]
        head = await body.json()
        if not isinstance(head, dict):
            raise _RefusedError(422, "the first line must be a JSON object giving the source ('context' or 'passages')")
        try:
            stream = SentenceStream.open(head)
        except ValidationError as exc:
            raise _RefusedError(422, validation_errors(exc.errors())) from None
        try:
            guard.check_size(stream.head.sample())
            guard.settings.resolve(stream.head.policy)
        except (WorkLimitError, PolicyError) as exc:
            raise _RefusedError(status_of(exc), str(exc)) from None
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
            raise _RefusedError(500, GUARD_FAILED) from None
        except (WorkLimitError, PolicyError) as exc:
            raise _RefusedError(status_of(exc), str(exc)) from None
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
