"""The Ray engine (issue #44): the run Ray workers measure is the run one process measures, row for row; it never
hangs on a two-CPU cluster; a killed worker or driver loses and repeats nothing.

The tests share one local cluster of two CPUs and use a few dozen samples. Without the ``ray`` extra they skip,
saying so; with HALLUMEASURE_REQUIRE_RAY set (as in CI, which installs the extra) they fail instead.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from hallumeasure.core.errors import ConfigError
from hallumeasure.pipeline.ray_engine import RayOptions, measure_on_ray, pool_size, require_ray

try:
    import ray
    import ray.data
except ImportError as exc:
    reason = f"the ray extra is not installed ({exc.name}): pip install 'hallumeasure[ray]'"
    if os.environ.get("HALLUMEASURE_REQUIRE_RAY"):
        pytest.fail(f"HALLUMEASURE_REQUIRE_RAY is set (as in CI) but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

from hallumeasure.pipeline.measurement import Measurement, measure_settings
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.run import Run
from hallumeasure.runs.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: The longest a run of a few dozen samples may take here before it counts as hung (the machine may be shared and
#: busy: a worker's start alone took 40 s at a load average of 20).
HANG_AFTER = 180.0
FAKE_KEY = "sk-ant-test-key-123456"
#: Seconds between the actor admitting a request and the server seeing it, at most, on a busy machine.
JITTER = 0.5


def test_the_actor_pool_always_leaves_a_cpu_for_reading():
    assert pool_size(2, None) == (1, 1.0)
    assert pool_size(2, 2) == (2, 0.5)  # two workers on two CPUs share one: the read step keeps the other
    assert pool_size(1, None) == (1, 0.5)
    assert pool_size(16, None) == (15, 1.0)
    for cpus in (1, 2, 3, 8):
        for workers in (None, 1, 2, 4, 7):
            count, each = pool_size(cpus, workers)
            assert count * each <= max(cpus - 1, cpus / 2)
    with pytest.raises(ConfigError):
        pool_size(0, None)


def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r"pip install 'hallumeasure\[ray\]'"):
        require_ray()


@pytest.fixture(scope="module")
def cluster():
    """One local cluster of two CPUs for the module (started once: it takes seconds)."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
        runtime_env={"env_vars": {"ANTHROPIC_API_KEY": FAKE_KEY}},  # the workers' key for the unreachable provider
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _offline(**values) -> Measurement:
    return Measurement(measure_settings({"judge": ["offline"], **values}))


def _local(path: Path, out: Path, **values) -> Path:
    _offline(**values).run(load_samples(path), out)
    return out


def _synthetic(path: Path, n: int = 36) -> Path:
    """``n`` responses over the examples' sources (some exact, some with a changed number), and rows a run
    skips: a blank line, a line that is not JSON, a row without a response, an id given twice; and an id that two
    models' rows share, which a run keys as id@model."""
    examples = [json.loads(line) for line in (EXAMPLES / "samples.jsonl").read_text().splitlines() if line.strip()]
    lines = []
    for i in range(n):
        row = examples[i % len(examples)]
        response = row["response"] if i % 3 else row["response"].replace("4.2", "5.1").replace("2025", "2031")
        lines.append(json.dumps({**row, "id": f"syn-{i}", "response": response, "tags": [f"t{i % 4}"]}))
        if i == 5:
            lines.append("")
        if i == 9:
            lines.append("{not json")
        if i == 14:
            lines.append(json.dumps({"id": "no-answer", "context": "A source."}))
        if i == 20:
            lines.append(json.dumps({**examples[3], "id": "syn-3"}))  # the id and model of an earlier row
        if i == 30:
            lines.append(json.dumps({**examples[7], "id": "syn-7", "model": "another-model"}))  # another model's
    path.write_text("\n".join(lines) + "\n")
    return path


