"""A point estimate with its interval, rounded the one way every report stores it."""

from __future__ import annotations

import math

from pydantic import BaseModel

_DIGITS = 6


def rounded(value: float | None) -> float | None:
    """``value`` to 6 digits; None for None, NaN and infinities (an estimate that cannot be computed)."""
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), _DIGITS) + 0.0  # + 0.0 turns -0.0 into 0.0


class Estimate(BaseModel):
    """A point estimate with a confidence interval; any part is None when it cannot be computed."""

    value: float | None
    low: float | None = None
    high: float | None = None

    @classmethod
    def of(cls, value: float | None, low: float | None = None, high: float | None = None) -> Estimate:
        return cls(value=rounded(value), low=rounded(low), high=rounded(high))

    def format(self, digits: int = 3) -> str:
        """``0.250 [0.100, 0.400]``; the value alone when its interval is a point (a zero count has no
        spread) or missing; ``-`` when there is no value. Every view writes an estimate this way
        (:mod:`hallumeasure.report.rates`)."""
        if self.value is None:
            return "-"
        text = f"{self.value:.{digits}f}"
        if self.low is not None and self.high is not None and self.low != self.high:
            text += f" [{self.low:.{digits}f}, {self.high:.{digits}f}]"
        return text
