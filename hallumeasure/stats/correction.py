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

The two estimators above are additive: with few labels or rare positives their estimate and
interval can leave [0, 1] and their normal intervals cover less than claimed (issue #28). The
bounded estimators that ``calibrate`` reports are below them: ``stratified_ppi`` (stratified
PPI with a Bayesian interval), ``labels_only_bounded`` (Jeffreys) and ``rogan_gladen_bounded``
(Bayesian Rogan-Gladen); their coverage over a grid of rates, label counts and judges is
measured by ``benchmarks/ppi_coverage.py``.

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


# --- bounded corrections -------------------------------------------------------------------------

#: Posterior draws behind every bounded interval; seeded, so the same data give the same numbers.
DRAWS = 4000
_SEED = 20231125
_JEFFREYS = 0.5
Triple = tuple[float | None, float | None, float | None]


def effective_beta(mean: np.ndarray, var_of_mean: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Jeffreys Beta posterior (a, b) of a mean of values in [0, 1], from its effective sample size.

    The effective size is mean (1 - mean) / var_of_mean (Korn and Graubard 1998): for 0/1 values
    it is the number of values (less one, with the usual ddof=1 variance), for rates in between it
    is larger, as a rate carries more than one yes/no. When the spread says nothing (all values
    equal, or one value) the plain count stands in; with no values the posterior is the prior.
    """
    mean = np.asarray(mean, dtype=float)
    var_of_mean = np.asarray(var_of_mean, dtype=float)
    n = np.asarray(n, dtype=float)
    inner = (mean > 0) & (mean < 1) & (var_of_mean > 0)
    n_eff = np.where(inner, mean * (1 - mean) / np.where(inner, var_of_mean, 1.0), n)
    n_eff = np.where(n > 0, n_eff, 0.0)
    m = np.where(n > 0, mean, 0.0)
    return m * n_eff + _JEFFREYS, (1 - m) * n_eff + _JEFFREYS


def _summarise(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median and equal-tailed interval of each row of draws, NaN draws left out (NaN for a row of NaN).

    Sorting once and interpolating is much faster than ``np.nanquantile`` over many rows.
    """
    alpha = 1.0 - confidence
    ordered = np.sort(draws, axis=-1)  # NaN sort last
    kept = np.isfinite(ordered).sum(axis=-1)
    out = []
    for q in (0.5, alpha / 2, 1 - alpha / 2):
        position = q * np.maximum(kept - 1, 0)
        below = np.floor(position).astype(int)
        above = np.minimum(below + 1, np.maximum(kept - 1, 0))
        low = np.take_along_axis(ordered, below[..., None], axis=-1)[..., 0]
        high = np.take_along_axis(ordered, above[..., None], axis=-1)[..., 0]
        value = low + (position - below) * (high - low)
        out.append(np.where(kept > 0, value, np.nan))
    return out[0], out[1], out[2]


def stratified_ppi_draws(
    judge_counts: np.ndarray,
    label_counts: np.ndarray,
    label_means: np.ndarray,
    label_var_of_means: np.ndarray,
    draws: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Posterior draws of a mean under stratified PPI; arrays are (runs, strata), the result (runs, draws).

    ``judge_counts`` counts every response of the run per stratum of the judge's value (phase one
    of a two-phase sample); ``label_*`` describe the human values of the labelled responses per
    stratum. The stratum shares get a Dirichlet posterior, each stratum's mean an effective-count
    Beta posterior (``effective_beta``), and the corrected mean is their weighted sum: a convex
    combination of values in [0, 1], so every draw lies in [0, 1].
    """
    judge_counts = np.asarray(judge_counts, dtype=float)
    a, b = effective_beta(label_means, label_var_of_means, label_counts)
    runs, strata = judge_counts.shape
    weights = rng.standard_gamma((judge_counts + _JEFFREYS)[:, :, None], size=(runs, strata, draws))
    weights /= weights.sum(axis=1, keepdims=True)
    means = rng.beta(a[:, :, None], b[:, :, None], size=(runs, strata, draws))
    out: np.ndarray = (weights * means).sum(axis=1)
    return out


def judge_strata(judge: np.ndarray) -> np.ndarray:
    """The stratum of each response by the judge's value: 0 when it found nothing unsupported, 1 otherwise."""
    return (np.asarray(judge, dtype=float) > 0).astype(int)


def _stratum_stats(y: np.ndarray, strata: np.ndarray, k: int) -> tuple[float, float, float]:
    mine = y[strata == k]
    if mine.size == 0:
        return 0.0, 0.0, 0.0
    var = float(mine.var(ddof=1)) / mine.size if mine.size > 1 else 0.0
    return float(mine.size), float(mine.mean()), var


def stratified_ppi(
    labelled_truth: np.ndarray,
    labelled_judge: np.ndarray,
    unlabelled_judge: np.ndarray,
    confidence: float = 0.95,
    *,
    draws: int = DRAWS,
    seed: int = _SEED,
) -> Triple:
    """(estimate, low, high) of a mean in [0, 1], corrected by human labels: stratified PPI, always in [0, 1].

    The run's responses are split by the judge (found something unsupported or not). The share of
    each stratum comes from the judge's values over the whole run; the human mean within each
    stratum comes from the labelled responses in it. The corrected mean is the sum of share times
    human mean (the two-phase "double sampling" estimator; stratified PPI, Fisch et al. 2024,
    with the judge's value as the stratum), and the interval is the equal-tailed credible interval
    of its posterior under Jeffreys priors (Monte Carlo, seeded). Unlike the additive PPI
    rectifier, no part can push the estimate or an end outside [0, 1]; with no positive label it
    still gives a value (small, with an upper end set by how many labels were seen). The estimate
    is the posterior median. None when no response is labelled.
    """
    y = np.asarray(labelled_truth, dtype=float)
    f = np.asarray(labelled_judge, dtype=float)
    g = np.asarray(unlabelled_judge, dtype=float)
    if y.size == 0:
        return None, None, None
    lab, rest = judge_strata(f), judge_strata(g)
    counts = np.array([[float(np.sum(lab == k) + np.sum(rest == k)) for k in (0, 1)]])
    stats_ = [_stratum_stats(y, lab, k) for k in (0, 1)]
    n, mean, var = (np.array([[s[i] for s in stats_]]) for i in range(3))
    sample = stratified_ppi_draws(counts, n, mean, var, draws, np.random.default_rng(seed))
    median, low, high = _summarise(sample, confidence)
    return float(median[0]), float(low[0]), float(high[0])


def labels_only_bounded(labelled_truth: np.ndarray, confidence: float = 0.95) -> Triple:
    """(median, low, high) from the human values alone: the Jeffreys interval (effective count for rates).

    For 0/1 values this is the Jeffreys interval of a binomial share (Brown, Cai and DasGupta
    2001), computed exactly from the Beta quantiles; always inside [0, 1].
    """
    y = np.asarray(labelled_truth, dtype=float)
    if y.size == 0:
        return None, None, None
    var = float(y.var(ddof=1)) / y.size if y.size > 1 else 0.0
    a, b = effective_beta(np.array(y.mean()), np.array(var), np.array(float(y.size)))
    alpha = 1.0 - confidence
    dist = stats.beta(float(a), float(b))
    return float(dist.median()), float(dist.ppf(alpha / 2)), float(dist.ppf(1 - alpha / 2))


def rogan_gladen_draws(
    observed: np.ndarray,
    observed_var: np.ndarray,
    n_units: np.ndarray,
    sens: tuple[np.ndarray, np.ndarray],
    spec: tuple[np.ndarray, np.ndarray],
    draws: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Posterior draws of the Rogan-Gladen share, (runs, draws), NaN where a draw falls outside [0, 1].

    ``sens`` is (true positives, false negatives) and ``spec`` (true negatives, false positives)
    of the judge on labelled units, each an array over runs; ``observed`` is the judge's share over
    the run, with ``observed_var`` its sampling variance and ``n_units`` its units.
    """
    a, b = effective_beta(observed, observed_var, n_units)
    shape = (np.asarray(observed).shape[0], draws)
    p = rng.beta(a[:, None], b[:, None], size=shape)
    se = rng.beta((np.asarray(sens[0]) + _JEFFREYS)[:, None], (np.asarray(sens[1]) + _JEFFREYS)[:, None], size=shape)
    sp = rng.beta((np.asarray(spec[0]) + _JEFFREYS)[:, None], (np.asarray(spec[1]) + _JEFFREYS)[:, None], size=shape)
    youden = se + sp - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = (p + sp - 1.0) / youden
    out: np.ndarray = np.where((theta >= 0) & (theta <= 1) & (youden != 0), theta, np.nan)
    return out


#: Fewer kept draws than this share and the Bayesian Rogan-Gladen gives no value.
MIN_KEPT = 0.05


def rogan_gladen_bounded(
    observed: float,
    observed_var: float,
    n_units: int,
    sens: tuple[int, int],
    spec: tuple[int, int],
    confidence: float = 0.95,
    *,
    draws: int = DRAWS,
    seed: int = _SEED,
) -> Triple:
    """(median, low, high): Bayesian Rogan-Gladen, inside [0, 1], with a value even when no label is positive.

    Sensitivity ~ Beta(tp + 1/2, fn + 1/2), specificity ~ Beta(tn + 1/2, fp + 1/2) and the judge's
    observed share ~ its effective-count Beta; each joint draw is inverted by the Rogan-Gladen
    formula, and draws that fall outside [0, 1] are dropped (the posterior under a prior that
    allows only consistent error rates), so the interval is a credible interval, not a clipped
    normal one. With no positive label the sensitivity is its prior, which widens the interval
    instead of leaving it undefined. None when fewer than ``MIN_KEPT`` of the draws are
    consistent (the judge's flag rate cannot be squared with its measured error rates).
    """
    rng = np.random.default_rng(seed)
    sample = rogan_gladen_draws(
        np.array([observed]),
        np.array([observed_var]),
        np.array([float(n_units)]),
        (np.array([sens[0]]), np.array([sens[1]])),
        (np.array([spec[0]]), np.array([spec[1]])),
        draws,
        rng,
    )
    if np.mean(np.isfinite(sample)) < MIN_KEPT:
        return None, None, None
    median, low, high = _summarise(sample, confidence)
    return float(median[0]), float(low[0]), float(high[0])
