"""Ctrl-C during `measure`: the run is marked interrupted, the exact --resume command is printed, exit 130."""

import json
import os
import shlex
import signal
import subprocess
import sys

import pytest
from testdata import EXAMPLES

pytestmark = pytest.mark.slow


def _big_input(path, copies: int):
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    with open(path, "w", encoding="utf-8") as handle:
        for copy in range(copies):
            for row in rows:
                handle.write(json.dumps({**row, "id": f"{row['id']}-{copy}"}) + "\n")
    return len(rows) * copies


def test_ctrl_c_marks_the_run_interrupted_prints_the_resume_command_and_resume_finishes_it(tmp_path):
    data, out = tmp_path / "big.jsonl", tmp_path / "run"
    total = _big_input(data, 80)
    env = {**os.environ, "COLUMNS": "300"}
    command = [sys.executable, "-m", "hallumeasure.cli", "measure", str(data), "--out", str(out), "--concurrency", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = proc.stderr.readline()  # off a terminal, progress is a line at every 10%
    assert first.startswith("measuring: "), first
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    stored = manifest["counts"]["results"]
    assert 0 < stored < total
    resume_line = stderr.strip().splitlines()[-1]
    assert resume_line == shlex.join(["hallumeasure", *command[3:], "--resume"])
    # the printed command finishes the run, measuring only what was missing
    args = shlex.split(resume_line)[1:]
    done = subprocess.run(
        [sys.executable, "-m", "hallumeasure.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["counts"]["results"] == total
    assert manifest["counts"]["measured_now"] == total - stored


def test_progress_lines_off_a_terminal(tmp_path):
    data = tmp_path / "in.jsonl"
    _big_input(data, 5)
    done = subprocess.run(
        [sys.executable, "-m", "hallumeasure.cli", "measure", str(data), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("measuring: ")]
    assert [line.split()[1] for line in lines] == [f"{n}/80" for n in (8, 16, 24, 32, 40, 48, 56, 64, 72, 80)]
