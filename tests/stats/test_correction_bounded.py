"""Bounded corrections (issues #25 and #28): stratified PPI, Jeffreys labels-only and Bayesian Rogan-Gladen.

References: the stratified PPI posterior is checked against its distribution computed by numerical
integration with scipy.stats.beta; the labels-only interval against statsmodels' Jeffreys interval;
coverage by a simulation with known truth (the full grid is benchmarks/ppi_coverage.py). Every
estimate and interval must lie in [0, 1], in the edge cases too.
"""

import numpy as np
import pytest
from scipy import optimize, stats
from statsmodels.stats.proportion import proportion_confint

from hallumeasure.stats.correction import (
    labels_only_bounded,
    ppi_mean,
    rogan_gladen,
    rogan_gladen_bounded,
    stratified_ppi,
)


def _binary(rng, n_lab, n_rest, rate, sens, spec):
    y = (rng.random(n_lab + n_rest) < rate).astype(float)
    f = np.where(y > 0, rng.random(y.size) < sens, rng.random(y.size) > spec).astype(float)
    return y[:n_lab], f[:n_lab], f[n_lab:]


def _reference_quantiles(y, f, g, probs):
    """Quantiles of pi q1 + (1 - pi) q0 under the Jeffreys posteriors, by quadrature over pi and q1."""
    flagged = f.sum() + g.sum()
    total = f.size + g.size
    pi = stats.beta(flagged + 0.5, total - flagged + 0.5)
    k1, n1 = y[f > 0].sum(), (f > 0).sum()
    k0, n0 = y[f == 0].sum(), (f == 0).sum()

    # The posterior of a 0/1 stratum mean: effective count n - 1 (ddof=1 variance), as the package documents.
    def beta(k, n):
        m = k / n
        n_eff = n - 1 if 0 < m < 1 else n
        return stats.beta(m * n_eff + 0.5, (1 - m) * n_eff + 0.5)

    q1, q0 = beta(k1, n1), beta(k0, n0)
    nodes = (np.arange(300) + 0.5) / 300
    p, a = pi.ppf(nodes)[:, None], q1.ppf(nodes)[None, :]

    def cdf(t):
        return float(np.mean(q0.cdf((t - p * a) / (1 - p))))

    return [optimize.brentq(lambda t, q=q: cdf(t) - q, 0.0, 1.0, xtol=1e-7) for q in probs]


def test_stratified_ppi_matches_its_posterior_by_integration():
    y, f, g = _binary(np.random.default_rng(7), 120, 880, 0.15, 0.85, 0.9)
    estimate, low, high = stratified_ppi(y, f, g, draws=200_000, seed=3)
    ref = _reference_quantiles(y, f, g, [0.5, 0.025, 0.975])
    assert (estimate, low, high) == pytest.approx(ref, abs=0.002)


def test_labels_only_is_close_to_the_jeffreys_interval():
    for k, n in ((0, 50), (3, 50), (20, 80), (80, 80)):
        y = np.r_[np.ones(k), np.zeros(n - k)]
        _, low, high = labels_only_bounded(y)
        jeffreys = proportion_confint(k, n, method="jeffreys")
        # One count less (the ddof=1 variance) at most; at 0 and n exactly the Jeffreys interval, bar its
        # convention of setting the end at the data to 0 or 1.
        assert low == pytest.approx(jeffreys[0], abs=0.012) and high == pytest.approx(jeffreys[1], abs=0.012)
        assert 0.0 <= low <= high <= 1.0


def test_stratified_ppi_covers_a_rare_rate_where_additive_ppi_escapes():
    # Issue #28's cell: rate 0.05, judge sensitivity 0.85 / specificity 0.95, 1,000 responses, 100 labelled.
    rng = np.random.default_rng(28)
    runs, truth = 300, 0.05
    covered = escaped = 0
    for _ in range(runs):
        y, f, g = _binary(rng, 100, 900, truth, 0.85, 0.95)
        estimate, low, high = stratified_ppi(y, f, g, draws=2000, seed=int(rng.integers(1 << 30)))
        assert 0.0 <= low <= estimate <= high <= 1.0
        covered += low <= truth <= high
        plain, plain_low, _, _ = ppi_mean(y, f, g)
        escaped += plain < 0 or plain_low < 0
    # Binomial tolerance: 3 standard errors of a coverage of 0.95 over 300 runs.
    tolerance = 3 * np.sqrt(0.95 * 0.05 / runs)
    assert abs(covered / runs - 0.95) <= tolerance, covered / runs
    assert escaped > 0.2 * runs  # the additive interval leaves [0, 1] often here: what was fixed


