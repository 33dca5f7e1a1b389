"""Training and evaluation helpers for the offline judge (need scikit-learn, a dev dependency).

Used by ``scripts/train_offline.py`` (the shipped model) and ``benchmarks/offline_quality.py``
(leave-one-dataset-out quality). Labels come from public sets in ../shared/data; no data is
stored in the package, only the fitted trees.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from hallumeasure.datasets import LabelledSample
from hallumeasure.offline.extractor import is_unevaluatable, split_claims
from hallumeasure.offline.judge import RESPONSE_FEATURES, RESPONSE_MONOTONIC, response_vector
from hallumeasure.offline.model import BoostedTrees, export_sklearn
from hallumeasure.offline.signals import claim_signals

SEED = 13
GBM_PARAMS = {"max_iter": 120, "max_leaf_nodes": 15, "learning_rate": 0.08, "l2_regularization": 1.0,
              "min_samples_leaf": 40, "random_state": SEED, "early_stopping": False}


@dataclass
class Featurized:
    """Feature rows of one labelled record: its claims and the response aggregate."""

    sample_id: str
    dataset: str
    label: int
    claim_vectors: list[list[float]]
    response: list[float]


def featurize(sample: LabelledSample) -> Featurized:
    texts = [t for t, _ in split_claims(sample.response) if not is_unevaluatable(t)] or [sample.response]
    vectors = [claim_signals(t, sample.context).vector() for t in texts if t.strip()]
    return Featurized(sample.id, sample.dataset, int(sample.label), vectors, response_vector(vectors))


def featurize_all(samples: Iterable[LabelledSample]) -> list[Featurized]:
    return [featurize(s) for s in samples]


def _fit(X: np.ndarray, y: np.ndarray, monotonic: Sequence[int], weight: np.ndarray | None = None):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(monotonic_cst=list(monotonic), **GBM_PARAMS).fit(X, y, sample_weight=weight)


def _balanced_weights(groups: Sequence[str]) -> np.ndarray:
    """Every dataset weighs the same in training, whatever its size (so no one set's quirks dominate)."""
    counts = {g: groups.count(g) for g in set(groups)}
    w = np.array([1.0 / counts[g] for g in groups])
    return w * len(w) / w.sum()


def _isotonic(X: np.ndarray, y: np.ndarray, monotonic: Sequence[int], weight: np.ndarray, calib_weight: np.ndarray,
              folds: int = 5) -> tuple[list[float], list[float]]:
    """An isotonic map fitted on out-of-fold raw probabilities (at most ~100 knots)."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.model_selection import StratifiedKFold

    oof = np.zeros(len(y))
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=SEED).split(X, y):
        oof[test] = _fit(X[train], y[train], monotonic, weight[train]).predict_proba(X[test])[:, 1]
    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(oof, y, sample_weight=calib_weight)
    xs, ys = np.asarray(iso.X_thresholds_), np.asarray(iso.y_thresholds_)
    if len(xs) > 100:
        keep = np.unique(np.linspace(0, len(xs) - 1, 100).round().astype(int))
        xs, ys = xs[keep], ys[keep]
    return [round(float(v), 6) for v in xs], [round(float(v), 6) for v in ys]


def _check_export(exported: dict, fitted, X: np.ndarray) -> None:
    """The JSON trees must reproduce scikit-learn's probabilities before any calibration."""
    trees = BoostedTrees.from_dict({**exported, "calibration": {"x": [], "y": []}})
    ours = np.array([trees.raw_probability(list(row)) for row in X[:500]])
    theirs = fitted.predict_proba(X[:500])[:, 1]
    if np.max(np.abs(ours - theirs)) > 1e-6:
        raise AssertionError("exported trees disagree with scikit-learn; the export format has changed")


def fit_models(rows: Sequence[Featurized], calibrate: bool = True) -> dict:
    """Fit the response model on ``rows``; returns the JSON-ready model dict.

    One model serves both levels: a claim is scored as a response made of that claim alone
    (most training responses are one or two sentences, so this is the case it learns most from).
    Calibration gives both classes equal weight, so 0.5 is the balanced decision point whatever
    the base rate of the training sets.
    """
    X = np.array([f.response for f in rows], dtype=float)
    y = np.array([f.label for f in rows], dtype=int)
    w = _balanced_weights([f.dataset for f in rows])
    fitted = _fit(X, y, RESPONSE_MONOTONIC, w)
    class_w = w * np.where(y == 1, 0.5 / max(w[y == 1].sum() / w.sum(), 1e-9), 0.5 / max(w[y == 0].sum() / w.sum(), 1e-9))
    calibration = _isotonic(X, y, RESPONSE_MONOTONIC, w, class_w) if calibrate else ([], [])
    exported = export_sklearn(fitted, list(RESPONSE_FEATURES), calibration)
    _check_export(exported, fitted, X)
    return {"response_model": exported,
            "counts": {"responses": len(rows), "response_positives": int(y.sum())}}
