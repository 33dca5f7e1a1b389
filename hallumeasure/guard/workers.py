"""Judge worker processes: the keyless judges' CPU-bound work, off the server's event loop.

The offline and NLI judges spend CPU, not I/O: run on the event loop, one large request would freeze
every other request and ``/healthz`` with it, and no asyncio deadline could interrupt it. So the
server hands each fast path (``Guard.judged``) to one of a few worker processes, each holding its
own extractor and judge. A caller that gives up (its deadline passed, its client left) has its
worker killed and a fresh one started: a runaway request costs one process, never the server.

The deadline is the caller's (``asyncio.timeout`` around the whole check): it covers the wait for a
free worker as well as the judging.

A worker takes seconds to start (it imports and builds its judge), so the pool keeps ``spares`` started
workers out of rotation: one takes a lost worker's place at once, and a new spare starts behind it. A
worker is also retired after ``max_checks`` checks (its caches and heap end with it), through the same
spare. Workers run at a lower CPU priority (``WORKER_NICE``) than the server, whose event loop answers
probes and judges the small checks itself: when cores are short, heavy checks wait, not everyone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from hallumeasure.core.types import Sample
from hallumeasure.guard.core import CheckSize, Guard
from hallumeasure.guard.settings import GuardSettings
from hallumeasure.pipeline.judging import Judged

log = logging.getLogger("hallumeasure.guard")

#: Seconds a new worker may take to build its judge (the NLI model loads in a few).
START_TIMEOUT_S = 120.0
#: What a new worker judges before it says it is ready.
WARM_UP = Sample(id="warm-up", context="The hall opened in 1901 with 120 seats.", response="The hall has 120 seats.")
#: How much lower a worker's CPU priority is than the server's (``os.nice``).
WORKER_NICE = 10


#: Backoff before starting a replacement once more workers than the pool's size ended (or failed to start)
#: within ``BACKOFF_WINDOW_S``: ``BACKOFF_S``, doubling with each further end, at most ``BACKOFF_MAX_S``.
BACKOFF_S = 0.25
BACKOFF_MAX_S = 5.0
BACKOFF_WINDOW_S = 10.0


class WorkerError(RuntimeError):
    """A judge worker failed in a way that is not the request's fault (it died, or raised something odd).
    Its message is for the log: a client is told only that the guard failed."""

    def __init__(self, message: str, *, exit_status: str | None = None) -> None:
        super().__init__(message)
        self.exit_status = exit_status


class _WorkerEndedError(WorkerError):
    """A worker's process ended before it answered."""


def _worker_main(conn: Connection, settings_json: str) -> None:
    """A worker process: build the fast path once, then judge each sample sent to it until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the server decides
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)
    settings = GuardSettings.model_validate_json(settings_json)
    guard = Guard(settings)
    loop = asyncio.new_event_loop()
    # One check before "ready": the judge loads its data on first use (a second or more), which would
    # otherwise fall on the first request the worker is given, or on the check a spare takes over.
    with contextlib.suppress(Exception):
        loop.run_until_complete(guard.judged(WARM_UP))
    conn.send(("ready", None))
    while True:
        try:
            sample, claims_from, size = conn.recv()
        except (EOFError, OSError):  # the server closed the pipe or died
            return
        try:
            reply: tuple[str, Any] = ("ok", loop.run_until_complete(guard.judged(sample, claims_from, size)))
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
        self.busy = False  # given a request, not yet answered
        self.checks = 0  # requests answered

    def give(self, sample: Sample, claims_from: int, size: CheckSize | None) -> None:
        """Send a request; ``OSError`` (a broken pipe) when the worker had ended before it."""
        self.conn.send((sample, claims_from, size))

    async def answer(self) -> Judged:
        """The answer to the request given; ``WorkerError`` when the worker ended before answering."""
        loop = asyncio.get_running_loop()
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
            raise _WorkerEndedError("a judge worker ended while judging") from exc
        if kind == "ok":
            return value  # type: ignore[no-any-return]
        if kind == "refused":
            raise value
        raise WorkerError(f"a judge worker failed: {value}")

    def signal_kill(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
        with contextlib.suppress(Exception):
            if self.process.is_alive():
                self.process.kill()

    def kill(self) -> None:
        """Stop the process (if it still runs) and reap it, so that its exit status is known."""
        self.signal_kill()
        self.process.join(timeout=5)


def exit_status(code: int | None) -> str:
    """A process's exit status in words for logs and metrics: ``SIGKILL``, ``code 1``, or ``unknown``."""
    if code is None:
        return "unknown"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


