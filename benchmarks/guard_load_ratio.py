"""The server's overhead over in-process checks at one user, with calls interleaved on the same machine.

One ``Guard.check`` in process, then the same request to ``hallumeasure serve`` over one keep-alive
connection, alternating, over the bundled traffic ``--rounds`` times, so that both see the same
machine load. Run for the default server (judge workers, with the small checks, all of the bundled
traffic, judged in the server process: ``inline_work_units``), with every check sent to a worker
(``--inline-work-units 0``: the process hop) and with ``--judge-workers 0`` (no workers), ``--repeats``
times each, alternating. Writes ``guard_load_ratio.json`` and ``guard_load_ratio.md``.

    python benchmarks/guard_load_ratio.py --rounds 10 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guard_load import run_record, serving, write_results
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
    parser.add_argument("--repeats", type=int, default=5, help="runs of each server setup, alternating")
    args = parser.parse_args()
    guard = Guard()
    setups = {
        "default (judge workers; small checks in the server process)": [],
        "every check to a judge worker (--inline-work-units 0)": ["--inline-work-units", "0"],
        "no judge workers (--judge-workers 0)": ["--judge-workers", "0"],
    }
    runs: list[dict] = []
    for repeat in range(args.repeats):
        for name, extra in setups.items():
            with serving("--drain-seconds", "0", *extra, ready_s=90) as (port, _):  # nothing in flight to drain
                runs.append({"setup": name, "repeat": repeat, **interleaved(port, guard, args.rounds)})
                print(runs[-1], flush=True)
    result = run_record(f"python benchmarks/guard_load_ratio.py --rounds {args.rounds} --repeats {args.repeats}", runs)
    lines = [
        "The machine is shared with other jobs.",
        "",
        "| setup | run | calls | in process p50 / p95 (ms) | server p50 / p95 (ms) | p95 ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        lines.append(
            f"| {run['setup']} | {run['repeat'] + 1} | {run['calls']} | {run['in_process_p50_ms']} / "
            f"{run['in_process_p95_ms']} | {run['server_p50_ms']} / {run['server_p95_ms']} | {run['p95_ratio']} |"
        )
    lines.append("")
    for name in setups:
        ratios = sorted(r["p95_ratio"] for r in runs if r["setup"] == name)
        lines.append(f"- {name}: p95 ratios {', '.join(map(str, ratios))} (median {statistics.median(ratios)})")
    write_results(
        "guard_load_ratio", "Guard: server p95 over in-process p95, one user, calls interleaved", result, lines
    )


if __name__ == "__main__":
    main()
