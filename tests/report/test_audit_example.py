"""The generated audit example (scripts/make_audit_example.py) is a regression, and its --same variant passes.

Measured with the offline judge (keyless, deterministic), on the README's 200 tasks: two identical
runs pass only once n itself rules out a rise of the margin.
"""

import importlib.util

import pytest
from report.helpers import measure_offline
from testdata import load_script

from hallumeasure.report.audit import AuditGates, audit_runs

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("hallumeasure.judges.offline") is None, reason="needs the offline judge"
)


def _script():
    return load_script("scripts/make_audit_example.py")


def test_generated_example_is_a_regression_and_same_passes(tmp_path):
    make = _script()
    base, cur = make.make_example(tmp_path / "ex", n=200)
    assert base.read_text() != cur.read_text()
    baseline = measure_offline(base, tmp_path / "baseline")
    result = audit_runs(baseline, measure_offline(cur, tmp_path / "current"), AuditGates(), resamples=200)
    assert result.status == "regression" and result.exit_code == 1
    _, same = make.make_example(tmp_path / "same", n=200, same=True)
    assert same.read_text().replace("model-current", "model-baseline") == base.read_text().replace(
        "model-current", "model-baseline"
    )
    unchanged = audit_runs(baseline, measure_offline(same, tmp_path / "same-run"), AuditGates(), resamples=200)
    assert unchanged.status == "pass" and unchanged.exit_code == 0