def _same_rows(ours: Path, theirs: Path, *, same_input: bool = True) -> None:
    """The two runs hold the same rows: samples, claims, verdicts, counts, rates, intervals, skipped rows."""
    a, b = Run.load(ours, name="run"), Run.load(theirs, name="run")
    assert [s.id for s in a.samples] == [s.id for s in b.samples]
    assert a.samples == b.samples
    assert [r.model_dump() for r in a.results] == [r.model_dump() for r in b.results]
    for frame in ("responses", "claims", "summary"):
        pd.testing.assert_frame_equal(getattr(a, frame), getattr(b, frame))
    pd.testing.assert_frame_equal(a.skipped.reset_index(drop=True), b.skipped.reset_index(drop=True))
    assert a.manifest is not None and b.manifest is not None
    measured_now = "measured_now"  # a resumed run measured fewer this time
    assert {k: v for k, v in a.manifest.counts.items() if k != measured_now} == {
        k: v for k, v in b.manifest.counts.items() if k != measured_now
    }
    same = ["n_samples", "status", "judge", "extractor", "policy", "prompts", "usage", "judge_checks"]
    same += ["input_sha256"] if same_input else []  # a Dataset's rows are hashed, a file's bytes
    assert {k: getattr(a.manifest, k) for k in same} == {k: getattr(b.manifest, k) for k in same}


