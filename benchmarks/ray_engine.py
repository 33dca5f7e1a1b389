"""The Ray engine's cost and reach (issue #44): throughput against one plain process, the engine's overhead per
batch, and the one writer's time and the driver's memory as the run grows.

    PYTHONPATH=. nice python benchmarks/ray_engine.py            # about 6 minutes on a shared 2-core machine
    PYTHONPATH=. nice python benchmarks/ray_engine.py --quick    # smaller sizes, to try the script (writes nothing)

Three parts, each keyless (``--judge offline``), on synthetic responses over the examples' sources:

* **Throughput.** The same JSONL file measured by one plain process (``Measurement.run``, the local engine)
  and by the Ray engine with 1 and 2 workers on a local cluster of 2 CPUs, back to back, the plain run once
  more at the end to bracket the machine's drift. Responses per wall second, and per CPU second: the driver's
  own CPU time plus every Ray worker process's (sampled with psutil every 0.25 s, so a lower bound by at
  most the last 0.25 s of each worker).
* **Overhead per batch** at the default batch size, in one process without Ray's transport: the time an actor
  spends on a batch (``BatchMeasurer.__call__``: parse the rows, judge, pickle the results) against the time
  of judging those samples alone (``measure_samples``), and the one writer's time for that batch.
* **The one writer and the driver's memory.** Pairs of (sample, result) as workers send them (pickled, in
  batches of 256; results of 64 measured samples given new ids) written by the driver's writer into a fresh
  run store, in a fresh process per size: the writing time per 10^5 responses, and the process's peak memory
  (RSS) after the streaming part and after the finished manifest (which reads every stored result once, as a
  local run does).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from hallumeasure.runs.inputs import ColumnMap

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"


def synthetic(path: Path, n: int, start: int = 0) -> Path:
    """``n`` responses over the examples' sources: every third with a changed number (unsupported claims)."""
    rows = [json.loads(x) for x in (ROOT / "examples" / "samples.jsonl").read_text().splitlines() if x.strip()]
    with path.open("w") as handle:
        for i in range(start, start + n):
            row = rows[i % len(rows)]
            response = row["response"] if i % 3 else row["response"].replace("4.2", "5.1").replace("2025", "2031")
            handle.write(json.dumps({**row, "id": f"syn-{i}", "response": f"{response} (note {i})"}) + "\n")
    return path


def _offline() -> Any:
    from hallumeasure.pipeline.measurement import Measurement, measure_settings

    return Measurement(measure_settings({"judge": ["offline"]}))


#: The processes of a Ray cluster besides its workers: their CPU is the engine's too.
RAY_DAEMONS = ("raylet", "gcs_server", "plasma_store")


