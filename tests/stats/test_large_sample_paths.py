"""The paths the statistics take on large samples (an audit of 10^6 responses) against the paths they replace.

Resampling and permutation draws over a large table with few distinct rows are drawn as counts per distinct
row (multinomial, binomial, hypergeometric): the same distributions as drawing rows one by one, checked here
by simulation against the row draws and against known truths. The betting bound's root search is checked
against the bisection it replaced, and the share gate's windowed sums against the full sums.
"""

import math

import numpy as np
import pytest
from scipy import stats as sp

from hallumeasure.stats import bootstrap, power
from hallumeasure.stats.bootstrap import (
    COUNTS_FROM,
    bootstrap_weights,
    distinct_rows,
    mean_draws,
    resampling_weights,
)
from hallumeasure.stats.groups import SUBTYPES, paired_difference, subtype_shift
from hallumeasure.stats.intervals import BettingWealth, bet_orders, betting_bounds, betting_upper
from hallumeasure.stats.permutation import permutation_pvalue, sign_flip_test


def _rates(n: int, seed: int, bad: float = 0.1) -> np.ndarray:
    """Per-response rates k / m as a run has them: few distinct values."""
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 5, n)
    return rng.binomial(m, bad) / m


def test_distinct_rows_count_every_row_once() -> None:
    table = np.array([[1.0, 0.0], [0.5, 1.0], [1.0, 0.0], [np.nan, 2.0], [np.nan, 2.0]])
    rows, codes, counts = distinct_rows(table)
    assert counts.tolist() == [2, 1, 2] and codes.tolist() == [0, 1, 0, 2, 2]
    assert np.array_equal(rows[codes], table, equal_nan=True)


def test_a_large_table_with_few_distinct_rows_draws_counts_that_sum_to_n() -> None:
    values = _rates(COUNTS_FROM * 2, 0)[:, None]
    rows, weights = resampling_weights(values, 300, np.random.default_rng(0))
    draws = np.concatenate(list(weights))
    assert len(rows) < 20 and draws.shape == (300, len(rows))
    assert (draws.sum(axis=1) == len(values)).all()
    # below the size, and with many distinct rows, the rows are drawn one by one (scipy's order)
    small = np.arange(50.0)[:, None]
    rows, weights = resampling_weights(small, 30, np.random.default_rng(1))
    assert np.array_equal(rows, small)
    assert np.array_equal(
        np.concatenate(list(weights)), np.concatenate(list(bootstrap_weights(50, 30, np.random.default_rng(1))))
    )


def test_counts_draws_have_the_distribution_of_row_draws() -> None:
    # The bootstrap means drawn as counts and drawn row by row are two samples of one distribution.
    values = _rates(COUNTS_FROM * 2, 1)
    counted = mean_draws(values, 2000, np.random.default_rng(2))
    rows = np.concatenate(
        [w @ values / len(values) for w in bootstrap_weights(len(values), 400, np.random.default_rng(3))]
    )
    assert sp.ks_2samp(counted, rows).pvalue > 0.01
    # and the known truth: the bootstrap mean is centred on the sample mean with sd sigma / sqrt(n)
    assert counted.mean() == pytest.approx(values.mean(), abs=4 * values.std() / math.sqrt(len(values) * 2000))
    assert counted.std() == pytest.approx(values.std() / math.sqrt(len(values)), rel=0.08)


def test_the_percentile_interval_of_a_large_group_covers_the_truth_at_the_nominal_rate() -> None:
    # 200 runs of 20,000 responses whose rates k / m have mean 0.1 (E[k / m] = 0.1 for k ~ Binomial(m, 0.1)):
    # the 95% interval covers it about 95% of the time.
    truth, hits, trials = 0.1, 0, 200
    for trial in range(trials):
        values = _rates(COUNTS_FROM * 2, 100 + trial)
        draws = mean_draws(values, 400, np.random.default_rng(trial))
        low, high = np.quantile(draws, [0.025, 0.975])
        hits += low <= truth <= high
    assert 0.90 <= hits / trials <= 0.99


def test_counts_sign_flips_give_the_row_flips_p_values() -> None:
    # paired rate differences with a small true shift: the p-values of the two paths agree within Monte Carlo error
    a, b = _rates(30_000, 4), _rates(30_000, 5, bad=0.102)
    d = b - a
    p_counts, low, high = sign_flip_test(d, resamples=4000, rng=np.random.default_rng(0))
    signs = np.random.default_rng(1).integers(0, 2, size=(400, d.size)) * 2 - 1
    flipped = np.abs(signs @ d)
    p_rows = (np.sum(flipped >= abs(d.sum()) - 1e-9) + 1) / (len(flipped) + 1)
    assert p_counts == pytest.approx(p_rows, abs=0.08)
    assert low <= d.mean() <= high and (low <= 0 <= high) == (p_counts >= 0.05)


