"""Speed and memory of the offline judge on SummEval-sized inputs (~400-word context, ~60-word response).

    .venv/bin/python benchmarks/offline_speed.py                  # writes benchmarks/results/offline_speed.md
    .venv/bin/python benchmarks/offline_speed.py --stream 100000  # also: 100,000 responses, streamed, peak RSS

Synthetic inputs (deterministic): each response has its own context, so no context cache helps.
One process, one core (the judge is single-threaded).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import statistics
import sys
import time
from pathlib import Path

from hallumeasure.core.types import Sample
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.judges.offline.context import index_context

HERE = Path(__file__).resolve().parent
WORDS = [
    "council",
    "budget",
    "harbor",
    "repair",
    "storm",
    "homes",
    "mayor",
    "plan",
    "vote",
    "barrier",
    "river",
    "school",
    "residents",
    "rain",
    "officials",
    "company",
    "revenue",
    "quarter",
    "stores",
    "growth",
    "museum",
    "planetarium",
    "visitors",
    "renovation",
    "trial",
    "patients",
    "inhaler",
    "attacks",
    "placebo",
    "weeks",
    "battery",
    "cell",
    "capacity",
    "cycles",
    "production",
    "line",
]
NAMES = ["Eastmere", "Solberg", "Voltra", "Lyon", "Kessler", "Hartwell", "Millbrook", "Okafor", "Northgate"]


def synthetic(i: int, per_context: int = 1) -> Sample:
    """Response ``i``; ``per_context`` consecutive responses share one context (SummEval has 16 per article)."""
    rng = random.Random(i // per_context)

    def sentence(n: int) -> str:
        words = [rng.choice(WORDS) for _ in range(n)]
        words[0] = rng.choice(NAMES)
        words.insert(rng.randrange(1, n), str(rng.randrange(2, 5000)))
        return " ".join(words) + "."

    context = " ".join(sentence(20) for _ in range(20))  # ~420 words
    rng.seed(i)
    response = " ".join(sentence(14) for _ in range(4))  # ~60 words
    return Sample(id=f"syn-{i}", context=context, response=response)


def measure(n: int, per_context: int = 1, pregenerate: bool = True) -> tuple[float, float, int]:
    """Wall-clock and CPU seconds to extract and judge ``n`` responses, and the number of claims found.

    With ``pregenerate`` the synthetic inputs are made before the clock starts (only extraction and
    judgement are timed); without it they are made one at a time inside the loop, which keeps
    memory flat for long streams (and the rate then includes making the inputs).
    """
    extractor, judge = OfflineExtractor(), OfflineJudge()
    index_context.cache_clear()
    claims = 0
    inputs = [synthetic(i, per_context) for i in range(n)] if pregenerate else None
    started, started_cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        sample = inputs[i] if inputs is not None else synthetic(i, per_context)
        found = extractor.claims(sample)
        judge.judge_now(sample, found)
        claims += len(found)
    return time.perf_counter() - started, time.process_time() - started_cpu, claims


def _rates(n: int, timed: list[tuple[float, float, int]]) -> tuple[list[float], list[float]]:
    """Responses per second of each timed run, sorted: by the wall clock and by CPU time."""
    return sorted(n / wall for wall, _, _ in timed), sorted(n / cpu for _, cpu, _ in timed)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="responses timed")
    parser.add_argument("--stream", type=int, default=0, help="also stream this many responses and report peak RSS")
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed runs of each case; the median is reported with the range (this VM's speed varies)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results" / "offline_speed.md")
    args = parser.parse_args(argv)
    measure(50)  # warm up: imports, model load
    load_before = os.getloadavg()[0]
    timed = [measure(args.n) for _ in range(args.repeats)]
    claims = timed[0][2]
    rates, cpu_rates = _rates(args.n, timed)
    shared, cpu_shared = _rates(args.n, [measure(args.n, per_context=16) for _ in range(args.repeats)])
    load_after = os.getloadavg()[0]
    lines = [
        "# Offline judge: speed",
        "",
        f"Command: `python benchmarks/offline_speed.py -n {args.n}"
        + (f" --repeats {args.repeats}" if args.repeats != 5 else "")
        + (f" --stream {args.stream}`" if args.stream else "`"),
        f"Machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, one core; "
        f"1-minute load average {load_before:.1f} before the timed runs, {load_after:.1f} after. Each rate is the "
        f"median of {args.repeats} runs, with the slowest and fastest in brackets: the speed of this virtual "
        "machine varies from run to run. Rates are by the wall clock; the rates by CPU time (the process's own "
        "time on the core, `time.process_time`) follow them, and are the ones to compare when the machine is busy.",
        "",
        f"- {args.n} synthetic SummEval-sized responses (~420-word context, ~60-word response, {claims / args.n:.1f} "
        f"claims each), every context different: **{statistics.median(rates):.0f} responses/s** "
        f"[{rates[0]:.0f}, {rates[-1]:.0f}]; by CPU time {statistics.median(cpu_rates):.0f} "
        f"[{cpu_rates[0]:.0f}, {cpu_rates[-1]:.0f}] (extraction + judgement; target >= 200).",
        f"- The same with 16 responses per context, as in SummEval (16 systems' summaries per article; the context "
        f"is analysed once): **{statistics.median(shared):.0f} responses/s** [{shared[0]:.0f}, {shared[-1]:.0f}]; "
        f"by CPU time {statistics.median(cpu_shared):.0f} [{cpu_shared[0]:.0f}, {cpu_shared[-1]:.0f}].",
    ]
    if args.stream:
        before = peak_rss_mb()
        seconds_stream, _, _ = measure(args.stream, per_context=16, pregenerate=False)
        lines.append(
            f"- {args.stream:,} responses (16 per context) made and judged one at a time: "
            f"{args.stream / seconds_stream:.0f} responses/s including making the inputs, peak RSS "
            f"{peak_rss_mb():.0f} MB (after the timed runs {before:.0f} MB): memory stays flat, because "
            f"only the last 256 analysed contexts are cached."
        )
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