@dataclass(frozen=True)
class PoolStatus:
    """The pool as ``/metrics`` and ``/readyz`` show it."""

    size: int
    #: Workers ready or judging (a worker leaves this count the moment its process ends).
    alive: int
    #: Replacements waiting out their backoff or building their judge.
    starting: int
    #: Replacements begun since the pool started (each worker that ended is replaced).
    restarts: int
    #: Replacements that ended before they were ready.
    start_failures: int
    #: Workers retired after ``max_checks`` checks (each is also a restart).
    recycled: int
    #: Started workers held out of rotation, to take a lost worker's place at once.
    spare: int
    #: How the last worker to end ended (``SIGKILL``, ``code 1``), and when (Unix time); None before any.
    last_exit: str | None
    last_exit_at: float | None


class JudgeWorkers:
    """``size`` worker processes, each with the fast path of ``settings``; ``judged`` is ``Guard.judged``
    run in one of them.

    One supervisor keeps the pool full: every worker that ends, whenever it ends (starting, idle, busy,
    or killed at its caller's deadline), leaves the pool in one place (``_lost``) and wakes the
    supervisor, which starts a replacement, after a backoff when workers keep ending. A failed start is
    logged and counted, and another is started: the pool never stays empty. Each worker's process
    sentinel is watched on the event loop, so a worker that dies while idle is dropped at once, and a
    request is never given to a worker found dead.
    """

    def __init__(self, settings: GuardSettings, size: int, *, spares: int = 1, max_checks: int = 0) -> None:
        if size < 1:
            raise ValueError("a pool of judge workers needs at least one")
        # A worker needs only the extractor and the judge: the LLM steps stay in the server (they wait on I/O).
        self._settings_json = settings.model_copy(update={"explainer": None, "rewriter": "offline"}).model_dump_json()
        self.size = size
        self.spares = spares
        #: Checks a worker answers before it is retired (0: never).
        self.max_checks = max_checks
        self._spare: list[_Worker] = []
        self._unstarted_spares = spares  # the first spares' starts are no restarts
        self._context = multiprocessing.get_context("spawn")  # never fork a process that runs an event loop
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()  # may hold workers since lost: skipped when taken
        self._live: set[_Worker] = set()
        self._lock = threading.Lock()  # guards _closed and _spawning against the threads that start workers
        self._spawning: set[BaseProcess] = set()
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._supervisor: asyncio.Task[None] | None = None
        self._recent_ends: deque[float] = deque()
        self.starting = 0
        self.restarts = 0
        self.start_failures = 0
        self.recycled = 0
        self.last_exit: str | None = None
        self.last_exit_at: float | None = None
        self._closed = False

    async def start(self) -> None:
        """Start every worker, wait until each has built its judge, then supervise the pool. A worker that
        cannot start here (a judge that cannot be built) stops the server from starting."""
        results = await asyncio.gather(
            *(asyncio.to_thread(self._spawn) for _ in range(self.size)), return_exceptions=True
        )
        for result in results:
            if isinstance(result, _Worker):
                self._adopt(result)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            await self.aclose()
            raise failed[0]
        self._supervisor = asyncio.get_running_loop().create_task(self._supervise(), name="judge-pool-supervisor")
        self._supervisor.add_done_callback(_log_if_failed)

    @property
    def status(self) -> PoolStatus:
        return PoolStatus(
            size=self.size,
            alive=len(self._live),
            starting=self.starting,
            restarts=self.restarts,
            start_failures=self.start_failures,
            recycled=self.recycled,
            spare=len(self._spare),
            last_exit=self.last_exit,
            last_exit_at=self.last_exit_at,
        )

    @property
    def ready(self) -> bool:
        """Whether a worker can take a check now or once it is free (False while every worker is starting)."""
        return bool(self._live) and not self._closed

    async def judged(self, sample: Sample, claims_from: int = 0, size: CheckSize | None = None) -> Judged:
        """``Guard.judged`` in a free worker (``size``: the sample's, when the caller measured it); a caller
        cancelled meanwhile (deadline, disconnect) gets its worker killed and replaced, so the work stops with it."""
        try:
            return await self._judged_once(sample, claims_from, size)
        except _WorkerEndedError:
            # Its worker ended on its own while judging: killed from outside, crashed, or already dying when it
            # was taken (a killed process can take a moment to end). Once more in another worker: a request
            # that ends its worker again gets the error.
            return await self._judged_once(sample, claims_from, size)

    async def _judged_once(self, sample: Sample, claims_from: int, size: CheckSize | None) -> Judged:
        worker = await self._given(sample, claims_from, size)
        keep, ended = False, False
        try:
            result = await worker.answer()
            keep = True
            return result
        except ValueError:  # a refused request leaves its worker ready for the next
            keep = True
            raise
        except _WorkerEndedError:
            ended = True
            raise
        finally:
            worker.busy = False
            worker.checks += 1
            if keep and self.max_checks and worker.checks >= self.max_checks:
                self.recycled += 1
                self._lost(worker, f"was retired after {worker.checks} checks", planned=True, exit_as="retired")
            elif keep and not self._closed:
                self._idle.put_nowait(worker)
            else:
                # Its caller gave up (deadline, client gone), or it reported a failure: the pool stops it.
                self._lost(worker, "died while judging" if ended else "was stopped by the pool", planned=not ended)

    async def _given(self, sample: Sample, claims_from: int, size: CheckSize | None) -> _Worker:
        """A free worker that runs and has been given the request (one found dead is dropped, the next taken)."""
        while True:
            worker = await self._idle.get()
            if worker in self._live and worker.process.is_alive():
                try:
                    worker.give(sample, claims_from, size)
                except OSError:  # it ended between the check and the send: the request was never given
                    pass
                except BaseException:  # the request would not pickle: nothing was written, the worker is free
                    self._idle.put_nowait(worker)
                    raise
                else:
                    worker.busy = True
                    return worker
            self._lost(worker, "died while idle")

    def _adopt(self, worker: _Worker) -> None:
        """A started worker joins the rotation, or waits as a spare when the rotation is full."""
        if self._closed:
            worker.kill()
            return
        asyncio.get_running_loop().add_reader(worker.process.sentinel, self._on_exit, worker)
        if len(self._live) < self.size:
            self._live.add(worker)
            self._idle.put_nowait(worker)
        else:
            self._spare.append(worker)

    def _promote_spare(self) -> None:
        """A spare takes the place of a worker that left the rotation (the supervisor starts a new spare)."""
        while self._spare and len(self._live) < self.size and not self._closed:
            worker = self._spare.pop(0)
            if worker.process.is_alive():
                self._live.add(worker)
                self._idle.put_nowait(worker)
            else:
                self._spare_lost(worker)

    def _spare_lost(self, worker: _Worker) -> None:
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(worker.process.sentinel)
        worker.kill()
        self.last_exit, self.last_exit_at = exit_status(worker.process.exitcode), time.time()
        self._recent_ends.append(time.monotonic())
        log.warning("a spare judge worker died (%s); starting another", self.last_exit)
        self._wake.set()

    def _on_exit(self, worker: _Worker) -> None:
        """A worker's process ended: dropped at once when idle; a busy one is left to its caller, who reads the
        end on the worker's pipe (closing that pipe under it would leave it waiting)."""
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(worker.process.sentinel)
        if worker in self._spare:
            self._spare.remove(worker)
            self._spare_lost(worker)
        elif not worker.busy:
            self._lost(worker, "died while idle")

    def _lost(self, worker: _Worker, how: str, *, planned: bool = False, exit_as: str | None = None) -> None:
        """The one way out of the pool: stop and reap ``worker``, record how it ended, wake the supervisor.
        ``planned``: the pool stopped it (its caller gave up), which is no sign of a crash loop."""
        if worker not in self._live:
            return
        self._live.discard(worker)
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(worker.process.sentinel)
        worker.kill()
        status = exit_as or exit_status(worker.process.exitcode)
        self.last_exit, self.last_exit_at = status, time.time()
        if self._closed:
            return
        if not planned:
            self._recent_ends.append(time.monotonic())
        (log.info if planned else log.warning)("a judge worker %s (%s); starting another", how, status)
        self._promote_spare()
        self._wake.set()

    async def _supervise(self) -> None:
        """Keep ``size`` workers (and ``spares``) alive or starting; woken whenever one ends or a start finishes."""
        while not self._closed:
            self._wake.clear()
            self._promote_spare()
            while len(self._live) + len(self._spare) + self.starting < self.size + self.spares:
                self.starting += 1
                if self._unstarted_spares:
                    self._unstarted_spares -= 1
                else:
                    self.restarts += 1
                task = asyncio.get_running_loop().create_task(self._replace(self._backoff()))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            await self._wake.wait()

    def _backoff(self) -> float:
        """Seconds to wait before the next start: none while workers end rarely, then doubling with each
        end (or failed start) in the last ``BACKOFF_WINDOW_S``, up to ``BACKOFF_MAX_S``."""
        now = time.monotonic()
        while self._recent_ends and self._recent_ends[0] < now - BACKOFF_WINDOW_S:
            self._recent_ends.popleft()
        over = len(self._recent_ends) - self.size - self.spares
        return 0.0 if over <= 0 else min(BACKOFF_MAX_S, BACKOFF_S * 2 ** (over - 1))

    async def _replace(self, delay: float) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
            worker = await asyncio.to_thread(self._spawn)
        except Exception as exc:  # noqa: BLE001 - never dropped: logged, counted, and the supervisor tries again
            self.start_failures += 1
            self._recent_ends.append(time.monotonic())
            if isinstance(exc, WorkerError) and exc.exit_status is not None:
                self.last_exit, self.last_exit_at = exc.exit_status, time.time()
            if not self._closed:
                log.error("a judge worker did not start: %s; trying again", exc)
        else:
            self._adopt(worker)
        finally:
            self.starting -= 1
            self._wake.set()

    def _spawn(self) -> _Worker:
        """Start a worker process and wait until it has built its judge (in a thread: it blocks)."""
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=_worker_main, args=(theirs, self._settings_json), daemon=True)
        process.start()
        theirs.close()
        with self._lock:
            if not self._closed:
                self._spawning.add(process)
        try:
            if self._closed:
                raise WorkerError("the pool closed while a judge worker started")
            worker = _Worker(process, ours)
            if not ours.poll(START_TIMEOUT_S):
                worker.kill()
                late = f"a judge worker did not start within {START_TIMEOUT_S:g} s"
                raise WorkerError(late, exit_status="start timeout")
            try:
                ours.recv()
            except (EOFError, OSError) as exc:
                worker.kill()
                status = exit_status(process.exitcode)
                raise WorkerError(f"a judge worker ended while starting ({status})", exit_status=status) from exc
            return worker
        except BaseException:
            ours.close()
            with contextlib.suppress(Exception):
                process.kill()
            raise
        finally:
            with self._lock:
                self._spawning.discard(process)

    async def aclose(self) -> None:
        with self._lock:
            self._closed = True
            spawning = list(self._spawning)
        for process in spawning:  # their threads see the pipe end, and return
            with contextlib.suppress(Exception):
                process.kill()
        for task in [self._supervisor, *self._tasks]:
            if task is not None:
                task.cancel()
        loop = asyncio.get_running_loop()
        workers = [*self._live, *self._spare]
        self._live.clear()
        self._spare.clear()
        for worker in workers:
            with contextlib.suppress(Exception):
                loop.remove_reader(worker.process.sentinel)
            worker.signal_kill()
        await asyncio.gather(*(asyncio.to_thread(w.kill) for w in workers))


def _log_if_failed(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the judge pool's supervisor stopped", exc_info=task.exception())