def _within(seconds: float, work):
    """``work()``'s result, or a failure when it has not returned in ``seconds`` (a hung cluster)."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(work).result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        pytest.fail(f"the run had not finished after {seconds:.0f} s: the cluster hangs")
    finally:
        pool.shutdown(wait=False)


def test_two_workers_on_two_cpus_finish_with_the_rows_of_one_process(cluster, tmp_path):
    path = _synthetic(tmp_path / "in.jsonl")
    options = RayOptions(workers=2, batch_size=8)
    manifest = _within(HANG_AFTER, lambda: measure_on_ray(path, tmp_path / "ray", _offline(), options=options))
    assert manifest.status == "complete" and manifest.settings["engine"]["workers"] == 2
    assert manifest.counts["skipped_input_rows"] == 3 and manifest.counts["results"] == 37
    _same_rows(tmp_path / "ray", _local(path, tmp_path / "local"))
    run = Run.load(tmp_path / "ray")
    assert run.skipped["row"].tolist() == [12, 18, 25]  # numbered as the file's lines, the blank line 7 counted
    shared = [s for s in run.samples if s.given_id == "syn-7"]  # both models' rows, keyed as a local run keys them
    assert [(s.id, s.model) for s in shared] == [
        (f"syn-7@{shared[0].model}", shared[0].model),
        ("syn-7@another-model", "another-model"),
    ]


def test_a_dataset_with_arrow_types_and_missing_values_reads_as_a_local_run_reads_its_file(cluster, tmp_path):
    rows = [json.loads(line) for line in (EXAMPLES / "samples.jsonl").read_text().splitlines() if line.strip()]
    for row in rows[::2]:
        del row["question"]  # Arrow fills the gap with a null: <NA> in a batch, None in the sample
    for row in rows[1::3]:  # passages in a list column: numpy arrays in a batch
        row["contexts"] = [{"id": f"p{i}", "text": part} for i, part in enumerate(row.pop("context").split(". "))]
    parquet = tmp_path / "mixed.parquet"
    pd.DataFrame(rows).to_parquet(parquet)
    dataset = ray.data.read_parquet(parquet)
    sampled = _offline(sample_rate=0.7)  # and the same responses picked by the hash of their ids
    manifest = measure_on_ray(dataset, tmp_path / "ray", sampled, options=RayOptions(batch_size=2))
    assert manifest.input_path == "<Ray Dataset>" and len(manifest.input_sha256) == 64
    assert 0 < manifest.settings["sampled_out"] < len(rows) and manifest.n_samples < len(rows)
    _same_rows(tmp_path / "ray", _local(parquet, tmp_path / "local", sample_rate=0.7), same_input=False)
    samples = Run.load(tmp_path / "ray").samples
    assert {len(s.passages) > 1 for s in samples} == {True, False}  # list columns and plain ones, both read


def _results_count(run_dir: Path) -> int:
    try:
        with sqlite3.connect(run_dir / "run.sqlite", timeout=1) as db:
            return db.execute("SELECT count(*) FROM results").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_a_driver_killed_mid_run_resumes_and_measures_only_what_is_missing(cluster, tmp_path):
    path = _synthetic(tmp_path / "in.jsonl", n=400)
    out = tmp_path / "ray"
    env = {**os.environ, "RAY_ADDRESS": cluster, "PYTHONPATH": str(ROOT)}
    args = ["measure", str(path), "--out", str(out), "--engine", "ray", "--judge", "offline", "--ray-batch-size", "4"]
    driver = subprocess.Popen([sys.executable, "-m", "hallumeasure.cli", *args], env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + HANG_AFTER
        while _results_count(out) < 8 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert driver.poll() is None, "the driver finished before it could be killed: give it more rows"
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.wait(30)
    stored = _results_count(out)
    assert 8 <= stored < 401
    manifest = measure_on_ray(path, out, _offline(), options=RayOptions(batch_size=16), resume=True)
    assert manifest.counts["measured_now"] == 401 - stored and manifest.status == "complete"
    _same_rows(out, _local(path, tmp_path / "local"))


class _CrashOnce:
    """A judge that kills its worker process the first time it judges anything (a marker file remembers)."""

    def __init__(self, judge, marker: Path) -> None:
        self.inner, self.marker = judge, marker

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def judge(self, sample, claims):
        if not self.marker.exists():
            self.marker.write_text("killed")
            os._exit(1)  # the worker dies mid-batch, as under an OOM kill
        return await self.inner.judge(sample, claims)


class _CrashingMeasurement(Measurement):
    marker: Path

    def stages(self, run_dir=None, *, models=None):
        built = super().stages(run_dir, models=models)
        if ray.get_runtime_context().worker.mode == ray.WORKER_MODE:  # in an actor, not in the driver
            built.judge = _CrashOnce(built.judge, self.marker)
        return built


def test_a_worker_killed_mid_batch_is_retried_without_duplicate_rows(cluster, tmp_path):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    path = _synthetic(tmp_path / "in.jsonl", n=24)
    measurement = _CrashingMeasurement(_offline().settings)
    measurement.marker = tmp_path / "killed"
    manifest = _within(
        HANG_AFTER, lambda: measure_on_ray(path, tmp_path / "ray", measurement, options=RayOptions(batch_size=6))
    )
    assert measurement.marker.read_text() == "killed"  # a worker did die
    with RunStore(tmp_path / "ray") as store:
        ids = [row[0] for row in store.db.execute("SELECT sample_id FROM results")]
    assert len(ids) == len(set(ids)) == 24 == manifest.counts["results"]
    _same_rows(tmp_path / "ray", _local(path, tmp_path / "local"))


def _measuring_workers() -> list[int]:
    """The process ids of the cluster's measuring actors (their process titles name the actor's class)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if "BatchMeasurer" in " ".join(proc.info["cmdline"] or []):
            found.append(proc.info["pid"])
    return found


