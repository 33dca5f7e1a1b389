"""``hallumeasure serve`` as a real process: it starts, answers, refuses unsafe binds and drains on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from local_servers import free_port, wait_ready

CONTEXT = "The Kessler Public Library opens at 9 a.m. and closes at 9 p.m. on weekdays. It holds 120,000 books."


def _serve(*args: str, env: dict[str, str] | None = None, output: Any = subprocess.PIPE) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hallumeasure.cli", "serve", *args],
        stdout=output,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _sigterm_while_clients_run(
    proc: subprocess.Popen[str],
    client: Callable[[int], None],
    n: int,
    stop: threading.Event,
    *,
    after: float,
    draining: Callable[[], None] = lambda: None,
) -> None:
    """Run ``client(i)`` in ``n`` threads, SIGTERM the server ``after`` seconds later and call ``draining``;
    the server must end by that signal. Then ``stop`` is set and the clients are joined."""
    workers = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for w in workers:
        w.start()
    time.sleep(after)
    proc.send_signal(signal.SIGTERM)
    draining()
    assert proc.wait(timeout=60) in (0, -signal.SIGTERM)
    stop.set()
    for w in workers:
        w.join(timeout=30)


def test_no_key_means_loopback_only() -> None:
    proc = _serve("--host", "0.0.0.0", "--port", str(free_port()))
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "loopback only" in out


def test_serve_answers_the_readme_example_and_drains_on_sigterm(tmp_path: Path) -> None:
    key = "k-" + "s" * 30
    (tmp_path / "keys").write_text(key + "\n")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _serve("--port", str(port), "--api-key-file", str(tmp_path / "keys"), "--judge", "offline")
    try:
        wait_ready(base, proc=proc)
        headers = {"Authorization": f"Bearer {key}"}
        payload = {"response": "The library holds 300,000 books.", "context": CONTEXT}
        r = httpx.post(f"{base}/v1/check", json=payload, headers=headers, timeout=10)
        assert r.status_code == 200 and r.json()["decision"] == "flag"
        assert httpx.post(f"{base}/v1/check", json=payload, timeout=10).status_code == 401

        # A long streamed request is in flight when SIGTERM arrives: it is answered whole.
        answers: list[httpx.Response] = []

        def slow_body():
            yield (json.dumps({"context": CONTEXT}) + "\n").encode()
            for _ in range(6):
                time.sleep(0.25)
                yield (json.dumps({"text": "It holds 120,000 books. "}) + "\n").encode()

        def call() -> None:
            answers.append(httpx.post(f"{base}/v1/check/stream", content=slow_body(), headers=headers, timeout=30))

        worker = threading.Thread(target=call)
        worker.start()
        time.sleep(0.6)
        proc.send_signal(signal.SIGTERM)
        worker.join(timeout=30)
        # uvicorn drains, then ends by the signal it caught (as process managers expect).
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
        assert answers and answers[0].status_code == 200
        assert answers[0].text.rstrip().split("\n\n")[-1].startswith("event: done")
    finally:
        if proc.poll() is None:
            proc.kill()
        out = proc.stdout.read() if proc.stdout else ""
    assert key not in out  # the key never reaches the server's output
    assert "300,000" not in out  # nor does request text


@pytest.mark.parametrize("bad", [["--policy", "delete"], ["--threshold", "2"]])
def test_bad_settings_exit_2(bad: list[str]) -> None:
    proc = _serve("--port", str(free_port()), *bad)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out


def test_several_workers_serve_the_same_settings(tmp_path: Path) -> None:
    key = "k-" + "w" * 30
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _serve("--port", str(port), "--workers", "2", "--policy", "rewrite", env={"HALLUMEASURE_API_KEYS": key})
    try:
        wait_ready(base, proc=proc)
        # two changed values: decided by the offline judge's calibrated rule, so the guard acts on it
        payload = {"response": "The library holds 300,000 books and opens at 11 a.m. on weekdays.", "context": CONTEXT}
        answers = [
            httpx.post(f"{base}/v1/check", json=payload, headers={"Authorization": f"Bearer {key}"}, timeout=10)
            for _ in range(4)
        ]
        assert all(a.status_code == 200 and a.json()["decision"] == "rewrite" for a in answers)
        assert httpx.post(f"{base}/v1/check", json=payload, timeout=10).status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_sigterm_under_load_answers_every_accepted_request_and_logs_it_whole(tmp_path: Path) -> None:
    """Concurrent clients; SIGTERM mid-way: every request the server accepted is answered, every answered
    request is in the traffic log as one whole line, and the log reads back without a torn line."""
    from hallumeasure.guard.traffic import read_traffic

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_dir = tmp_path / "traffic"
    # Under load the access log is long: into a file, not a pipe nobody reads while the test runs.
    output = (tmp_path / "server.log").open("w")
    proc = _serve("--port", str(port), "--log-sample", "1", "--log-dir", str(log_dir), output=output)
    answered: list[str] = []
    refused = 0
    lock = threading.Lock()
    stop = threading.Event()

    def client(i: int) -> None:
        nonlocal refused
        with httpx.Client(timeout=30) as c:
            k = 0
            while not stop.is_set():
                payload = {"response": f"The library holds {i * 1000 + k} books.", "context": CONTEXT}
                k += 1
                try:
                    r = c.post(f"{base}/v1/check", json=payload)
                except httpx.TransportError:  # not accepted: the server had stopped listening
                    with lock:
                        refused += 1
                    return
                assert r.status_code == 200, r.text
                with lock:
                    answered.append(r.json()["request_id"])

    try:
        wait_ready(base, proc=proc)
        _sigterm_while_clients_run(proc, client, 8, stop, after=2.0)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
        output.close()
    records, torn = read_traffic(log_dir)
    assert len(answered) > 20 and torn == 0
    assert sorted(r.request_id for r in records) == sorted(answered)


def test_sigterm_drains_keep_alive_clients_without_a_reset_and_logs_no_query(tmp_path: Path) -> None:
    """Keep-alive clients send through SIGTERM: during the drain /readyz says 503 and answers carry
    ``Connection: close``, and no request is met with a reset or a dropped answer. A key pasted into a
    query string never reaches the log."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    output = (tmp_path / "server.log").open("w")
    proc = _serve("--port", str(port), "--drain-seconds", "1.5", output=output)
    errors: list[str] = []
    answered, closes = [0], [0]
    stop = threading.Event()

    def client(i: int) -> None:
        with httpx.Client(timeout=30) as c:
            k = 0
            while not stop.is_set():
                k += 1
                payload = {"response": f"The library holds {i * 1000 + k} books.", "context": CONTEXT}
                try:
                    r = c.post(f"{base}/v1/check", json=payload)
                except httpx.ConnectError:  # never accepted: the listener had closed
                    return
                except httpx.TransportError as exc:  # a reset or a dropped answer: what must not happen
                    errors.append(type(exc).__name__)
                    return
                assert r.status_code == 200, r.text
                answered[0] += 1
                if r.headers.get("connection") == "close":
                    # The server is going away: a client behind a load balancer is sent elsewhere now (a client
                    # that keeps reconnecting can still meet the kernel's reset of a closed listener's backlog).
                    closes[0] += 1
                    return

    def draining() -> None:
        time.sleep(0.1)
        assert httpx.get(f"{base}/readyz", timeout=5).status_code == 503

    try:
        wait_ready(base, proc=proc)
        httpx.get(f"{base}/healthz?api_key=SECRET-IN-QUERY", timeout=5)
        _sigterm_while_clients_run(proc, client, 6, stop, after=1.0, draining=draining)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
        output.close()
    assert errors == []
    # every client was answered, the last answer saying Connection: close (how many before depends on the
    # machine's load, not on the drain)
    assert answered[0] >= 6 and closes[0] == 6
    log = (tmp_path / "server.log").read_text()
    assert "SECRET-IN-QUERY" not in log and "GET /healthz 200" in log
