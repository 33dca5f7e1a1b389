"""The progress of ``measure``: a rich bar on a terminal, else a line on stderr now and then, and never silent
for long.

The pipeline advances it once per finished sample. Because one sample can take minutes (thousands of
claims), a heartbeat thread also looks at what is in flight (``core.activity``): off a terminal, when
``LINE_EVERY`` seconds pass with no line, it prints one that names the samples in flight, their stage and
their claims judged; on a terminal, the bar's label says the same of the longest running one. A thread,
not a task of the run's event loop: a keyless judge works on that loop and would hold a task back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from hallumeasure.cli.common import console
from hallumeasure.cli.output import duration
from hallumeasure.core.activity import Activity, ActivityView


class SampleProgress:
    """Progress of a measurement: ``advance`` per finished sample, ``activity`` for the samples in flight.

    Off a terminal (a CI log, a pipe) a line goes to stderr at every 10% and at least every ``LINE_EVERY``
    seconds, so a long run shows it is alive without flooding the log. A ``total`` of None is a run that does not
    know its size ahead (the Ray engine streams its input): it counts the samples done, without a share.

    >>> with SampleProgress(10) as progress:  # doctest: +SKIP
    ...     measurement.run(loaded, out, progress=progress.advance, activity=progress.activity)
    """

    LINE_EVERY = 30.0
    #: How often the heartbeat thread looks, in seconds.
    TICK = 1.0
    #: Samples in flight named in a heartbeat line; the rest are counted.
    NAMED = 3

    def __init__(self, total: int | None, already: int = 0, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.activity = Activity(clock)
        self.total, self.done = total, already
        self.started = self.last_line = self.clock()
        self.last_tenth = self._tenth(already)
        self.terminal = console.is_terminal
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            disable=not self.terminal,
        )
        self.task = self.bar.add_task("measuring", total=total, completed=already)

    def advance(self, _result: object = None) -> None:
        """One more sample finished."""
        with self._lock:
            self.done += 1
            if self.terminal:
                self.bar.advance(self.task)
                return
            now, tenth = self.clock(), self._tenth(self.done)
            if tenth > self.last_tenth or now - self.last_line >= self.LINE_EVERY:
                self.last_tenth = tenth
                self._print(self._status(now), now)

    def beat(self) -> None:
        """One look of the heartbeat: a line naming what is in flight once ``LINE_EVERY`` passed since the last."""
        with self._lock:
            now = self.clock()
            if self.terminal:
                longest = self.activity.snapshot()[:1]
                slow = [x for x in longest if x.seconds >= self.LINE_EVERY]
                self.bar.update(self.task, description="measuring" + (f" ({_described(slow[0])})" if slow else ""))
                return
            if now - self.last_line < self.LINE_EVERY:
                return
            in_flight = self.activity.snapshot()
            named = "; ".join(_described(x) for x in in_flight[: self.NAMED])
            more = f"; and {len(in_flight) - self.NAMED} more" if len(in_flight) > self.NAMED else ""
            self._print(self._status(now) + (f"; in flight: {named}{more}" if in_flight else ""), now)

    def _tenth(self, done: int) -> int:
        return (10 * done) // self.total if self.total else 10  # unknown or empty: no tenths to pass

    def _status(self, now: float) -> str:
        elapsed = duration(now - self.started)
        if self.total is None:
            return f"measuring: {self.done} samples, {elapsed} elapsed"
        share = self.done / self.total if self.total else 1.0
        return f"measuring: {self.done}/{self.total} samples ({share:.0%}), {elapsed} elapsed"

    def _print(self, line: str, now: float) -> None:
        self.last_line = now
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    def _beat_until_stopped(self) -> None:
        while not self._stop.wait(self.TICK):
            self.beat()

    def __enter__(self) -> SampleProgress:
        self.bar.start()
        self._heartbeat = threading.Thread(target=self._beat_until_stopped, name="hallumeasure-progress", daemon=True)
        self._heartbeat.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
        self.bar.stop()


def _described(item: ActivityView) -> str:
    """``big-1 (judging claims, 120/2,000 claims judged, 1 min 10 s)``; before a judge's first answer (and for
    a judge that tells none, such as conli) ``big-1 (judging claims, 2,000 claims, 40 s)``."""
    parts = [item.stage]
    if item.claims is not None and item.stage == "judging claims" and item.judged:
        parts.append(f"{item.judged:,}/{item.claims:,} claims judged")
    elif item.claims is not None:
        parts.append(f"{item.claims:,} claims")
    parts.append(duration(item.seconds))
    return f"{item.sample_id} ({', '.join(parts)})"
