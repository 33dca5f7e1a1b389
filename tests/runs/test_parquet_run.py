"""A run in Parquet form (``runs/parquet_run.py``): converted from a SQLite run it reads back as the same run
(records, frames, manifest, audit), in a local folder and in a filesystem that is not this machine's; a batch
written twice leaves its rows once, and a batch cut off half way is never read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

import hallumeasure
from hallumeasure.core.errors import ConfigError, RunStoreError
from hallumeasure.report.audit import audit_runs, load_for_audit
from hallumeasure.runs.parquet_run import (
    PART_TABLES,
    ParquetDataset,
    export_parquet,
    is_parquet_run,
    require_pyarrow,
    write_batch,
)
from hallumeasure.runs.run import Run
from hallumeasure.runs.store import RunStore
from hallumeasure.testing.large_runs import write_large_run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FRAMES = ("responses", "claims", "summary", "skipped", "votes")


def _rows() -> list[str]:
    """The RAG examples (passages, evidence) twice under two models (ids keyed by id and model), and two rows a
    run skips."""
    lines = [json.loads(line) for line in (EXAMPLES / "rag_samples.jsonl").read_text().splitlines() if line]
    rows = [json.dumps({**row, "model": model}) for model in ("m1", "m2") for row in lines]
    return [*rows, "{not json", json.dumps({"id": "no-answer", "context": "A source."})]


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """A run with every table filled: passages, ids keyed by model, votes of repeated judges, evidence, problems."""
    root = tmp_path_factory.mktemp("parquet")
    path = root / "in.jsonl"
    path.write_text("\n".join(_rows()) + "\n")
    run = hallumeasure.measure(path, judge="fake", extractor="fake", repeats=2, out=root / "sqlite")
    with RunStore(run.path) as store:
        for table in ("passages", "input_ids", "votes", "verdict_evidence", "input_problems"):
            assert store.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > 0, table
    return run.path


def _same(a: Run, b: Run) -> None:
    assert a.manifest == b.manifest and a.samples == b.samples
    assert [r.model_dump() for r in a.results] == [r.model_dump() for r in b.results]
    for frame in FRAMES:
        pd.testing.assert_frame_equal(getattr(a, frame), getattr(b, frame))


def test_a_converted_run_reads_as_the_sqlite_run(measured, tmp_path):
    dest = tmp_path / "pq"
    export_parquet(measured, dest, part_rows=3)  # several parts, one with the last row alone
    assert is_parquet_run(dest) and not is_parquet_run(measured)
    assert len(ParquetDataset(dest).keys("results")) == 4  # 12 samples in parts of 3
    # what an interrupted or resumed measure counts as stored, from the files' footers
    assert ParquetDataset(dest).stored_count() == len(Run.load(measured).results) == 12
    _same(Run.load(measured), Run.load(dest))
    with pytest.raises(RunStoreError, match="already holds a run"):
        export_parquet(measured, dest)


def test_columns_and_audit_of_parquet_runs_equal_those_of_the_sqlite_runs(tmp_path):
    base = write_large_run(tmp_path / "base", 3000)
    cur = write_large_run(tmp_path / "cur", 3000, rise=0.08, salt=1)
    parts = [export_parquet(run, tmp_path / "pq" / run.name, part_rows=1000).location for run in (base, cur)]
    pd.testing.assert_frame_equal(load_for_audit(base).responses, load_for_audit(parts[0]).responses)
    ours, theirs = audit_runs(parts[0], parts[1], resamples=200), audit_runs(base, cur, resamples=200)
    assert ours.model_dump() == theirs.model_dump()
    assert ours.status == "regression"  # the rise is found


def test_a_run_in_a_filesystem_that_is_not_local_reads_the_same(measured):
    fsspec = pytest.importorskip("fsspec", reason="fsspec (installed with ray[data]) gives the memory:// filesystem")
    uri = "memory://runs/nightly"
    try:
        export_parquet(measured, uri, part_rows=4)
        assert is_parquet_run(uri) and fsspec.filesystem("memory").exists("/runs/nightly/parts.json")
        _same(Run.load(measured), Run.load(uri))
        assert Run.load(uri).name == "nightly"
    finally:
        fsspec.filesystem("memory").rm("/runs", recursive=True)


def test_a_batch_written_twice_leaves_its_rows_once_and_a_cut_batch_is_not_read(measured, tmp_path):
    run = Run.load(measured)
    dataset = ParquetDataset(tmp_path / "pq")
    dataset.create(overwrite=False)
    first = write_batch(dataset, run.samples[:4], run.results[:4])
    assert write_batch(dataset, run.samples[:4], run.results[:4]) == first  # a retried batch: the same part
    dataset.write_index(dataset.read_index().model_copy(update={"order": [first]}))
    # a batch whose worker died before its results file: its other files are there, and are not read
    cut = write_batch(dataset, run.samples[4:6], run.results[4:6])
    dataset.fs.delete_file(f"{dataset.root}/results/{cut}.parquet")
    dataset.write_manifest(run.manifest)
    again = Run.load(dataset.location)
    assert [s.id for s in again.samples] == [s.id for s in run.samples[:4]]
    assert again.results == run.results[:4] and len(again.claims) == sum(len(r.claims) for r in run.results[:4])
    dataset.drop_partial()
    assert all(cut not in dataset.keys(table) for table in PART_TABLES)


def test_without_pyarrow_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ConfigError, match=r"pip install 'hallumeasure\[parquet\]'"):
        require_pyarrow()


def test_export_to_parquet_from_the_command_line_then_show_and_audit_read_it(measured, tmp_path):
    from typer.testing import CliRunner

    from hallumeasure.cli import app

    runner = CliRunner()
    out = tmp_path / "pq" / measured.name  # the run's name, which reports print
    done = runner.invoke(app, ["export", str(measured), "--to", "parquet", "--out", str(out), "--part-rows", "4"])
    assert done.exit_code == 0, done.output
    assert f"wrote 3 parts to {out}" in done.output and is_parquet_run(out)
    refused = runner.invoke(app, ["export", str(measured), "--to", "parquet", "--out", str(out)])
    assert refused.exit_code != 0 and "--overwrite" in refused.output
    shown = [runner.invoke(app, ["show", str(path), "--json"]) for path in (measured, out)]
    assert shown[0].exit_code == shown[1].exit_code == 0 and shown[0].output == shown[1].output
    audits = []
    for path, where in ((measured, tmp_path / "a1"), (out, tmp_path / "a2")):
        done = runner.invoke(app, ["audit", "--baseline", str(path), "--current", str(path), "--out", str(where)])
        assert "Traceback" not in done.output and (where / "audit.json").exists(), done.output
        result = json.loads((where / "audit.json").read_text())
        audits.append((done.exit_code, result))
    assert audits[0] == audits[1]
