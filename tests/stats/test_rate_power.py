"""plan sizes the rate gate with the audit's own betting rule (hallumeasure/stats/rate_power.py; issue #39).

Heavier checks, the issue's cells at 1,000 audits each: benchmarks/plan_operating.py.
"""

import numpy as np
import pytest

from hallumeasure.report.audit_settings import PlanSettings
from hallumeasure.report.plan import plan_audit
from hallumeasure.stats.audit_bounds import rise_outcome
from hallumeasure.stats.coverage_check import check_coverage
from hallumeasure.stats.intervals import betting_rejects
from hallumeasure.stats.power import discordant_shares
from hallumeasure.stats.rate_power import Differences, bet_decisions, rate_count


def test_the_vectorised_bet_decides_as_the_audit_does():
    rng = np.random.default_rng(3)
    for n in (3, 40, 400):
        for values in ([-1.0, 0.0, 1.0], [-1.0, -0.5, 0.0, 0.25, 0.5, 1.0]):
            d = Differences(np.array(values), rng.random(len(values))).draw(rng.random((30, n)))
            for margin, above in ((0.02, 0.02), (0.1, 0.0)):
                passes, flags = bet_decisions(d, margin=margin, above=above, alpha=0.05)
                assert list(passes) == [betting_rejects(row, margin, 0.05) for row in d]
                assert list(flags) == [betting_rejects(-row, -above, 0.05) for row in d]


def _audits(p, rise, n, margin, runs, seed):
    """Outcomes of ``runs`` audits (the rate gate's rule) of n yes/no pairs at rates p and p + rise."""
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(runs):
        base, cur = (rng.random(n) < p).astype(float), (rng.random(n) < p + rise).astype(float)
        bounds = (None, None, None)
        seen.append(rise_outcome(base, cur, bounds, paired=True, binary=False, margin=margin, above=margin, alpha=0.05))
    return seen


@pytest.mark.parametrize(("p", "rise"), [(0.02, 0.0), (0.02, 0.15)])
def test_the_audit_at_plans_count_reaches_the_printed_chance(p, rise):
    plan = plan_audit(PlanSettings(rise=rise, baseline_rate=p, max_rate_rise=0.05))
    wanted = "pass" if rise == 0 else "regression"
    n = plan.samples_to_pass if wanted == "pass" else plan.samples_to_flag
    printed = plan.chance_to_pass if wanted == "pass" else plan.chance_to_flag
    runs = 400
    share = _audits(p, rise, n, 0.05, runs, seed=99).count(wanted) / runs
    sd = np.sqrt(printed * (1 - printed) / plan.replicates + share * (1 - share) / runs)
    assert abs(share - printed) < 4 * sd  # within simulation error
    assert share > 0.7  # 80%, not the 55% a t-test count reached


def test_the_unchanged_count_does_not_depend_on_the_rise():
    counts = {
        r: plan_audit(PlanSettings(rise=r, baseline_rate=0.02, max_rate_rise=0.05)).samples_to_pass
        for r in (0.0, 0.01, 0.2)
    }
    assert len(set(counts.values())) == 1, counts


def test_zero_spread_is_sized_where_the_audit_first_passes():
    plan = plan_audit(PlanSettings(rise=0.0, baseline_rate=0.0))
    zeros = np.zeros(plan.samples_to_pass)
    rule = {"paired": True, "binary": False, "margin": 0.02, "above": 0.02, "alpha": 0.05}
    assert plan.samples_to_pass == 152 and plan.chance_to_pass == 1.0
    assert rise_outcome(zeros, zeros, (None, None, None), **rule) == "pass"
    assert rise_outcome(zeros[1:], zeros[1:], (None, None, None), **rule) == "inconclusive"


def test_a_rise_the_gate_cannot_flag_is_out_of_reach():
    d = Differences.discordant(*discordant_shares(0.05, 0.06, 0.0))
    assert rate_count("regression", d, margin=0.02, above=0.02, alpha=0.05, power=0.8) == (None, None)


def test_each_metric_takes_its_own_gates_margin():
    assert PlanSettings(rise=0.1).margin == 0.02
    assert PlanSettings(rise=0.1, metric="hallucinated_share").margin == 0.05
    assert PlanSettings(rise=0.1, metric="hallucinated_share", max_hallucinated_share_rise=0.03).margin == 0.03
    share = plan_audit(PlanSettings(rise=0.0, baseline_rate=0.0, metric="hallucinated_share"))
    assert share.samples_to_pass == 72  # where the default audit's share gate first passes


def test_the_coverage_note_judges_the_judge_by_its_interval():
    # one of three labelled positives caught: a point estimate of 0.33, but 0.85 is well inside its interval
    point = check_coverage("share", n_labelled=100, sensitivity=1 / 3, specificity=0.95, rate=0.02)
    by_interval = check_coverage(
        "share",
        n_labelled=100,
        sensitivity=1 / 3,
        specificity=0.95,
        rate=0.02,
        sensitivity_counts=(1, 3),
        specificity_counts=(92, 97),
    )
    assert not point.holds and by_interval.holds
    weak = check_coverage(
        "share",
        n_labelled=400,
        sensitivity=0.2,
        specificity=0.95,
        rate=0.15,
        sensitivity_counts=(12, 60),
        specificity_counts=(323, 340),
    )
    assert not weak.holds and "interval up to" in weak.message
