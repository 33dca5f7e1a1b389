"""Crash safety beyond tests/pipeline/test_wire_end_to_end.py (SIGKILL mid-run, then resume):

* SIGKILL at exact points (half-way through the first or the final manifest write, inside the
  transaction that stores a result): the run directory is never corrupt, holds no half-stored
  result, and a resume completes it with every sample measured once;
* SIGKILL at random moments of a loop of large manifest writes: manifest.json is always one whole
  manifest (old or new), never half-written;
* two real processes on one run directory: the second refuses with a clear message, and the
  first one's run is untouched.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pipeline.reliability import crashrun
from pipeline.reliability.crashrun import measure
from pipeline.reliability.faultcases import check_nothing_lost
from pipeline.reliability.samples import SAMPLES
from testdata import REPO

from hallumeasure.core.types import RunManifest
from hallumeasure.runs.store import LOCK, MANIFEST, RunStore

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _assert_consistent(run_dir: Path) -> int:
    """A crashed run directory: SQLite is intact, no result is half-stored, the manifest is whole."""
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        orphans = db.execute(
            "SELECT (SELECT COUNT(*) FROM claims WHERE sample_id NOT IN (SELECT sample_id FROM results))"
            " + (SELECT COUNT(*) FROM verdicts WHERE sample_id NOT IN (SELECT sample_id FROM results))"
        ).fetchone()[0]
        assert orphans == 0, "claims or verdicts stored without their result: a half-stored sample"
        for sid, n_claims in db.execute("SELECT sample_id, n_claims FROM results"):
            stored = db.execute("SELECT COUNT(*) FROM claims WHERE sample_id = ?", (sid,)).fetchone()[0]
            assert stored == n_claims, sid
        n_results = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    if (run_dir / MANIFEST).exists():
        RunManifest.model_validate_json((run_dir / MANIFEST).read_text(encoding="utf-8"))
    return n_results


@pytest.mark.parametrize(
    ("kill_at", "stored_at_kill", "manifest_at_kill"),
    [
        ("first-manifest", 0, None),
        ("transaction:1", 0, "running"),
        ("transaction:5", 4, "running"),
        ("final-manifest", len(SAMPLES), "running"),
    ],
)
def test_sigkill_at_a_write_leaves_a_consistent_run_that_resumes(tmp_path, kill_at, stored_at_kill, manifest_at_kill):
    run_dir = tmp_path / "run"
    assert crashrun.wait(crashrun.start(run_dir, kill_at)) == signal.SIGKILL
    assert _assert_consistent(run_dir) == stored_at_kill
    if manifest_at_kill is None:
        assert not (run_dir / MANIFEST).exists() and (run_dir / (MANIFEST + ".tmp")).exists()
    else:
        assert json.loads((run_dir / MANIFEST).read_text())["status"] == manifest_at_kill
    measure(run_dir, resume=True)  # the lock died with the process: a resume may start at once
    check_nothing_lost(run_dir, SAMPLES)
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert manifest["counts"]["measured_now"] == len(SAMPLES) - stored_at_kill


def test_the_manifest_is_never_half_written_whenever_the_writer_is_killed(tmp_path):
    run_dir = tmp_path / "run"
    rng = random.Random(5)
    left_tmp = 0
    for _ in range(20):
        pid = crashrun.start(run_dir, "hammer")
        time.sleep(rng.uniform(0.002, 0.05))  # each write of the 2 MB manifest takes some milliseconds
        os.kill(pid, signal.SIGKILL)
        assert crashrun.wait(pid) == signal.SIGKILL
        left_tmp += (run_dir / (MANIFEST + ".tmp")).exists()
        manifest = RunManifest.model_validate_json((run_dir / MANIFEST).read_text(encoding="utf-8"))
        assert manifest.run_id in ("v1", "v2") and len(manifest.settings["padding"]) == crashrun.PADDING
    # Most kills hit a write in progress (a partial temporary file is left): the test saw the danger.
    assert left_tmp > 0
    with RunStore(run_dir, write=True) as store:  # the killed writers left no lock behind
        assert store.read_manifest() is not None


# --- two processes, one run directory -------------------------------------------------------------------


def _measure_cmd(run_dir: Path, *extra: str) -> list[str]:
    data = run_dir.parent / "samples.jsonl"
    data.write_text("".join(json.dumps(s.model_dump(mode="json")) + "\n" for s in SAMPLES), encoding="utf-8")
    return [
        sys.executable,
        "-m",
        "hallumeasure.cli",
        "measure",
        str(data),
        "--out",
        str(run_dir),
        "--extractor",
        "fake",
        "--judge",
        "fake",
        *extra,
    ]


@pytest.fixture
def held_writer(tmp_path):
    """A first writer process, stopped in the middle of its run while it holds the run directory."""
    run_dir = tmp_path / "run"
    pid, release = crashrun.start_held(run_dir)
    state = {"released": False}

    def finish() -> int:
        if not state["released"]:
            os.write(release, b"g")
            os.close(release)
            state["released"] = True
        return crashrun.wait(pid)

    yield run_dir, pid, finish
    if not state["released"]:
        finish()


def test_a_second_process_on_the_same_run_directory_is_refused(held_writer, tmp_path):
    run_dir, pid, finish = held_writer
    second = subprocess.run(_measure_cmd(run_dir, "--resume"), env=ENV, capture_output=True, timeout=120)
    message = second.stderr.decode()
    assert second.returncode == 2, message
    assert "is being written by another hallumeasure process" in message
    assert f"pid {pid}" in message, message  # names the process that holds the run
    assert finish() == 0  # the first writer, released, completes its run
    check_nothing_lost(run_dir, SAMPLES)
    assert not (run_dir / LOCK).exists()  # a finished run keeps no lock file (issue #25)


def test_overwrite_happens_under_the_lock_and_refuses_a_directory_that_is_not_a_run(tmp_path):
    """The store deletes an old run only while holding its lock, and never a directory that holds no run."""
    run_dir = tmp_path / "run"
    measure(run_dir)
    with RunStore(run_dir, write=True), pytest.raises(Exception, match="another hallumeasure process"):
        RunStore(run_dir, write=True, overwrite=True)
    assert (run_dir / MANIFEST).exists() and (run_dir / "run.sqlite").exists()  # untouched
    with RunStore(run_dir, write=True, overwrite=True) as store:
        assert store.read_manifest() is None and not store.done_ids()
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(Exception, match="holds no hallumeasure run"):
        RunStore(precious, write=True, overwrite=True)
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_overwrite_from_a_second_process_does_not_pull_the_run_from_under_the_first(held_writer):
    run_dir, _, finish = held_writer
    second = subprocess.run(_measure_cmd(run_dir, "--overwrite"), env=ENV, capture_output=True, timeout=120)
    assert finish() == 0
    assert second.returncode == 2 and "another hallumeasure process" in second.stderr.decode()
    check_nothing_lost(run_dir, SAMPLES)
