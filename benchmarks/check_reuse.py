"""What a repeated ``hallumeasure.check`` costs once its stages are built, against the first call.

    .venv/bin/python benchmarks/check_reuse.py      # writes benchmarks/results/check_reuse.md and .json

For the offline judge and for an LLM judge served by the local Anthropic simulator (hallumeasure.testing,
20 ms per answer, the request cache off so that every call reaches it), the first call of a process
(which builds the extractor and judge) is timed against the median of the next calls on other
responses; the stages kept are counted. Also timed: ``check`` called from inside a running event loop,
as in Jupyter. Target (issue #26): a repeated call costs at most a fifth of the first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONTEXT = (
    "The Storebaelt bridge is 6.8 km long. It opened to traffic in 1998 and carries a motorway. "
    "Its main span is 1,624 m, and its towers rise 254 m above the sea."
)
RESPONSES = [
    "The Storebaelt bridge is {n} km long. It opened in 1998.",
    "Its towers rise {n} m above the sea. It carries a motorway.",
    "The main span is {n} m long. The bridge opened to traffic in 1998.",
]
TARGET = 0.2


def _responses(count: int) -> list[str]:
    return [RESPONSES[i % len(RESPONSES)].format(n=10 + i) for i in range(count)]


def _time(call, responses: list[str]) -> tuple[float, list[float]]:
    started = time.perf_counter()
    call(responses[0])
    first = time.perf_counter() - started
    rest = []
    for response in responses[1:]:
        started = time.perf_counter()
        call(response)
        rest.append(time.perf_counter() - started)
    return first, rest


def measure(judge: str, repeats: int, **settings: object) -> dict[str, object]:
    import hallumeasure
    from hallumeasure.api import check as check_module

    check_module.forget_stages()

    def call(response: str) -> None:
        hallumeasure.check(response, context=CONTEXT, judge=judge, extractor=judge, **settings)

    first, rest = _time(call, _responses(repeats + 1))

    async def in_a_loop() -> float:
        started = time.perf_counter()
        call("The bridge is 7 km long.")
        return time.perf_counter() - started

    in_loop = asyncio.run(in_a_loop())
    median = statistics.median(rest)
    return {
        "judge": judge,
        "first_s": round(first, 4),
        "repeat_median_s": round(median, 4),
        "repeat_over_first": round(median / first, 4),
        "inside_running_loop_s": round(in_loop, 4),
        "stages_built": len(check_module._checkers),
        "calls": repeats + 2,
        "meets_target": median / first <= TARGET,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "check_reuse")
    args = parser.parse_args()
    from hallumeasure.testing import AnthropicServer

    rows = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["HALLUMEASURE_CACHE_DIR"] = cache
        rows.append(measure("offline", args.repeats))
        with AnthropicServer(latency=0.02) as srv:
            os.environ["ANTHROPIC_BASE_URL"] = srv.base_url
            os.environ.setdefault("ANTHROPIC_API_KEY", "sk-benchmark-simulator")
            rows.append(measure("anthropic:claude-sim", args.repeats, no_cache=True))
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Repeated `check` calls",
        "",
        f"Command: `.venv/bin/python benchmarks/check_reuse.py --repeats {args.repeats}`. First call of the process "
        f"(builds the stages) against the median of {args.repeats} later calls on other responses; the LLM judge is "
        "the local Anthropic simulator answering in 20 ms, request cache off. Target: a repeated call costs at most "
        f"{TARGET:.0%} of the first.",
        "",
        "| judge | first call (s) | repeated call, median (s) | repeated / first | inside a running loop (s) "
        "| stages built | target met |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['judge']} | {r['first_s']} | {r['repeat_median_s']} | {r['repeat_over_first']} | "
        f"{r['inside_running_loop_s']} | {r['stages_built']} | {'yes' if r['meets_target'] else 'no'} |"
        for r in rows
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
