"""The one bootstrap of the package: rows drawn with replacement from a seeded generator, percentile intervals.

Every interval that resamples (a run's rates in ``report``, a judge's scores in ``bench``, the
stability of repeated votes) draws its rows here, in the same order: ``rng.integers(0, n)`` for
``resamples`` rows of ``n`` draws, in chunks that bound memory. Two forms of the same draws:

* :func:`resampled_rows`: the drawn row indices, for a statistic computed on the resampled arrays
  (:func:`bootstrap_ci`, paired when it is given several arrays: they share one index per draw);
* :func:`bootstrap_weights`: how often each row was drawn, for statistics that are sums over rows
  (a cluster bootstrap: a ratio of sums over responses, whose claims move together).

A statistic that is a sum over rows only needs how often each *distinct* row was drawn: n draws from
n rows, of which K are distinct, pick the distinct rows with multinomial counts (n, c_k / n), the same
distribution as drawing the rows one by one, at a cost of K rather than n per resample.
:func:`resampling_weights` takes that path for tables of ``COUNTS_FROM`` rows or more with few distinct
rows (per-response rates k / m take few values), so a run of 10^6 responses resamples in well under a
second; smaller tables keep scipy's row order, so their intervals stay scipy's to rounding.

The interval is the percentile interval of the draws (:func:`percentile_interval`), with draws
on which the statistic is undefined (NaN) left out; it is checked against
``scipy.stats.bootstrap(method="percentile")`` in ``tests/stats/test_bootstrap.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from hallumeasure.stats.estimate import Estimate
from hallumeasure.stats.resampling import CONFIDENCE, RESAMPLES, SEED

#: Most cells a matrix of draws may hold at once (bounds memory on large runs).
MAX_CELLS = 2_000_000
#: From this many rows on, resampling draws counts of distinct rows when there are few (``resampling_weights``).
COUNTS_FROM = 10_000
#: ... and when each distinct row stands for at least this many rows on average.
_ROWS_PER_DISTINCT = 8


def resampled_rows(n: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Row indices drawn with replacement: chunks of a (resamples, n) integer matrix, one draw per row.

    Nothing for ``n == 0``. The chunking does not change the draws: rows come from ``rng`` in order.
    """
    if n == 0:
        return
    chunk = max(1, MAX_CELLS // n)
    left = resamples
    while left > 0:
        size = min(chunk, left)
        yield rng.integers(0, n, size=(size, n))
        left -= size


def bootstrap_weights(n: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The draws of :func:`resampled_rows` as count weights: chunks of a (resamples, n) matrix whose rows sum to n."""
    for picks in resampled_rows(n, resamples, rng):
        size = len(picks)
        flat = picks + (np.arange(size) * n)[:, None]
        yield np.bincount(flat.ravel(), minlength=size * n).reshape(size, n).astype(float)


def distinct_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the distinct rows of a 2-D table in order of first appearance, each row's index among them, how many
    rows each stands for). Rows are equal when their bytes are (NaN rows group together)."""
    table = np.ascontiguousarray(table)
    if table.ndim == 1:
        table = table[:, None]
    as_bytes = table.view(np.dtype((np.void, table.dtype.itemsize * table.shape[1]))).ravel()
    codes, _ = pd.factorize(as_bytes)
    first = np.full(int(codes.max()) + 1 if codes.size else 0, codes.size, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(codes.size))
    return table[first], codes, np.bincount(codes, minlength=first.size)


def few_distinct(table: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(distinct rows, their counts) when ``table`` is large and has few distinct rows (the counts path), else None."""
    n = len(table)
    if n < COUNTS_FROM:
        return None
    rows, _, counts = distinct_rows(table)
    return (rows, counts) if len(rows) * _ROWS_PER_DISTINCT <= n else None


def resampling_weights(
    table: np.ndarray, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, Iterator[np.ndarray]]:
    """(rows, chunks of weights over them) for a bootstrap of sums over the rows of ``table`` (shape (n, k)).

    A small table, or one with many distinct rows, gives itself and :func:`bootstrap_weights` (scipy's draws);
    a large one with few distinct rows gives those rows and multinomial counts over them, each row of weights
    summing to n: the same distribution, at a cost of K cells per resample instead of n.
    """
    table = np.asarray(table, dtype=float)
    found = few_distinct(table)
    if found is None:
        return table, bootstrap_weights(len(table), resamples, rng)
    rows, counts = found
    return rows, _count_weights(len(table), counts, resamples, rng)


def _count_weights(n: int, counts: np.ndarray, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    chunk = max(1, MAX_CELLS // len(counts))
    left = resamples
    while left > 0:
        size = min(chunk, left)
        yield rng.multinomial(n, counts / n, size=size).astype(float)
        left -= size


def percentile_interval(draws: ArrayLike, confidence: float) -> tuple[float | None, float | None]:
    """Percentile interval of bootstrap draws, ignoring draws that were undefined (NaN)."""
    values = np.asarray(draws, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None, None
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` elementwise, NaN where ``den`` is not positive (a ratio over no rows is undefined)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def mean_draws(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws of the mean of ``values`` (NaN = undefined, left out of each draw).

    ``values`` is one column (shape (n,)) or several (shape (n, k)); several columns share each
    draw of rows. One row of draws per resample; all NaN when there are no rows.
    """
    values = np.asarray(values, dtype=float)
    valid = np.isfinite(values)
    filled = np.where(valid, values, 0.0)
    width = 1 if values.ndim == 1 else values.shape[1]
    table = np.column_stack([filled.reshape(len(values), width), valid.reshape(len(values), width)])
    rows, weights = resampling_weights(table, resamples, rng)
    num, den = rows[:, :width], rows[:, width:]
    if values.ndim == 1:
        num, den = num[:, 0], den[:, 0]
    draws = [ratio(w @ num, w @ den) for w in weights]
    return np.concatenate(draws) if draws else np.full((resamples, *values.shape[1:]), np.nan)


def bootstrap_mean(
    values: np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
) -> Estimate:
    """Mean of ``values`` (NaN = undefined, left out) with a percentile bootstrap interval."""
    values = np.asarray(values, dtype=float)
    valid = np.isfinite(values)
    point = float(values[valid].mean()) if valid.any() else None
    draws = mean_draws(values, resamples, np.random.default_rng(seed))
    return Estimate.of(point, *percentile_interval(draws, confidence))


@dataclass(frozen=True)
class CI:
    """A point estimate with a percentile-bootstrap confidence interval.

    ``n_skipped`` counts resamples on which the statistic was undefined (not finite);
    ``low`` / ``high`` come from the remaining ``n_resamples - n_skipped`` values and
    are ``nan`` when none remain.
    """

    point: float
    low: float
    high: float
    confidence: float = 0.95
    n_resamples: int = 0
    n_skipped: int = 0

    def as_dict(self) -> dict[str, float | int]:
        return {
            "point": self.point,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "n_skipped": self.n_skipped,
        }


def bootstrap_ci(
    metric_fn: Callable[..., float],
    *arrays: ArrayLike,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> CI:
    """Percentile bootstrap CI of ``metric_fn(*arrays)``, resampling whole rows with replacement.

    All arrays are indexed by the same resampled row indices, so pairs such as
    (truth, prediction) stay together. Resamples where the metric is ``nan`` / inf
    (for example AUC on a one-class resample) are skipped and counted in ``n_skipped``.
    """
    if not arrays:
        raise ValueError("bootstrap_ci needs at least one array")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    cols = [np.asarray(a) for a in arrays]
    n = cols[0].shape[0]
    if any(c.shape[0] != n for c in cols):
        raise ValueError(f"arrays differ in length: {[c.shape[0] for c in cols]}")
    point = float(metric_fn(*cols)) if n else float("nan")
    if n == 0 or n_resamples <= 0:
        resamples = max(n_resamples, 0)
        return CI(point, float("nan"), float("nan"), confidence, resamples, resamples if n == 0 else 0)
    rng = np.random.default_rng(seed)
    values = np.array(
        [float(metric_fn(*(c[idx] for c in cols))) for picks in resampled_rows(n, n_resamples, rng) for idx in picks]
    )
    skipped = int(n_resamples - np.isfinite(values).sum())
    low, high = percentile_interval(values, confidence)
    nan = float("nan")
    return CI(point, nan if low is None else low, nan if high is None else high, confidence, n_resamples, skipped)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile by its Cornish-Fisher expansion (within 0.003 of the exact value from 5 degrees
    of freedom on; scipy is not a runtime dependency)."""
    z = NormalDist().inv_cdf(p)
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def expanded_confidence(confidence: float, n: int) -> float:
    """The percentile level that makes a bootstrap interval of a mean of ``n`` values as wide as a t interval.

    The percentile bootstrap runs narrow for small and moderate ``n`` (its spread is the plug-in one,
    short by sqrt((n-1)/n), and it uses normal rather than t tails). Hesterberg's expanded percentile
    interval (The American Statistician 69(4), 2015) takes the bootstrap quantiles at
    Phi(sqrt(n/(n-1)) * t_{n-1}) instead; in ``benchmarks/results/judge_stability.md`` it brings coverage to nominal.
    """
    if n < 3:
        return confidence
    t = t_quantile(1 - (1 - confidence) / 2, n - 1)
    return 1 - 2 * NormalDist().cdf(-math.sqrt(n / (n - 1)) * t)
