"""Deadlines and caps on the guard's connections, below the app: where uvicorn has no setting for them.

An ASGI app is called only once a request's head has arrived, so it cannot stop a client that never
finishes its headers (slowloris) or never sends a byte, and every such connection holds a file
descriptor until the server runs out of them. uvicorn closes idle keep-alive connections
(``timeout_keep_alive``, 5 s) but arms no timer on a new connection nor on a head that trickles in.
``GuardHttpProtocol`` is uvicorn's HTTP/1.1 protocol (httptools) with:

* a deadline on each request's head (``header_timeout_s``): from the connection's opening, or from
  the first byte of the next request on a kept-alive one, until its headers are complete; past it the
  client gets 408 and the connection is closed, however slowly bytes keep coming;
* a cap on open connections per server process (``max_connections``) and, when set, per client
  address (``max_connections_per_client``); a connection beyond either gets 503 and is closed at once;
* a lingering close: a connection closed after its answer (a 413, a 408, ``Connection: close``) while
  the client is still sending its body is half-closed, and what the client still sends is read and
  dropped until it pauses for ``LINGER_S`` (at most ``LINGER_MAX_S`` in all), then closed. Closed at once, the
  kernel would answer the unread bytes with a reset, and the client would see a broken pipe, not the
  answer written before it.

The limits come from the app's ``GuardSettings``, through the lifespan state (``create_app`` puts
them there), so that each process of ``serve --workers N`` applies its own.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from hallumeasure.guard.settings import GuardSettings

#: Where ``create_app``'s lifespan leaves the limits for the protocol (uvicorn's lifespan state).
STATE_KEY = "hallumeasure_connection_limits"
#: Seconds a closing connection stays half-open after the client's last byte, its input read and dropped:
#: closed at once, a client still sending would meet a reset instead of reading the answer.
LINGER_S = 1.0
#: Seconds a closing connection lingers at most, however long the client goes on sending (a client that
#: trickles bytes is not worth a descriptor for longer).
LINGER_MAX_S = 1.5


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout_s: float
    max_connections: int
    max_connections_per_client: int | None

    @classmethod
    def of(cls, settings: GuardSettings) -> ConnectionLimits:
        return cls(settings.header_timeout_s, settings.max_connections, settings.max_connections_per_client)


_DEFAULTS = ConnectionLimits.of(GuardSettings())


class GuardHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on each request's head and caps on open connections."""

    _head_deadline: asyncio.TimerHandle | None = None
    _counted_as: str | None = None
    _refused = False
    _linger_close: asyncio.TimerHandle | None = None
    _linger_until = 0.0

    @property
    def limits(self) -> ConnectionLimits:
        found = self.app_state.get(STATE_KEY)
        return found if isinstance(found, ConnectionLimits) else _DEFAULTS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        limits = self.limits
        per_client = _per_client(self.server_state)
        address = self.client[0] if self.client else "-"
        if len(self.connections) > limits.max_connections:
            self._refuse(503, f"the server holds its {limits.max_connections} connections (setting max_connections)")
            return
        cap = limits.max_connections_per_client
        if cap is not None and per_client[address] >= cap:
            self._refuse(503, f"this address holds {cap} connections (setting max_connections_per_client)")
            return
        per_client[address] += 1
        self._counted_as = address
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        if self._refused:  # a closing connection's input is read and dropped until it closes
            self._linger_on()
            return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_head_deadline()  # the next request of a kept-alive connection: its head from its first byte

    def on_headers_complete(self) -> None:
        self._disarm_head_deadline()
        super().on_headers_complete()
        if self.cycle is not None:  # the request's answer closes the connection through ``close_after_answer``
            self.cycle.transport = _ClosingAfterAnswer(self)  # type: ignore[assignment]

    def close_after_answer(self) -> None:
        """Close after an answer: at once when the request has been read whole, else with a lingering close."""
        if self.cycle is not None and self.cycle.more_body and not self.transport.is_closing():
            self._linger()
        else:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        if self._linger_close is not None:
            self._linger_close.cancel()
        if self._counted_as is not None:
            per_client = _per_client(self.server_state)
            per_client[self._counted_as] -= 1
            if per_client[self._counted_as] <= 0:
                del per_client[self._counted_as]
            self._counted_as = None
        super().connection_lost(exc)

    def _arm_head_deadline(self) -> None:
        if self._head_deadline is None and not self.transport.is_closing():
            self._head_deadline = self.loop.call_later(self.limits.header_timeout_s, self._head_too_slow)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered: its head was complete (a pipelined one waits its turn)
        seconds = self.limits.header_timeout_s
        self._refuse(408, f"the request's headers did not arrive within {seconds:g} s (setting header_timeout_s)")

    def _refuse(self, status: int, detail: str) -> None:
        """Answer ``status`` with a JSON detail before any request was read (or its head ended), and close."""
        if self.transport.is_closing() or self._refused:
            return
        self._refused = True
        body = json.dumps({"detail": detail}).encode()
        reason = {408: b"Request Timeout", 503: b"Service Unavailable"}[status]
        head = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: %d\r\n\r\n"
        self.transport.write(head % (status, reason, len(body)) + body)
        self._linger()

    def _linger(self) -> None:
        """Half-close: the answer written is sent, the client's input is dropped; closed once it pauses."""
        self._refused = True
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self._linger_until = self.loop.time() + LINGER_MAX_S
        self._linger_on()

    def _linger_on(self) -> None:
        if self._linger_close is not None:
            self._linger_close.cancel()
        if not self.transport.is_closing():
            delay = min(LINGER_S, max(0.0, self._linger_until - self.loop.time()))
            self._linger_close = self.loop.call_later(delay, self.transport.close)


class _ClosingAfterAnswer:
    """A request's view of its connection's transport, whose ``close`` is the protocol's ``close_after_answer``."""

    def __init__(self, protocol: GuardHttpProtocol) -> None:
        self._protocol = protocol
        self._transport = protocol.transport

    def close(self) -> None:
        self._protocol.close_after_answer()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _per_client(server_state: Any) -> Counter[str]:
    """Open connections by client address, one count per server (kept on uvicorn's server state)."""
    counts: Counter[str] | None = getattr(server_state, "hallumeasure_per_client", None)
    if counts is None:
        counts = Counter()
        server_state.hallumeasure_per_client = counts
    return counts


def uvicorn_options() -> dict[str, Any]:
    """The options that make uvicorn apply the guard's connection limits (httptools' protocol: the serve extra
    brings it; without it uvicorn's own h11 protocol serves, without these limits)."""
    import importlib.util

    return {"http": GuardHttpProtocol} if importlib.util.find_spec("httptools") is not None else {}


__all__ = ["STATE_KEY", "ConnectionLimits", "GuardHttpProtocol", "uvicorn_options"]
