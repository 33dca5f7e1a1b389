"""The two forms of a run, SQLite and Parquet parts: what writing, storing and reading each costs (issue #44 item 2).

    PYTHONPATH=. .venv/bin/python benchmarks/run_forms.py                      # 10^4 and 10^5 responses
    PYTHONPATH=. .venv/bin/python benchmarks/run_forms.py --sizes 10000 100000 1000000

Runs are synthetic (``hallumeasure.testing.large_runs``: one to four claims a response), a baseline and a current
run over the same ids, built once under ``--cache`` (in /tmp, never in the repository) and converted to Parquet
(``export_parquet``, 100,000 samples a part). Each measurement runs in a fresh interpreter, so its peak resident
memory (``VmHWM``) is its own; times are CPU seconds of that process (the machine is shared, so wall time
says less):

* ``write``: the first 10^5 results of the baseline (read as records beforehand) stored in batches of
  ``--batch`` (the Ray engine's default), as the two forms store them: the single writer's ``add_samples`` and
  ``write_results`` into one SQLite file, and ``write_batch`` of each batch as a part (what each Ray worker does,
  in parallel); then the finish, which reads every result back once for the manifest's counts;
* ``size``: bytes on disk of each form of the run;
* ``columns``: ``load_for_audit`` of the baseline (``Run.load_columns``, what ``audit`` reads);
* ``audit``: ``audit_runs(BASE, CUR)`` with 200 resamples, reading both runs as columns.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "results"
CACHE = Path(tempfile.gettempdir()) / "hallumeasure_run_forms"
WRITE_ROWS = 100_000


def build(cache: Path, n: int) -> dict[str, float]:
    """Both runs of ``n`` responses in both forms under ``cache`` (built when missing); CPU seconds per step."""
    from hallumeasure.runs.parquet_run import export_parquet
    from hallumeasure.testing.large_runs import write_large_run

    spent = {}
    for name, options in (("base", {}), ("cur", {"rise": 0.02, "changed": 0.3, "salt": 1})):
        sqlite, parquet = cache / str(n) / "sqlite" / name, cache / str(n) / "parquet" / name
        if not (sqlite / "manifest.json").exists():
            write_large_run(sqlite, n, **options)  # type: ignore[arg-type]
        if not (parquet / "manifest.json").exists():
            started = time.process_time()
            export_parquet(sqlite, parquet, overwrite=True)
            spent[f"export_{name}_cpu_s"] = round(time.process_time() - started, 2)
    return spent


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _peak_mb() -> float:
    """This process's peak resident memory since it started (``VmHWM``: unlike ``ru_maxrss``, it does not keep
    the peak of the parent it was forked from)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def measure_write(cache: Path, form: str, batch: int, rows: int) -> dict[str, Any]:
    """Store the first ``rows`` results in batches of ``batch`` in ``form``, then read them back for the finish."""
    from hallumeasure.pipeline.run import FinishTally
    from hallumeasure.runs.parquet_run import ParquetDataset, ParquetRunWriter, write_batch
    from hallumeasure.runs.store import RunStore

    source = cache / str(WRITE_ROWS) / "sqlite" / "base"
    with RunStore(source) as store:
        samples, results = store.samples()[:rows], list(itertools.islice(store.iter_results(), rows))
        policy = store.read_manifest().policy  # type: ignore[union-attr]
    out = cache / "write" / f"{form}-{batch}"
    if out.exists():
        subprocess.run(["rm", "-rf", str(out)], check=True)
    started = time.process_time()
    if form == "sqlite":
        with RunStore(out, write=True) as writer:
            for at in range(0, len(results), batch):
                writer.add_samples(samples[at : at + batch], start=at)
                writer.write_results(results[at : at + batch])
        written = time.process_time() - started
        with RunStore(out) as reader:
            tally = FinishTally(policy)
            for result in reader.iter_results():
                tally.add(result)
    else:
        dataset = ParquetDataset(out)
        dataset.create(overwrite=False)
        for at in range(0, len(results), batch):
            write_batch(dataset, samples[at : at + batch], results[at : at + batch])
        written = time.process_time() - started
        with ParquetRunWriter(out) as reader:
            tally = FinishTally(policy)
            for result in reader.iter_results():
                tally.add(result)
    finished = time.process_time() - started - written
    assert tally.run.summary().n_responses == len(results)
    return {
        "write_cpu_s": round(written, 2),
        "finish_cpu_s": round(finished, 2),
        "size_mb": round(_size(out) / 1e6, 1),
        "files": sum(1 for f in out.rglob("*") if f.is_file()),
        "peak_mb": _peak_mb(),
    }


