"""A checker's threshold and unsure band, calibrated on labelled claims and passed in its spec.

A trained checker's probability is not calibrated to hallumeasure's labels, and its best threshold differs
from model to model (LLM-AggreFact tunes one per model on a dev split; Tang et al., 2024). ``calibrate``
picks the threshold that maximises balanced accuracy on labelled scores, then the narrowest band around it
outside which the checker's decisions were right at least ``target`` of the time on those same claims: a
verdict inside the band is kept with ``confident=False`` (it needs an LLM), as the keyless judges mark
what they cannot tell. Without a calibration every verdict is unsure: nobody has measured the checker.

The calibration travels in the spec (``hf:<path>?threshold=0.62&unsure_low=0.4&unsure_high=0.8``, which
``CheckerCalibration.options`` writes), so the run manifest records it and ``--resume`` rebuilds the judge
the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

#: Share of right decisions a checker's verdicts outside the unsure band reached on the calibration claims.
TARGET = 0.9


class CheckerCalibration(BaseModel):
    """P(unsupported) at or above ``threshold`` is unsupported; inside [unsure_low, unsure_high) it is unsure."""

    threshold: float = Field(ge=0.0, le=1.0)
    unsure_low: float = Field(ge=0.0, le=1.0)
    unsure_high: float = Field(ge=0.0, le=1.0)
    #: Labelled claims it was fitted on (None: given by hand).
    n: int | None = None
    balanced_accuracy: float | None = None
    target: float | None = None

    def unsure(self, p: float) -> bool:
        """Whether a verdict of P(unsupported) = ``p`` lies in the band where the checker was not reliable."""
        return self.unsure_low <= p < self.unsure_high

    def options(self) -> str:
        """The spec options that carry this calibration (``threshold=...&unsure_low=...&unsure_high=...``)."""
        return f"threshold={self.threshold:.4f}&unsure_low={self.unsure_low:.4f}&unsure_high={self.unsure_high:.4f}"


def _balanced_accuracy(flagged: np.ndarray, gold: np.ndarray) -> float:
    pos, neg = gold, ~gold
    tpr = flagged[pos].mean() if pos.any() else 0.0
    tnr = (~flagged[neg]).mean() if neg.any() else 0.0
    return float((tpr + tnr) / 2)


def calibrate(
    p_unsupported: Sequence[float], unsupported: Sequence[bool], *, target: float = TARGET
) -> CheckerCalibration:
    """The threshold of best balanced accuracy over ``p_unsupported`` against the gold ``unsupported`` labels,
    and the unsure band outside which the decisions were right at least ``target`` of the time."""
    p = np.asarray(p_unsupported, dtype=np.float64)
    gold = np.asarray(unsupported, dtype=bool)
    if len(p) != len(gold) or len(p) == 0:
        raise ValueError("calibration needs as many labels as scores, and at least one")
    candidates = np.unique(np.concatenate([p, [0.5]]))
    scored = [(_balanced_accuracy(p >= t, gold), -abs(t - 0.5), t) for t in candidates]
    best, _, threshold = max(scored)
    right = (p >= threshold) == gold
    distance = np.abs(p - threshold)
    margin = 0.0
    for d in np.unique(distance):  # the smallest margin whose outside is right often enough
        outside = distance >= d
        if not outside.any():
            margin = float(max(threshold, 1 - threshold))
            break
        if right[outside].mean() >= target:
            margin = float(d)
            break
    else:
        margin = float(max(threshold, 1 - threshold))
    low, high = max(0.0, threshold - margin), min(1.0, threshold + margin)
    return CheckerCalibration(
        threshold=round(float(threshold), 4),
        unsure_low=round(low, 4),
        unsure_high=round(high, 4),
        n=len(p),
        balanced_accuracy=round(best, 4),
        target=target,
    )