def test_a_worker_killed_with_sigkill_by_the_driver_loses_and_repeats_nothing(cluster, tmp_path):
    """The test, as an operator or the kernel's OOM killer would, sends SIGKILL to a live measuring actor mid-run:
    Ray restarts it and retries its batch, and the run holds every id once, with the rows of one process."""
    path = _synthetic(tmp_path / "in.jsonl", n=400)
    out = tmp_path / "ray"
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    run = pool.submit(measure_on_ray, path, out, _offline(), options=RayOptions(workers=2, batch_size=4))
    try:
        deadline = time.monotonic() + HANG_AFTER
        while (_results_count(out) < 8 or not _measuring_workers()) and not run.done():
            assert time.monotonic() < deadline, "the run stored nothing in time"
            time.sleep(0.02)
        victim = _measuring_workers()[0]
        os.kill(victim, signal.SIGKILL)
        killed_at = _results_count(out)
        manifest = run.result(timeout=HANG_AFTER)
    finally:
        pool.shutdown(wait=False)
    assert killed_at < 401, "the run finished before the worker could be killed: give it more rows"
    assert victim not in _measuring_workers()
    with RunStore(out) as store:
        ids = [row[0] for row in store.db.execute("SELECT sample_id FROM results")]
    assert len(ids) == len(set(ids)) == 401 == manifest.counts["results"]
    assert manifest.status == "complete"
    _same_rows(out, _local(path, tmp_path / "local"))