class WorkerCpu:
    """The CPU seconds of a Ray cluster's processes (workers, raylet, GCS, agents) while a run goes (psutil,
    sampled every 0.25 s; the driver's own CPU time is counted apart)."""

    def __init__(self) -> None:
        import psutil

        self.psutil = psutil
        self.seen: dict[int, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sample()
        self.start = dict(self.seen)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        for proc in self.psutil.process_iter(["name", "cmdline"]):
            try:
                cmd, name = " ".join(proc.info["cmdline"] or []), proc.info["name"] or ""
                if name.startswith("ray::") or name in RAY_DAEMONS or "/site-packages/ray/" in cmd:
                    times = proc.cpu_times()
                    with self._lock:
                        self.seen[proc.pid] = times.user + times.system
            except (self.psutil.NoSuchProcess, self.psutil.AccessDenied):
                continue

    def _loop(self) -> None:
        while not self._stop.wait(0.25):
            self._sample()

    def now(self) -> float:
        """CPU seconds of Ray's workers since this probe started."""
        with self._lock:
            return sum(cpu - self.start.get(pid, 0.0) for pid, cpu in self.seen.items())

    def stop(self) -> float:
        self._stop.set()
        self.thread.join()
        self._sample()
        return self.now()


class Clock:
    """Wall and CPU time of a run, in all and from its first stored result on (the steady state: past the start,
    the workers' start and the first batch)."""

    def __init__(self, workers: WorkerCpu | None = None) -> None:
        self.workers = workers
        self.first: tuple[float, float] | None = None
        self.count = 0
        self.wall, self.cpu = time.perf_counter(), self._cpu()

    def _cpu(self) -> float:
        return time.process_time() + (self.workers.now() if self.workers is not None else 0.0)

    def progress(self, _result: object) -> None:
        self.count += 1
        if self.first is None:
            self.first = (time.perf_counter(), self._cpu())
            self.first_count = self.count

    def row(self, engine: str, n: int) -> dict[str, Any]:
        if self.workers is not None:
            self.workers.stop()
        wall, cpu = time.perf_counter(), self._cpu()
        assert self.first is not None and self.count == n
        batch = self.first_count
        steady_n, steady_wall, steady_cpu = n - batch, wall - self.first[0], cpu - self.first[1]
        return {
            "engine": engine,
            "wall_s": wall - self.wall,
            "cpu_s": cpu - self.cpu,
            "responses_per_wall_s": n / (wall - self.wall),
            "responses_per_cpu_s": n / (cpu - self.cpu),
            "steady_responses_per_wall_s": steady_n / steady_wall,
            "steady_responses_per_cpu_s": steady_n / steady_cpu,
        }


def throughput(n: int, work: Path) -> dict[str, Any]:
    import ray

    from hallumeasure.pipeline.ray_engine import RayOptions, measure_on_ray
    from hallumeasure.runs.inputs import load_samples

    path = synthetic(work / "throughput.jsonl", n)

    def plain(name: str) -> dict[str, Any]:
        clock = Clock()
        _offline().run(load_samples(path), work / name, progress=clock.progress)
        return clock.row("one plain process", n)

    def judging_alone() -> dict[str, Any]:
        from hallumeasure.pipeline.run import measure_samples

        stages = _offline().stages()
        samples = load_samples(path).samples
        clock = Clock()
        asyncio.run(measure_samples(samples, stages.extractor, stages.judge, stages.policy, progress=clock.progress))
        return clock.row("judging alone, one process (measure_samples, nothing stored)", n)

    rows = [plain("plain-1"), judging_alone()]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        for workers in (1, 2):
            clock = Clock(WorkerCpu())
            options = RayOptions(workers=workers)
            measure_on_ray(path, work / f"ray-{workers}", _offline(), options=options, progress=clock.progress)
            rows.append(clock.row(f"Ray, {workers} worker(s)", n))
    finally:
        ray.shutdown()
    rows.append(plain("plain-2"))
    return {"n": n, "rows": rows}


def overhead(batches: int, work: Path) -> dict[str, Any]:
    """At the default batch size, in CPU seconds of this process: what an actor adds to judging a batch (reading
    its rows into samples, pickling the results), and what the driver's writer spends storing it."""
    import numpy as np
    import pandas as pd

    from hallumeasure.pipeline.ray_engine import BatchMeasurer, InputForm, RayOptions, RowKind, RowReader, _Writer
    from hallumeasure.pipeline.run import measure_samples
    from hallumeasure.runs.store import RunStore

    size = RayOptions().batch_size
    path = synthetic(work / "overhead.jsonl", size * (batches + 1))
    lines = path.read_text().splitlines()
    measurement = _offline()
    actor = BatchMeasurer(measurement, reader=RowReader(ColumnMap.of(None), None, InputForm.LINES))
    actor(pd.DataFrame({"text": lines[:size]}))  # the first batch loads the judge's models: not counted
    stages = actor.stages
    steps: dict[str, list[float]] = {"read": [], "judge": [], "pickle": [], "write": []}
    with RunStore(work / "overhead-run", write=True) as store:
        writer = _Writer(store, measurement)
        for b in range(1, batches + 1):
            batch = pd.DataFrame({"text": lines[size * b : size * (b + 1)]})
            started = time.process_time()
            rows = [actor._row(record) for record in actor.reader.records(batch)]
            samples = [value for _, value in rows]
            steps["read"].append(time.process_time() - started)
            started = time.process_time()
            results = actor.loop.run_until_complete(
                measure_samples(samples, stages.extractor, stages.judge, stages.policy)
            )
            steps["judge"].append(time.process_time() - started)
            started = time.process_time()
            payloads = np.array([pickle.dumps(pair) for pair in zip(samples, results, strict=True)], dtype=object)
            kinds = np.full(len(payloads), int(RowKind.MEASURED))
            steps["pickle"].append(time.process_time() - started)
            started = time.process_time()
            writer.write(kinds, payloads)
            steps["write"].append(time.process_time() - started)
    median = {step: statistics.median(values) for step, values in steps.items()}
    return {
        "batch_size": size,
        "batches": batches,
        "cpu_s_per_batch": median,
        "actor_overhead_share": (median["read"] + median["pickle"]) / median["judge"],
        "writer_share_of_judging": median["write"] / median["judge"],
    }


def _pairs(count: int) -> list[tuple[Any, Any]]:
    """(sample, result) pairs of ``count`` measured synthetic samples."""
    from hallumeasure.pipeline.run import measure_samples
    from hallumeasure.runs.inputs import load_samples

    with tempfile.TemporaryDirectory() as tmp:
        samples = load_samples(synthetic(Path(tmp) / "base.jsonl", count)).samples
    stages = _offline().stages()
    results = asyncio.run(measure_samples(samples, stages.extractor, stages.judge, stages.policy))
    return list(zip(samples, results, strict=True))


def _renamed(sample: Any, result: Any, new: str) -> tuple[Any, Any]:
    claims = [c.model_copy(update={"id": f"{new}:c{c.index}", "sample_id": new}) for c in result.claims]
    verdicts = [v.model_copy(update={"claim_id": f"{new}:c{v.claim_id.rsplit(':c', 1)[1]}"}) for v in result.verdicts]
    return (
        sample.model_copy(update={"id": new}),
        result.model_copy(update={"sample_id": new, "claims": claims, "verdicts": verdicts}),
    )


def writer_child(n: int, out: Path) -> dict[str, Any]:
    """In a fresh process: ``n`` responses through the one writer; its time and this process's peak memory."""
    import numpy as np

    from hallumeasure.pipeline.ray_engine import RowKind, _Writer
    from hallumeasure.pipeline.run import finish_manifest, new_manifest
    from hallumeasure.runs.store import RunStore

    def peak_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    base = _pairs(64)
    measurement = _offline()
    stages = measurement.stages()
    setup_mb = peak_mb()
    writing = writing_cpu = 0.0
    with RunStore(out, write=True) as store:
        manifest = new_manifest(
            out,
            stages.extractor,
            stages.judge,
            mode=measurement.settings.mode,
            input_sha256="",
            input_path=None,
            n_samples=0,
            policy=stages.policy,
            detector="claims",
            settings={},
        )
        writer = _Writer(store, measurement)
        for start in range(0, n, 256):
            payloads = [
                pickle.dumps(_renamed(*base[i % len(base)], f"w-{i}")) for i in range(start, min(n, start + 256))
            ]
            kinds = np.full(len(payloads), int(RowKind.MEASURED))
            started, cpu = time.perf_counter(), time.process_time()
            writer.write(kinds, np.array(payloads, dtype=object))
            writing += time.perf_counter() - started
            writing_cpu += time.process_time() - cpu
            if (start + 256) % 100_000 < 256:  # a checkpoint in the log, for the long sizes
                done = f"{start + 256:,} written in {writing:.0f} s"
                print(f"writer {n}: {done}, peak {peak_mb():.0f} MB", file=sys.stderr)
        streamed_mb = peak_mb()
        started = time.perf_counter()
        finish_manifest(store, manifest, n_samples=writer.samples, measured_now=writer.measured, skipped=0)
        finishing = time.perf_counter() - started
    return {
        "n": n,
        "write_s": writing,
        "write_s_per_1e5": writing / n * 1e5,
        "write_cpu_s_per_1e5": writing_cpu / n * 1e5,
        "finish_s": finishing,
        "peak_rss_mb_setup": setup_mb,
        "peak_rss_mb_streamed": streamed_mb,
        "peak_rss_mb_finished": peak_mb(),
        "store_mb": (out / "run.sqlite").stat().st_size / 2**20,
    }


def writer_sizes(sizes: list[int], work: Path) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        child = subprocess.run(
            [sys.executable, __file__, "--writer-child", str(n), "--work", str(work / f"writer-{n}")],
            check=True,
            stdout=subprocess.PIPE,  # the child's checkpoints go to this process's stderr as they come
            text=True,
        )
        rows.append(json.loads(child.stdout.strip().splitlines()[-1]))
        print(f"writer {n}: {rows[-1]}", file=sys.stderr)
    return rows


def markdown(data: dict[str, Any]) -> str:
    t, o, w = data["throughput"], data["overhead"], data["writer"]
    lines = [
        "# The Ray engine: throughput, overhead, the one writer, the driver's memory",
        "",
        f"Command: `{data['command']}` ({data['seconds']:.0f} s in all; {data['machine']}, "
        f"load average {data['load_average']} at the start: the machine is shared, so read the ratios measured "
        "back to back more than the absolute rates).",
        "",
        f"## Throughput: {t['n']} keyless responses (`--judge offline`), back to back",
        "",
        "| engine | wall s | CPU s | responses / wall s | responses / CPU s | vs plain | steady: / wall s | "
        "steady: / CPU s | steady vs plain |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    plain = [r for r in t["rows"] if r["engine"] == "one plain process"]
    per_cpu = statistics.mean(r["responses_per_cpu_s"] for r in plain)
    steady = statistics.mean(r["steady_responses_per_cpu_s"] for r in plain)
    for r in t["rows"]:
        lines.append(
            f"| {r['engine']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['responses_per_wall_s']:.0f} | "
            f"{r['responses_per_cpu_s']:.0f} | {r['responses_per_cpu_s'] / per_cpu:.2f} | "
            f"{r['steady_responses_per_wall_s']:.0f} | {r['steady_responses_per_cpu_s']:.0f} | "
            f"{r['steady_responses_per_cpu_s'] / steady:.2f} |"
        )
    lines += [
        "",
        "Steady: from the first stored result to the last, which leaves out the start (the cluster's actors "
        "starting and loading the judge's models, the first batch). vs plain: against the mean of the two plain "
        "runs. Judging alone is the judge's own rate, with nothing stored: what a core can do at best. The probe "
        "may miss the last 0.25 s of a worker that ends with the run, so a Ray run's steady CPU rate can read a "
        "little high; a steady rate above judging alone is that error, not a faster judge.",
        "",
        "CPU s of a Ray run: the driver's own CPU time plus every Ray worker process's (the measuring actors and "
        "the read tasks), sampled every 0.25 s. The cluster has 2 CPUs: one actor takes 1 CPU and leaves the "
        "other for reading and the driver; two actors take half a CPU each.",
        "",
        f"## Overhead per batch of {o['batch_size']} (CPU seconds, median of {o['batches']} batches, one process)",
        "",
        "| step | where | CPU s per batch | share of judging |",
        "|---|---|---:|---:|",
    ]
    cpu = o["cpu_s_per_batch"]
    for step, where in (
        ("read", "actor: rows to samples"),
        ("judge", "actor: judging (`measure_samples`)"),
        ("pickle", "actor: results pickled for the driver"),
        ("write", "driver: the one writer stores the batch"),
    ):
        lines.append(f"| {step} | {where} | {cpu[step]:.3f} | {cpu[step] / cpu['judge']:.3f} |")
    lines += [
        "",
        f"The engine's own work in an actor (read + pickle) is {100 * o['actor_overhead_share']:.1f}% of the judging "
        "time of a batch. Ray's transport (object store, scheduling) is not in this table: it is in the Ray rows "
        "of the throughput table, counted with the cluster's processes.",
        "",
        "The writer runs in the driver while the actors judge the next batches: it adds to the run's time only "
        "when the workers together judge faster than one writer stores (see the next table).",
        "",
        "## The one writer and the driver's memory",
        "",
        *(
            [
                f"Measured apart, later: `{data['writer_command']}` ({data['writer_seconds']:.0f} s, load average "
                f"{data['writer_load_average']} at the start). {data.get('writer_note', '')}".rstrip(),
                "",
            ]
            if "writer_command" in data
            else []
        ),
        "| responses | write s | write s per 10^5 | write CPU s per 10^5 | finish s | peak RSS MB: set up | "
        "after streaming | after finishing | run.sqlite MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in w:
        lines.append(
            f"| {r['n']:,} | {r['write_s']:.1f} | {r['write_s_per_1e5']:.1f} | {r['write_cpu_s_per_1e5']:.1f} | "
            f"{r['finish_s']:.1f} | "
            f"{r['peak_rss_mb_setup']:.0f} | {r['peak_rss_mb_streamed']:.0f} | {r['peak_rss_mb_finished']:.0f} | "
            f"{r['store_mb']:.0f} |"
        )
    lines += [
        "",
        "Peak RSS is the process's high-water mark. After streaming: the peak once every batch has arrived and "
        "been stored; it never rose above the set-up (the judge's models, the 64 measured samples), so the "
        "streaming part is flat in the number of responses. After finishing: the peak once the manifest's counts, "
        "usage and judge checks are computed, which streams the stored results a chunk of 500 at a time, as a "
        "local run does at its end (`finish_memory.md`). Write CPU s: the writer's own CPU time; write s and "
        "finish s are wall time on the shared machine.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, to try the script")
    parser.add_argument("--million", action="store_true", help="also write 10^6 responses (minutes more)")
    parser.add_argument("--render", action="store_true", help="write the .md again from the committed .json")
    parser.add_argument(
        "--writer-only",
        type=int,
        nargs="+",
        metavar="N",
        help="measure only the writer at these sizes and replace its table in the committed results",
    )
    parser.add_argument(
        "--keep-writer",
        action="store_true",
        help="measure throughput and overhead only, keeping the committed writer table (measured apart)",
    )
    parser.add_argument("--writer-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.render:
        (RESULTS / "ray_engine.md").write_text(markdown(json.loads((RESULTS / "ray_engine.json").read_text())))
        return
    if args.writer_child:
        print(json.dumps(writer_child(args.writer_child, args.work)))
        return
    started = time.perf_counter()
    load = os.getloadavg()[0]
    data: dict[str, Any]
    if args.writer_only:
        data = json.loads((RESULTS / "ray_engine.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            data["writer"] = writer_sizes(args.writer_only, Path(tmp))
        listed = " ".join(str(n) for n in args.writer_only)
        data["writer_command"] = f"PYTHONPATH=. nice python benchmarks/ray_engine.py --writer-only {listed}"
        data["writer_load_average"] = round(load, 1)
        data["writer_seconds"] = time.perf_counter() - started
        (RESULTS / "ray_engine.json").write_text(json.dumps(data, indent=2) + "\n")
        (RESULTS / "ray_engine.md").write_text(markdown(data))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sizes = [10_000, 100_000] + ([1_000_000] if args.million else [])
        data = {
            "command": "PYTHONPATH=. nice python benchmarks/ray_engine.py" + (" --quick" if args.quick else ""),
            "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
            "load_average": round(load, 1),
            "throughput": throughput(400 if args.quick else 2000, work),
            "overhead": overhead(2 if args.quick else 5, work),
        }
        if args.keep_writer:  # read once the rest is measured: a writer-only run may have replaced it meanwhile
            committed = json.loads((RESULTS / "ray_engine.json").read_text())
            data |= {k: v for k, v in committed.items() if k == "writer" or k.startswith("writer_")}
            data["command"] += " --keep-writer"
        else:
            data["writer"] = writer_sizes([2_000, 10_000] if args.quick else sizes, work)
    data["seconds"] = time.perf_counter() - started
    if not args.quick:  # a quick run only tries the script: its figures are not the results
        (RESULTS / "ray_engine.json").write_text(json.dumps(data, indent=2) + "\n")
        (RESULTS / "ray_engine.md").write_text(markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
