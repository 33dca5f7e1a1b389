"""The committed bench tables under benchmarks/results/bench equal what the committed command prints."""

import subprocess
import sys

from testdata import REPO

SETS = ["wice", "summedits", "bump", "cliff", "halueval_qa"]


def test_committed_bench_tables_are_current(shared_data, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hallumeasure.cli",
            "bench",
            *[str(shared_data / f"{s}.jsonl") for s in SETS],
            "--judge",
            "offline",
            "--resamples",
            "200",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    for name in SETS:
        fresh = (tmp_path / f"{name}__offline__cot-one.md").read_text()
        committed = (REPO / "benchmarks" / "results" / "bench" / f"{name}__offline__cot-one.md").read_text()
        assert fresh == committed, (
            f"benchmarks/results/bench/{name} is stale: rerun the command in benchmarks/results/bench/README.md"
        )
