"""What a judge's own errors do to an audit's difference, and the bounds that account for them.

A judge that errs the same way in both runs (sensitivity ``se`` and specificity ``sp`` the same for the
baseline's and the current run's responses) sees a share p as ``(1 - sp) + (se + sp - 1) p``. The
difference between two runs it measures is therefore the true difference times Youden's
``J = se + sp - 1``, which is at most 1: the judge shrinks a real change, never grows it. So

* a rise shown on the judge's labels is a true rise at least as large: a regression read from the labels
  needs no correction (and with ``J <= j_high`` a labelled rise above ``j_high * margin`` is a true rise
  above the margin);
* a pass needs the opposite: the labels' upper bound U says the true rise is at most ``U / J``, so the
  audit passes only when ``U <= j_low * margin``, with ``j_low`` the smallest J the judge can have.

Pairs whose two responses are the same text have a true difference of exactly 0 whatever the judge says.
The share of pairs whose response changed bounds the true rise on its own (each changed pair moves the
mean by at most 1 / n), with no judge in it. When the judge is not error-free the audit passes on either
bound, each at ``alpha / 2``, so a false pass stays at most alpha (Bonferroni).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hallumeasure.stats.intervals import exact_lower, exact_upper
from hallumeasure.stats.search import smallest_count

#: Where a judge's error figures came from.
ErrorSource = Literal["stated", "calibrated", "published", "scripted", "assumed"]


class JudgeError(BaseModel):
    """The judge's Youden index J = sensitivity + specificity - 1, as a range the audit relies on."""

    model_config = {"frozen": True}

    youden_low: float = Field(ge=0.0, le=1.0, description="Smallest J the judge may have (the pass rule uses it).")
    youden_high: float = Field(
        ge=0.0, le=1.0, description="Largest J the judge may have (a labelled rise above youden_high x margin flags)."
    )
    source: ErrorSource = Field(description="stated by the user, from calibrate labels, published, scripted, assumed.")
    detail: str = Field(default="", description="Where the figures come from, in words.")

    @property
    def error_free(self) -> bool:
        return self.youden_low >= 1.0

    @classmethod
    def exact(cls, sensitivity: float, specificity: float, source: ErrorSource, detail: str = "") -> JudgeError:
        """A judge whose sensitivity and specificity are known (stated, or a published figure taken as is)."""
        j = min(max(sensitivity + specificity - 1.0, 0.0), 1.0)
        return cls(youden_low=j, youden_high=j, source=source, detail=detail)

    @classmethod
    def error_free_judge(cls, source: ErrorSource, detail: str) -> JudgeError:
        return cls(youden_low=1.0, youden_high=1.0, source=source, detail=detail)


def youden_bounds(
    true_positives: int, positives: int, true_negatives: int, negatives: int, alpha: float
) -> tuple[float, float]:
    """(low, high) of J from labelled counts: exact one-sided bounds of sensitivity and specificity at alpha / 2 each.

    Both bounds of J hold together with probability at least 1 - alpha per side. No labelled positive
    (or negative) leaves that rate anywhere in [0, 1].
    """
    se_low = exact_lower(true_positives, positives, alpha / 2) if positives else 0.0
    sp_low = exact_lower(true_negatives, negatives, alpha / 2) if negatives else 0.0
    se_high = exact_upper(true_positives, positives, alpha / 2) if positives else 1.0
    sp_high = exact_upper(true_negatives, negatives, alpha / 2) if negatives else 1.0
    return max(se_low + sp_low - 1.0, 0.0), min(max(se_high + sp_high - 1.0, 0.0), 1.0)


def changed_share_upper(changed: int, n: int, alpha: float) -> float:
    """One-sided (1 - alpha) exact upper bound of the share of pairs whose response changed: a judge-free bound
    of the true rise (an unchanged pair's true difference is 0, a changed one's at most 1)."""
    return exact_upper(changed, n, alpha) if n else 1.0


def true_rise_upper(labels_upper: float | None, j_low: float) -> float | None:
    """The true rise's upper bound from the labels' upper bound: U / J for a rise, U as is for a fall."""
    if labels_upper is None:
        return None
    if labels_upper <= 0:
        return labels_upper
    return labels_upper / j_low if j_low > 0 else None


def changed_samples_for(share: float, margin: float, alpha: float, limit: int = 1_000_000) -> int | None:
    """Pairs at which ``share`` changed responses bound the rise at or below ``margin`` (the judge-free route),
    if the share stays what it is; None when it never does (``share`` at or above the margin)."""
    if share >= margin:
        return None

    def holds(n: int) -> bool:
        return changed_share_upper(round(share * n), n, alpha) <= margin

    return smallest_count(holds, start=8, limit=limit)
