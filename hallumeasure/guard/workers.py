"""Judge worker processes: the keyless judges' CPU-bound work, off the server's event loop.

The offline and NLI judges spend CPU, not I/O: run on the event loop, one large request would freeze
every other request and ``/healthz`` with it, and no asyncio deadline could interrupt it. So the
server hands each fast path (``Guard.judged``) to one of a few worker processes, each holding its
own extractor and judge. A caller that gives up (its deadline passed, its client left) has its
worker killed and a fresh one started: a runaway request costs one process, never the server.

The deadline is the caller's (``asyncio.timeout`` around the whole check): it covers the wait for a
free worker as well as the judging.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from hallumeasure.core.types import Sample
from hallumeasure.guard.core import Guard
from hallumeasure.guard.settings import GuardSettings
from hallumeasure.pipeline.judging import Judged

log = logging.getLogger("hallumeasure.guard")

#: Seconds a new worker may take to build its judge (the NLI model loads in a few).
START_TIMEOUT_S = 120.0


class WorkerError(RuntimeError):
    """A judge worker failed in a way that is not the request's fault (it died, or raised something odd)."""


def _worker_main(conn: Connection, settings_json: str) -> None:
    """A worker process: build the fast path once, then judge each sample sent to it until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the server decides
    settings = GuardSettings.model_validate_json(settings_json)
    guard = Guard(settings)
    loop = asyncio.new_event_loop()
    conn.send(("ready", None))
    while True:
        try:
            sample, claims_from = conn.recv()
        except (EOFError, OSError):  # the server closed the pipe or died
            return
        try:
            reply: tuple[str, Any] = ("ok", loop.run_until_complete(guard.judged(sample, claims_from)))
        except ValueError as exc:  # a work limit, or input the judge refuses: the request's fault
            reply = ("refused", exc)
        except Exception as exc:  # noqa: BLE001 - reported to the server, which answers 500
            reply = ("failed", f"{type(exc).__name__}: {str(exc)[:200]}")
        try:
            conn.send(reply)
        except Exception:  # noqa: BLE001 - e.g. an exception that does not pickle
            conn.send(("failed", f"unpicklable {reply[0]} reply"))


class _Worker:
    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn

    async def call(self, sample: Sample, claims_from: int) -> Judged:
        loop = asyncio.get_running_loop()
        self.conn.send((sample, claims_from))
        readable = loop.create_future()
        fd = self.conn.fileno()

        def wake() -> None:
            if not readable.done():
                readable.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await readable
        finally:
            loop.remove_reader(fd)
        # uvloop's add_reader leaves the pipe non-blocking: a reply larger than the pipe's buffer (a long
        # source's verdicts) would then stop recv half way with EAGAIN, read as a dead worker (a 500).
        os.set_blocking(fd, True)
        try:
            kind, value = self.conn.recv()
        except (EOFError, OSError) as exc:
            raise WorkerError(f"a judge worker died (exit code {self.process.exitcode})") from exc
        if kind == "ok":
            return value  # type: ignore[no-any-return]
        if kind == "refused":
            raise value
        raise WorkerError(f"a judge worker failed: {value}")

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)


class JudgeWorkers:
    """``size`` worker processes, each with the fast path of ``settings``; ``judged`` is ``Guard.judged``
    run in one of them."""

    def __init__(self, settings: GuardSettings, size: int) -> None:
        if size < 1:
            raise ValueError("a pool of judge workers needs at least one")
        # A worker needs only the extractor and the judge: the LLM steps stay in the server (they wait on I/O).
        self._settings_json = settings.model_copy(update={"explainer": None, "rewriter": "offline"}).model_dump_json()
        self.size = size
        self._context = multiprocessing.get_context("spawn")  # never fork a process that runs an event loop
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._all: set[_Worker] = set()
        self._starting: set[asyncio.Task[None]] = set()
        self.replaced = 0
        self._closed = False

    async def start(self) -> None:
        """Start every worker and wait until each has built its judge."""
        await asyncio.gather(*(self._add() for _ in range(self.size)))

    async def _add(self) -> None:
        worker = await asyncio.to_thread(self._spawn)
        if self._closed:
            worker.kill()
            return
        self._all.add(worker)
        self._idle.put_nowait(worker)

    def _spawn(self) -> _Worker:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=_worker_main, args=(theirs, self._settings_json), daemon=True)
        process.start()
        theirs.close()
        if not ours.poll(START_TIMEOUT_S):
            process.kill()
            raise WorkerError(f"a judge worker did not start within {START_TIMEOUT_S:g} s")
        try:
            ours.recv()
        except EOFError as exc:
            raise WorkerError(f"a judge worker exited while starting (exit code {process.exitcode})") from exc
        return _Worker(process, ours)

    @property
    def busy(self) -> int:
        return len(self._all) - self._idle.qsize()

    async def judged(self, sample: Sample, claims_from: int = 0) -> Judged:
        """``Guard.judged`` in a free worker; a caller cancelled meanwhile (deadline, disconnect) gets its
        worker killed and replaced, so the work stops with it."""
        worker = await self._idle.get()
        done = False
        try:
            result = await worker.call(sample, claims_from)
            done = True
            return result
        except (ValueError, WorkerError) as exc:
            done = not isinstance(exc, WorkerError)  # a refused request leaves its worker ready for the next
            raise
        finally:
            if done and not self._closed:
                self._idle.put_nowait(worker)
            else:
                self._retire(worker)

    def _retire(self, worker: _Worker) -> None:
        worker.kill()
        self._all.discard(worker)
        if self._closed:
            return
        self.replaced += 1
        log.warning("a judge worker was stopped (deadline passed, client gone or worker failed); starting another")
        task = asyncio.get_running_loop().create_task(self._add())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    async def aclose(self) -> None:
        self._closed = True
        for task in list(self._starting):
            task.cancel()
        for worker in list(self._all):
            await asyncio.to_thread(worker.kill)
        self._all.clear()
