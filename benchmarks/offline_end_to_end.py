"""The offline judge end to end (prepare, extract, judge, verify quotes, aggregate) on news articles, one core.

    HALLUMEASURE_DATA=../shared/data OMP_NUM_THREADS=1 taskset -c 0 .venv/bin/python benchmarks/offline_end_to_end.py \\
        --label new --out benchmarks/results/offline_end_to_end.json
    # the same command with PYTHONPATH set to an export of the code before (git archive <commit>) and --label old
    # adds its row beside; the .md is rendered from every row of the .json

Inputs: the CNN/DailyMail articles of ../shared/data/bump.jsonl with their summaries (news-length: ~600-word
context, ~3 sentence response; the first 600 rows hold 89 articles, each summarised by several systems, as in a
model comparison), every response measured through ``pipeline.run.measure_sample`` with the offline extractor
and judge, no store. Rate by CPU time (``time.process_time``), median of 3 runs. Each run is a fresh process
that first warms up (imports, model load) on 20 rows whose articles are not among the measured ones, then
measures the 600 once: no run sees a response twice, so caches keyed by text help only where a real run's
would (the same article under several responses), never by repeating the batch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hallumeasure.core.labels import Policy
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.pipeline.run import measure_sample
from hallumeasure.runs.datasets import load_labelled

ROOT = Path(__file__).resolve().parents[1]


def samples(n: int) -> tuple[list, list]:
    """The first ``n`` rows, and 20 rows of other articles to warm up on."""
    data = Path(os.environ.get("HALLUMEASURE_DATA", ROOT.parent / "shared" / "data"))
    rows = [s.to_sample() for s in load_labelled(data / "bump.jsonl")]
    batch = rows[:n]
    measured = {s.context for s in batch}
    return batch, [s for s in rows[n:] if s.context not in measured][:20]


async def once(batch, extractor, judge, policy) -> float:
    started = time.process_time()
    for sample in batch:
        await measure_sample(sample, extractor, judge, policy)
    return time.process_time() - started


def single_run(n: int) -> float:
    """One fresh process's run: warm up on other articles, then the CPU seconds of measuring ``n`` rows once."""
    batch, warm_up = samples(n)
    extractor, judge, policy = OfflineExtractor(), OfflineJudge(), Policy()
    asyncio.run(once(warm_up, extractor, judge, policy))
    return asyncio.run(once(batch, extractor, judge, policy))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=600)
    parser.add_argument("--label", default="new")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "offline_end_to_end.json"))
    parser.add_argument("--single", action="store_true", help="one run in this process; print its CPU seconds")
    args = parser.parse_args(argv)
    if args.single:
        print(single_run(args.n))
        return 0
    batch, _ = samples(args.n)
    times = [
        float(
            subprocess.run(
                [sys.executable, __file__, "--single", "-n", str(args.n)], check=True, capture_output=True, text=True
            ).stdout.split()[-1]
        )
        for _ in range(3)
    ]
    rate = len(batch) / statistics.median(times)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    row = {
        "label": args.label,
        "n": len(batch),
        "responses_per_cpu_second": round(rate, 1),
        "runs_cpu_s": [round(t, 2) for t in times],
        "mean_context_chars": round(statistics.mean(len(s.context) for s in batch)),
        "mean_response_chars": round(statistics.mean(len(s.response) for s in batch)),
        "code": os.environ.get("BENCH_CODE", commit.stdout.strip()),
        "load_average": round(os.getloadavg()[0], 1),
    }
    out = Path(args.out)
    rows = [r for r in (json.loads(out.read_text()) if out.exists() else []) if r["label"] != args.label] + [row]
    out.write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "# Offline judge end to end: responses per CPU second, one core",
        "",
        "Command: see the top of benchmarks/offline_end_to_end.py (the same inputs and command for every row;",
        "`old` is the code before this change, run from an export of that commit). Target: at least 300.",
        "",
        "| code | responses | context chars (mean) | response chars (mean) | responses / CPU s | CPU s per run "
        "| load |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} ({r['code']}) | {r['n']} | {r['mean_context_chars']} | {r['mean_response_chars']} | "
            f"**{r['responses_per_cpu_second']}** | {r['runs_cpu_s']} | {r['load_average']} |"
        )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
