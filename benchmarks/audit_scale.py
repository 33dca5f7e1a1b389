"""Audit and compare on large runs: time and peak memory at 10^4, 10^5 and 10^6 responses (issue #44 item 6).

    PYTHONPATH=. .venv/bin/python benchmarks/audit_scale.py                                  # 10^4, 10^5, 10^6
    PYTHONPATH=. .venv/bin/python benchmarks/audit_scale.py --sizes 10000 --resamples 200

The runs are synthetic (``hallumeasure.testing.large_runs``): a baseline and a current run over the same
ids, the current one with 2 points more contradicted claims and 30% of its responses rewritten. They are
built once and kept under ``--cache`` (in /tmp, never in the repository). Each measurement runs in a fresh
interpreter, so its peak resident memory (``ru_maxrss``) is its own:

* ``audit``: ``audit_runs(BASE, CUR)`` on the run directories, which reads each run as columns
  (``Run.load_columns``); the time is split into reading both runs and the audit's statistics, and the
  statistics into their parts (each timed again on its own after the audit); CPU seconds beside the wall
  clock, since the machine is shared;
* ``audit, runs without stored features``: the same on runs written as before the samples' features were
  stored (``write_large_run(features=False)``), whose task keys and style are worked out on reading, up to
  ``--old-max`` responses;
* ``audit, whole runs``: the same audit of runs read whole (``Run.load``: every claim and verdict as
  objects), as every audit read them before, up to ``--whole-max`` responses;
* ``compare``: ``compare_runs(BASE, CUR)`` (it reads runs whole: its worst examples, viewer and evidence
  need the claims), up to ``--compare-max`` responses.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "results"
CACHE = Path(tempfile.gettempdir()) / "hallumeasure_audit_scale_features"


def build(cache: Path, n: int, old_max: int) -> dict[str, float]:
    """The two runs of ``n`` responses under ``cache`` (built when missing); seconds spent building each."""
    from hallumeasure.testing.large_runs import write_large_run

    spent = {}
    for name, options in (("base", {}), ("cur", {"rise": 0.02, "changed": 0.3, "salt": 1})):
        for folder, features in ((name, True), (f"{name}_old", False)):
            path = cache / str(n) / folder
            if (features or n <= old_max) and not (path / "manifest.json").exists():
                started = time.perf_counter()
                write_large_run(path, n, features=features, **options)  # type: ignore[arg-type]
                spent[folder] = round(time.perf_counter() - started, 2)
    return spent


def _clock() -> float:
    return time.perf_counter()


class _Parts:
    """Wall and CPU seconds of each part of the audit, timed one after another."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._started = (_clock(), time.process_time())

    def done(self, name: str) -> None:
        now = (_clock(), time.process_time())
        self.wall[name] = round(now[0] - self._started[0], 2)
        self.cpu[name] = round(now[1] - self._started[1], 2)
        self._started = now


def measure_audit(cache: Path, n: int, resamples: int, operation: str) -> dict[str, Any]:
    from hallumeasure.report.audit import _PAIRED_COLUMNS, _select, audit_runs, decide_rise, load_for_audit
    from hallumeasure.report.audit_settings import AuditGates
    from hallumeasure.report.comparison import compare_groups
    from hallumeasure.report.runs import pairing
    from hallumeasure.runs.run import Run
    from hallumeasure.stats.groups import group_stats

    whole = operation == "whole"
    suffix = "_old" if operation == "old" else ""
    base, cur = cache / str(n) / f"base{suffix}", cache / str(n) / f"cur{suffix}"
    cpu = time.process_time()
    started = _clock()
    runs = (Run.load(base), Run.load(cur)) if whole else (load_for_audit(base), load_for_audit(cur))
    read = _clock() - started
    read_cpu = time.process_time() - cpu
    started = _clock()
    result = audit_runs(*runs, resamples=resamples)
    audit = _clock() - started
    audit_cpu = time.process_time() - cpu - read_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    parts = _Parts()
    if operation == "audit":
        options = {"resamples": resamples}
        (a, _), (b, _) = _select(runs[0], None), _select(runs[1], None)
        parts.done("response tables")
        paired = pairing(a, b, columns=_PAIRED_COLUMNS)
        pa, pb = paired.a, paired.b
        parts.done("pairing")
        group_stats(a, "a", **options)
        group_stats(b, "b", **options)
        parts.done("group_stats x2 (bootstrap)")
        compare_groups(a, b, "a", "b", paired_up=paired, **options)
        parts.done("compare_groups (sign-flip tests, subtype test)")
        gates = AuditGates()
        gated = (("unsupported_rate", "rate", 0.02), ("hallucinated_share", "hallucinated", 0.05))
        for metric, column, margin in gated:
            x, y = pa[column].to_numpy(dtype=float), pb[column].to_numpy(dtype=float)
            decide_rise(metric, x, y, paired=True, binary=column == "hallucinated", margin=margin, gates=gates)
            parts.done(f"decide_rise {metric} (bounds, planning)")
    names = {"whole": "audit, whole runs", "old": "audit, runs without stored features", "audit": "audit"}
    return {
        "operation": names[operation],
        "n": n,
        "read_s": round(read, 2),
        "audit_s": round(audit, 2),
        "total_s": round(read + audit, 2),
        "read_cpu_s": round(read_cpu, 2),
        "audit_cpu_s": round(audit_cpu, 2),
        "peak_rss_mb": round(peak),
        "status": result.status,
        "parts_s": parts.wall,
        "parts_cpu_s": parts.cpu,
    }


