"""What a run is working on right now, so that progress can be told while no sample finishes.

A progress line that moves only when a sample ends goes silent for as long as the longest sample takes
(a response of thousands of claims took minutes). The pipeline records here each sample in flight, its
stage and, once extracted, its number of claims; a judge says which claims it has answered through
``claims_judged``, which is a no-op when nothing is recorded (``check``, benchmarks, tests). A reader on
another thread (the command line's heartbeat) takes a ``snapshot``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class SampleActivity:
    """One sample in flight: since when, at which stage, and how far its judge has gone."""

    sample_id: str
    started: float
    stage: str = "starting"
    #: Claims to judge, once extracted (None before).
    claims: int | None = None
    #: Ids of the claims with a verdict so far (a voting judge's first vote counts).
    judged: set[str] = field(default_factory=set)

    @property
    def n_judged(self) -> int:
        return len(self.judged)


@dataclass(frozen=True)
class ActivityView:
    """A copy of one ``SampleActivity`` taken by ``Activity.snapshot`` (safe to read on another thread)."""

    sample_id: str
    seconds: float
    stage: str
    claims: int | None
    judged: int


class Activity:
    """The samples in flight of a run; written by the pipeline, read by a progress line on any thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._samples: dict[str, SampleActivity] = {}

    @contextmanager
    def tracking(self, sample_id: str) -> Iterator[SampleActivity]:
        """Record ``sample_id`` as in flight for the block, and make it the current sample of this task."""
        item = SampleActivity(sample_id=sample_id, started=self.clock())
        with self._lock:
            self._samples[sample_id] = item
        token = _current.set(item)
        try:
            yield item
        finally:
            _current.reset(token)
            with self._lock:
                self._samples.pop(sample_id, None)

    def snapshot(self) -> list[ActivityView]:
        """The samples in flight, longest running first."""
        now = self.clock()
        with self._lock:
            items = list(self._samples.values())
        views = [
            ActivityView(
                sample_id=x.sample_id, seconds=now - x.started, stage=x.stage, claims=x.claims, judged=x.n_judged
            )
            for x in items
        ]
        return sorted(views, key=lambda v: -v.seconds)


_current: ContextVar[SampleActivity | None] = ContextVar("hallumeasure_sample_activity", default=None)


def at_stage(name: str, *, claims: int | None = None) -> None:
    """The current sample (if one is tracked) has reached stage ``name``; ``claims``: how many it has."""
    item = _current.get()
    if item is not None:
        item.stage = name
        if claims is not None:
            item.claims = claims


def claims_judged(claim_ids: Iterable[str]) -> None:
    """A judge has verdicts for ``claim_ids`` of the current sample (nothing happens when none is tracked)."""
    item = _current.get()
    if item is not None:
        item.judged.update(claim_ids)
