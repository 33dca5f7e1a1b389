"""The audit's finite-sample bounds against references, and the exact operating table against Monte Carlo.

References: exact_upper / exact_lower -> scipy.stats.binomtest(...).proportion_ci(method="exact")
and statsmodels proportion_confint(method="beta"); the union of two such bounds is checked for
coverage over every pairing by exact enumeration; the betting bound by simulation with known truth.
"""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from hallumeasure.report.audit import AuditGates, decide_rise
from hallumeasure.stats.intervals import (
    betting_bounds,
    betting_rejects,
    betting_upper,
    discordant_bounds,
    exact_lower,
    exact_upper,
    independent_exact_bounds,
)
from hallumeasure.stats.power import discordant_shares, share_outcomes


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (1, 200), (17, 3200)])
@pytest.mark.parametrize("alpha", [0.05, 0.025])
def test_one_sided_exact_bounds_match_scipy_and_statsmodels(k, n, alpha):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="exact")
    # a one-sided bound at 1 - alpha is the end of the two-sided interval at 1 - 2 alpha
    two = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * alpha, method="exact")
    assert exact_upper(k, n, alpha) == pytest.approx(two.high, abs=1e-12)
    assert exact_lower(k, n, alpha) == pytest.approx(two.low, abs=1e-12)
    low, high = proportion_confint(k, n, alpha=2 * alpha, method="beta")
    assert (exact_lower(k, n, alpha), exact_upper(k, n, alpha)) == pytest.approx((low, high), abs=1e-12)
    assert ci.low <= exact_lower(k, n, alpha) and exact_upper(k, n, alpha) <= ci.high


def test_zero_of_n_is_bounded_near_three_over_n():
    for n in (10, 100, 1000):
        assert exact_upper(0, n, 0.05) == pytest.approx(1 - 0.05 ** (1 / n))
    _, low, high = discordant_bounds(0, 0, 10, 0.05)
    assert high == pytest.approx(1 - 0.025 ** (1 / 10)) and low == -high


def test_discordant_bounds_combine_the_two_exact_bounds():
    diff, low, high = discordant_bounds(3, 9, 120, 0.05)
    assert diff == pytest.approx(6 / 120)
    assert high == pytest.approx(exact_upper(9, 120, 0.025) - exact_lower(3, 120, 0.025))
    assert low == pytest.approx(exact_lower(9, 120, 0.025) - exact_upper(3, 120, 0.025))
    diff, low, high = independent_exact_bounds(5, 100, 12, 80, 0.05)
    assert diff == pytest.approx(12 / 80 - 5 / 100)
    assert high == pytest.approx(exact_upper(12, 80, 0.025) - exact_lower(5, 100, 0.025))


@pytest.mark.parametrize(("n", "p10", "p01"), [(30, 0.0, 0.02), (40, 0.01, 0.06), (200, 0.005, 0.025), (60, 0.1, 0.12)])
def test_upper_bound_covers_the_true_difference_exactly(n, p10, p01):
    """Exact coverage: P(true difference <= upper bound) summed over every (b, c) is at least 1 - alpha."""
    q = p01 / (1 - p10)
    covered = 0.0
    for b in range(n + 1):
        pb = stats.binom.pmf(b, n, p10)
        if pb < 1e-15:
            continue
        for c in range(n - b + 1):
            _, low, high = discordant_bounds(b, c, n, 0.05)
            if low <= p01 - p10 <= high:
                covered += pb * stats.binom.pmf(c, n - b, q)
    assert covered >= 0.90 - 1e-9  # both one-sided bounds at 95%: the two-sided coverage is at least 90%


@pytest.mark.parametrize(
    ("n", "p0", "rise", "rho", "margin"),
    [
        (60, 0.01, 0.025, 0.0, 0.02),
        (100, 0.01, 0.02, 0.3, 0.02),
        (200, 0.02, 0.0, 0.5, 0.02),
        (80, 0.1, 0.1, 0.2, 0.05),
    ],
)
def test_exact_outcome_chances_match_a_simulation_of_the_audit(n, p0, rise, rho, margin):
    """share_outcomes (exact) against the audit's own decide_rise on simulated flags (Monte Carlo, known truth)."""
    first_only, second_only = discordant_shares(p0, p0 + rise, rho)
    exact = share_outcomes(n, first_only, second_only, margin=margin, above=margin, alpha=0.05)
    rng = np.random.default_rng(7)
    gates = AuditGates(max_hallucinated_share_rise=margin)
    reps = 3000
    cells = rng.choice(3, size=(reps, n), p=[first_only, second_only, 1 - first_only - second_only])
    counts = {"pass": 0, "regression": 0, "inconclusive": 0}
    for row in cells:
        base, cur = (row == 0).astype(float), (row == 1).astype(float)  # concordant pairs: both 0 (same decision)
        counts[
            decide_rise("s", base, cur, paired=True, binary=True, margin=margin, gates=gates, plan=False).outcome
        ] += 1
    for name, p in (("pass", exact.p_pass), ("regression", exact.p_regression), ("inconclusive", exact.p_inconclusive)):
        se = np.sqrt(max(p * (1 - p), 1e-4) / reps)
        assert abs(counts[name] / reps - p) <= 4 * se, (name, counts[name] / reps, p)


def test_the_issue_cells_are_within_their_promise():
    """#28 reported 11% false passes at n=60, p0=0.01, rise 0.025, and 8.9% at n=100, p0=0.01, rise 0.02."""
    for n, p0, rise in ((60, 0.01, 0.025), (100, 0.01, 0.02), (200, 0.01, 0.02), (200, 0.02, 0.02)):
        worst = max(
            share_outcomes(n, *discordant_shares(p0, p0 + rise, r), margin=0.02, above=0.02, alpha=0.05).p_pass
            for r in np.linspace(-1, 1, 21)
        )
        assert worst <= 0.05


def test_betting_bound_is_monotone_and_agrees_with_its_test():
    rng = np.random.default_rng(2)
    d = np.clip(rng.normal(0.01, 0.15, 300), -1, 1)
    upper = betting_upper(d, 0.05)
    assert betting_rejects(d, upper + 1e-6, 0.05) and not betting_rejects(d, upper - 1e-3, 0.05)
    mean, low, high = betting_bounds(d, 0.05)
    assert low < mean < high == upper
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        betting_upper(np.array([0.5, 1.5]), 0.05)


def test_betting_bound_covers_rare_large_differences():
    """Known truth: differences are +1 with chance 0.03, else 0 (mean 0.03); 0 of n is common at small n."""
    rng = np.random.default_rng(3)
    misses = 0
    reps = 600
    for _ in range(reps):
        d = (rng.random(40) < 0.03).astype(float)
        misses += betting_upper(d, 0.05) < 0.03
    assert misses / reps <= 0.05
