"""How long a killed judge worker costs the next check, with a spare worker (the default) and without one.

``hallumeasure serve --judge-workers 1 --inline-work-units 0`` (every check to the one worker); the worker
in rotation is killed (SIGKILL) and, once it has ended, a check is sent and timed. With a spare, the spare
takes the worker's place at once; without one (``--spare-workers 0``), the check waits for a new worker
to start (it imports and builds its judge). ``--kills`` kills per setup.

    python benchmarks/guard_spare.py --kills 5

Writes ``results/guard_spare.json`` and ``results/guard_spare.md``.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from pathlib import Path

import httpx
import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guard_load import run_record, serving, write_results
from guard_soak import _metric, _workers

CHECK = {"response": "It holds 120,000 books.", "context": "The library opens at 9 a.m. It holds 120,000 books."}


def _wait(condition: object, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError("the pool did not fill again")
        time.sleep(0.1)


def killed(spares: int, kills: int) -> dict:
    extra = ["--judge-workers", "1", "--inline-work-units", "0", "--spare-workers", str(spares)]
    times = []
    with (
        serving("--drain-seconds", "0", *extra, ready_s=120) as (port, proc),
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client,
    ):
        server = psutil.Process(proc.pid)
        for _ in range(kills):
            _wait(lambda: _metric(client, "hallumeasure_guard_judge_workers_spare") == spares)
            _wait(lambda: _metric(client, "hallumeasure_guard_judge_workers_alive") == 1)
            in_rotation = min(_workers(server), key=lambda w: w.create_time())  # the spare started after it
            os.kill(in_rotation.pid, signal.SIGKILL)
            in_rotation.wait(5)
            started = time.perf_counter()
            assert client.post("/v1/check", json=CHECK).status_code == 200
            times.append(round((time.perf_counter() - started) * 1000, 1))
    return {"spare_workers": spares, "next_check_ms": times, "median_ms": statistics.median(times)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args()
    runs = [killed(spares, args.kills) for spares in (1, 0)]
    body = [
        "| spare workers | the next check after a kill (ms) | median (ms) |",
        "|---:|---|---:|",
        *(f"| {r['spare_workers']} | {', '.join(map(str, r['next_check_ms']))} | {r['median_ms']} |" for r in runs),
    ]
    result = run_record(f"python benchmarks/guard_spare.py --kills {args.kills}", runs)
    write_results("guard_spare", "Guard: what a killed judge worker costs the next check", result, body)


if __name__ == "__main__":
    main()
