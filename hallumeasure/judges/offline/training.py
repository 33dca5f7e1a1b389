"""Training and evaluation helpers for the offline judge (need scikit-learn, a dev dependency).

Used by ``scripts/train_offline.py`` (the shipped model) and ``benchmarks/offline_quality.py``
(leave-one-dataset-out quality). Labels come from public sets in ../shared/data; no data is
stored in the package, only the fitted trees.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hallumeasure.judges.offline.extractor import is_unevaluatable, split_claims
from hallumeasure.judges.offline.features import (
    RESPONSE_FEATURES,
    RESPONSE_MONOTONIC,
    response_vector,
)
from hallumeasure.judges.offline.model import EVIDENCE_RULES, BoostedTrees, export_sklearn
from hallumeasure.judges.offline.signals import FEATURES, claim_signals
from hallumeasure.runs.datasets import LabelledSample

if TYPE_CHECKING:
    from sklearn.ensemble import HistGradientBoostingClassifier

SEED = 13
GBM_PARAMS = {
    "max_iter": 120,
    "max_leaf_nodes": 15,
    "learning_rate": 0.08,
    "l2_regularization": 1.0,
    "min_samples_leaf": 40,
    "random_state": SEED,
    "early_stopping": False,
}


@dataclass
class Featurized:
    """Feature rows of one labelled record: its claims and the response aggregate."""

    sample_id: str
    dataset: str
    label: int
    claim_vectors: list[list[float]]
    response: list[float]
    #: Per claim: (definite error, confidently supported, confidently unsupported), for the triage figures
    #: (confidence.py); empty when featurized for training only.
    triage: list[tuple[bool, bool, bool]] = field(default_factory=list)


def featurize(sample: LabelledSample) -> Featurized:
    """Signals of every checkable claim the offline extractor finds (the whole response when it finds none)."""
    from hallumeasure.judges.offline.confidence import confidently_supported, confidently_unsupported

    texts = [t for t, _ in split_claims(sample.response) if not is_unevaluatable(t)] or [sample.response]
    signals = [claim_signals(t, sample.context) for t in texts if t.strip()]
    vectors = [s.vector() for s in signals]
    triage = [(s.values["definite"] > 0, confidently_supported(s), confidently_unsupported(s)) for s in signals]
    return Featurized(sample.id, sample.dataset, int(sample.label), vectors, response_vector(vectors), triage)


def featurize_all(samples: Iterable[LabelledSample]) -> list[Featurized]:
    return [featurize(s) for s in samples]


def _class_balanced(w: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``w`` rescaled so both classes carry half the total weight."""
    share = {c: max(w[y == c].sum() / w.sum(), 1e-9) for c in (0, 1)}
    balanced: np.ndarray = w * np.where(y == 1, 0.5 / share[1], 0.5 / share[0])
    return balanced


def _fit(
    X: np.ndarray, y: np.ndarray, monotonic: Sequence[int], weight: np.ndarray | None = None
) -> HistGradientBoostingClassifier:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(monotonic_cst=list(monotonic), **GBM_PARAMS).fit(X, y, sample_weight=weight)


def _balanced_weights(groups: Sequence[str]) -> np.ndarray:
    """Every dataset weighs the same in training, whatever its size (so no one set's quirks dominate)."""
    counts = {g: groups.count(g) for g in set(groups)}
    w = np.array([1.0 / counts[g] for g in groups])
    weights: np.ndarray = w * len(w) / w.sum()
    return weights


def _platt(
    X: np.ndarray, y: np.ndarray, monotonic: Sequence[int], weight: np.ndarray, calib_weight: np.ndarray, folds: int = 5
) -> tuple[float, float]:
    """Platt scaling (a, b) fitted on out-of-fold raw log-odds: p = sigmoid(a * logit(raw) + b).

    A strictly increasing map, so it keeps the model's ranking (and its AUC) exactly, unlike an
    isotonic map, whose flat steps tie responses that the trees told apart.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    oof = np.zeros(len(y))
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=SEED).split(X, y):
        oof[test] = _fit(X[train], y[train], monotonic, weight[train]).predict_proba(X[test])[:, 1]
    logit = np.log(np.clip(oof, 1e-6, 1 - 1e-6) / np.clip(1 - oof, 1e-6, 1 - 1e-6)).reshape(-1, 1)
    lr = LogisticRegression(C=1e6, max_iter=1000).fit(logit, y, sample_weight=calib_weight)
    return round(float(lr.coef_[0][0]), 6), round(float(lr.intercept_[0]), 6)


def evidence_precision(rows: Sequence[Featurized]) -> dict[str, float]:
    """For each evidence rule: the share of training responses it fires on that are labelled hallucinated.

    Laplace-smoothed ((hallucinated + 1) / (fired + 2)), so a rule seen rarely stays near 0.5.
    """
    out = {}
    for rule in EVIDENCE_RULES:
        i = FEATURES.index(rule)
        labels = [f.label for f in rows if any(v[i] > 0 for v in f.claim_vectors)]
        out[rule] = round((sum(labels) + 1) / (len(labels) + 2), 4)
    return out


def _check_export(exported: dict[str, Any], fitted: HistGradientBoostingClassifier, X: np.ndarray) -> None:
    """The JSON trees must reproduce scikit-learn's probabilities before any calibration."""
    trees = BoostedTrees.from_dict({**exported, "calibration": {"a": 1.0, "b": 0.0}})
    ours = np.array([trees.raw_probability(list(row)) for row in X[:500]])
    theirs = fitted.predict_proba(X[:500])[:, 1]
    if np.max(np.abs(ours - theirs)) > 1e-6:
        raise AssertionError("exported trees disagree with scikit-learn; the export format has changed")


def fit_models(rows: Sequence[Featurized], calibrate: bool = True) -> dict[str, Any]:
    """Fit the response model and the evidence-rule precisions on ``rows``; returns the JSON-ready model dict.

    One model serves both levels: a claim is scored as a response made of that claim alone.
    Calibration gives both classes equal weight, so 0.5 is the balanced decision point whatever
    the base rate of the training sets.
    """
    X = np.array([f.response for f in rows], dtype=float)
    y = np.array([f.label for f in rows], dtype=int)
    w = _balanced_weights([f.dataset for f in rows])
    fitted = _fit(X, y, RESPONSE_MONOTONIC, w)
    calibration = _platt(X, y, RESPONSE_MONOTONIC, w, _class_balanced(w, y)) if calibrate else (1.0, 0.0)
    exported = export_sklearn(fitted, list(RESPONSE_FEATURES), calibration)
    _check_export(exported, fitted, X)
    return {
        "response_model": exported,
        "evidence_rules": evidence_precision(rows),
        "counts": {"responses": len(rows), "response_positives": int(y.sum())},
    }
