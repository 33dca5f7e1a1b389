"""Whether the responses' style moved between two runs enough to explain what their judge saw.

The audit's reading of a judge's labels assumes the judge errs the same way in both runs. That fails when
the model changes its style: a keyless judge flags a paraphrase more often than a copy, so a model that
starts paraphrasing looks worse with no new error. The audit can see the style: each response's length
(words), its lexical overlap with its source (share of its words found there) and its claim count.

``style_shift`` measures each feature's move as a standardised mean difference (current minus baseline,
over the pooled spread) and asks how much of the judge's change the move alone predicts: a least-squares
fit (ridge, standardised features) of the judge's per-response value on the features in the baseline run,
evaluated at the current run's feature means. The fit cannot tell a judge's bias from real errors that
come with the style, so the prediction is what style *could* explain, not what it did.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

#: The features, in the column order of the arrays ``style_shift`` takes.
FEATURES = ("words", "overlap", "claims")
#: A standardised move at least this large is a shift worth naming (a "medium" effect).
SHIFT_AT = 0.5
_RIDGE = 1.0


class FeatureShift(BaseModel):
    name: str
    baseline_mean: float
    current_mean: float
    standardized: float = Field(description="(current - baseline mean) / pooled sd; 0 when neither varies.")


class StyleShift(BaseModel):
    """The style move between two runs and the change of the judge's value it alone predicts."""

    features: list[FeatureShift]
    predicted_change: float = Field(description="Change of the judged metric the style move alone predicts.")
    shifted: bool = Field(description=f"Some feature moved by at least {SHIFT_AT} pooled sd.")
    could_explain: bool = Field(description="The shift alone could account for the verdict's change.")

    def describe(self) -> str:
        moved = [f for f in self.features if abs(f.standardized) >= SHIFT_AT]
        parts = ", ".join(
            f"{f.name} {f.baseline_mean:.3g} to {f.current_mean:.3g} ({f.standardized:+.1f} sd)" for f in moved
        )
        if not moved:
            return "no style shift (length, overlap with the source and claims per response within 0.5 sd)"
        text = f"style shift: {parts}; the judge's reading of that shift alone predicts {self.predicted_change:+.3f}"
        if self.could_explain:
            text += "; a judge that errs differently on this style could explain the change"
        return text


def _pooled_sd(a: np.ndarray, b: np.ndarray) -> float:
    both = np.concatenate([a, b])
    return float(np.std(both, ddof=1)) if both.size > 1 else 0.0


def style_shift(
    base_features: np.ndarray,
    cur_features: np.ndarray,
    base_values: np.ndarray,
    *,
    change_beyond: float,
) -> StyleShift:
    """The shift of ``FEATURES`` (rows = responses) and whether it could explain ``change_beyond``.

    ``change_beyond`` is how far the judge's change goes past the verdict's threshold (for a regression:
    the lower bound minus the threshold it cleared). The style could explain the verdict when some
    feature shifted and the change the style alone predicts is at least that large.
    """
    xb = np.asarray(base_features, dtype=float)
    xc = np.asarray(cur_features, dtype=float)
    y = np.asarray(base_values, dtype=float)
    keep = np.isfinite(y) & np.isfinite(xb).all(axis=1)
    xb_fit, y = xb[keep], y[keep]
    features = []
    for i, name in enumerate(FEATURES):
        a, b = xb[:, i][np.isfinite(xb[:, i])], xc[:, i][np.isfinite(xc[:, i])]
        ma, mb = (float(a.mean()) if a.size else 0.0), (float(b.mean()) if b.size else 0.0)
        sd = _pooled_sd(a, b)
        smd = (mb - ma) / sd if sd > 0 else 0.0
        features.append(FeatureShift(name=name, baseline_mean=ma, current_mean=mb, standardized=smd))
    predicted = 0.0
    if y.size >= 3 and np.std(y) > 0:
        centre, scale = xb_fit.mean(axis=0), xb_fit.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        z = (xb_fit - centre) / scale
        coef = np.linalg.solve(z.T @ z + _RIDGE * np.eye(z.shape[1]), z.T @ (y - y.mean()))
        cur_mean = np.nanmean(xc, axis=0) if xc.size else centre
        predicted = float(((cur_mean - centre) / scale) @ coef)
        # the fit is centred on the baseline's own means, so the baseline predicts 0 change
    shifted = any(abs(f.standardized) >= SHIFT_AT for f in features)
    could = shifted and predicted > 0 and predicted >= change_beyond
    return StyleShift(features=features, predicted_change=round(predicted, 6), shifted=shifted, could_explain=could)
