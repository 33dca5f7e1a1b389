"""Batch mode: send requests through the provider's batch service (half price, hours not seconds).

Design: batching happens under the ``Model`` wrapper, so the pipeline keeps its one code path.
``Model(api, batch=Batcher(api, ledger=...))`` hands each request to the ``Batcher``, which
collects the requests that arrive together (until none has arrived for ``collect_window``
seconds), submits them as one batch, polls it, and answers every waiting caller from the results.
Because a stage only starts when the stage before it has answered, each pipeline stage becomes one
batch: all extractions, then all classifications, then the (few) re-asks.

    ledger = BatchLedger.for_run("runs/nightly")
    model = Model(api, batch=Batcher(api, ledger=ledger, progress=print))

Crash safety: every submitted batch is written to the ``batches`` and ``batch_requests`` tables
of the run's ``run.sqlite`` (the ``BatchLedger``) before anyone waits on it. A resumed run makes
the same requests (same request keys), finds them in the ledger and polls the batch that already
carries them instead of submitting them again. Identical requests in flight are sent once.

Failures: a request that errored, expired or was canceled in a batch comes back to ``Model`` as a
retryable ``ProviderError``; ``Model`` retries it (it joins a later batch) up to ``max_retries``
times, after which the pipeline records an error row. Such requests are marked in the ledger so
that a retry is submitted again rather than attached to the batch that failed it. When fewer
requests are collected than the provider accepts in a batch (Bedrock wants at least 100 records),
they are sent on demand instead.

Providers implement ``BatchAPI`` (``AnthropicAPI``: Message Batches; ``BedrockAPI``: batch
inference jobs over S3, Converse-format records).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from hallumeasure.core.errors import ConfigError, HalluMeasureError, ProviderError
from hallumeasure.core.types import Usage
from hallumeasure.models.base import GenerateRequest, GenerateResponse, ModelAPI

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchStatus:
    """Where a batch stands, in provider-neutral terms."""

    batch_id: str
    ended: bool
    total: int
    succeeded: int = 0
    errored: int = 0  # errored, expired or canceled
    state: str = ""  # the provider's own word for it (in_progress, InProgress, Completed, ...)

    @property
    def done(self) -> int:
        return self.succeeded + self.errored


#: A batch result per custom id: the response, or the error the item ended with.
BatchResults = dict[str, "GenerateResponse | ProviderError"]


@runtime_checkable
class BatchAPI(Protocol):
    """A provider's batch service. Custom ids are our request keys (64 hex characters)."""

    spec: str
    #: Fewest and most requests the service takes in one batch.
    batch_min_requests: int
    batch_max_requests: int

    async def submit_batch(self, items: Sequence[tuple[str, GenerateRequest]], *, token: str) -> str:
        """Submit ``(custom id, request)`` pairs; return the batch id. ``token`` identifies the submission."""

    async def poll_batch(self, batch_id: str) -> BatchStatus: ...

    async def batch_results(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> BatchResults:
        """Results of an ended batch for the custom ids in ``requests`` (others are skipped)."""


@runtime_checkable
class CheckedBatchAPI(Protocol):
    """A batch service that needs settings of its own (Bedrock: an S3 location and a role), checked up front."""

    def validate_batch(self) -> None:
        """Raise ``ConfigError`` unless batch mode has what it needs."""


@dataclass(frozen=True)
class BatchProgress:
    """Reported after every poll."""

    model: str
    status: BatchStatus
    #: True when this process found the batch in the ledger (submitted by an earlier process).
    resumed: bool
    elapsed: float


# --- the ledger --------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
  batch_id TEXT PRIMARY KEY, model TEXT NOT NULL, status TEXT NOT NULL, n_requests INTEGER NOT NULL,
  submitted_at TEXT NOT NULL, updated_at TEXT NOT NULL, detail TEXT);
CREATE TABLE IF NOT EXISTS batch_requests (
  batch_id TEXT NOT NULL, custom_id TEXT NOT NULL, request_key TEXT NOT NULL, outcome TEXT,
  PRIMARY KEY (batch_id, custom_id));
