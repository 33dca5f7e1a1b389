"""Audits through an imperfect judge (issue #45): regressions from the judge's labels whatever it was unsure of,
passes only once the judge's error is allowed for, and the style shift that could explain a change."""

import importlib.util
import json

import numpy as np
import pytest
from report.helpers import measure_offline, sample, write_run
from report.new_user_rag import write_answers
from statsmodels.stats.proportion import proportion_confint

from hallumeasure.core.errors import ConfigError
from hallumeasure.report.audit import AuditGates, audit_runs, decide_rise
from hallumeasure.report.audit_judge import judge_error_for
from hallumeasure.stats.judge_error import JudgeError, changed_samples_for, changed_share_upper, youden_bounds
from hallumeasure.stats.style_shift import style_shift

needs_offline = pytest.mark.skipif(
    importlib.util.find_spec("hallumeasure.judges.offline") is None, reason="needs the offline judge"
)


@needs_offline
def test_the_new_users_planted_rise_is_a_regression_with_the_offline_judge(tmp_path):
    faithful, planted = write_answers(tmp_path / "answers")
    base = measure_offline(faithful, tmp_path / "faithful")
    worse = audit_runs(base, measure_offline(planted, tmp_path / "planted"), resamples=200)
    # the judge was unsure of every baseline response; the rise is read from its labels all the same
    assert worse.undecided["baseline"] == 60
    assert worse.status == "regression" and worse.exit_code == 1
    rate = next(g for g in worse.gates if g.name == "unsupported_rate").decision
    assert rate.difference > 0.25 and rate.lower_bound > 0.2
    assert rate.judge_error.source == "published"
    # two measurements of the same answers are not a regression (and 60 unchanged answers cannot pass yet)
    again = audit_runs(base, measure_offline(faithful, tmp_path / "again"), resamples=200)
    assert again.status != "regression" and again.exit_code != 1
    same = next(g for g in again.gates if g.name == "unsupported_rate").decision
    assert same.difference == 0 and same.changed_pairs == 0
    assert 150 <= same.samples_needed <= 200  # the judge-free route: 0 changed of n bounds the rise below 0.02


def test_the_exact_bounds_are_statsmodels_clopper_pearson():
    for k, n in ((0, 60), (3, 200), (17, 40)):
        low, high = proportion_confint(k, n, alpha=0.1, method="beta")  # two-sided 90% = one-sided 95% each
        assert changed_share_upper(k, n, 0.05) == pytest.approx(high if k < n else 1.0, abs=1e-9)
    se_low, _ = proportion_confint(45, 50, alpha=0.05, method="beta")  # one-sided alpha / 2 = 0.025
    sp_low, _ = proportion_confint(90, 100, alpha=0.05, method="beta")
    _, se_high = proportion_confint(45, 50, alpha=0.05, method="beta")
    _, sp_high = proportion_confint(90, 100, alpha=0.05, method="beta")
    low, high = youden_bounds(45, 50, 90, 100, alpha=0.05)
    assert low == pytest.approx(se_low + sp_low - 1) and high == pytest.approx(se_high + sp_high - 1)


def test_a_judge_that_errs_alike_shrinks_the_difference_by_its_youden_index():
    rng = np.random.default_rng(0)
    n, se, sp = 400_000, 0.8, 0.7
    yb, yc = rng.random(n) < 0.1, rng.random(n) < 0.3
    lb = np.where(yb, rng.random(n) < se, rng.random(n) < 1 - sp)
    lc = np.where(yc, rng.random(n) < se, rng.random(n) < 1 - sp)
    assert lc.mean() - lb.mean() == pytest.approx((se + sp - 1) * (yc.mean() - yb.mean()), abs=0.004)


def test_a_pass_needs_the_margin_shrunk_by_the_judges_error():
    gates = AuditGates()
    rng = np.random.default_rng(1)
    base = (rng.random(3000) < 0.1).astype(float)
    cur = base.copy()
    cur[rng.choice(3000, 30, replace=False)] = 1.0  # labels rose by at most 0.01
    exact = decide_rise("s", base, cur, paired=True, binary=True, margin=0.05, gates=gates, plan=False)
    assert exact.outcome == "pass"
    weak = JudgeError.exact(0.6, 0.6, "stated")  # J = 0.2: the labels must stay below 0.01
    changed = np.ones(3000, dtype=bool)
    poor = decide_rise(
        "s", base, cur, paired=True, binary=True, margin=0.05, gates=gates, plan=False, judge=weak, changed=changed
    )
    assert poor.outcome == "inconclusive" and poor.judged.pass_margin_labels == pytest.approx(0.01)
    assert poor.judged.true_rise_upper > 0.05
    # the same labels, but only 30 responses changed: the changed share bounds the rise whatever the judge
    few = decide_rise(
        "s",
        base,
        cur,
        paired=True,
        binary=True,
        margin=0.05,
        gates=gates,
        plan=False,
        judge=weak,
        changed=cur != base,
    )
    assert few.outcome == "pass" and few.judged.passed_by == "changed_responses"
    assert changed_samples_for(0.0, 0.02, 0.025) == 183  # (1 - 0.02) ** 183 < 0.025 <= 0.98 ** 182


