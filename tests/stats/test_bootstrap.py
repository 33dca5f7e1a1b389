"""The one bootstrap (hallumeasure/stats/bootstrap.py): against scipy.stats.bootstrap, its two forms against
each other, and a simulation with a known truth."""

import math

import numpy as np
import pytest
from scipy import stats as sp

from hallumeasure.bench.metrics import accuracy, roc_auc
from hallumeasure.stats.bootstrap import (
    CI,
    bootstrap_ci,
    bootstrap_mean,
    bootstrap_weights,
    expanded_confidence,
    mean_draws,
    percentile_interval,
    resampled_rows,
    t_quantile,
)


def _scipy_percentile(data: tuple[np.ndarray, ...], statistic, resamples: int, seed: int, paired: bool = False):
    result = sp.bootstrap(
        data,
        statistic,
        n_resamples=resamples,
        method="percentile",
        confidence_level=0.95,
        vectorized=False,
        paired=paired,
        rng=np.random.default_rng(seed),
    )
    return result.confidence_interval


@pytest.mark.parametrize("seed", range(5))
def test_the_interval_of_a_mean_is_scipys_percentile_interval(seed: int) -> None:
    # scipy draws its rows as rng.integers(0, n, (resamples, n)), the order used here, so the
    # intervals agree to rounding, not just in distribution.
    x = np.random.default_rng(100 + seed).exponential(size=20 + 7 * seed)
    reference = _scipy_percentile((x,), np.mean, 1500, seed)
    ours = bootstrap_ci(np.mean, x, n_resamples=1500, seed=seed)
    assert (ours.low, ours.high) == pytest.approx((reference.low, reference.high), rel=1e-9)
    # the weights form (the cluster bootstrap of the reports) draws the same rows
    weighted = bootstrap_mean(x, resamples=1500, seed=seed)
    assert (weighted.low, weighted.high) == pytest.approx((ours.low, ours.high), abs=1e-6)


def test_a_paired_interval_is_scipys_paired_percentile_interval() -> None:
    rng = np.random.default_rng(7)
    y, p = rng.integers(0, 2, 60), rng.integers(0, 2, 60)
    reference = _scipy_percentile((y, p), accuracy, 1000, 9, paired=True)
    ours = bootstrap_ci(accuracy, y, p, n_resamples=1000, seed=9)
    assert (ours.low, ours.high) == pytest.approx((reference.low, reference.high), rel=1e-9)


def test_the_weights_count_the_drawn_rows() -> None:
    rows = np.concatenate(list(resampled_rows(5, 30, np.random.default_rng(1))))
    weights = np.concatenate(list(bootstrap_weights(5, 30, np.random.default_rng(1))))
    assert rows.shape == weights.shape == (30, 5)
    assert (weights.sum(axis=1) == 5).all()
    assert np.array_equal(weights, np.stack([np.bincount(r, minlength=5) for r in rows]))


def test_chunks_do_not_change_the_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    import hallumeasure.stats.bootstrap as bootstrap

    whole = np.concatenate(list(resampled_rows(7, 40, np.random.default_rng(3))))
    monkeypatch.setattr(bootstrap, "MAX_CELLS", 21)  # three rows per chunk
    chunked = list(resampled_rows(7, 40, np.random.default_rng(3)))
    assert len(chunked) == 14
    assert np.array_equal(np.concatenate(chunked), whole)


def test_mean_draws_leave_undefined_values_out_per_column() -> None:
    values = np.array([[1.0, np.nan], [3.0, 2.0], [np.nan, 4.0]])
    draws = mean_draws(values, 200, np.random.default_rng(0))
    assert draws.shape == (200, 2)
    finite = draws[np.isfinite(draws[:, 0]), 0]
    assert set(np.round(finite, 9)) <= {1.0, 3.0, 2.0, round(5 / 3, 9), round(7 / 3, 9)}
    assert np.isnan(mean_draws(np.zeros((0, 2)), 4, np.random.default_rng(0))).all()


def test_percentile_interval_ignores_undefined_draws() -> None:
    assert percentile_interval([np.nan, np.nan], 0.95) == (None, None)
    low, high = percentile_interval([np.nan, *range(101)], 0.9)
    assert (low, high) == pytest.approx((5.0, 95.0))


def test_bootstrap_skips_and_counts_undefined_resamples() -> None:
    y = np.array([1] * 9 + [0])
    s = np.linspace(0, 1, 10)
    ci = bootstrap_ci(roc_auc, y, s, n_resamples=500, seed=3)
    # P(resample misses the single negative) = 0.9**10 ~ 0.35
    assert 100 < ci.n_skipped < 260
    assert ci.n_resamples == 500
    assert 0.0 <= ci.low <= ci.high <= 1.0
    all_one = bootstrap_ci(roc_auc, [1, 1, 1], [0.1, 0.2, 0.3], n_resamples=50)
    assert math.isnan(all_one.point) and math.isnan(all_one.low) and all_one.n_skipped == 50


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    a = bootstrap_ci(accuracy, y, p, n_resamples=200, seed=7)
    b = bootstrap_ci(accuracy, y, p, n_resamples=200, seed=7)
    assert a == b
    assert isinstance(a, CI) and a.low <= a.point <= a.high
    assert set(a.as_dict()) == {"point", "low", "high", "confidence", "n_resamples", "n_skipped"}


def test_bootstrap_ci_covers_truth_at_about_nominal_rate() -> None:
    # Accuracy of a classifier that is right with probability 0.7, on 100 rows.
    true_value, n, trials = 0.7, 100, 200
    rng = np.random.default_rng(42)
    covered = 0
    for t in range(trials):
        y = rng.integers(0, 2, n)
        correct = rng.uniform(size=n) < true_value
        pred = np.where(correct, y, 1 - y)
        ci = bootstrap_ci(accuracy, y, pred, n_resamples=300, seed=t)
        covered += ci.low <= true_value <= ci.high
    rate = covered / trials
    # Nominal 0.95; percentile bootstrap at n=100 sits close to it. Binomial sd ~ 0.015.
    assert 0.89 <= rate <= 0.99, rate


def test_the_expanded_percentile_level_matches_its_definition_with_scipy():
    for df in (5, 10, 30, 99, 500):
        assert t_quantile(0.975, df) == pytest.approx(sp.t.ppf(0.975, df), abs=3e-3)
    for n in (8, 40, 100, 1000):
        exact = 1 - 2 * sp.norm.cdf(-np.sqrt(n / (n - 1)) * sp.t.ppf(0.975, n - 1))
        assert expanded_confidence(0.95, n) == pytest.approx(exact, abs=1e-3)
        assert expanded_confidence(0.95, n) > 0.95


def test_a_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="length"):
        bootstrap_ci(accuracy, [0, 1], [0])
