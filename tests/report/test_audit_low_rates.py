"""Audits at the rates production has: zero spread, gates named, undecided responses, closed pipes.

The issue behind these (#28, #25, #24): two faithful runs used to pass on 5 samples because a t
interval of identical differences has zero width; the subtype gate failed audits within their
margin without being named; a regression could rest on responses the keyless judge could not
decide; ``audit ... | head -1`` turned a pass into exit 1.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from report.helpers import sample, write_run

from hallumeasure.report.audit import AuditGates, audit_loaded, audit_runs, decide_rise
from hallumeasure.runs.run import Run, load_run

REPO = Path(__file__).resolve().parents[2]


def _faithful(path, n, *, bad=(), model="m"):
    """n samples of one supported claim each; the samples in ``bad`` get one contradicted claim too."""
    rows = []
    for i in range(n):
        claims = [(f"Bridge {i} is long.", "supported")]
        if i in bad:
            claims.append((f"Bridge {i} is 42 km long.", ("contradicted", "number")))
        rows.append((sample(i, model), claims))
    return write_run(path, rows)


@pytest.mark.parametrize("n", [5, 10, 50])
def test_zero_spread_never_passes_before_n_bounds_the_rise(tmp_path, n):
    base, cur = _faithful(tmp_path / "base", n), _faithful(tmp_path / "cur", n)
    result = audit_runs(base, cur, resamples=200)
    assert result.status == "inconclusive" and result.exit_code == 4
    for name in ("unsupported_rate", "hallucinated_share"):
        gate = next(g for g in result.gates if g.name == name)
        assert gate.status == "inconclusive"
        # never tighter than the exact one-sided 95% bound of 0 events in n (about 3 / n)
        assert gate.decision.upper_bound >= 1 - 0.05 ** (1 / n)


def test_zero_spread_passes_once_n_itself_bounds_the_rise():
    zeros = np.zeros(200)
    gates = AuditGates()
    for binary, margin in ((False, 0.02), (True, 0.05)):
        d = decide_rise("m", zeros, zeros, paired=True, binary=binary, margin=margin, gates=gates)
        assert d.outcome == "pass" and d.upper_bound <= margin
        few = decide_rise("m", zeros[:40], zeros[:40], paired=True, binary=binary, margin=margin, gates=gates)
        assert few.outcome == "inconclusive" and few.samples_needed is not None and 40 < few.samples_needed <= 200


def test_true_rate_zero_against_ten_percent_rarely_passes_on_ten_samples():
    """The issue's case: baseline rate 0, current 0.10 (five times the margin), 10 samples: passes must be rare."""
    rng = np.random.default_rng(5)
    gates = AuditGates()
    passes = {"rate": 0, "share": 0}
    for _ in range(400):
        cur = (rng.random(10) < 0.10).astype(float)
        base = np.zeros(10)
        for key, binary, margin in (("rate", False, 0.02), ("share", True, 0.05)):
            d = decide_rise(key, base, cur, paired=True, binary=binary, margin=margin, gates=gates, plan=False)
            passes[key] += d.outcome == "pass"
    assert passes == {"rate": 0, "share": 0}


def test_the_subtype_gate_is_opt_in_and_named_when_it_decides(tmp_path):
    # Every sample gains a number error: a shown subtype shift, with the rate's rise judged against a wide margin.
    n = 40
    rows_b = [
        (sample(i, "m"), [(f"c{j}", "supported") for j in range(9)] + [("c9", ("absent", "other"))]) for i in range(n)
    ]
    rows_c = [
        (
            sample(i, "m"),
            [(f"c{j}", "supported") for j in range(8)]
            + [("c8", ("absent", "other")), ("c9", ("contradicted", "number"))],
        )
        for i in range(n)
    ]
    base, cur = write_run(tmp_path / "b", rows_b), write_run(tmp_path / "c", rows_c)
    gates = AuditGates(max_rate_rise=0.2, max_hallucinated_share_rise=None)
    default = audit_runs(base, cur, gates, resamples=200)
    assert next(g for g in default.gates if g.name == "subtype_shift").status == "skipped"
    assert default.status == "pass"
    opted = audit_runs(base, cur, gates.model_copy(update={"subtype_shift": True}), resamples=200)
    assert opted.status == "regression" and opted.decided_by == ["subtype_shift"]
    assert opted.headline.startswith(
        "REGRESSION (exit code 1), decided by subtype_shift: significantly more frequent: number"
    )


