"""The committed simulation study (benchmarks/interval_coverage.*) is consistent and meets its targets.

The study itself takes minutes (python benchmarks/interval_coverage.py); small simulations of the
same statistics run in test_intervals.py, test_correction.py and test_audit.py.
"""

import json

from testdata import REPO, load_script

BENCH = REPO / "benchmarks"


def _module():
    return load_script("benchmarks/interval_coverage.py")


def test_results_file_is_rendered_from_the_committed_numbers():
    result = json.loads((BENCH / "results" / "interval_coverage.json").read_text())
    assert (BENCH / "results" / "interval_coverage.md").read_text() == _module().markdown(result), (
        "run: python benchmarks/interval_coverage.py --render"
    )


def test_committed_study_meets_the_quality_bar():
    result = json.loads((BENCH / "results" / "interval_coverage.json").read_text())
    assert result["runs_per_setting"] >= 1000
    for row in result["audit"]:
        assert 0.93 <= row["coverage_rate_diff"] <= 0.97 and 0.93 <= row["coverage_share_diff"] <= 0.97
        if row["true_rise"] > row["margin"]:
            assert row["pass_rate_gate"] <= 0.05
        if row["true_share_rise"] > row["share_margin"]:
            assert row["pass_share_gate"] <= 0.05
    for row in result["calibration"]:
        for metric in ("rate", "share"):
            assert 0.93 <= row[f"coverage_ppi_{metric}"] <= 0.97
    # Where the judge is informative (sensitivity >= 0.85), PPI beats the labels alone.
    assert all(
        row[f"width_ppi_{m}"] < row[f"width_labels_{m}"]
        for row in result["calibration"]
        if row["sensitivity"] >= 0.85
        for m in ("rate", "share")
    )
