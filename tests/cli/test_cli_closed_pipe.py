"""A reader that stops early (``hallumeasure measure ... | head -2``) is no failure (issue #47, the first hour):
the command finishes its work, exits as it would have, and prints nothing about the closed pipe."""

import os
import subprocess
import sys

import pytest
from testdata import EXAMPLES, REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), "COLUMNS": "80"}
MEASURE = ["measure", str(EXAMPLES), "--extractor", "fake", "--judge", "fake"]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "hallumeasure.cli", *args]


def _quiet(stderr: bytes) -> None:
    text = stderr.decode()
    for sign in ("Traceback", "BrokenPipe", "Exception ignored", "error:"):
        assert sign not in text, text


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    out = tmp_path_factory.mktemp("pipe") / "run"
    done = subprocess.run(_cli(*MEASURE, "--out", str(out)), capture_output=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return out


def test_measure_read_for_two_lines_exits_0_and_writes_the_whole_run(tmp_path):
    out = tmp_path / "run"
    # As `| head -2`: read two lines, then close the pipe while the command still prints its summary.
    with subprocess.Popen(
        _cli(*MEASURE, "--out", str(out)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = [proc.stdout.readline(), proc.stdout.readline()]
        proc.stdout.close()
        stderr = proc.stderr.read()
        code = proc.wait(timeout=300)
    assert first[0].startswith(b"run ")
    assert code == 0, stderr.decode()
    assert "Traceback" not in stderr.decode() and "Exception ignored" not in stderr.decode()
    assert (out / "manifest.json").is_file()  # the run completed


@pytest.mark.parametrize("command", ["measure", "show", "show --claims", "plugins", "-h"])
def test_a_reader_gone_before_the_first_line_is_no_failure(command, measured, tmp_path):
    args = {
        "measure": [*MEASURE, "--out", str(tmp_path / "run")],
        "show": ["show", str(measured)],
        "show --claims": ["show", str(measured), "--claims"],
        "plugins": ["plugins"],
        "-h": ["measure", "-h"],
    }[command]
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is printed: every write meets a closed pipe
    try:
        done = subprocess.run(_cli(*args), stdout=write, stderr=subprocess.PIPE, env=ENV, timeout=300)
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr.decode()
    _quiet(done.stderr)
    if command == "measure":
        assert (tmp_path / "run" / "manifest.json").is_file()
