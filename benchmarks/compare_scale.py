"""compare, show and measure's closing summary on large runs: time and peak memory, before and after they read runs
as columns (issue #44 item 6).

    PYTHONPATH=. .venv/bin/python benchmarks/compare_scale.py --before /path/to/a/checkout/of/main
    PYTHONPATH=. .venv/bin/python benchmarks/compare_scale.py --sizes 10000 --resamples 2000

The runs are the synthetic pair of ``benchmarks/audit_scale.py`` (built once under its cache, in /tmp, never in the
repository). Each measurement runs in a fresh interpreter that imports the package from one source tree (this one,
or ``--before``'s), so its peak resident memory (``ru_maxrss``) is its own:

* ``compare``: ``compare_runs([BASE, CUR], OUT)``, every file of the report written (the page ``view.html`` too);
  for this tree the time is split into reading both runs and the rest;
* ``show``: the command ``hallumeasure show CUR``, its output thrown away;
* ``summary``: ``print_summary(CUR)``, the table ``measure`` prints when it ends;
* ``reads`` (only when named in ``--operations``): compare's reads without its statistics, both runs as columns,
  their response tables and the records of the page's first responses.

``--before`` measures sizes up to ``--before-max`` only: read whole, a run of 10^6 needs more memory than the
machine has.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_scale import CACHE, build  # the same synthetic runs as the audit benchmark

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "results"
OPERATIONS = ("compare", "show", "summary")
#: What ``--operations reads`` times: compare's reads alone (both runs as columns, their response tables and the
#: records of the page's first responses), without its statistics.
READS = "reads"


def _peak_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def measure(operation: str, cache: Path, n: int, resamples: int, split: bool) -> dict[str, Any]:
    """One operation on the runs of ``n`` responses, timed in this interpreter."""
    from hallumeasure.cli import app
    from hallumeasure.cli.output import print_summary
    from hallumeasure.report import compare

    base, cur = cache / str(n) / "base", cache / str(n) / "cur"
    row: dict[str, Any] = {"operation": operation, "n": n}
    started, cpu = time.perf_counter(), time.process_time()  # the imports are done: this times the work alone
    if operation == "compare":
        runs: list[Any] = [base, cur]
        if split:
            runs = [compare.load_for_compare(base), compare.load_for_compare(cur)]
            row["read_s"] = round(time.perf_counter() - started, 2)
        with tempfile.TemporaryDirectory() as out:
            compare.compare_runs(runs, out, resamples=resamples)
    elif operation == "reads":
        from hallumeasure.report.runs import response_units
        from hallumeasure.report.viewer import DEFAULT_MAX_RESPONSES

        for path in (base, cur):
            run = compare.load_for_compare(path)
            response_units(run)
            run.with_records(run.responses["sample_id"].head(DEFAULT_MAX_RESPONSES))
    elif operation == "show":
        with contextlib.redirect_stdout(io.StringIO()):
            app(["show", str(cur)], standalone_mode=False)
    else:
        with contextlib.redirect_stdout(io.StringIO()):
            print_summary(cur)
    row["total_s"] = round(time.perf_counter() - started, 2)
    row["cpu_s"] = round(time.process_time() - cpu, 2)
    row["peak_rss_mb"] = _peak_mb()
    return row


def _fresh(code: Path, args: list[str]) -> dict[str, Any]:
    """One measurement in a fresh interpreter importing the package from ``code``; its JSON line."""
    env = {**os.environ, "PYTHONPATH": str(code), "COLUMNS": "100"}
    done = subprocess.run(
        [sys.executable, __file__, "--code", str(code), *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=code,
        env=env,
        timeout=3600,
    )
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples (compare's default: 2000)")
    parser.add_argument("--before", type=Path, help="a source tree of the code before (a checkout of main)")
    parser.add_argument("--before-max", type=int, default=100_000)
    parser.add_argument("--operations", nargs="+", default=list(OPERATIONS), choices=[*OPERATIONS, READS])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=OUT / "compare_scale")
    parser.add_argument("--code", type=Path, default=REPO, help=argparse.SUPPRESS)
    parser.add_argument("--one", nargs=3, metavar=("OPERATION", "N", "SPLIT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        operation, n, split = args.one[0], int(args.one[1]), args.one[2] == "split"
        print(json.dumps(measure(operation, args.cache, n, args.resamples, split)))
        return
    rows, builds = [], {}
    common = ["--cache", str(args.cache), "--resamples", str(args.resamples)]
    for n in args.sizes:
        builds[n] = build(args.cache, n, 0)
        trees = [("after", REPO)] + ([("before", args.before)] if args.before and n <= args.before_max else [])
        for operation in args.operations:
            for version, code in trees:
                if operation == READS and version == "before":  # the code before has no column read to time
                    continue
                split = "split" if version == "after" else "whole"
                row = {"version": version, **_fresh(code, ["--one", operation, str(n), split, *common])}
                rows.append(row)
                print(json.dumps(row), flush=True)
                write(args, rows, builds)  # after every row: a long benchmark leaves what it measured


def write(args: argparse.Namespace, rows: list[dict[str, Any]], builds: dict[int, dict[str, float]]) -> None:
    options = [f"--sizes {' '.join(map(str, args.sizes))}", f"--resamples {args.resamples}"]
    if list(args.operations) != list(OPERATIONS):
        options.append(f"--operations {' '.join(args.operations)}")
    if args.before:
        options += ["--before MAIN", f"--before-max {args.before_max}"]
    command = "PYTHONPATH=. python benchmarks/compare_scale.py " + " ".join(options)
    data = {"command": command, "rows": rows, "build_s": {str(k): v for k, v in builds.items()}}
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# compare, show and measure's summary at scale",
        "",
        f"Command: `{command}`" + (" (MAIN: a checkout of main before this change)" if args.before else ""),
        "",
        "Shared 2-core machine under heavy load from other jobs: read the ratios more than the seconds. Bootstrap",
        f"resamples: {args.resamples} (compare's default is 2000; the bootstrap's time grows with them). Runs are the",
        "synthetic pair of `benchmarks/audit_scale.py`; each row is a fresh interpreter, so its peak RSS is its own.",
        "",
        "| operation | responses per run | version | read both runs s | total s | CPU s | peak RSS MB |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['operation']} | {row['n']:,} | {row['version']} | {row.get('read_s', '-')} "
            f"| {row['total_s']} | {row.get('cpu_s', '-')} | {row['peak_rss_mb']:,} |"
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if "--code" in sys.argv:  # the measured tree first, before this file's own
        sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1])
    else:
        sys.path.insert(0, str(REPO))
    main()
