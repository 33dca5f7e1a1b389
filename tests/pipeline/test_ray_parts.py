"""The Ray engine writing a run in Parquet form (``RayOptions(out_format="parquet")``): every worker writes its
own batch's part and the driver only counts, and the run read back is the run one process measures, row for row.

It shares the cluster and helpers of ``test_ray_engine.py``; without the ``ray`` extra it skips, saying so, and
with HALLUMEASURE_REQUIRE_RAY set (as in CI) it fails instead, as that module does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

try:
    import ray  # noqa: F401 - only whether it is there
except ImportError as exc:
    reason = f"the ray extra is not installed ({exc.name}): pip install 'hallumeasure[ray]'"
    if os.environ.get("HALLUMEASURE_REQUIRE_RAY"):
        pytest.fail(f"HALLUMEASURE_REQUIRE_RAY is set (as in CI) but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

from hallumeasure.pipeline.ray_engine import RayOptions, measure_on_ray
from hallumeasure.runs.parquet_run import ParquetDataset, is_parquet_run
from hallumeasure.runs.run import Run
from tests.pipeline.test_ray_engine import (  # the same cluster, inputs and comparison as the SQLite form's tests
    HANG_AFTER,
    ROOT,
    _local,
    _offline,
    _same_rows,
    _synthetic,
    _within,
)
from tests.pipeline.test_ray_engine import cluster as cluster  # the module's one local cluster, as a fixture here

PARQUET = RayOptions(workers=2, batch_size=8, out_format="parquet")


def _stored(run_dir: Path) -> int:
    """Samples in the parts written so far (0 before the first)."""
    if not (run_dir / "parts.json").exists():
        return 0
    dataset = ParquetDataset(run_dir)
    return sum(dataset.read_part("results", key, ["sample_id"]).num_rows for key in dataset.keys("results"))


def test_workers_write_parts_that_read_as_the_run_of_one_process(cluster, tmp_path):
    path = _synthetic(tmp_path / "in.jsonl")
    out = tmp_path / "ray"
    manifest = _within(HANG_AFTER, lambda: measure_on_ray(path, out, _offline(), options=PARQUET))
    assert manifest.status == "complete" and is_parquet_run(out) and not (out / "run.sqlite").exists()
    # 36 responses and another model's row for an id they share (keyed id@model); a blank line, a line that is
    # not JSON, a row without a response and an id given again are skipped
    assert manifest.counts["skipped_input_rows"] == 3 and manifest.counts["results"] == 37
    assert len(ParquetDataset(out).keys("results")) >= 37 // 8  # one part per batch, written by the workers
    _same_rows(out, _local(path, tmp_path / "local"))
    skipped = Run.load(out).skipped  # the id repeated in a later batch is left out there, as in one process
    assert skipped["row"].tolist() == Run.load(tmp_path / "local").skipped["row"].tolist()


def test_a_batch_written_twice_leaves_its_rows_once(cluster, tmp_path):
    path = _synthetic(tmp_path / "in.jsonl", n=24)
    out = tmp_path / "ray"
    measure_on_ray(path, out, _offline(), options=PARQUET)
    parts = ParquetDataset(out).keys("results")
    # the same input again, resumed: nothing is measured, and a retried batch's key is the key it had
    manifest = measure_on_ray(path, out, _offline(), options=PARQUET, resume=True)
    assert manifest.counts["measured_now"] == 0 and ParquetDataset(out).keys("results") == parts
    ids = [s.id for s in Run.load(out).samples]
    assert len(ids) == len(set(ids)) == 24


def test_a_driver_killed_mid_run_resumes_and_measures_only_what_is_missing(cluster, tmp_path):
    path = _synthetic(tmp_path / "in.jsonl", n=400)
    out = tmp_path / "ray"
    env = {**os.environ, "RAY_ADDRESS": cluster, "PYTHONPATH": str(ROOT)}
    args = ["measure", str(path), "--out", str(out), "--engine", "ray", "--judge", "offline", "--ray-batch-size", "4"]
    args += ["--out-format", "parquet"]
    driver = subprocess.Popen([sys.executable, "-m", "hallumeasure.cli", *args], env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + HANG_AFTER
        while _stored(out) < 4 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert driver.poll() is None, "the driver finished before it could be killed: give it more rows"
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.wait(30)
    stored = _stored(out)
    total = 401  # 400 responses and another model's row for an id they share
    assert 4 <= stored < total  # a batch or more written by the workers, not the run
    options = RayOptions(batch_size=16, out_format="parquet")
    manifest = measure_on_ray(path, out, _offline(), options=options, resume=True)
    assert manifest.counts["measured_now"] == total - stored and manifest.status == "complete"
    run = Run.load(out)
    assert len({s.id for s in run.samples}) == len(run.samples) == len(run.results) == total
    local = Run.load(_local(path, tmp_path / "local"))
    assert sorted(r.model_dump_json() for r in run.results) == sorted(r.model_dump_json() for r in local.results)


def test_an_llm_judge_writing_parts_asks_the_context_probe_as_one_process_does(cluster, tmp_path, monkeypatch):
    """The driver reads the probe's few samples and the judges back from the workers' parts: a run in Parquet
    form records the same context probe and judge checks as the same run measured in one process."""
    from hallumeasure.pipeline.measurement import Measurement, measure_settings
    from hallumeasure.runs.inputs import load_samples
    from hallumeasure.testing import AnthropicServer
    from tests.pipeline.test_ray_engine import EXAMPLES, FAKE_KEY

    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    path = tmp_path / "in.jsonl"
    path.write_text("".join((EXAMPLES / "samples.jsonl").read_text().splitlines(keepends=True)[:8]))
    with AnthropicServer() as srv:
        judge = f"anthropic:claude-3-5-haiku-latest?base_url={srv.base_url}"
        values = {"judge": [judge], "extractor": "offline", "cache": str(tmp_path / "requests.sqlite")}
        options = RayOptions(workers=2, batch_size=3, out_format="parquet")
        manifest = _within(
            HANG_AFTER,
            lambda: measure_on_ray(path, tmp_path / "parts", Measurement(measure_settings(values)), options=options),
        )
        Measurement(measure_settings(values)).run(load_samples(path), tmp_path / "local")
    assert manifest.status == "complete" and is_parquet_run(tmp_path / "parts")
    ours, theirs = Run.load(tmp_path / "parts"), Run.load(tmp_path / "local")
    assert ours.manifest is not None and theirs.manifest is not None
    probes = [run.manifest.settings.get("context_probe") for run in (ours, theirs)]
    assert probes[0] is not None and probes[1] is not None
    probed = [{k: v for k, v in probe.items() if k != "usage"} for probe in probes]
    assert probed[0] == probed[1] and probed[0]["claims"]
    assert ours.manifest.judge_checks == theirs.manifest.judge_checks
