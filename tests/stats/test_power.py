"""Power and sample size against statsmodels (TTestPower, NormalIndPower), and the plan command.

References: t_power / samples_needed / detectable_effect -> statsmodels.stats.power.TTestPower
(one-sample t test, alternative "larger"); the normal approximation -> NormalIndPower with
ratio=0 (statsmodels' one-sample normal test), which must never ask for more samples than t.
"""

import json
import math

import numpy as np
import pytest
from report.helpers import planned_run
from statsmodels.stats.power import NormalIndPower, TTestPower
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.stats.power import (
    detectable_effect,
    difference_sd,
    discordant_shares,
    plan_samples,
    samples_needed,
    sd_from_rates,
    share_outcomes,
    t_power,
)


@pytest.mark.parametrize(("effect", "n", "alpha"), [(0.2, 50, 0.05), (0.5, 12, 0.05), (0.1, 800, 0.01), (1.0, 5, 0.1)])
def test_t_power_matches_statsmodels(effect, n, alpha):
    ref = TTestPower().power(effect_size=effect, nobs=n, alpha=alpha, alternative="larger")
    assert t_power(effect, n, alpha) == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize(
    ("effect", "alpha", "power"), [(0.3, 0.05, 0.8), (0.05, 0.05, 0.9), (0.8, 0.01, 0.8), (0.02, 0.05, 0.8)]
)
def test_samples_needed_is_the_smallest_n_with_the_power(effect, alpha, power):
    n = samples_needed(effect, alpha, power)
    solved = TTestPower().solve_power(effect_size=effect, alpha=alpha, power=power, alternative="larger")
    assert n == math.ceil(solved)
    assert t_power(effect, n, alpha) >= power > t_power(effect, n - 1, alpha)
    normal = NormalIndPower().solve_power(effect_size=effect, alpha=alpha, power=power, ratio=0, alternative="larger")
    assert normal <= n <= normal + 4


def test_samples_needed_out_of_reach():
    assert samples_needed(0.0) is None and samples_needed(-0.1) is None and samples_needed(1e-6) is None


def test_detectable_effect_matches_statsmodels():
    for n in (8, 40, 1000):
        ref = TTestPower().solve_power(nobs=n, alpha=0.05, power=0.8, alternative="larger")
        assert detectable_effect(n) == pytest.approx(ref, rel=1e-4)  # statsmodels' root finder stops earlier
        assert t_power(detectable_effect(n), n, 0.05) == pytest.approx(0.8, abs=1e-9)
    assert detectable_effect(1) is None


def test_spread_from_runs_and_from_rates():
    a = np.array([0.0, 0.5, 1.0, 0.25, np.nan])
    b = np.array([0.25, 0.5, 0.75, 0.5, 0.2])
    sd, rho, n = difference_sd(a, b)
    assert n == 4 and sd == pytest.approx(np.std(b[:4] - a[:4], ddof=1))
    assert rho == pytest.approx(np.corrcoef(a[:4], b[:4])[0, 1])
    # Independent yes/no outcomes at 0.1 and 0.15: var = 0.09 + 0.1275.
    assert sd_from_rates(0.1, 0.05, 0.0) == pytest.approx(math.sqrt(0.09 + 0.1275))
    assert sd_from_rates(0.1, 0.0, 1.0) == pytest.approx(0.0, abs=1e-12)


def test_plan_counts_follow_the_margin():
    plan = plan_samples(metric="unsupported_rate", baseline_rate=0.1, rise=0.05, margin=0.02, sd=0.2, source="x")
    assert plan.samples_to_flag == samples_needed(0.03 / 0.2) and plan.samples_to_pass == samples_needed(0.02 / 0.2)
    within = plan_samples(metric="unsupported_rate", baseline_rate=0.1, rise=0.01, margin=0.02, sd=0.2, source="x")
    assert within.samples_to_flag is None and "within the margin" in within.notes[0]
    # the count that passes an unchanged model is not the one that passes a rise within the margin
    assert within.samples_to_pass_at_rise == samples_needed(0.01 / 0.2) > within.samples_to_pass
    assert within.pass_chance_at_rise == pytest.approx(t_power(0.01 / 0.2, within.samples_to_pass, 0.05), abs=1e-4)
    assert within.pass_chance_at_margin == pytest.approx(0.05, abs=1e-4)
    assert (
        plan_samples(
            metric="hallucinated_share", baseline_rate=0.1, rise=0.05, margin=0.0, sd=0.2, source="x"
        ).samples_to_pass
        is None
    )


