"""Classification metrics, in plain numpy, and their percentile-bootstrap intervals as ``MetricCI``.

Conventions shared by every function here:

* Inputs are 1-D array-likes of equal length; labels may be ints, bools or strings.
* A ratio whose denominator is zero (precision with no predicted positives, recall
  with no true positives, F1 when precision + recall is 0) is defined as ``0.0``.
  This matches scikit-learn's ``zero_division=0`` and never raises or warns.
* ``roc_auc`` returns ``nan`` when ``y_true`` holds only one class, because the
  area is undefined there; the bootstrap (``hallumeasure.stats.bootstrap.bootstrap_ci``,
  the package's one) skips and counts resamples whose metric is not finite.

Paired tests between two systems live in ``hallumeasure.stats``, not here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel

from hallumeasure.stats.bootstrap import bootstrap_ci

__all__ = [
    "MetricCI",
    "accuracy",
    "balanced_accuracy",
    "interval",
    "macro_f1",
    "per_class_prf",
    "precision_recall_f1",
    "roc_auc",
    "weighted_f1",
]


def _pair(y_true: ArrayLike, y_other: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(y_true), np.asarray(y_other)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"expected 1-D arrays, got shapes {a.shape} and {b.shape}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"arrays differ in length: {a.shape[0]} vs {b.shape[0]}")
    return a, b


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else 0.0


def _f1(p: float, r: float) -> float:
    return _ratio(2.0 * p * r, p + r)


def roc_auc(y_true: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve for binary ``y_true`` (positive = 1 / True) and real-valued ``scores``.

    Computed as the Mann-Whitney U statistic with tied scores given their average rank,
    so a tie between a positive and a negative counts one half. Returns ``nan`` when
    ``y_true`` has no positives or no negatives.
    """
    y, s = _pair(y_true, scores)
    y = y.astype(bool)
    s = s.astype(float)
    n_pos = int(y.sum())
    n_neg = y.shape[0] - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    sorted_s = s[order]
    # Average ranks (1-based) over runs of equal scores.
    ranks = np.empty(s.shape[0], dtype=float)
    boundaries = np.flatnonzero(np.diff(sorted_s)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [s.shape[0]]))
    avg = (starts + ends + 1) / 2.0  # mean of ranks start+1 .. end
    ranks[order] = np.repeat(avg, ends - starts)
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Share of rows where the prediction equals the truth (0.0 for empty input)."""
    y, p = _pair(y_true, y_pred)
    return _ratio(np.sum(y == p), y.shape[0])


def balanced_accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Mean recall over the classes present in ``y_true`` (0.0 for empty input)."""
    y, p = _pair(y_true, y_pred)
    classes = np.unique(y)
    if classes.size == 0:
        return 0.0
    return float(np.mean([np.mean(p[y == c] == c) for c in classes]))


def precision_recall_f1(y_true: ArrayLike, y_pred: ArrayLike, positive: Any = 1) -> tuple[float, float, float]:
    """Precision, recall and F1 of the class ``positive``; zero denominators give 0.0."""
    y, p = _pair(y_true, y_pred)
    true_pos = y == positive
    pred_pos = p == positive
    tp = float(np.sum(true_pos & pred_pos))
    precision = _ratio(tp, np.sum(pred_pos))
    recall = _ratio(tp, np.sum(true_pos))
    return precision, recall, _f1(precision, recall)


def per_class_prf(
    y_true: ArrayLike, y_pred: ArrayLike, labels: Sequence[Any] | None = None
) -> dict[Any, tuple[float, float, float, int]]:
    """Per class: (precision, recall, F1, support in ``y_true``).

    ``labels`` defaults to the sorted union of the classes in ``y_true`` and ``y_pred``.
    """
    y, p = _pair(y_true, y_pred)
    if labels is None:
        labels = [v.item() if hasattr(v, "item") else v for v in np.unique(np.concatenate((y, p)))]
    out: dict[Any, tuple[float, float, float, int]] = {}
    for c in labels:
        prec, rec, f1 = precision_recall_f1(y, p, positive=c)
        out[c] = (prec, rec, f1, int(np.sum(y == c)))
    return out


def macro_f1(y_true: ArrayLike, y_pred: ArrayLike, labels: Sequence[Any] | None = None) -> float:
    """Unweighted mean of per-class F1 over ``labels`` (default: classes seen in truth or prediction)."""
    table = per_class_prf(y_true, y_pred, labels)
    if not table:
        return 0.0
    return float(np.mean([row[2] for row in table.values()]))


def weighted_f1(y_true: ArrayLike, y_pred: ArrayLike, labels: Sequence[Any] | None = None) -> float:
    """Mean of per-class F1 over ``labels`` weighted by true support; 0.0 when no support."""
    table = per_class_prf(y_true, y_pred, labels)
    support = np.array([row[3] for row in table.values()], dtype=float)
    if support.sum() == 0:
        return 0.0
    f1s = np.array([row[2] for row in table.values()])
    return float(np.sum(f1s * support) / support.sum())


class MetricCI(BaseModel):
    """A point estimate with its bootstrap interval; None where undefined (e.g. AUC with one class)."""

    point: float | None
    low: float | None = None
    high: float | None = None
    #: Resamples on which the metric was undefined and that were skipped.
    n_skipped: int = 0

    def fmt(self, digits: int = 2) -> str:
        if self.point is None:
            return "n/a"
        if self.low is None or self.high is None:
            return f"{self.point:.{digits}f}"
        return f"{self.point:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def interval(
    fn: Callable[..., float], *arrays: np.ndarray, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> MetricCI:
    """``bootstrap_ci`` as a ``MetricCI``: None where the metric is undefined (no rows, or not finite)."""
    if len(arrays[0]) == 0:
        return MetricCI(point=None)
    ci = bootstrap_ci(fn, *arrays, n_resamples=n_resamples, seed=seed, confidence=confidence)
    return MetricCI(point=_finite(ci.point), low=_finite(ci.low), high=_finite(ci.high), n_skipped=ci.n_skipped)


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None
