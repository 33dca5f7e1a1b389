"""Closed-form intervals against reference implementations (scipy.stats, statsmodels) and by simulation.

References: t interval -> scipy.stats.ttest_1samp(...).confidence_interval and statsmodels
DescrStatsW.tconfint_mean; Welch -> statsmodels CompareMeans.tconfint_diff(usevar="unequal");
Wilson -> statsmodels proportion_confint(method="wilson"); Newcombe (independent) ->
statsmodels confint_proportions_2indep(method="newcomb"). Newcombe's paired interval has no
reference in scipy or statsmodels: it is checked to reduce to the independent one when the
correlation term is zero, and by simulated coverage.
"""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from hallumeasure.stats.intervals import (
    newcombe_independent,
    newcombe_paired,
    one_sided_confidence,
    paired_binary_interval,
    t_interval,
    welch_interval,
    wilson_interval,
)


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_t_interval_matches_scipy_and_statsmodels(confidence):
    x = np.random.default_rng(3).normal(0.1, 0.3, 17)
    mean, low, high = t_interval(x, confidence)
    ref = stats.ttest_1samp(x, 0.0).confidence_interval(confidence)
    assert (low, high) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert (low, high) == pytest.approx(DescrStatsW(x).tconfint_mean(alpha=1 - confidence), abs=1e-12)
    assert mean == pytest.approx(x.mean())


def test_t_interval_ignores_nan_and_needs_two_values():
    assert t_interval(np.array([0.2, np.nan, 0.4]))[0] == pytest.approx(0.3)
    assert t_interval(np.array([0.5])) == (0.5, None, None)
    assert t_interval(np.array([])) == (None, None, None)


def test_welch_interval_matches_statsmodels():
    rng = np.random.default_rng(4)
    a, b = rng.normal(0.2, 0.1, 12), rng.normal(0.3, 0.25, 20)
    diff, low, high = welch_interval(a, b, 0.95)
    ref = CompareMeans(DescrStatsW(b), DescrStatsW(a)).tconfint_diff(alpha=0.05, usevar="unequal")
    assert diff == pytest.approx(b.mean() - a.mean())
    assert (low, high) == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 8), (3, 8), (8, 8), (17, 120), (1, 1)])
def test_wilson_matches_statsmodels(k, n):
    assert wilson_interval(k, n, 0.95) == pytest.approx(
        proportion_confint(k, n, alpha=0.05, method="wilson"), abs=1e-12
    )


@pytest.mark.parametrize(("k1", "n1", "k2", "n2"), [(3, 20, 9, 20), (0, 15, 4, 12), (10, 10, 2, 30), (5, 40, 5, 40)])
def test_newcombe_independent_matches_statsmodels(k1, n1, k2, n2):
    diff, low, high = newcombe_independent(k1, n1, k2, n2, 0.95)
    # statsmodels reports count1/nobs1 - count2/nobs2, so the second group goes first.
    ref = confint_proportions_2indep(k2, n2, k1, n1, method="newcomb", compare="diff", alpha=0.05)
    assert diff == pytest.approx(k2 / n2 - k1 / n1)
    assert (low, high) == pytest.approx(ref, abs=1e-10)


def test_newcombe_paired_without_correlation_is_the_independent_interval():
    # both * neither == first_only * second_only makes the correlation term 0.
    diff, low, high = newcombe_paired(2, 4, 3, 6, 0.95)
    ref = newcombe_independent(6, 15, 5, 15, 0.95)
    assert (diff, low, high) == pytest.approx(ref)


def test_newcombe_paired_narrows_with_positive_correlation_and_handles_no_discordant_pairs():
    _, low, high = newcombe_paired(10, 1, 4, 25, 0.95)
    _, ilow, ihigh = newcombe_independent(11, 40, 14, 40, 0.95)
    assert high - low < ihigh - ilow
    diff, low, high = paired_binary_interval(np.zeros(8), np.zeros(8), 0.95)
    assert diff == 0 and low < 0 < high  # eight unchanged "no"s do not rule out a rise


def test_paired_intervals_cover_at_the_nominal_rate():
    """Simulation with known truth: paired Bernoulli outcomes with a shared latent per unit."""
    rng = np.random.default_rng(11)
    runs, n = 1500, 60
    latent = rng.random((runs, n))
    first = (latent < 0.2).astype(float)
    second = (rng.random((runs, n)) < np.where(first > 0, 0.7, 0.1)).astype(float)
    truth = 0.2 * 0.7 + 0.8 * 0.1 - 0.2
    covered = sum(
        lo <= truth <= hi for lo, hi in (paired_binary_interval(first[r], second[r], 0.95)[1:] for r in range(runs))
    )
    assert 0.93 <= covered / runs <= 0.975
    rates_a = rng.beta(1, 4, (runs, n))
    rates_b = np.clip(rates_a + rng.normal(0.03, 0.1, (runs, n)), 0, 1)
    true_rise = float(np.mean(np.clip(rng.beta(1, 4, 400_000) + rng.normal(0.03, 0.1, 400_000), 0, 1))) - 0.2
    covered = sum(
        lo <= true_rise <= hi for lo, hi in (t_interval(rates_b[r] - rates_a[r], 0.95)[1:] for r in range(runs))
    )
    assert 0.93 <= covered / runs <= 0.97


def test_one_sided_confidence():
    assert one_sided_confidence(0.05) == pytest.approx(0.90)
