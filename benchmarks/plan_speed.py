"""How long ``hallumeasure plan`` takes, beside ``audit`` on the same two runs (issues #45 item 1, #47).

    PYTHONPATH=. nice .venv/bin/python benchmarks/plan_speed.py                      # this tree
    PYTHONPATH=. nice .venv/bin/python benchmarks/plan_speed.py --before /path/to/old/tree

Each command runs ``--runs`` times in a fresh interpreter (``python -m hallumeasure.cli``, start-up
included); the fastest CPU time (user + system of the child) and the fastest wall time are reported.
The two runs are measured once with this tree, keyless: ``examples/samples.jsonl`` as the baseline,
and the same samples with every number in every other response moved by 7 as the current run, so the
paired differences have a spread. ``--before`` times another checkout (say, ``git archive`` of an
older commit) in the same session, on the same runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "results"
RATE = ["plan", "--rise", "0.02", "--baseline-rate", "0.05"]
JUDGE = ["--judge-sensitivity", "0.85", "--judge-specificity", "0.9"]


def commands(runs: Path) -> dict[str, list[str]]:
    two = ["--baseline", str(runs / "A"), "--current", str(runs / "B")]
    return {
        "plan --rise 0.02 --baseline-rate 0.05": RATE,
        "plan --rise 0.02 --baseline-rate 0.05 --judge-sensitivity 0.85 --judge-specificity 0.9": RATE + JUDGE,
        "plan --rise 0.04 --baseline-rate 0.05": ["plan", "--rise", "0.04", "--baseline-rate", "0.05"],
        "plan --baseline A --current B --rise 0.02": ["plan", *two, "--rise", "0.02"],
        "audit --baseline A --current B": ["audit", *two, "--out", str(runs / "audit")],
    }


def cli(tree: Path, args: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh ``python -m hallumeasure.cli`` with ``args``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "80"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # run from the tree itself: ``python -m`` puts the working directory ahead of PYTHONPATH
    done = subprocess.run([sys.executable, "-m", "hallumeasure.cli", *args], env=env, cwd=tree, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1, 4):  # an audit may pass, flag or stay inconclusive
        raise SystemExit(f"{args} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


#: The plan alone, in a warm interpreter (start-up and imports left out): fastest of two, per case.
IN_PROCESS = """
import json, sys, time
from hallumeasure.report.audit_settings import PlanSettings
from hallumeasure.report.plan import plan_audit
runs = sys.argv[1]
cases = {
    "plan_audit rise 0.02, baseline rate 0.05": (dict(rise=0.02, baseline_rate=0.05), {}),
    "plan_audit the same with judge 0.85 / 0.9": (
        dict(rise=0.02, baseline_rate=0.05, judge_sensitivity=0.85, judge_specificity=0.9), {}),
    "plan_audit rise 0.04, baseline rate 0.05": (dict(rise=0.04, baseline_rate=0.05), {}),
    "plan_audit from runs A and B, rise 0.02": (dict(rise=0.02), dict(baseline=runs + "/A", current=runs + "/B")),
}
seen = {}
for name, (settings, given) in cases.items():
    best = []
    for _ in range(2):
        started = time.process_time()
        plan_audit(PlanSettings(**settings), **given)
        best.append(time.process_time() - started)
    seen[name] = round(min(best), 2)
print(json.dumps(seen))
"""


def in_process(tree: Path, runs: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(runs)], env=env, cwd=tree, capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def make_runs(where: Path) -> None:
    rows = [json.loads(line) for line in (REPO / "examples" / "samples.jsonl").read_text().splitlines() if line]
    for i, row in enumerate(rows):
        if i % 2 == 0:
            row["response"] = re.sub(r"\d+", lambda m: str(int(m.group()) + 7), row["response"])
    changed = where / "changed.jsonl"
    changed.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for name, samples in (("A", REPO / "examples" / "samples.jsonl"), ("B", changed)):
        args = ["measure", str(samples), "--judge", "offline", "--out", str(where / name)]
        subprocess.run([sys.executable, "-m", "hallumeasure.cli", *args], env={**os.environ, "PYTHONPATH": str(REPO)},
                       cwd=REPO, capture_output=True, check=True)  # fmt: skip


def time_trees(trees: dict[str, Path], runs: Path, repeats: int) -> dict[str, dict[str, dict[str, float]]]:
    """Fastest CPU and wall seconds per tree and command; the trees take turns, so a change of load hits both."""
    seen: dict[str, dict[str, list[tuple[float, float]]]] = {label: {} for label in trees}
    for name, args in commands(runs).items():
        for _ in range(repeats):
            for label, tree in trees.items():
                seen[label].setdefault(name, []).append(cli(tree, args))
        for label in trees:
            times = seen[label][name]
            print(label, name, min(c for c, _ in times), min(w for _, w in times), flush=True)
    return {
        label: {
            name: {"cpu_s": round(min(c for c, _ in t), 2), "wall_s": round(min(w for _, w in t), 2)}
            for name, t in by_name.items()
        }
        for label, by_name in seen.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", type=Path, help="an older checkout to time alongside this one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        make_runs(runs)
        trees = {"now": REPO} if args.before is None else {"before": args.before.resolve(), "now": REPO}
        rows = time_trees(trees, runs, args.runs)
        alone = {label: in_process(tree, runs) for label, tree in trees.items()}
    (OUT / "plan_speed.json").write_text(
        json.dumps({"runs": args.runs, "timings": rows, "plan_alone_cpu_s": alone}, indent=1) + "\n"
    )
    labels = list(rows)
    lines = [
        "# How long `plan` takes, beside `audit` on the same two runs",
        "",
        f"Command: `PYTHONPATH=. nice python benchmarks/plan_speed.py{' --before OLD_TREE' if args.before else ''}` "
        f"(fastest of {args.runs} fresh interpreters each, the trees taking turns, start-up included; CPU = "
        "user + system; shared 2-core machine under load, so read the ratio more than the seconds). A and B: "
        "`examples/samples.jsonl` measured keyless, and the same samples with numbers changed in every other "
        "response.",
        "",
        "| command | " + " | ".join(f"{label} CPU s | {label} wall s" for label in labels) + " |",
        "|---|" + "---|---|" * len(labels),
    ]
    for name in rows[labels[0]]:
        cells = " | ".join(f"{rows[label][name]['cpu_s']:.2f} | {rows[label][name]['wall_s']:.2f}" for label in labels)
        lines.append(f"| `{name}` | {cells} |")
    lines += [
        "",
        "The plan alone, in a warm interpreter (imports left out), CPU seconds, fastest of two:",
        "",
        "| call | " + " | ".join(labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for name in alone["now"]:
        lines.append(f"| {name} | " + " | ".join(f"{alone[label][name]:.2f}" for label in labels) + " |")
    (OUT / "plan_speed.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