def _with_decided(path, undecided: set[int]) -> Run:
    run = load_run(path)
    run.responses["decided"] = [i not in undecided for i in range(len(run.responses))]
    return run


def test_undecided_responses_do_not_block_a_regression_and_stay_as_a_sensitivity_line(tmp_path):
    n = 60
    worse = set(range(0, n, 3))  # 20 of 60 samples gain a contradicted claim
    base, cur = _faithful(tmp_path / "base", n), _faithful(tmp_path / "cur", n, bad=worse)
    gates = AuditGates(max_rate_rise=0.05, max_hallucinated_share_rise=0.05)
    plain = audit_loaded(_with_decided(base, set()), _with_decided(cur, set()), gates, resamples=200)
    assert plain.status == "regression"
    # The judge was unsure of most of the worse responses: its labels still show the rise (issue #45), and a
    # judge that errs alike in both runs can only shrink a true rise, so the regression stands.
    shaky = audit_loaded(_with_decided(base, set()), _with_decided(cur, set(sorted(worse)[:17])), gates, resamples=200)
    assert shaky.status == "regression"
    assert shaky.undecided == {"baseline": 0, "current": 17}
    assert "17 of 60 responses of the current run undecided by the judge" in shaky.headline
    gate = next(g for g in shaky.gates if g.name == "unsupported_rate")
    assert gate.decision.rests_on_undecided and gate.decision.undecided == 17
    assert "with the undecided responses counted as unchanged the rise would not show" in gate.message
    firm = audit_loaded(_with_decided(base, set()), _with_decided(cur, {0, 3}), gates, resamples=200)
    assert firm.status == "regression" and firm.undecided["current"] == 2
    firm_rate = next(g for g in firm.gates if g.name == "unsupported_rate").decision
    assert not firm_rate.rests_on_undecided


def test_the_exit_code_survives_a_closed_pipe(tmp_path):
    base, cur = _faithful(tmp_path / "base", 200), _faithful(tmp_path / "cur", 200)
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the audit prints its first line, as after `| head -1`
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    args = [sys.executable, "-m", "hallumeasure.cli", "audit", "--baseline", str(base), "--current", str(cur)]
    done = subprocess.run(
        [*args, "--out", str(tmp_path / "a"), "--resamples", "200"],
        stdout=write,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    os.close(write)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr


def test_the_command_names_the_flag_for_each_difference_and_can_drop_the_share_gate(tmp_path):
    from typer.testing import CliRunner

    from hallumeasure.cli import app

    base = _faithful(tmp_path / "base", 200)
    rows = [(sample(i, "m"), [(f"Bridge {i} is long.", "supported")]) for i in range(200)]
    other = write_run(tmp_path / "other", rows, judge="nli")
    args = ["audit", "--baseline", str(base), "--current", str(other), "--out", str(tmp_path / "a")]
    refused = CliRunner().invoke(app, [*args, "--resamples", "200"])
    assert refused.exit_code == 2 and "--allow-judge-change" in refused.output
    allowed = CliRunner().invoke(app, [*args, "--resamples", "200", "--allow-judge-change"])
    assert allowed.exit_code == 0, allowed.output
    assert allowed.output.startswith("audit: PASS (exit code 0), decided by sample_count, error_rows, unsupported_rate")
    rate_only = CliRunner().invoke(app, [*args, "--resamples", "200", "--allow-judge-change", "--no-share-gate"])
    assert rate_only.exit_code == 0 and "hallucinated_share" not in rate_only.output.splitlines()[0]
