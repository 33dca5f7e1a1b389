"""The server's overhead over in-process checks at one user, with calls interleaved on the same machine.

One ``Guard.check`` in process, then the same request to ``hallumeasure serve`` over one keep-alive
connection, alternating, over the bundled traffic ``--rounds`` times, so that both see the same
machine load. Run for the default server (judging in worker processes) and with ``--judge-workers 0``
(judging on the event loop). Writes ``guard_load_ratio.json``; guard_load.md quotes it.

    python benchmarks/guard_load_ratio.py --rounds 30
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guard_load import serving
from guard_load_traffic import TRAFFIC

from hallumeasure.guard import Guard


def _p(ms: list[float], q: int) -> float:
    return round(statistics.quantiles(ms, n=100, method="inclusive")[q - 1], 3)


def interleaved(port: int, guard: Guard, rounds: int) -> dict[str, float]:
    local, served = [], []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        for req in TRAFFIC[:5]:  # warm both paths
            guard.check(**{k: v for k, v in req.items() if v is not None})
            client.post("/v1/check", json=req)
        for _ in range(rounds):
            for req in TRAFFIC:
                start = time.perf_counter()
                guard.check(**{k: v for k, v in req.items() if v is not None})
                local.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                r = client.post("/v1/check", json=req)
                served.append((time.perf_counter() - start) * 1000)
                assert r.status_code == 200, r.text
    return {
        "calls": len(local),
        "in_process_p50_ms": _p(local, 50),
        "in_process_p95_ms": _p(local, 95),
        "server_p50_ms": _p(served, 50),
        "server_p95_ms": _p(served, 95),
        "p95_ratio": round(_p(served, 95) / _p(local, 95), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each server setup, alternating")
    args = parser.parse_args()
    guard = Guard()
    setups = {"judge workers (default)": [], "judge on the event loop (--judge-workers 0)": ["--judge-workers", "0"]}
    runs: list[dict] = []
    for repeat in range(args.repeats):
        for name, extra in setups.items():
            with serving("--drain-seconds", "0", *extra, ready_s=90) as (port, _):  # nothing in flight to drain
                runs.append({"setup": name, "repeat": repeat, **interleaved(port, guard, args.rounds)})
                print(runs[-1], flush=True)
    result = {
        "command": f"python benchmarks/guard_load_ratio.py --rounds {args.rounds} --repeats {args.repeats}",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_before": os.getloadavg(),
        "runs": runs,
    }
    (HERE / "results" / "guard_load_ratio.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
