"""Rates corrected for the judge's own errors, and agreement between a judge and people.

* ``ppi_mean``: prediction-powered inference (Angelopoulos et al., 2023). The judge's mean over
  the unlabelled responses, plus the mean of (human - judge) over the labelled ones (the
  "rectifier"); its variance is the sum of both terms' variances, so the normal interval is
  valid whatever the judge's errors, as long as the labelled responses are a random sample.
  ``tuned=True`` gives power-tuned PPI (PPI++): the judge's part is weighted by the lambda in
  [0, 1] that minimises the variance (cross-fitted over two halves of the labels), so a weak
  judge falls back towards the labels-only interval.
* ``rogan_gladen``: the classical prevalence correction (Rogan and Gladen, 1978),
  (observed + specificity - 1) / (sensitivity + specificity - 1), with a delta-method
  interval. Simpler, but it assumes the judge's error rates are the same on every response.
* ``cohen_kappa``: chance-corrected agreement from a confusion matrix.

Checked against scikit-learn (kappa) and by simulation with known truth
(``benchmarks/interval_coverage.py``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def _power_tuning(y: np.ndarray, f: np.ndarray, judged: np.ndarray, n: int, n_unlabelled: int) -> float:
    """The variance-minimising lambda in [0, 1] (PPI++): Cov(y, f) / ((1 + n / N) Var(f))."""
    var_f = float(judged.var(ddof=1))
    if y.size < 2 or var_f <= 0:
        return 0.0
    cov = float(np.cov(y, f, ddof=1)[0, 1])
    return min(1.0, max(0.0, cov / ((1 + n / n_unlabelled) * var_f)))


def ppi_mean(
    labelled_truth: np.ndarray,
    labelled_judge: np.ndarray,
    unlabelled_judge: np.ndarray,
    confidence: float = 0.95,
    *,
    tuned: bool = False,
) -> tuple[float | None, float | None, float | None, float]:
    """(estimate, low, high, lambda) of a mean, from judge values everywhere and human values on a labelled subset.

    ``labelled_truth`` and ``labelled_judge`` are aligned (the same labelled responses);
    ``unlabelled_judge`` holds the judge's values on the other responses of the run. The
    estimate is lambda * mean(judge, unlabelled) + mean(human - lambda * judge, labelled).
    lambda = 1 is plain PPI; ``tuned`` picks the variance-minimising lambda in [0, 1]
    (power-tuned PPI, "PPI++", Angelopoulos, Duchi and Zrnic 2023), so that a poor judge
    cannot make the interval much wider than the labels alone would. The tuned lambda is
    cross-fitted: each half of the labelled responses is corrected with the lambda fitted on
    the other half (fitting it on the same labels made the interval run narrow below about
    100 labels); the returned lambda is their mean.
    """
    y = np.asarray(labelled_truth, dtype=float)
    f = np.asarray(labelled_judge, dtype=float)
    g = np.asarray(unlabelled_judge, dtype=float)
    if y.size < 2:
        return (float(y.mean()) if y.size else None), None, None, 0.0
    if g.size < 2:  # (almost) everything was labelled: the labels alone are the estimate
        estimate, var, lam = float(y.mean()), float(y.var(ddof=1)) / y.size, 0.0
    else:
        weights = np.ones(y.size)
        if tuned:
            judged = np.concatenate([f, g])
            half = np.arange(y.size) % 2
            fitted = [_power_tuning(y[half == k], f[half == k], judged, y.size, g.size) for k in (0, 1)]
            weights = np.where(half == 0, fitted[1], fitted[0])
        lam = float(weights.mean())
        rectifier = y - weights * f
        estimate = float(lam * g.mean() + rectifier.mean())
        var = lam**2 * float(g.var(ddof=1)) / g.size + float(rectifier.var(ddof=1)) / y.size
    half_width = _z(confidence) * math.sqrt(var)
    return estimate, estimate - half_width, estimate + half_width, lam


def labels_only_mean(
    labelled_truth: np.ndarray, confidence: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high) from the human values alone (normal interval, the baseline PPI improves on)."""
    y = np.asarray(labelled_truth, dtype=float)
    if y.size < 2:
        return (float(y.mean()) if y.size else None), None, None
    half = _z(confidence) * float(y.std(ddof=1)) / math.sqrt(y.size)
    return float(y.mean()), float(y.mean()) - half, float(y.mean()) + half


def rogan_gladen(
    observed: float,
    observed_var: float,
    sensitivity: float,
    n_positive: int,
    specificity: float,
    n_negative: int,
    confidence: float = 0.95,
) -> tuple[float | None, float | None, float | None]:
    """(corrected share, low, high): Rogan-Gladen with a delta-method interval, clipped to [0, 1].

    ``observed`` is the judge's share over the whole run and ``observed_var`` its sampling
    variance; sensitivity and specificity come from ``n_positive`` and ``n_negative`` labelled
    units. None when the judge is no better than chance (sensitivity + specificity <= 1).
    """
    youden = sensitivity + specificity - 1.0
    if youden <= 0 or n_positive == 0 or n_negative == 0:
        return None, None, None
    theta = (observed + specificity - 1.0) / youden
    var = (
        observed_var
        + theta**2 * sensitivity * (1 - sensitivity) / n_positive
        + (1 - theta) ** 2 * specificity * (1 - specificity) / n_negative
    ) / youden**2
    half = _z(confidence) * math.sqrt(max(var, 0.0))

    def clip(v: float) -> float:
        return min(1.0, max(0.0, v))

    return clip(theta), clip(theta - half), clip(theta + half)


def cohen_kappa(confusion: np.ndarray) -> float | None:
    """Cohen's kappa of a square confusion matrix (rows one rater, columns the other); None when undefined."""
    table = np.asarray(confusion, dtype=float)
    n = table.sum()
    if n == 0:
        return None
    observed = np.trace(table) / n
    expected = float(table.sum(axis=1) @ table.sum(axis=0)) / n**2
    if expected >= 1.0:
        return None  # both raters used one and the same category throughout
    return float((observed - expected) / (1.0 - expected))
