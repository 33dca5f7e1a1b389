"""The committed quality slice matches what the committed command prints (needs ../shared/data)."""

import subprocess
import sys

from testdata import REPO

SLICE = ["--limit", "60", "--resamples", "200"]


def test_committed_slice_table_is_current(shared_data, tmp_path):
    committed = REPO / "benchmarks" / "offline_quality_slice.md"
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "offline_quality.py"), *SLICE, "--data", str(shared_data),
         "--out", str(tmp_path / "slice")],
        capture_output=True, text=True, timeout=600, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    fresh = (tmp_path / "slice.md").read_text()
    assert fresh == committed.read_text(), (
        "benchmarks/offline_quality_slice.md is stale: rerun "
        "'OMP_NUM_THREADS=1 python benchmarks/offline_quality.py --limit 60 --resamples 200 "
        "--out benchmarks/offline_quality_slice'"
    )
