"""Corrected rates and agreement: kappa against scikit-learn; PPI and Rogan-Gladen by known truth and simulation.

References: cohen_kappa -> sklearn.metrics.cohen_kappa_score. PPI (Angelopoulos et al. 2023)
and Rogan-Gladen have no implementation in scipy, statsmodels or scikit-learn: they are checked
on cases with a known answer and by simulated coverage (the full study is
benchmarks/interval_coverage.py).
"""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from hallumeasure.stats.correction import cohen_kappa, labels_only_mean, ppi_mean, rogan_gladen


def test_kappa_matches_sklearn():
    rng = np.random.default_rng(5)
    human = rng.integers(0, 5, 200)
    judge = np.where(rng.random(200) < 0.6, human, rng.integers(0, 5, 200))
    table = confusion_matrix(human, judge, labels=range(5))
    assert cohen_kappa(table) == pytest.approx(cohen_kappa_score(human, judge))
    assert cohen_kappa(np.zeros((2, 2))) is None
    assert cohen_kappa(np.array([[5, 0], [0, 0]])) is None  # one category throughout: undefined


def test_ppi_with_a_perfect_judge_is_the_judge_mean():
    rng = np.random.default_rng(1)
    f = rng.random(500)
    estimate, low, high, lam = ppi_mean(f[:50], f[:50], f[50:])
    assert lam == 1.0 and estimate == pytest.approx(f[50:].mean())
    # Only the unlabelled term is left in the variance.
    assert high - low == pytest.approx(2 * 1.959964 * f[50:].std(ddof=1) / np.sqrt(450), rel=1e-5)


def test_ppi_corrects_a_biased_judge():
    rng = np.random.default_rng(2)
    truth = (rng.random(4000) < 0.2).astype(float)
    judge = np.clip(truth + 0.1, 0, 1)  # over-reports by 0.1 on the negatives
    estimate, low, high, _ = ppi_mean(truth[:300], judge[:300], judge[300:], tuned=True)
    assert low <= 0.2 <= high and abs(estimate - truth.mean()) < 0.03
    assert judge.mean() > high  # the uncorrected judge is outside the corrected interval


def test_tuned_ppi_falls_back_to_the_labels_for_a_useless_judge():
    rng = np.random.default_rng(3)
    y = rng.random(200)
    noise = rng.random(5000)
    _, low, high, lam = ppi_mean(y, noise[:200], noise[200:], tuned=True)
    _, l0, h0 = labels_only_mean(y)
    assert lam < 0.2 and (high - low) < 1.1 * (h0 - l0)
    _, pl, ph, _ = ppi_mean(y, noise[:200], noise[200:])
    assert (ph - pl) > (high - low)


def test_ppi_covers_and_beats_the_labels_alone_in_simulation():
    rng = np.random.default_rng(4)
    runs, n_run, n_lab = 600, 800, 80
    truth = (rng.random((runs, n_run)) < 0.25).astype(float)
    judge = np.where(truth > 0, rng.random((runs, n_run)) < 0.9, rng.random((runs, n_run)) < 0.05).astype(float)
    cover_ppi = cover_lab = 0
    width_ppi, width_lab = [], []
    for r in range(runs):
        _, lo, hi, _ = ppi_mean(truth[r, :n_lab], judge[r, :n_lab], judge[r, n_lab:])
        cover_ppi += lo <= 0.25 <= hi
        width_ppi.append(hi - lo)
        _, lo, hi = labels_only_mean(truth[r, :n_lab])
        cover_lab += lo <= 0.25 <= hi
        width_lab.append(hi - lo)
    assert 0.92 <= cover_ppi / runs <= 0.975
    assert np.mean(width_ppi) < 0.8 * np.mean(width_lab)


def test_rogan_gladen_inverts_known_error_rates():
    # True share 0.3 seen through sensitivity 0.8 and specificity 0.9: 0.3*0.8 + 0.7*0.1 = 0.31.
    estimate, low, high = rogan_gladen(0.31, 1e-4, 0.8, 200, 0.9, 400)
    assert estimate == pytest.approx(0.3) and low < 0.3 < high
    assert rogan_gladen(0.31, 1e-4, 0.5, 10, 0.5, 10) == (None, None, None)  # no better than chance
    assert rogan_gladen(0.01, 0.0, 0.8, 50, 0.9, 50)[0] == 0.0  # clipped to [0, 1]