def measure_driver(cache: Path, form: str, batch: int, rows: int) -> dict[str, Any]:
    """The Ray driver's own work per row for the first ``rows`` results: the SQLite form's writer unpickles each result
    and stores it; the Parquet form's counts the small row each worker sends back (its part is written)."""
    import pickle

    import numpy as np

    from hallumeasure.pipeline.measurement import Measurement
    from hallumeasure.pipeline.ray_engine import RowKind, _Writer
    from hallumeasure.pipeline.ray_parts import PartRow, PartsWriter
    from hallumeasure.runs.parquet_run import ParquetRunWriter, batch_key
    from hallumeasure.runs.store import RunStore

    with RunStore(cache / str(WRITE_ROWS) / "sqlite" / "base") as store:
        samples, results = store.samples()[:rows], list(itertools.islice(store.iter_results(), rows))
    batches = []
    for at in range(0, len(results), batch):
        pairs = list(zip(samples[at : at + batch], results[at : at + batch], strict=True))
        key = batch_key([s.id for s, _ in pairs])
        if form == "sqlite":
            payloads = [pickle.dumps(pair) for pair in pairs]
        else:
            payloads = [pickle.dumps(PartRow(key, s.id, s.model, "0" * 64)) for s, _ in pairs]
        batches.append((np.array([int(RowKind.MEASURED)] * len(pairs)), np.array(payloads, dtype=object)))
    del samples, results
    out = cache / "driver" / form
    if out.exists():
        subprocess.run(["rm", "-rf", str(out)], check=True)
    measurement = Measurement()
    started = time.process_time()
    if form == "sqlite":
        with RunStore(out, write=True) as store:
            writer = _Writer(store, measurement)
            for kinds, payloads in batches:
                writer.write(kinds, payloads)
    else:
        with ParquetRunWriter(out) as parts:
            counter = PartsWriter(parts, measurement)
            for kinds, payloads in batches:
                counter.write(kinds, payloads)
    return {"driver_cpu_s": round(time.process_time() - started, 2)}


def measure_read(cache: Path, n: int, form: str, what: str) -> dict[str, Any]:
    from hallumeasure.report.audit import audit_runs, load_for_audit

    base, cur = cache / str(n) / form / "base", cache / str(n) / form / "cur"
    started = time.process_time()
    if what == "columns":
        rows = len(load_for_audit(base).responses)
        assert rows == n
    else:
        audit_runs(base, cur, resamples=200)
    return {"cpu_s": round(time.process_time() - started, 2), "peak_mb": _peak_mb()}


