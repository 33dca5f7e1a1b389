"""Servers that tests start on 127.0.0.1: a port to give them, and waiting until they say they are ready."""

from __future__ import annotations

import socket
import subprocess
import time

import httpx


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now (the OS picked it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(base: str, *, proc: subprocess.Popen[str] | None = None, seconds: float = 60) -> None:
    """Return once ``base``/readyz answers 200; fail if ``proc`` (the server's process) ends first, or
    ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("the server never became ready")
