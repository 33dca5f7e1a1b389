"""P6: the offline judge on one core — throughput on SummEval-sized responses, and peak memory while
streaming many synthetic responses into a run store. Run by perf.py in a child process (so that
its peak RSS is the judge's own); prints one JSON object.

    .venv/bin/python benchmarks/perf_offline.py --throughput 600 --stream 100000
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf_data import summeval_sized, synthetic_stream

from hallumeasure.pipeline.run import measure_samples
from hallumeasure.runs.store import RunStore


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def _judge():
    try:
        from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
    except ImportError as exc:
        return None, f"hallumeasure.judges.offline is not importable: {exc}"
    return (OfflineExtractor(), OfflineJudge()), None


async def _throughput(n: int, stages) -> dict:
    samples, source = summeval_sized(n)
    extractor, judge = stages
    await measure_samples(samples[:20], extractor, judge, concurrency=1)  # load models and lexicons first
    started = time.perf_counter()
    results = await measure_samples(samples, extractor, judge, concurrency=1)
    elapsed = time.perf_counter() - started
    return {
        "responses": n,
        "seconds": elapsed,
        "per_second": n / elapsed,
        "source": source,
        "claims_per_response": sum(r.n_claims for r in results) / n,
        "error_responses": sum(r.error is not None for r in results),
    }


async def _stream(n: int, stages, chunk: int = 1000) -> dict:
    extractor, judge = stages
    errors = claims = 0
    rss_at: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp, RunStore(Path(tmp) / "run", write=True) as store:
        started = time.perf_counter()
        stream = synthetic_stream(n)
        done = 0
        while batch := list(itertools.islice(stream, chunk)):
            store.add_samples(batch)
            for result in await measure_samples(batch, extractor, judge, concurrency=1):
                store.write_result(result)
                errors += result.error is not None
                claims += result.n_claims
            done += len(batch)
            rss_at[done] = _peak_rss_mib()
        elapsed = time.perf_counter() - started
        db_mib = (Path(tmp) / "run" / "run.sqlite").stat().st_size / 2**20
    return {
        "responses": n,
        "seconds": elapsed,
        "per_second": n / elapsed,
        "peak_rss_mib": _peak_rss_mib(),
        "peak_rss_mib_by_progress": {
            share: rss_at[min(rss_at, key=lambda d: abs(d - share * n))] for share in (0.1, 0.5, 1.0)
        }
        if rss_at
        else {},
        "error_responses": errors,
        "claims": claims,
        "store_mib": round(db_mib, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--throughput", type=int, default=600, help="SummEval-sized responses to time")
    parser.add_argument("--stream", type=int, default=100_000, help="synthetic responses to stream")
    parser.add_argument("--core", type=int, default=0, help="the one CPU core to run on")
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # a broken judge would log one traceback per response
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
    stages, problem = _judge()
    if stages is None:
        print(json.dumps({"status": "pending", "reason": problem}))
        return
    out = {"status": "measured", "rss_before_mib": _peak_rss_mib()}
    out["throughput"] = asyncio.run(_throughput(args.throughput, stages))
    if out["throughput"]["error_responses"] == args.throughput:
        out["status"] = "broken"
        out["reason"] = "every response ended as an error row (the offline judge raised for each)"
    elif args.stream:
        out["stream"] = asyncio.run(_stream(args.stream, stages))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