CREATE INDEX IF NOT EXISTS batch_requests_by_key ON batch_requests(request_key);
"""
#: Batch states in the ledger: submitted (results pending), ended (results fetched), lost (unusable).
SUBMITTED, ENDED, LOST = "submitted", "ended", "lost"


class BatchLedger:
    """The batches of one run: which request went into which batch, and how it ended.

    Kept in the run's ``run.sqlite`` (tables ``batches`` and ``batch_requests``) so that it can be
    queried with the run and survives a crash; ``BatchLedger(":memory:")`` keeps it for one process.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        # Opened on first use, not before: the run store may still clear the directory (--overwrite)
        # between the moment the models are built and the first batch.
        if self._connection is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            if self.path != ":memory:":
                db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            db.commit()
            self._connection = db
        return self._connection

    @classmethod
    def for_run(cls, run_dir: str | Path) -> BatchLedger:
        """The ledger inside a run directory (its ``run.sqlite``)."""
        from hallumeasure.core.run_files import DATABASE

        return cls(Path(run_dir) / DATABASE)

    def record(
        self, batch_id: str, model: str, pairs: Sequence[tuple[str, str]], detail: dict[str, Any] | None = None
    ) -> None:
        """Remember a submitted batch and its ``(custom id, request key)`` pairs, in one transaction."""
        now = _now()
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO batches VALUES (?, ?, ?, ?, ?, ?, ?)",
                (batch_id, model, SUBMITTED, len(pairs), now, now, json.dumps(detail or {})),
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO batch_requests VALUES (?, ?, ?, NULL)",
                [(batch_id, custom_id, key) for custom_id, key in pairs],
            )

    def find(self, key: str, model: str) -> tuple[str, str] | None:
        """(batch id, custom id) of the newest usable batch carrying ``key``: not lost, and the request
        not known to have failed in it."""
        with self._lock:
            row = self._db.execute(
                "SELECT r.batch_id, r.custom_id FROM batch_requests r JOIN batches b USING (batch_id)"
                " WHERE r.request_key = ? AND b.model = ? AND b.status != ? AND (r.outcome IS NULL OR r.outcome = 'ok')"
                " ORDER BY b.submitted_at DESC LIMIT 1",
                (key, model, LOST),
            ).fetchone()
        return (row[0], row[1]) if row else None

    def submissions(self, key: str) -> int:
        """How many batches carried ``key`` so far."""
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM batch_requests WHERE request_key = ?", (key,)).fetchone()
        return int(row[0])

    def set_status(self, batch_id: str, status: str) -> None:
        with self._lock, self._db:
            self._db.execute(
                "UPDATE batches SET status = ?, updated_at = ? WHERE batch_id = ?", (status, _now(), batch_id)
            )

    def set_outcomes(self, batch_id: str, outcomes: dict[str, str]) -> None:
        """Mark requests ``ok`` or ``error`` (an errored request is submitted again, never re-attached)."""
        with self._lock, self._db:
            self._db.executemany(
                "UPDATE batch_requests SET outcome = ? WHERE batch_id = ? AND custom_id = ?",
                [(outcome, batch_id, custom_id) for custom_id, outcome in outcomes.items()],
            )

    def batches(self) -> list[dict[str, Any]]:
        """Every batch of the run, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT batch_id, model, status, n_requests, submitted_at, updated_at FROM batches"
                " ORDER BY submitted_at"
            ).fetchall()
        names = ("batch_id", "model", "status", "n_requests", "submitted_at", "updated_at")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


# --- the batcher -------------------------------------------------------------------------------------


#: What a caller waits for: the response, or None when the request should be sent on demand instead.
_Answer = asyncio.Future[GenerateResponse | None]


@dataclass
class _Waiter:
    key: str
    request: GenerateRequest
    future: _Answer


@dataclass
class _Poll:
    batch_id: str
    resumed: bool
    waiters: dict[str, list[_Waiter]] = field(default_factory=dict)  # custom id -> callers


class Batcher:
    """Collects requests into batches, submits or resumes them, polls, and hands out the results.

    ``collect_window``: seconds without a new request before a batch is sent. ``poll_interval``
    grows by half after every poll up to ``max_poll_interval``. ``max_wait``: give up on a batch
    after this long (providers expire batches after 24 hours). ``progress`` is called after every
    poll with a ``BatchProgress``.
    """

    def __init__(
        self,
        api: object,
        *,
        ledger: BatchLedger | None = None,
        collect_window: float = 1.0,
        poll_interval: float = 5.0,
        max_poll_interval: float = 60.0,
        max_poll_failures: int = 5,
        max_wait: float = 25 * 3600.0,
        progress: Callable[[BatchProgress], None] | None = None,
    ) -> None:
        if not isinstance(api, BatchAPI):
            name = api.spec if isinstance(api, ModelAPI) else api
            raise ConfigError(f"{name} has no batch service; run without --batch")
        if isinstance(api, CheckedBatchAPI):
            api.validate_batch()  # a missing setting fails now, not after the first stage
        self.api = api
        self.ledger = ledger or BatchLedger(":memory:")
        self.collect_window = collect_window
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        self.max_poll_failures = max_poll_failures
        self.max_wait = max_wait
        self.progress = progress
        #: Batches submitted and batches resumed from the ledger by this process.
        self.submitted: list[str] = []
        self.resumed: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reset()

    def _reset(self) -> None:
        self._pending: dict[str, _Waiter] = {}
        self._waiting: dict[str, _Answer] = {}  # key -> future, for requests inside a live batch
        self._polls: dict[str, _Poll] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._flusher: asyncio.Task[None] | None = None
        self._last_added = 0.0

    async def submit(self, request: GenerateRequest, key: str) -> GenerateResponse | None:
        """The response to ``request`` from a batch; None when it should be sent on demand instead."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # futures and tasks belong to one event loop
            self._loop = loop
            self._reset()
        future = self._waiting.get(key)
        shared = future is not None
        if future is None:
            waiter = self._pending.get(key)
            shared = waiter is not None
            if waiter is None:
                waiter = self._pending[key] = _Waiter(key, request, loop.create_future())
            future = waiter.future
            self._last_added = loop.time()
            if self._flusher is None or self._flusher.done():
                self._flusher = self._spawn(self._flush())
        response = await asyncio.shield(future)  # a caller's cancellation must not cancel the shared future
        if shared and response is not None:
            # An identical request already carries this answer: it is billed once, like a cache hit.
            return response.model_copy(update={"cached": True, "usage": Usage(cached_calls=1)})
        return response

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            idle = loop.time() - self._last_added
            if idle < self.collect_window:
                await asyncio.sleep(self.collect_window - idle)
                continue
            pending, self._pending = self._pending, {}
            try:
                await self._dispatch(list(pending.values()))
            except HalluMeasureError as exc:  # a setting is wrong: retrying will not help
                _fail([w.future for w in pending.values()], exc)
            except Exception as exc:
                log.exception("batch dispatch failed")
                _fail(
                    [w.future for w in pending.values()],
                    ProviderError(f"{self.api.spec}: batch dispatch failed: {exc}", retryable=True, cause="batch"),
                )

    async def _dispatch(self, waiters: list[_Waiter]) -> None:
        fresh: list[_Waiter] = []
        for waiter in waiters:
            found = self.ledger.find(waiter.key, self.api.spec)
            if found is None:
                fresh.append(waiter)
                continue
            batch_id, custom_id = found  # submitted by us earlier or by a process that crashed: poll it
            poll = self._polls.get(batch_id)
            if poll is None:
                poll = self._polls[batch_id] = _Poll(batch_id, resumed=batch_id not in self.submitted)
                if poll.resumed:
                    self.resumed.append(batch_id)
                    log.info("resuming batch %s instead of submitting its requests again", batch_id)
                self._spawn(self._follow(poll))
            poll.waiters.setdefault(custom_id, []).append(waiter)
            self._waiting[waiter.key] = waiter.future
        if not fresh:
            return
        if len(fresh) < self.api.batch_min_requests:
            for waiter in fresh:  # too few for the batch service: the Model sends them on demand
                if not waiter.future.done():
                    waiter.future.set_result(None)
            return
        size = max(1, self.api.batch_max_requests)
        for start in range(0, len(fresh), size):
            await self._submit(fresh[start : start + size])

    async def _submit(self, chunk: list[_Waiter]) -> None:
        items = [(w.key, w.request) for w in chunk]
        # The same requests get the same token (so a provider that deduplicates submissions, as
        # Bedrock does, ignores a resubmission after a crash), unless they were submitted before.
        token = _token([w.key for w in chunk], self.ledger.submissions(chunk[0].key))
        try:
            batch_id = await self.api.submit_batch(items, token=token)
        except ProviderError as exc:
            _fail([w.future for w in chunk], exc)
            return
        # Written before anyone waits on it: a crash from here on resumes by polling.
        self.ledger.record(batch_id, self.api.spec, [(w.key, w.key) for w in chunk])
        self.submitted.append(batch_id)
        poll = self._polls[batch_id] = _Poll(batch_id, resumed=False)
        for waiter in chunk:
            poll.waiters.setdefault(waiter.key, []).append(waiter)
            self._waiting[waiter.key] = waiter.future
        self._spawn(self._follow(poll))

    async def _follow(self, poll: _Poll) -> None:
        """Poll until the batch ends, then answer its waiters."""
        started = time.monotonic()
        interval, failures = min(self.poll_interval, self.max_poll_interval), 0
        try:
            while True:
                try:
                    status = await self.api.poll_batch(poll.batch_id)
                    failures = 0
                except ProviderError as exc:
                    failures += 1
                    if not exc.retryable or failures > self.max_poll_failures:
                        self._give_up(poll, exc)
                        return
                    await asyncio.sleep(interval)
                    continue
                if self.progress is not None:
                    self.progress(BatchProgress(self.api.spec, status, poll.resumed, time.monotonic() - started))
                if status.ended:
                    break
                if time.monotonic() - started > self.max_wait:
                    self._give_up(
                        poll,
                        ProviderError(
                            f"{self.api.spec}: batch {poll.batch_id} did not end within {self.max_wait:g} s",
                            retryable=False,
                            cause="batch_timeout",
                        ),
                    )
                    return
                await asyncio.sleep(interval)
                interval = min(self.max_poll_interval, interval * 1.5)
            try:
                wanted = {custom_id: waiters[0].request for custom_id, waiters in poll.waiters.items()}
                results = await self.api.batch_results(poll.batch_id, wanted)
            except ProviderError as exc:
                self._give_up(poll, exc)
                return
            self._deliver(poll, results)
        finally:
            self._polls.pop(poll.batch_id, None)

    def _deliver(self, poll: _Poll, results: BatchResults) -> None:
        outcomes: dict[str, str] = {}
        for custom_id, waiters in poll.waiters.items():
            result = results.get(custom_id)
            if result is None:
                result = ProviderError(
                    f"{self.api.spec}: request {custom_id[:12]} is missing from the results of batch {poll.batch_id}",
                    retryable=True,
                    cause="batch_missing",
                )
            outcomes[custom_id] = "error" if isinstance(result, ProviderError) else "ok"
            for waiter in waiters:
                self._waiting.pop(waiter.key, None)
                if waiter.future.done():
                    continue
                if isinstance(result, ProviderError):
                    waiter.future.set_exception(result)
                else:
                    waiter.future.set_result(result)
        # Requests of this batch that nobody waits for now keep whatever outcome they have.
        self.ledger.set_outcomes(poll.batch_id, outcomes)
        self.ledger.set_status(poll.batch_id, ENDED)

    def _give_up(self, poll: _Poll, exc: ProviderError) -> None:
        """The batch cannot be read: forget it, so that a retry submits its requests again."""
        self.ledger.set_status(poll.batch_id, LOST)
        retry = ProviderError(str(exc), retryable=True, status=exc.status, cause=exc.cause)
        futures = []
        for waiters in poll.waiters.values():
            for waiter in waiters:
                self._waiting.pop(waiter.key, None)
                futures.append(waiter.future)
        _fail(futures, retry)

    async def aclose(self) -> None:
        """Stop polling (the ledger keeps the batches for a later resume)."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):  # closing: no task's end matters now
                await task


def _fail(futures: list[_Answer], exc: BaseException) -> None:
    for future in futures:
        if not future.done():
            future.set_exception(exc)
    for future in futures:  # retrieved here so that asyncio does not warn when nobody awaits it any more
        if future.done() and not future.cancelled():
            future.exception()


def _token(keys: list[str], previous: int) -> str:
    import hashlib

    digest = hashlib.sha256(str(previous).encode())
    for key in sorted(keys):
        digest.update(key.encode())
    return digest.hexdigest()[:48]