def test_a_regression_is_read_from_the_labels_against_the_judges_largest_youden_index():
    gates = AuditGates()
    base = np.zeros(400)
    cur = np.zeros(400)
    cur[:24] = 1.0  # labels rose by 0.06, lower bound between 0.025 and 0.05
    judge = JudgeError(youden_low=0.2, youden_high=0.5, source="stated")
    plain = decide_rise("s", base, cur, paired=True, binary=True, margin=0.05, gates=gates, plan=False)
    judged = decide_rise("s", base, cur, paired=True, binary=True, margin=0.05, gates=gates, plan=False, judge=judge)
    assert plain.outcome != "regression" and judged.outcome == "regression"
    assert judged.judged.regression_above_labels == pytest.approx(0.025)


def test_the_judges_error_comes_from_the_first_source_that_has_it(tmp_path):
    common = {"alpha": 0.0125}
    stated = judge_error_for(
        "offline", "unsupported_rate", sensitivity=0.9, specificity=0.8, calibration=None, **common
    )
    assert stated.source == "stated" and stated.youden_low == pytest.approx(0.7)
    report = {
        "sensitivity": {"k": 40, "n": 50},
        "specificity": {"k": 90, "n": 100},
        "response_sensitivity": {"k": 9, "n": 10},
        "response_specificity": {"k": 18, "n": 20},
    }
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(report))
    claims = judge_error_for(
        "anthropic:x", "unsupported_rate", sensitivity=None, specificity=None, calibration=str(path), **common
    )
    responses = judge_error_for(
        "anthropic:x", "hallucinated_share", sensitivity=None, specificity=None, calibration=str(path), **common
    )
    assert claims.source == "calibrated" and claims.youden_low > responses.youden_low  # more labels, tighter
    assert (
        judge_error_for(
            "offline", "unsupported_rate", sensitivity=None, specificity=None, calibration=None, **common
        ).source
        == "published"
    )
    assert judge_error_for(
        "fake", "unsupported_rate", sensitivity=None, specificity=None, calibration=None, **common
    ).error_free
    llm = judge_error_for(
        "anthropic:claude-sonnet-4-5",
        "unsupported_rate",
        sensitivity=None,
        specificity=None,
        calibration=None,
        **common,
    )
    assert llm.error_free and llm.source == "assumed" and "assumed error-free" in llm.detail
    with pytest.raises(ConfigError, match="both"):
        judge_error_for("offline", "unsupported_rate", sensitivity=0.9, specificity=None, calibration=None, **common)


def test_a_paraphrasing_run_is_named_as_a_style_shift_that_could_explain_the_rise():
    rng = np.random.default_rng(2)
    n = 400
    ob, oc = rng.uniform(0.6, 1.0, n), rng.uniform(0.3, 0.7, n)
    words = rng.normal(60, 10, (2, n))
    flags = (rng.random(n) < 0.05 + 0.5 * (1 - ob)).astype(float)  # a judge that flags paraphrase
    shift = style_shift(
        np.column_stack([words[0], ob, np.ones(n)]),
        np.column_stack([words[1], oc, np.ones(n)]),
        flags,
        change_beyond=0.1,
    )
    assert shift.shifted and shift.could_explain and shift.predicted_change > 0.1
    assert "overlap" in shift.describe() and "could explain" in shift.describe()
    alike = style_shift(
        np.column_stack([words[0], ob, np.ones(n)]),
        np.column_stack([words[1], ob[::-1], np.ones(n)]),
        flags,
        change_beyond=0.0,
    )
    assert not alike.shifted and not alike.could_explain


def test_plan_sizes_the_audit_for_the_judges_stated_error():
    from hallumeasure.report.audit_settings import PlanSettings
    from hallumeasure.report.plan import plan_audit

    common = {"rise": 0.1, "baseline_rate": 0.05, "metric": "hallucinated_share", "judge": "anthropic:x"}
    plain = plan_audit(PlanSettings(**common))
    judged = plan_audit(PlanSettings(**common, judge_sensitivity=0.85, judge_specificity=0.9))
    assert judged.samples_to_flag_error_free == plain.samples_to_flag
    assert judged.samples_to_flag > plain.samples_to_flag and judged.samples_to_pass > plain.samples_to_pass
    assert any("costs samples" in note for note in judged.notes)


def test_an_audit_allows_for_the_error_measured_by_calibrate(tmp_path):
    rows = [(sample(i, "m"), [(f"Claim {j} about bridge {i}.", "supported") for j in range(3)]) for i in range(400)]
    base, cur = write_run(tmp_path / "base", rows), write_run(tmp_path / "cur", rows)
    plain = audit_runs(base, cur, AuditGates(max_hallucinated_share_rise=None), resamples=200)
    rate = next(g for g in plain.gates if g.name == "unsupported_rate")
    assert plain.status == "pass" and "assumed error-free" in rate.message
    report = {
        "sensitivity": {"k": 30, "n": 40},
        "specificity": {"k": 150, "n": 160},
        "response_sensitivity": {"k": 9, "n": 12},
        "response_specificity": {"k": 30, "n": 38},
    }
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(report))
    gates = AuditGates(max_hallucinated_share_rise=None, judge_calibration=str(path))
    judged = audit_runs(base, cur, gates, resamples=200)
    decision = next(g for g in judged.gates if g.name == "unsupported_rate").decision
    assert decision.judge_error.source == "calibrated" and decision.judge_error.youden_low < 0.75
    # the same responses in both runs: the changed share (0 of 400) bounds the rise whatever the judge
    assert judged.status == "pass" and decision.judged.passed_by == "changed_responses"
