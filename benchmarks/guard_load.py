"""Load, soak and policy benchmark of the guard (hallumeasure serve) on the fast keyless path.

    .venv/bin/pip install locust             # the load tool (not a dependency of the package)
    .venv/bin/python benchmarks/guard_load.py                    # writes benchmarks/results/guard_load.md and .json
    .venv/bin/python benchmarks/guard_load.py --soak-seconds 600 # with the 10-minute soak

What it measures, against a real server started on 127.0.0.1 with the default offline judge:

* load: headless locust at 1, 8 and 32 users (no think time) on the bundled summary and RAG
  examples: p50 / p95 / p98 latency, throughput, errors, 429s; and the in-process
  ``Guard.check`` p95 on the same traffic, for the server's overhead at 1 user;
* backpressure: 64 users against ``--max-concurrency 4`` with a queue of 4: excess requests must
  get 429 (with Retry-After), never a timeout or a 5xx;
* soak (optional): 8 users for the given time, server RSS after warm-up and at the end;
* policies (the form of the production paper's Table 7): the same scripted traffic through
  detection-only (block above the threshold) and detection + rewrite (the offline rewriter):
  block rate, rewriting rate, P50 / P95 / P98 latency;
* the LLM step (an explainer on the local Anthropic simulator, deadline 1 s) in three phases: a
  fixed 1.5 s latency, 20% 500s, and hung calls; per phase and fail mode: p50 / p99 of the whole
  check against the deadline, fallbacks, decisions, and that every request was answered.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guard_load_traffic import TRAFFIC  # the locustfile reads the same traffic; importing it needs locust

from hallumeasure.guard import CheckResult, Guard, GuardSettings


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(*args: str, ready_s: float = 60) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """A ``hallumeasure serve`` on a free port, ready within ``ready_s``; stopped (SIGTERM, then waited for) on exit."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hallumeasure.cli", "serve", "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + ready_s
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not become ready") from None
                time.sleep(0.2)
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def run_record(command: str, runs: list[dict]) -> dict:
    """A results file's body: the command, the date, the machine, its load before, and the runs."""
    return {
        "command": command,
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_before": os.getloadavg(),
        "runs": runs,
    }