def test_measure_on_ray_shows_its_progress_as_batches_arrive(cluster, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from hallumeasure.cli import app
    from hallumeasure.cli.progress import SampleProgress

    monkeypatch.setattr(SampleProgress, "LINE_EVERY", 0.0)  # a line at every stored result, instead of every 30 s
    monkeypatch.setenv("RAY_ADDRESS", cluster)
    path = _synthetic(tmp_path / "in.jsonl", n=12)
    args = ["measure", str(path), "--out", str(tmp_path / "ray"), "--engine", "ray", "--judge", "offline"]
    result = CliRunner().invoke(app, [*args, "--ray-batch-size", "4"])
    assert result.exit_code == 3, result.output  # skipped rows: the exit status of an incomplete run, as locally
    counts = [int(n) for n in re.findall(r"measuring: (\d+) samples, .* elapsed", result.output)]
    # a line per stored result (and the heartbeat's in between): counted up to the run's 12, never down
    assert counts == sorted(counts) and set(range(1, 13)) <= set(counts) <= set(range(13)), result.output


def test_a_csv_file_reads_as_a_local_run_reads_it(cluster, tmp_path):
    """CSV rows, with a row a run skips, an id given twice and an id two models share: the rows of a local run,
    numbered as its reader numbers them (the header is row 1)."""
    rows = [json.loads(line) for line in (EXAMPLES / "samples.jsonl").read_text().splitlines() if line.strip()]
    records = [{k: row.get(k) for k in ("id", "context", "question", "response", "model")} for row in rows]
    records += [
        {**records[2], "model": "another-model"},  # an id that two models share: keyed id@model
        {**records[4]},  # the same id and model again: a duplicate
        {**records[5], "id": "no-source", "context": None},  # an empty cell: a row without its source is skipped
    ]
    path = tmp_path / "in.csv"
    pd.DataFrame(records).to_csv(path, index=False, sep=";")
    manifest = _within(HANG_AFTER, lambda: measure_on_ray(path, tmp_path / "ray", _offline()))
    assert manifest.input_path == str(path)
    _same_rows(tmp_path / "ray", _local(path, tmp_path / "local"))
    assert len(Run.load(tmp_path / "ray").skipped) == 2


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_provider_stops_the_run_with_its_own_error_not_a_ray_failure(cluster, tmp_path, monkeypatch):
    from hallumeasure.models.model import ProviderUnreachableError

    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    judge = f"anthropic:claude-3-5-haiku-latest?base_url=http://127.0.0.1:{_closed_port()}"
    measurement = Measurement(measure_settings({"judge": [judge], "extractor": "offline", "max_retries": 0}))
    with pytest.raises(ProviderUnreachableError, match=r"127\.0\.0\.1") as caught:
        measure_on_ray(EXAMPLES / "samples.jsonl", tmp_path / "ray", measurement, options=RayOptions(batch_size=4))
    assert FAKE_KEY not in str(caught.value)


def test_four_workers_under_rpm_use_95_percent_of_it_never_more_and_ask_nothing_twice(cluster, tmp_path, monkeypatch):
    """Four workers (a quarter of a CPU each: the pool leaves the other CPU for reading) under --rpm 1200 against a
    simulator that answers in 0.5 s, so that one worker alone (8 samples at a time: 16 requests a second at most)
    could not keep the bucket busy, and four ask for more than it gives even when the machine starves them of CPU:

    * never above the bound: by every arrival, at most the bucket's burst and its rate since the first arrival;
    * at least 95% of it over the steady window: from the end of the burst (the bucket's first second's worth) to
      the last point at which more requests were left than the workers keep in flight (4 workers x 8 samples);
      past it, the last samples finishing may not keep the bucket busy;
    * the judge's context probe asked at the end, as a local run asks it: the same judge checks;
    * a second run sends nothing that the first run's workers were answered (the request cache, a file per host).

    Jitter allowance: a request the actor admits reaches the server up to ``JITTER`` seconds later on a busy machine
    (other jobs share its two cores), so either bound is widened by ``JITTER`` seconds' worth of requests.
    """
    from hallumeasure.testing import AnthropicServer

    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    rows = [json.loads(line) for line in (EXAMPLES / "samples.jsonl").read_text().splitlines() if line.strip()]
    path = tmp_path / "in.jsonl"
    with path.open("w") as handle:  # every response its own, so that no request is answered from the cache
        for i in range(200):
            row = rows[i % len(rows)]
            handle.write(json.dumps({**row, "id": f"r{i}", "response": f"{row['response']} Note {i}."}) + "\n")
    rate = 20.0  # per second: --rpm 1200, a burst of one second's worth
    with AnthropicServer(latency=0.5) as srv:
        judge = f"anthropic:claude-3-5-haiku-latest?base_url={srv.base_url}"
        values = {"judge": [judge], "extractor": "offline", "cache": str(tmp_path / "requests.sqlite")}
        values |= {"rpm": "1200", "no_warm_cache": True, "concurrency": 8}
        options = RayOptions(workers=4, batch_size=4)
        assert pool_size(2, 4) == (4, 0.25)
        manifest = measure_on_ray(path, tmp_path / "first", Measurement(measure_settings(values)), options=options)
        arrivals = sorted(r.arrived for r in srv.log)
        again = Measurement(measure_settings(values))
        measure_on_ray(path, tmp_path / "again", again, options=RayOptions(workers=4, batch_size=3))
        assert len(srv.log) == len(arrivals)
        local = Measurement(measure_settings(values))
        local.run(load_samples(path), tmp_path / "local")  # answered from the cache: the same answers
    assert manifest.status == "complete" and manifest.counts["claim_errors"] == 0
    first = arrivals[0]
    for count, arrived in enumerate(arrivals, start=1):
        assert count <= rate + rate * (arrived - first + JITTER), (count, arrived - first)
    start, end = int(rate), len(arrivals) - 4 * 8  # the burst; the requests of the last samples in flight
    steady, window = end - start, arrivals[end] - arrivals[start]
    assert window >= 8.0, "too short a run to measure a rate: give it more rows"
    assert steady >= 0.95 * rate * (window - JITTER), (steady, window)
    share = steady / (rate * window)
    print(f"rpm test: {len(arrivals)} requests, {share:.3f} of the rate over {window:.1f} s")
    ours, theirs = Run.load(tmp_path / "first", name="r"), Run.load(tmp_path / "local", name="r")
    assert ours.claims["label"].tolist() == theirs.claims["label"].tolist()
    assert ours.claims["label"].notna().all()
    assert ours.manifest is not None and theirs.manifest is not None
    probes = (ours.manifest.settings["context_probe"], theirs.manifest.settings["context_probe"])
    probed = [{k: v for k, v in probe.items() if k != "usage"} for probe in probes]
    assert probed[0] == probed[1] and probed[0]["claims"]  # the same claims asked (the local run's from the cache)
    assert ours.manifest.judge_checks == theirs.manifest.judge_checks
