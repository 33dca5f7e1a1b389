"""Admission: how many checks (or streams) run at once, how many wait, and a 429 beyond that."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class BusyError(Exception):
    """No slot and no room in the queue: the request gets 429."""


class Gate:
    """At most ``limit`` holders at once and ``queue`` waiting; beyond that ``slot`` raises ``BusyError`` at once."""

    def __init__(self, limit: int, queue: int) -> None:
        self._slots = asyncio.Semaphore(limit)
        self._capacity = limit + queue
        self.pending = 0  # holding + waiting

    @asynccontextmanager
    async def slot(self, *, always_queue: bool = False) -> AsyncIterator[None]:
        """Hold a slot for the block; ``always_queue`` waits even when the queue is full (a stream already
        admitted is bounded by its own gate, and must not fail half-way for a burst of checks)."""
        if self.pending >= self._capacity and not always_queue:
            raise BusyError
        self.pending += 1
        try:
            async with self._slots:
                yield
        finally:
            self.pending -= 1
