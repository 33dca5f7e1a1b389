"""Power and sample size of an audit: how many shared samples decide a rise, and what measuring them costs.

An audit decides on the mean of per-sample differences d (current minus baseline) with a
one-sided test at level ``alpha`` against a margin m. With the true mean rise r and the
standard deviation sigma of d, the number of shared samples that reaches a decision with
probability ``power`` is the smallest n whose one-sided one-sample t test of size alpha has
that power at effect |r - m| / sigma (noncentral t; checked against statsmodels' TTestPower).
The same n serves both decisions: flag a rise above the margin, or rule one out (pass).

sigma comes from runs when there are any (the spread of the paired differences, which
already holds the pairing correlation), else from a baseline rate: a per-sample share with
mean p varies at most as a yes/no outcome does, p (1 - p), and two runs with correlation rho
give sigma^2 = s1^2 + s2^2 - 2 rho s1 s2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypeGuard, get_args

import numpy as np
from pydantic import BaseModel, Field
from scipy import optimize, stats

if TYPE_CHECKING:
    from hallumeasure.core.types import Sample
    from hallumeasure.runs.datasets import LabelledSample

#: Largest sample count the planner reports; above it the rise is too small to decide in practice.
MAX_SAMPLES = 10_000_000

Metric = Literal["unsupported_rate", "hallucinated_share"]


def is_metric(name: str) -> TypeGuard[Metric]:
    """Whether ``name`` is a metric the planner knows."""
    return name in get_args(Metric)


def t_power(effect: float, n: int, alpha: float) -> float:
    """Power of the one-sided one-sample t test of size ``alpha`` with ``n`` values at ``effect`` (in SDs)."""
    if n < 2:
        return float("nan")
    df = n - 1
    crit = stats.t.ppf(1.0 - alpha, df)
    return float(stats.nct.sf(crit, df, effect * math.sqrt(n)))


def samples_needed(effect: float, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Smallest n (at least 2) whose one-sided t test reaches ``power`` at ``effect`` SDs; None when out of reach."""
    if not effect > 0 or not math.isfinite(effect):
        return None
    z = float(stats.norm.ppf(1 - alpha) + stats.norm.ppf(power))
    guess = max(2, math.floor((z / effect) ** 2))  # the normal approximation, a lower bound for t
    if guess > MAX_SAMPLES:
        return None
    n = guess
    while t_power(effect, n, alpha) < power:
        n += 1 if n < 1000 else max(1, n // 1000)
        if n > MAX_SAMPLES:
            return None
    # Large steps may overshoot: walk back to the smallest n that still has the power.
    while n > 2 and t_power(effect, n - 1, alpha) >= power:
        n -= 1
    return n


def detectable_effect(n: int, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest effect (in SDs) the one-sided t test with ``n`` values detects with ``power``."""
    if n < 2:
        return None
    return float(optimize.brentq(lambda e: t_power(e, n, alpha) - power, 1e-9, 1e3))


def difference_sd(first: np.ndarray, second: np.ndarray) -> tuple[float | None, float | None, int]:
    """(sd of ``second - first``, correlation of the two, pairs used) over pairs where both are defined."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 2:
        return None, None, int(x.size)
    sd = float(np.std(y - x, ddof=1))
    spread = float(np.std(x) * np.std(y))
    rho = float(np.mean((x - x.mean()) * (y - y.mean())) / spread) if spread > 0 else None
    return sd, rho, int(x.size)


def sd_from_rates(baseline: float, rise: float, correlation: float) -> float:
    """sd of per-sample differences for shares with these means, at their largest spread (yes/no outcomes)."""
    current = min(1.0, max(0.0, baseline + rise))
    s1, s2 = math.sqrt(baseline * (1 - baseline)), math.sqrt(current * (1 - current))
    return math.sqrt(max(s1 * s1 + s2 * s2 - 2 * correlation * s1 * s2, 0.0))


class PlanCost(BaseModel):
    """What measuring the planned samples once costs (one run; an audit measures the current run)."""

    judge: str
    extractor: str
    mode: str
    samples: int
    calls: int
    input_tokens: int
    output_tokens: int
    dollars: float | None = Field(description="None when the judge has no price in the price table.")
    prices_as_of: str
    assumptions: list[str]


class SamplePlan(BaseModel):
    """How many shared samples an audit needs to decide, for one metric."""

    metric: Metric
    source: str = Field(description="Where the spread of the differences came from (runs or a baseline rate).")
    baseline_rate: float
    rise: float = Field(description="The true rise (current minus baseline) the plan is for.")
    margin: float = Field(
        description="The audit's tolerated rise (--max-rate-rise); 0 with --fail-on-any-significant-rise."
    )
    alpha: float
    power: float
    sd_difference: float
    correlation: float | None
    samples_to_flag: int | None = Field(
        description="Shared samples that flag the rise as a regression with "
        "the given power (None when rise <= margin or out of reach)."
    )
    samples_to_pass: int | None = Field(
        description="Shared samples that let an unchanged model (true rise 0) "
        "pass with the given power (None when margin is 0)."
    )
    cost: PlanCost | None = None
    notes: list[str] = []


def plan_samples(
    *,
    metric: Metric,
    baseline_rate: float,
    rise: float,
    margin: float,
    sd: float,
    source: str,
    alpha: float = 0.05,
    power: float = 0.8,
    correlation: float | None = None,
) -> SamplePlan:
    """The sample counts that decide ``rise`` (flag it) and no rise (pass it) against ``margin``."""
    notes = []
    to_flag = samples_needed((rise - margin) / sd, alpha, power) if sd > 0 and rise > margin else None
    to_pass = samples_needed(margin / sd, alpha, power) if sd > 0 and margin > 0 else None
    if rise <= margin:
        notes.append(f"a rise of {rise:g} is within the margin {margin:g}: the audit is meant to pass it, not flag it")
    if sd == 0:
        notes.append(
            "the differences have no spread, so any number of samples decides; measure a baseline run "
            "with more samples for a usable plan"
        )
    return SamplePlan(
        metric=metric,
        source=source,
        baseline_rate=baseline_rate,
        rise=rise,
        margin=margin,
        alpha=alpha,
        power=power,
        sd_difference=round(sd, 6),
        correlation=correlation,
        samples_to_flag=to_flag,
        samples_to_pass=to_pass,
        notes=notes,
    )


def plan_cost(samples: Sequence[Sample | LabelledSample], n: int, *, judge: str, extractor: str, mode: str) -> PlanCost:
    """Price ``n`` samples like ``samples`` (scaled from the dry-run estimate of ``samples``)."""
    from hallumeasure.bench.estimate import estimate_bench, estimate_cost
    from hallumeasure.models.pricing import PRICES_AS_OF, price_for

    est = estimate_bench(samples, mode)
    scale = n / max(est.n_samples, 1)
    dollars = None
    if judge == "offline" and extractor == "offline":
        dollars = 0.0
    else:
        price = price_for(judge)
        if price is not None:
            dollars = round(estimate_cost(est, price) * scale, 2)
    return PlanCost(
        judge=judge,
        extractor=extractor,
        mode=str(mode),
        samples=n,
        calls=round(est.calls * scale),
        input_tokens=round(est.input_tokens * scale),
        output_tokens=round(est.output_tokens * scale),
        dollars=dollars,
        prices_as_of=PRICES_AS_OF,
        assumptions=[f"samples as long as the {est.n_samples} priced ones", *est.assumptions],
    )
