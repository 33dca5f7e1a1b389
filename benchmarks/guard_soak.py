"""Memory of the guard over a long run of unique checks: does the RSS of the server and its judge workers level off?

Each check is new (its names and numbers are drawn for it), so no cache of the judge ever answers twice and
every cache fills as it would in production. ``hallumeasure serve`` runs with two judge workers; two client
threads send checks back to back until ``--checks`` are answered or ``--seconds`` pass. Every
``--every`` checks the RSS of the server process and of each judge worker (its spare included) is read from
/proc. Two setups: every check sent to the workers (``--inline-work-units 0``: the workers' memory) and the
default (small checks judged in the server process: the server's memory). Workers are retired after
``worker_max_checks`` checks (10,000 by default), which bounds their memory whatever their caches do.

    python benchmarks/guard_soak.py --checks 20000 --seconds 150

Writes ``results/guard_soak.json`` and ``results/guard_soak.md``.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guard_load import run_record, serving, write_results

WORDS = "library museum river bridge council hall garden station tower market school harbour mill chapel".split()


def unique_check(i: int, rng: random.Random) -> dict[str, str]:
    """A check no earlier one repeats: a drawn name, drawn numbers, and one claim out of three wrong."""
    name = "".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(3)).title()
    place, books, year = rng.choice(WORDS), rng.randint(1_000, 900_000), rng.randint(1800, 2024)
    context = (
        f"The {name} {place} opened in {year}. It holds {books:,} books and {rng.randint(2, 90)} rooms. "
        f"Its director, {name}son, took office in {year + rng.randint(1, 30)}."
    )
    said = books if i % 3 else books + rng.randint(1, 5_000)
    return {"context": context, "response": f"The {name} {place} holds {said:,} books. It opened in {year}."}


def _rss_mb(process: psutil.Process) -> float:
    try:
        return round(process.memory_info().rss / 2**20, 1)
    except psutil.NoSuchProcess:
        return float("nan")


def _workers(server: psutil.Process) -> list[psutil.Process]:
    found = []
    for child in server.children():
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def _metric(client: httpx.Client, name: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return float("nan")


def soak(extra: list[str], checks: int, seconds: float, every: int) -> dict:
    with serving("--drain-seconds", "0", "--judge-workers", "2", *extra, ready_s=120) as (port, proc):
        server = psutil.Process(proc.pid)
        base = f"http://127.0.0.1:{port}"
        done, errors, lock = 0, 0, threading.Lock()
        samples: list[dict] = []
        end = time.monotonic() + seconds
        started = time.monotonic()

        def sample(client: httpx.Client) -> None:
            workers = _workers(server)
            samples.append(
                {
                    "checks": done,
                    "seconds": round(time.monotonic() - started, 1),
                    "server_rss_mb": _rss_mb(server),
                    "worker_rss_mb": sorted(_rss_mb(w) for w in workers),
                    "recycled": _metric(client, "hallumeasure_guard_judge_worker_recycled_total"),
                }
            )

        def client_thread(seed: int) -> None:
            nonlocal done, errors
            rng = random.Random(seed)
            with httpx.Client(base_url=base, timeout=30) as client:
                while time.monotonic() < end:
                    with lock:
                        if done >= checks:
                            return
                        i = done
                    r = client.post("/v1/check", json=unique_check(i, rng))
                    with lock:
                        done += 1
                        errors += r.status_code != 200
                        due = done % every == 0
                    if due:
                        sample(client)

        with httpx.Client(base_url=base, timeout=30) as client:
            sample(client)
            threads = [threading.Thread(target=client_thread, args=(seed,)) for seed in (1, 2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            sample(client)
        return {"setup": " ".join(extra) or "default", "checks": done, "errors": errors, "samples": samples}


def _table(run: dict) -> list[str]:
    rows = [
        f"### {run['setup']}: {run['checks']:,} checks, {run['errors']} errors",
        "",
        "| checks | seconds | server RSS (MB) | worker RSS (MB, each) | workers retired |",
        "|---:|---:|---:|---|---:|",
    ]
    for s in run["samples"]:
        workers = ", ".join(f"{mb:.1f}" for mb in s["worker_rss_mb"])
        rows.append(f"| {s['checks']:,} | {s['seconds']} | {s['server_rss_mb']} | {workers} | {s['recycled']:g} |")
    return [*rows, ""]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", type=int, default=20_000, help="checks per setup, at most")
    parser.add_argument("--seconds", type=float, default=150.0, help="seconds per setup, at most")
    parser.add_argument("--every", type=int, default=1_000, help="checks between two readings of the RSS")
    args = parser.parse_args()
    runs = [soak(extra, args.checks, args.seconds, args.every) for extra in (["--inline-work-units", "0"], [])]
    command = f"python benchmarks/guard_soak.py --checks {args.checks} --seconds {args.seconds:g} --every {args.every}"
    body: list[str] = []
    for run in runs:
        body += _table(run)
    write_results("guard_soak", "Guard soak: memory over unique checks", run_record(command, runs), body)


if __name__ == "__main__":
    main()