def measure_compare(cache: Path, n: int, resamples: int) -> dict[str, Any]:
    from hallumeasure.report.compare import compare_runs

    base, cur = cache / str(n) / "base", cache / str(n) / "cur"
    with tempfile.TemporaryDirectory() as out:
        started = _clock()
        compare_runs([base, cur], out, resamples=resamples)
        spent = _clock() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"operation": "compare", "n": n, "total_s": round(spent, 2), "peak_rss_mb": round(peak)}


def _fresh(args: list[str]) -> dict[str, Any]:
    """One measurement in a fresh interpreter; its JSON line."""
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True, cwd=REPO, timeout=3600
    )
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (the audit's default: 2000)")
    parser.add_argument("--whole-max", type=int, default=100_000)
    parser.add_argument("--old-max", type=int, default=100_000)
    parser.add_argument("--compare-max", type=int, default=100_000)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=OUT / "audit_scale")
    parser.add_argument("--one", nargs=2, metavar=("OPERATION", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--rewrite", action="store_true", help="write the Markdown again from the JSON")
    args = parser.parse_args()
    if args.rewrite:
        rewrite(args.out)
        return
    if args.one:
        operation, n = args.one[0], int(args.one[1])
        if operation == "compare":
            row = measure_compare(args.cache, n, args.resamples)
        else:
            row = measure_audit(args.cache, n, args.resamples, operation)
        print(json.dumps(row))
        return
    rows, builds = [], {}
    for n in args.sizes:
        builds[n] = build(args.cache, n, args.old_max)
        common = ["--cache", str(args.cache), "--resamples", str(args.resamples)]
        limits = {"audit": n, "old": args.old_max, "whole": args.whole_max, "compare": args.compare_max}
        for operation in ("audit", "old", "whole", "compare"):
            if n > limits[operation]:
                continue
            rows.append(_fresh(["--one", operation, str(n), *common]))
            print(json.dumps(rows[-1]), flush=True)
    write(args, rows, builds)


def write(args: argparse.Namespace, rows: list[dict[str, Any]], builds: dict[int, dict[str, float]]) -> None:
    options = [f"--sizes {' '.join(map(str, args.sizes))}", f"--resamples {args.resamples}"]
    options += [f"--whole-max {args.whole_max}", f"--old-max {args.old_max}", f"--compare-max {args.compare_max}"]
    command = "PYTHONPATH=. python benchmarks/audit_scale.py " + " ".join(options)
    data = {"command": command, "rows": rows, "build_s": {str(k): v for k, v in builds.items()}}
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Audit and compare at scale",
        "",
        f"Command: `{command}`",
        "",
        "Shared 2-core machine under load from other jobs: read the ratios more than the seconds. Bootstrap",
        f"resamples: {args.resamples} (the audit's default is 2000; the bootstrap's time grows with them).",
        "Runs are synthetic (`hallumeasure.testing.large_runs`), a baseline and a current run over the same ids;",
        "each row is a fresh interpreter, so its peak RSS is its own.",
        "",
        "| operation | responses per run | read both runs s (CPU) | audit s (CPU) | total s | peak RSS MB | status |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        read, audit = row.get("read_s", "-"), row.get("audit_s", "-")
        if "read_cpu_s" in row:
            read, audit = f"{read} ({row['read_cpu_s']})", f"{audit} ({row['audit_cpu_s']})"
        lines.append(
            f"| {row['operation']} | {row['n']:,} | {read} | {audit} "
            f"| {row['total_s']} | {row['peak_rss_mb']:,} | {row.get('status', '-')} |"
        )
    lines += ["", "Where the audit's time goes (each part timed again on its own, after the audit):", ""]
    lines += ["| responses per run | part | s | CPU s |", "|---:|---|---:|---:|"]
    for row in rows:
        cpu = row.get("parts_cpu_s", {})
        for part, seconds in row.get("parts_s", {}).items():
            lines.append(f"| {row['n']:,} | {part} | {seconds} | {cpu.get(part, '-')} |")
    built = [f"{int(n):,}: " + ", ".join(f"{k} {v}" for k, v in spent.items()) for n, spent in builds.items() if spent]
    if built:
        lines += ["", "Building the synthetic runs (s per run): " + "; ".join(built) + "."]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def rewrite(out: Path) -> None:
    """Write the Markdown again from the JSON of an earlier run (``--rewrite``)."""
    data = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    words = data["command"].split()
    sizes = [int(w) for w in words[words.index("--sizes") + 1 : words.index("--resamples")]]
    namespace = argparse.Namespace(
        sizes=sizes,
        resamples=int(words[words.index("--resamples") + 1]),
        whole_max=int(words[words.index("--whole-max") + 1]),
        old_max=int(words[words.index("--old-max") + 1]) if "--old-max" in words else 0,
        compare_max=int(words[words.index("--compare-max") + 1]),
        out=out,
    )
    write(namespace, data["rows"], {int(k): v for k, v in data["build_s"].items()})


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