EDGES = {
    "no positive label": (np.zeros(60), np.r_[np.ones(8), np.zeros(52)], np.r_[np.ones(120), np.zeros(760)]),
    "all positive": (np.ones(60), np.r_[np.ones(50), np.zeros(10)], np.r_[np.ones(800), np.zeros(140)]),
    "perfect judge": (
        np.r_[np.ones(9), np.zeros(51)],
        np.r_[np.ones(9), np.zeros(51)],
        np.r_[np.ones(140), np.zeros(800)],
    ),
    "judge worse than chance": (
        np.r_[np.ones(9), np.zeros(51)],
        np.r_[np.zeros(8), np.ones(1), np.ones(40), np.zeros(11)],
        np.r_[np.ones(600), np.zeros(340)],
    ),
    "rates, not flags": (np.full(60, 0.25), np.r_[np.full(30, 0.5), np.zeros(30)], np.full(940, 0.1)),
    "one label": (np.ones(1), np.ones(1), np.zeros(99)),
}


@pytest.mark.parametrize("case", EDGES)
def test_every_bounded_estimate_stays_in_the_unit_interval(case):
    y, f, g = EDGES[case]
    judged = np.r_[f, g]
    observed, observed_var = judged.mean(), judged.var(ddof=1) / judged.size
    pos, neg = y > 0.5, y <= 0.5
    tp, fn = int(np.sum(pos & (f > 0))), int(np.sum(pos & (f == 0)))
    tn, fp = int(np.sum(neg & (f == 0))), int(np.sum(neg & (f > 0)))
    results = {
        "stratified": stratified_ppi(y, f, g),
        "labels": labels_only_bounded(y),
        "rogan_gladen": rogan_gladen_bounded(observed, observed_var, judged.size, (tp, fn), (tn, fp)),
    }
    for name, (estimate, low, high) in results.items():
        assert estimate is not None, (case, name)
        assert 0.0 <= low <= estimate <= high <= 1.0, (case, name, low, estimate, high)


def test_edge_cases_give_the_answers_they_should():
    y, f, g = EDGES["perfect judge"]
    _, low, high = stratified_ppi(y, f, g)
    _, l0, h0 = labels_only_bounded(y)
    # The judge's share, within an interval much narrower than the labels alone give (9 positive labels
    # still leave room for a judge that is not quite perfect).
    assert low <= np.r_[f, g].mean() <= high and high - low < 0.5 * (h0 - l0)
    y, f, g = EDGES["no positive label"]
    assert stratified_ppi(y, f, g)[2] < np.r_[f, g].mean()  # people found none: below what the judge claims
    y, f, g = EDGES["all positive"]
    assert stratified_ppi(y, f, g)[1] > 0.9
    # A judge that is wrong more often than right still carries information once it is measured.
    y, f, g = EDGES["judge worse than chance"]
    _, low, high = stratified_ppi(y, f, g)
    assert low <= 0.15 <= high


def test_bayesian_rogan_gladen_agrees_with_the_classical_one_when_data_are_plenty():
    # True share 0.3 through sensitivity 0.8 and specificity 0.9: the judge flags 0.31.
    classical = rogan_gladen(0.31, 0.31 * 0.69 / 20_000, 0.8, 2000, 0.9, 4000)
    bayes = rogan_gladen_bounded(0.31, 0.31 * 0.69 / 20_000, 20_000, (1600, 400), (3600, 400))
    assert bayes == pytest.approx(classical, abs=0.005)
    # Near zero the classical interval is clipped to a point at 0; the Bayesian one keeps a width.
    low_case = rogan_gladen_bounded(0.1, 0.09 / 1000, 1000, (0, 0), (90, 10))
    assert low_case[0] is not None and low_case[2] > low_case[1] >= 0.0
    assert rogan_gladen(0.1, 0.09 / 1000, 0.0, 0, 0.9, 100) == (None, None, None)  # the classical gives up


def test_bayesian_rogan_gladen_gives_up_when_nothing_is_consistent():
    # The judge flags 90% of the run, yet measured sensitivity is near 0 and specificity near 1.
    assert rogan_gladen_bounded(0.9, 1e-5, 10_000, (0, 400), (400, 0)) == (None, None, None)


def test_the_same_data_give_the_same_interval():
    y, f, g = _binary(np.random.default_rng(1), 80, 500, 0.2, 0.8, 0.9)
    assert stratified_ppi(y, f, g) == stratified_ppi(y, f, g)