def test_the_issue_plan_states_the_chance_of_passing_a_rise_within_the_margin():
    """#28: at baseline 0.1 and rise 0.01, 2,906 samples pass an unchanged model but pass the rise with chance 0.345."""
    plan = plan_samples(
        metric="unsupported_rate",
        baseline_rate=0.1,
        rise=0.01,
        margin=0.02,
        sd=sd_from_rates(0.1, 0.01, 0.0),
        source="x",
    )
    assert plan.samples_to_pass == 2906 and plan.pass_chance_at_rise == pytest.approx(0.345, abs=0.002)
    assert "passes with chance 0.34" in plan.notes[0]


@pytest.mark.parametrize(
    ("p0", "rise", "rho"), [(0.01, 0.0, 0.0), (0.05, 0.0, 0.5), (0.01, 0.04, 0.0), (0.1, 0.01, 0.3)]
)
def test_the_share_plan_is_the_exact_table(p0, rise, rho):
    """The share plan's counts are where the exact outcome probabilities (share_outcomes) first reach the power."""
    margin = 0.02
    plan = plan_samples(
        metric="hallucinated_share", baseline_rate=p0, rise=rise, margin=margin, sd=0.1, source="x", correlation=rho
    )
    unchanged = discordant_shares(p0, p0, rho)
    n = plan.samples_to_pass
    assert share_outcomes(n, *unchanged, margin=margin, above=margin, alpha=0.05).p_pass >= 0.8
    assert share_outcomes(n - 1, *unchanged, margin=margin, above=margin, alpha=0.05).p_pass < 0.8
    if rise > margin:
        shares = discordant_shares(p0, p0 + rise, rho)
        flag = plan.samples_to_flag
        assert share_outcomes(flag, *shares, margin=margin, above=margin, alpha=0.05).p_regression >= 0.8
        assert share_outcomes(flag - 1, *shares, margin=margin, above=margin, alpha=0.05).p_regression < 0.8
    assert plan.pass_chance_at_margin <= 0.05
    assert plan.method.startswith("exact")


def test_plan_command_from_runs_and_from_a_rate(tmp_path):
    base, cur = planned_run(tmp_path / "base", [0, 1, 2, 0]), planned_run(tmp_path / "cur", [1, 1, 2, 1])
    result = CliRunner().invoke(
        app, ["plan", "--baseline", str(base), "--current", str(cur), "--rise", "0.1", "--json"]
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    a = np.array([0, 0.25, 0.5, 0] * 5)
    d = np.array([0.25, 0.25, 0.5, 0.25] * 5) - a
    assert plan["sd_difference"] == pytest.approx(np.std(d, ddof=1), abs=1e-6)
    # sized by simulating the audit's betting bound on the observed differences moved to a rise of 0.1:
    # more samples than the t test's count, which the betting bound does not reach
    assert plan["samples_to_flag"] > samples_needed(0.08 / np.std(d, ddof=1))
    assert plan["chance_to_flag"] >= 0.74 and plan["replicates"] == 400
    cost = plan["cost"]
    assert cost["judge"] == "anthropic:claude-sonnet-4-5" and cost["dollars"] > 0
    assert cost["samples"] == max(plan["samples_to_flag"], plan["samples_to_pass"])
    text = CliRunner().invoke(app, ["plan", "--baseline-rate", "0.1", "--rise", "0.05"])
    assert text.exit_code == 0 and "to flag a rise of 0.05 (shared samples at which a true rise of 0.05" in text.output
    assert "give --baseline RUN or --samples FILE" in text.output
    refused = CliRunner().invoke(app, ["plan", "--rise", "0.05"])
    assert refused.exit_code == 2 and "--baseline-rate" in refused.output
    bad = CliRunner().invoke(app, ["plan", "--baseline-rate", "0.1", "--rise", "0.05", "--metric", "nope"])
    assert bad.exit_code == 2 and "unsupported_rate, hallucinated_share" in bad.output


def test_plan_for_the_share_from_one_run_prices_a_samples_file(tmp_path):
    from testdata import REPO

    base = planned_run(tmp_path / "base", [0, 1, 2, 0])
    result = CliRunner().invoke(
        app,
        [
            "plan",
            "--baseline",
            str(base),
            "--metric",
            "hallucinated_share",
            "--rise",
            "0.2",
            "--correlation",
            "0.5",
            "--judge",
            "offline",
            "--samples",
            str(REPO / "examples" / "samples.jsonl"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    flags = np.array([0, 1, 1, 0] * 5, dtype=float)
    # One run: its spread, the same spread assumed for the current run, sd = s * sqrt(2 (1 - rho)).
    assert plan["sd_difference"] == pytest.approx(np.std(flags, ddof=1), abs=1e-6)
    assert plan["baseline_rate"] == 0.5 and plan["cost"]["dollars"] == 0.0
    assert plan["cost"]["assumptions"][0] == "samples as long as the 16 priced ones"
