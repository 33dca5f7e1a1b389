"""How long ``hallumeasure --help`` and ``--version`` take: the command line's start-up (issue #38 item 5).

    PYTHONPATH=. .venv/bin/python benchmarks/cli_startup.py                      # this tree
    PYTHONPATH=. .venv/bin/python benchmarks/cli_startup.py --before /path/to/old/tree

Each command runs ``--runs`` times in a fresh interpreter (``python -m hallumeasure.cli``); the median and
the fastest wall time are reported. ``--before`` times another checkout (say, ``git archive`` of an older
commit) in the same session, so both figures come from the same machine under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "results"
COMMANDS = (["--help"], ["--version"])


def time_tree(tree: Path, runs: int) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    timings: dict[str, dict[str, float]] = {}
    for args in COMMANDS:
        walls = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "hallumeasure.cli", *args], env=env, capture_output=True, check=True)
            walls.append(time.perf_counter() - started)
        timings[" ".join(args)] = {"median_s": round(statistics.median(walls), 3), "min_s": round(min(walls), 3)}
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--before", type=Path, help="an older checkout to time alongside this one")
    args = parser.parse_args()
    rows = {}
    if args.before:
        rows["before"] = time_tree(args.before.resolve(), args.runs)
    rows["now"] = time_tree(REPO, args.runs)
    bare = []
    for _ in range(args.runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - started)
    rows["python alone"] = {"-c pass": {"median_s": round(statistics.median(bare), 3), "min_s": round(min(bare), 3)}}
    (OUT / "cli_startup.json").write_text(json.dumps({"runs": args.runs, "timings": rows}, indent=1) + "\n")
    lines = [
        "# Command-line start-up",
        "",
        f"Command: `PYTHONPATH=. python benchmarks/cli_startup.py{' --before OLD_TREE' if args.before else ''}` "
        f"({args.runs} runs each, fresh interpreter; shared 2-core machine, so read the ratio more than the seconds).",
        "",
        "| tree | command | median s | fastest s |",
        "|---|---|---:|---:|",
    ]
    for tree, timings in rows.items():
        for command, t in timings.items():
            shown = f"python {command}" if tree == "python alone" else f"hallumeasure {command}"
            lines.append(f"| {tree} | `{shown}` | {t['median_s']} | {t['min_s']} |")
    lines += [
        "",
        "`before` is the tree before issue #38 (every command module imported pandas, numpy and the model",
        "wrapper at start); `now` loads no heavy library until a command runs (tests/cli/test_cli_startup.py).",
    ]
    (OUT / "cli_startup.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
