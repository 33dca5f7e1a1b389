"""Selective decisions with a guarantee: thresholds on a response score chosen by risk control (MAPIE).

A response is *decided* when its judge's claims leave its hallucinated flag fixed and its score agrees with
that flag: at most ``clear_at_most`` for a clean flag, at least ``flag_at_least`` for a hallucinated one
(judges/decision.py applies the shipped pair). The pair is chosen by Learn-then-Test (MAPIE's
``BinaryClassificationController``, Bonferroni-Holm over a grid): with probability ``confidence`` over the
calibration draw, the share of *all* responses decided wrongly is at most ``target`` on data exchangeable with
the calibration data; of the pairs that pass, the one that abstains least. Needs the ``calibrate`` extra.

Outcome rows (one per response): ``[score, hallucinated flag, decided by the claims, has a flag]``, NaN where
a value is missing.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

#: Candidate thresholds; -1 / 2 mean "never decide that way". Kept small: Bonferroni-Holm pays for every pair.
CLEAR_GRID = (-1.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65)
FLAG_GRID = (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 2.0)


def predict(rows: np.ndarray, clear_at_most: float, flag_at_least: float) -> np.ndarray:
    """The rule on outcome rows: 0 / 1 where decided, NaN where it abstains."""
    score, flag, decided, has = rows[:, 0], rows[:, 1], rows[:, 2] > 0, rows[:, 3] > 0
    ok = decided & has & ~np.isnan(score)
    clean = ok & (flag == 0) & (score <= clear_at_most)
    dirty = ok & (flag == 1) & (score >= flag_at_least)
    return np.where(clean, 0.0, np.where(dirty, 1.0, np.nan))


def calibrate_rule(
    rows: np.ndarray,
    labels: np.ndarray,
    *,
    target: float = 0.05,
    confidence: float = 0.9,
    groups: np.ndarray | None = None,
) -> tuple[float, float] | None:
    """The (clear_at_most, flag_at_least) pair that controls the share decided wrongly; None when none does.

    With ``groups`` (one name per row: the data set it comes from), the share is controlled in every group at
    once (MAPIE's multi-risk control), which guards against one group's shift better than the pooled share.
    """
    from mapie.risk_control import BinaryClassificationController, BinaryRisk

    def wrong_in(mask: np.ndarray | None) -> BinaryRisk:
        return BinaryRisk(
            risk_occurrence=lambda y_true, y_pred: (y_pred == y_pred) & (y_pred != y_true),
            risk_condition=(lambda y_true, y_pred: np.repeat(True, len(y_true)))
            if mask is None
            else (lambda y_true, y_pred: mask),
            higher_is_better=False,
        )

    masks = [None] if groups is None else [groups == g for g in sorted(set(groups.tolist()))]
    risks = [wrong_in(m) for m in masks]
    controller = BinaryClassificationController(
        predict_function=predict,
        risk=risks if len(risks) > 1 else risks[0],
        target_level=[target] * len(risks) if len(risks) > 1 else target,
        confidence_level=confidence,
        best_predict_param_choice="abstention_rate",
        list_predict_params=np.array([(lo, hi) for lo in CLEAR_GRID for hi in FLAG_GRID]),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MAPIE warns when no parameter passes; None says so
        controller.calibrate(rows, labels)
    best = controller.best_predict_param
    if best is None:
        return None
    lo, hi = (float(v) for v in np.ravel(best))
    if np.isnan(lo) or np.isnan(hi):
        return None
    return lo, hi


def measure_rule(rows: np.ndarray, labels: np.ndarray, rule: tuple[float, float] | None) -> dict[str, Any]:
    """Decided share, share of all responses decided wrongly and accuracy among decided, under ``rule``."""
    pred = np.full(len(labels), np.nan) if rule is None else predict(rows, *rule)
    decided = ~np.isnan(pred)
    wrong = decided & (pred != labels)
    claims_rule = (rows[:, 2] > 0) & (rows[:, 3] > 0)
    return {
        "n": len(labels),
        "decided_share": round(float(decided.mean()), 4),
        "decided_wrongly": round(float(wrong.mean()), 4),
        "accuracy_among_decided": round(float(1 - wrong.sum() / decided.sum()), 4) if decided.any() else None,
        "n_no_flag": int((rows[:, 3] == 0).sum()),
        # the claims' rule alone, for comparison
        "claims_rule_decided_share": round(float(claims_rule.mean()), 4),
        "claims_rule_decided_wrongly": round(float((claims_rule & (rows[:, 1] != labels)).mean()), 4),
    }