def _child(*args: str) -> dict[str, Any]:
    """One measurement in a fresh interpreter: its JSON line."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise SystemExit(f"{args}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument(
        "--write-rows", type=int, default=WRITE_ROWS, help="results written (the figures are per 10^5 all the same)"
    )
    parser.add_argument(
        "--add", action="store_true", help="add --sizes to the committed results, keeping their other rows"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "write":
            print(json.dumps(measure_write(args.cache, rest[0], int(rest[1]), args.write_rows)))
        elif kind == "driver":
            print(json.dumps(measure_driver(args.cache, rest[0], int(rest[1]), args.write_rows)))
        else:
            print(json.dumps(measure_read(args.cache, int(rest[0]), rest[1], rest[2])))
        return
    started = time.perf_counter()
    command = " ".join(["benchmarks/run_forms.py", *sys.argv[1:]])
    result: dict[str, Any] = {"command": command, "sizes": {}}
    if args.add:
        result = json.loads((OUT / "run_forms.json").read_text())
        result["command"] += f"; then {command}"
    for n in sorted({*args.sizes, *([] if args.add else [WRITE_ROWS])}):
        built = build(args.cache, n)
        if n not in args.sizes:
            continue
        row: dict[str, Any] = {"build": built}
        for form in ("sqlite", "parquet"):
            row[form] = {
                "size_mb": round(_size(args.cache / str(n) / form / "base") / 1e6, 1),
                "columns": _child("--cache", str(args.cache), "--child", "read", str(n), form, "columns"),
                "audit": _child("--cache", str(args.cache), "--child", "read", str(n), form, "audit"),
            }
        result["sizes"][str(n)] = row
        print(n, json.dumps(row), flush=True)
    result["sizes"] = dict(sorted(result["sizes"].items(), key=lambda item: int(item[0])))
    if args.add:
        result["wall_s"] = round(result["wall_s"] + time.perf_counter() - started, 1)
        (OUT / "run_forms.json").write_text(json.dumps(result, indent=2) + "\n")
        (OUT / "run_forms.md").write_text(render(result))
        return
    rows = ["--cache", str(args.cache), "--write-rows", str(args.write_rows), "--child"]
    result["write_per_1e5"] = {
        f"{form}, batches of {batch}": _child(*rows, "write", form, str(batch))
        for form, batch in (("sqlite", args.batch), ("parquet", args.batch), ("parquet", 4096))
    }
    for form in ("sqlite", "parquet"):
        result["write_per_1e5"][f"{form}, batches of {args.batch}"].update(
            _child(*rows, "driver", form, str(args.batch))
        )
    scale = WRITE_ROWS / args.write_rows  # CPU seconds per 10^5 results; sizes and files as written
    result["write_rows"] = args.write_rows
    for row in result["write_per_1e5"].values():
        for key in ("write_cpu_s", "finish_cpu_s", "driver_cpu_s"):
            if key in row:
                row[key] = round(row[key] * scale, 2)
    print(json.dumps(result["write_per_1e5"]), flush=True)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    (OUT / "run_forms.json").write_text(json.dumps(result, indent=2) + "\n")
    (OUT / "run_forms.md").write_text(render(result))


def render(result: dict[str, Any]) -> str:
    lines = [
        "# The two forms of a run: SQLite and Parquet parts",
        "",
        f"Command: `PYTHONPATH=. .venv/bin/python {result['command']}` ({result['wall_s']} s wall, on a shared",
        "2-core machine; times are CPU seconds of one process). Synthetic runs of one to four claims a response",
        "(`hallumeasure.testing.large_runs`); each measurement in a fresh interpreter, peak RSS (VmHWM) its own.",
        "",
        "## Writing 10^5 responses",
        "",
        f"Measured on {result['write_rows']:,} results, CPU seconds given per 10^5; sizes and files as written.",
        "",
        "| form | driver's rows CPU s | write CPU s | finish CPU s | size MB | files |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in result["write_per_1e5"].items():
        lines.append(
            f"| {name} | {row.get('driver_cpu_s', '')} | {row['write_cpu_s']} | {row['finish_cpu_s']} |"
            f" {row['size_mb']} | {row['files']} |"
        )
    lines += [
        "",
        "*Driver's rows*: what the Ray driver does per batch that comes back: in the SQLite form it unpickles",
        "every result and stores it (positions, duplicates, one transaction a batch: the single writer); in the",
        "Parquet form it counts the small row each worker sends (the worker wrote the part). *Write*: the",
        "store's own writes alone (`add_samples` + `write_results`; `write_batch` for a part), done by the",
        "driver in the SQLite form and by each worker, in parallel, in the Parquet form. *Finish*: counts,",
        "usage and the judge's checks for the manifest, every result read back once, in the driver, in both.",
        "",
        "## Reading",
        "",
        "| responses | form | size MB | `load_for_audit` CPU s | peak RSS MB | `audit_runs` CPU s | peak RSS MB |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for n, row in result["sizes"].items():
        for form in ("sqlite", "parquet"):
            r = row[form]
            lines.append(
                f"| {int(n):,} | {form} | {r['size_mb']} | {r['columns']['cpu_s']} | {r['columns']['peak_mb']} |"
                f" {r['audit']['cpu_s']} | {r['audit']['peak_mb']} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
