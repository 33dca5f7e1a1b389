"""Checks on the public labelled sets (skipped without $HALLUMEASURE_DATA or ../shared/data)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hallumeasure.judges.offline.extractor import split_claims
from hallumeasure.runs.datasets import load_labelled, subsample

REPO = Path(__file__).resolve().parents[3]
SLICE = ["--limit", "60", "--resamples", "200"]


@pytest.fixture
def data(shared_data: Path) -> Path:
    return shared_data.resolve()


def test_committed_slice_table_is_current(data, tmp_path):
    """The committed LODO slice is what the committed code and command produce (a small, fast rerun)."""
    committed = REPO / "benchmarks" / "results" / "offline_quality_slice.md"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "offline_quality.py"),
            *SLICE,
            "--data",
            str(data),
            "--out",
            str(tmp_path / "slice"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "slice.md").read_text() == committed.read_text(), (
        "benchmarks/results/offline_quality_slice.md is stale: rerun "
        "'OMP_NUM_THREADS=1 python benchmarks/offline_quality.py --limit 60 --resamples 200 "
        "--out benchmarks/results/offline_quality_slice'"
    )


@pytest.mark.parametrize("name", ["summedits", "bump", "cliff", "halueval_qa", "wice"])
def test_extracted_spans_point_into_real_responses(data, name):
    for sample in subsample(load_labelled(data / f"{name}.jsonl"), 40):
        claims = split_claims(sample.response)
        assert claims or not sample.response.strip()
        for text, span in claims:
            piece = sample.response[span.start : span.end]
            assert 0 <= span.start < span.end <= len(sample.response) and piece.strip()
            # the claim is the piece, or the piece with a resolved subject in front
            assert piece.strip(" ,;").lower().rstrip(".") in text.lower() or text.split()[-1] in piece
