"""The committed simulation of audits through imperfect judges (benchmarks/results/audit_judge_error.json) keeps
the promises of issue #45 where the judge errs alike, and a few cells recomputed give the same table."""

import json

import numpy as np
from testdata import REPO, load_script

RESULTS = REPO / "benchmarks" / "results" / "audit_judge_error.json"
# Monte Carlo slack: a true 5% estimated from the cell's replicates lands above 5% + 2 sd about 2% of the time
_SLACK = 2.0


def _limit(replicates: int) -> float:
    return 0.05 + _SLACK * float(np.sqrt(0.05 * 0.95 / replicates))


def test_where_the_judge_errs_alike_false_passes_and_false_regressions_stay_at_5_percent():
    rows = json.loads(RESULTS.read_text())["rows"]
    alike = [r for r in rows if r["error"] == "alike"]
    assert {r["metric"] for r in alike} == {"hallucinated_share", "unsupported_rate"}
    assert len({(r["se"], r["sp"]) for r in alike}) >= 3 and len({r["baseline"] for r in alike}) >= 2
    for r in alike:
        assert r["pass_at_margin"] <= _limit(r["replicates"]), r
        assert r["regression_at_zero"] <= _limit(r["replicates"]), r
    # and the share gate, with its 1,000 audits a cell, within 5% itself
    assert max(r["pass_at_margin"] for r in alike if r["metric"] == "hallucinated_share") <= 0.05
    assert max(r["regression_at_zero"] for r in alike if r["metric"] == "hallucinated_share") <= 0.05


def test_where_the_error_differs_the_table_gives_the_rates_and_how_often_the_shift_is_named():
    rows = json.loads(RESULTS.read_text())["rows"]
    differs = [r for r in rows if r["error"] == "differs"]
    assert differs
    for r in differs:
        assert {"regression_at_zero", "pass_at_margin", "regression_at_double", "named_at_zero"} <= set(r)


def test_a_committed_cell_is_what_the_code_gives_today():
    bench = load_script("benchmarks/audit_judge_error.py")
    rows = json.loads(RESULTS.read_text())["rows"]
    seed = next(i for i, r in enumerate(rows) if r["metric"] == "hallucinated_share" and r["n"] == 200)
    row = rows[seed]
    again = bench.cell(
        (row["metric"], row["baseline"], row["n"], (row["se"], row["sp"]), row["error"], row["replicates"], seed)
    )
    assert again == row