def test_counts_sign_flips_keep_the_test_size_under_no_difference() -> None:
    rejections = 0
    for trial in range(100):
        a, b = _rates(COUNTS_FROM, 200 + trial), _rates(COUNTS_FROM, 400 + trial)
        rejections += paired_difference(a, b, "rate", resamples=500, seed=trial).p_value < 0.05
    assert 0.0 <= rejections / 100 <= 0.12


def test_counts_label_shuffles_keep_the_test_size_and_find_a_shift() -> None:
    rng = np.random.default_rng(9)
    null = [
        permutation_pvalue(_rates(6000, 2 * t), _rates(6000, 2 * t + 1), resamples=400, rng=rng) < 0.05
        for t in range(80)
    ]
    assert np.mean(null) <= 0.12
    shifted = permutation_pvalue(_rates(6000, 1), _rates(6000, 2, bad=0.13), resamples=400, rng=rng)
    assert shifted < 0.01


def test_counts_subtype_swaps_find_a_planted_shift_and_not_a_null_one() -> None:
    n = 30_000
    number, entity = SUBTYPES.index("number"), SUBTYPES.index("entity")
    rng = np.random.default_rng(3)
    a = np.zeros((n, len(SUBTYPES)))
    a[:, number] = rng.binomial(1, 0.1, n)
    b = a.copy()
    b[:, entity] = rng.binomial(1, 0.02, n)  # the current model adds entity errors
    evaluated = np.full(n, 3.0)
    shift = subtype_shift(a, b, evaluated, evaluated, paired=True, resamples=400, seed=0)
    assert shift.p_value < 0.01 and shift.p_holm["entity"] < 0.01 and shift.p_holm["number"] == 1.0
    same = subtype_shift(a, a[rng.permutation(n)], evaluated, evaluated, paired=False, resamples=400, seed=0)
    assert same.p_value > 0.01


def _bisected_upper(values: np.ndarray, alpha: float) -> float:
    """The betting bound as the 40-step bisection that the root search replaced."""
    bets = BettingWealth.of(values, alpha, bet_orders(values.size, 0))
    goal, low, high = 1 / alpha, float(values.min()) - 1e-9, 1.0
    if bets.wealth(high - 1e-9) < goal:
        return 1.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (low, mid) if bets.wealth(mid) >= goal else (mid, high)
    return high


@pytest.mark.parametrize("n", [5, 40, 3000])
def test_the_betting_bound_is_the_bisections_to_rounding(n: int) -> None:
    d = _rates(n, n, bad=0.12) - _rates(n, n + 1)
    for alpha in (0.05, 0.025):
        assert betting_upper(d, alpha) == pytest.approx(_bisected_upper(d, alpha), abs=5e-12)
        assert betting_upper(-d, alpha) == pytest.approx(_bisected_upper(-d, alpha), abs=5e-12)
    mean, low, high = betting_bounds(d, 0.05)
    assert low is not None and high is not None and low <= mean <= high


@pytest.mark.parametrize(
    ("n", "first_only", "second_only"), [(30_000, 0.03, 0.05), (50_000, 0.0, 0.001), (25_000, 0.2, 0.26)]
)
def test_the_share_gates_windowed_sums_are_its_full_sums(
    monkeypatch: pytest.MonkeyPatch, n: int, first_only: float, second_only: float
) -> None:
    for margin, above in ((0.02, 0.02), (0.05, 0.0)):
        options = {"margin": margin, "above": above, "alpha": 0.05}
        windowed = power.share_outcomes(n, first_only, second_only, **options)
        monkeypatch.setattr(power, "WINDOW_FROM", 10**9)
        full = power.share_outcomes(n, first_only, second_only, **options)
        monkeypatch.undo()
        assert windowed.p_pass == pytest.approx(full.p_pass, abs=1e-14)
        assert windowed.p_regression == pytest.approx(full.p_regression, abs=1e-14)


def test_a_large_table_with_many_distinct_rows_is_drawn_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "COUNTS_FROM", 10)
    values = np.linspace(0, 1, 40)[:, None]
    rows, _ = resampling_weights(values, 5, np.random.default_rng(0))
    assert rows.shape == (40, 1)
