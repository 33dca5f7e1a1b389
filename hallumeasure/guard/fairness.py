"""Fairness between clients for the judge workers: at most ``max_worker_checks_per_client`` checks of one
client in the workers at once.

The small checks never reach the workers (``inline_work_units``), but a client sending heavy checks back to
back could otherwise hold every worker, and another client's heavy check would wait out its deadline behind
them. With the cap, a client's checks beyond it wait for that client's own earlier ones (within their
deadline), and the other workers stay free for everyone else. A client is its API key when the deployment
has keys (a digest of it: the key itself is kept nowhere), else its address (behind a proxy every client has
the proxy's address: set keys, or leave the cap off).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.requests import Request


class ClientCaps:
    """A semaphore of ``limit`` per client, made on first use and dropped when the client holds none."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def slot(self, client: str) -> AsyncIterator[None]:
        """Hold one of ``client``'s slots for the block (at once when there is no cap)."""
        if self.limit is None:
            yield
            return
        slots = self._slots.setdefault(client, asyncio.Semaphore(self.limit))
        self._users[client] = self._users.get(client, 0) + 1
        try:
            async with slots:
                yield
        finally:
            self._users[client] -= 1
            if not self._users[client]:
                del self._users[client], self._slots[client]


def client_of(request: Request, *, keyed: bool) -> str:
    """Who sent ``request``: a digest of its bearer key when the deployment has keys, else its address."""
    if keyed:
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        return "key:" + hashlib.sha256(token.encode()).hexdigest()[:16]
    return "address:" + (request.client.host if request.client else "-")


__all__ = ["ClientCaps", "client_of"]