def write_results(stem: str, title: str, result: dict, body: list[str]) -> None:
    """``results/<stem>.json`` (``result``) and ``results/<stem>.md``: ``title``, the command and machine, ``body``."""
    (HERE / "results" / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    load = result["load_average_before"][0]
    head = [f"# {title}", "", f"`{result['command']}` on {result['machine']} (load average before: {load:.1f}).", ""]
    (HERE / "results" / f"{stem}.md").write_text("\n".join(head + body) + "\n")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _locust(port: int, users: int, seconds: int, env: dict[str, str] | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "run"
        subprocess.run(
            [sys.executable, "-m", "locust", "-f", str(HERE / "guard_locustfile.py"), "--headless", "-u", str(users),
             "-r", str(users), "-t", f"{seconds}s", "--host", f"http://127.0.0.1:{port}", "--csv", str(prefix),
             "--only-summary", "--loglevel", "ERROR", "--exit-code-on-error", "0"],
            check=True, capture_output=True, env={**os.environ, **(env or {})},
        )  # fmt: skip
        with open(f"{prefix}_stats.csv") as f:
            row = next(r for r in csv.DictReader(f) if r["Name"] == "Aggregated")
        with open(f"{prefix}_failures.csv") as f:
            failures = {r["Error"]: int(r["Occurrences"]) for r in csv.DictReader(f)}
    n = int(row["Request Count"])
    n_429 = sum(v for k, v in failures.items() if "429" in k)
    return {
        "users": users,
        "seconds": seconds,
        "requests": n,
        "throughput_rps": round(float(row["Requests/s"]), 1),
        "p50_ms": float(row["50%"]),
        "p95_ms": float(row["95%"]),
        "p98_ms": float(row["98%"]),
        "errors": int(row["Failure Count"]) - n_429,
        "status_429": n_429,
        "failure_kinds": failures,
    }


def _percentiles(ms: list[float]) -> dict[str, float]:
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50_ms": round(q[49], 2), "p95_ms": round(q[94], 2), "p98_ms": round(q[97], 2)}


def _timed(guard: Guard, rounds: int) -> tuple[list[float], list[CheckResult]]:
    """Milliseconds per ``guard.check`` and the results, over the traffic ``rounds`` times."""
    times, results = [], []
    for _ in range(rounds):
        for req in TRAFFIC:
            start = time.perf_counter()
            results.append(guard.check(**{k: v for k, v in req.items() if v is not None}))
            times.append((time.perf_counter() - start) * 1000)
    return times, results


def in_process(rounds: int) -> dict:
    times, _ = _timed(Guard(), rounds)
    return {"calls": len(times), **_percentiles(times)}


def policies(rounds: int) -> list[dict]:
    out = []
    for name, settings in [
        ("detection only (block)", GuardSettings(policy="detect", action="block")),
        ("detection + rewrite (offline)", GuardSettings(policy="rewrite")),
    ]:
        times, results = _timed(Guard(settings), rounds)
        decisions = [r.decision.value for r in results]
        n = len(decisions)
        out.append(
            {
                "pipeline": name,
                "responses": n,
                "block_rate": round(decisions.count("block") / n, 3),
                "rewrite_rate": round(decisions.count("rewrite") / n, 3),
                "flag_rate": round(decisions.count("flag") / n, 3),
                **_percentiles(times),
            }
        )
    return out


def llm_phases(rounds: int, deadline: float = 1.0) -> list[dict]:
    """The guard with an LLM explainer against the Anthropic simulator, slow, failing and hung."""
    from hallumeasure.guard.settings import FailMode
    from hallumeasure.testing import AnthropicServer, Fault, FaultPlan

    phases = [
        ("fixed 1.5 s latency", {"latency": 1.5}),
        ("20% 500s", {"latency": 0.05, "faults": FaultPlan.random(0.2, [Fault.SERVER_ERROR], seed=3)}),
        ("hung calls", {"faults": FaultPlan.random(1.0, [Fault.READ_TIMEOUT], seed=3, hang=30)}),
    ]
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-bench-" + "x" * 30)
    out = []
    for name, server in phases:
        for mode in (FailMode.OPEN, FailMode.CLOSED):
            with AnthropicServer(**server) as srv:
                os.environ["ANTHROPIC_BASE_URL"] = srv.base_url
                guard = Guard(
                    GuardSettings(explainer="anthropic:claude-bench", llm_deadline_s=deadline, on_llm_failure=mode)
                )
                times, results = _timed(guard, rounds)
            decisions = [r.decision.value for r in results]
            q = statistics.quantiles(times, n=100, method="inclusive")
            out.append(
                {
                    "phase": name,
                    "fail_mode": mode.value,
                    "requests": len(times),
                    "answered": len(results),
                    "p50_ms": round(q[49], 1),
                    "p99_ms": round(q[98], 1),
                    "deadline_ms": deadline * 1000,
                    "fallbacks": sum(r.fallback is not None for r in results),
                    "blocked": decisions.count("block"),
                    "flagged": decisions.count("flag"),
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=20, help="duration of each load level")
    parser.add_argument("--soak-seconds", type=int, default=0, help="soak duration (0: no soak)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "guard_load")
    args = parser.parse_args()
    started = time.monotonic()
    res: dict = {
        "date": datetime.now(UTC).date().isoformat(),
        "command": "python benchmarks/guard_load.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "traffic": f"{len(TRAFFIC)} bundled examples (summaries and RAG answers), chosen at random",
    }
    res["in_process"] = in_process(rounds=30)
    with serving("--max-concurrency", "8") as (port, _):
        res["load"] = [_locust(port, users, args.seconds) for users in (1, 8, 32)]
    with serving("--max-concurrency", "4") as (port, _):  # queue 32 by default: 64 users overflow it
        res["backpressure"] = _locust(port, 64, args.seconds)
    if args.soak_seconds:
        with serving() as (port, proc):
            _locust(port, 8, 30)  # warm-up
            before = _rss_mb(proc.pid)
            soak = _locust(port, 8, args.soak_seconds)
            after = _rss_mb(proc.pid)
            res["soak"] = {**soak, "rss_mb_start": round(before, 1), "rss_mb_end": round(after, 1),
                           "rss_growth": round(after / before - 1, 4)}  # fmt: skip
    res["policies"] = policies(rounds=30)
    res["llm"] = llm_phases(rounds=2)
    res["seconds"] = round(time.monotonic() - started)
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(res))
    print(markdown(res))


def markdown(res: dict) -> str:
    lines = [
        "# Guard: load, backpressure, soak and policies",
        "",
        f"- command: `{res['command']}` ({res['seconds']} s in all); date {res['date']}",
        f"- machine: {res['machine']}; server and load generator on the same machine",
        f"- traffic: {res['traffic']}; judge `offline`, extractor `offline`",
        "",
        "## Load (headless locust, no think time, `--max-concurrency 8`)",
        "",
        "| users | requests | throughput (req/s) | p50 ms | p95 ms | p98 ms | errors | 429 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in res["load"]:
        lines.append(
            f"| {r['users']} | {r['requests']} | {r['throughput_rps']} | {r['p50_ms']:g} | {r['p95_ms']:g} | "
            f"{r['p98_ms']:g} | {r['errors']} | {r['status_429']} |"
        )
    ip, one = res["in_process"], res["load"][0]
    lines += [
        "",
        f"In process, `Guard.check` on the same traffic: p50 {ip['p50_ms']} ms, p95 {ip['p95_ms']} ms "
        f"({ip['calls']} calls). Server p95 at 1 user / in-process p95: {one['p95_ms'] / ip['p95_ms']:.2f}x.",
        "",
        "## Backpressure (64 users, `--max-concurrency 4`, queue 32)",
        "",
    ]
    b = res["backpressure"]
    lines.append(
        f"{b['requests']} requests: {b['status_429']} answered 429 with Retry-After, {b['errors']} other errors "
        f"(timeouts or 5xx); p50 {b['p50_ms']:g} ms, p98 {b['p98_ms']:g} ms."
    )
    if "soak" in res:
        s = res["soak"]
        lines += [
            "",
            f"## Soak ({s['seconds']} s, 8 users)",
            "",
            f"{s['requests']} requests, {s['errors']} errors, {s['status_429']} 429s; server RSS "
            f"{s['rss_mb_start']} MB after warm-up, {s['rss_mb_end']} MB at the end ({100 * s['rss_growth']:+.1f}%).",
        ]
    lines += [
        "",
        "## Detection-only against detection + rewrite (the form of the production paper's Table 7)",
        "",
        "In process, on the scripted traffic repeated 30 times. The rates are those of this traffic (the",
        "bundled examples are rich in planted errors), not of production.",
        "",
        "| pipeline | responses | block rate | rewrite rate | flag rate | P50 ms | P95 ms | P98 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in res["policies"]:
        lines.append(
            f"| {p['pipeline']} | {p['responses']} | {p['block_rate']:.1%} | {p['rewrite_rate']:.1%} | "
            f"{p['flag_rate']:.1%} | {p['p50_ms']} | {p['p95_ms']} | {p['p98_ms']} |"
        )
    if "llm" in res:
        lines += [
            "",
            "## The LLM step under a 1 s deadline (explainer on the local Anthropic simulator)",
            "",
            "Each check of the scripted traffic, in process; flagged claims go to the LLM. p99 is of the whole",
            "check (fast path + LLM step) and must stay within the deadline + 100 ms.",
            "",
            "| phase | fail mode | requests | answered | p50 ms | p99 ms | fallbacks | blocked | flagged |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in res["llm"]:
            lines.append(
                f"| {r['phase']} | {r['fail_mode']} | {r['requests']} | {r['answered']} | {r['p50_ms']} | "
                f"{r['p99_ms']} | {r['fallbacks']} | {r['blocked']} | {r['flagged']} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
