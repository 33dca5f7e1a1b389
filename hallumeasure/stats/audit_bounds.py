"""How one gated metric is decided: its bounds, its outcome, and what sample size would decide it.

The bounds hold at their level for every sample size and every true rate (no asymptotics), so
the audit's promises hold where production audits live: rare hallucinations, few differing
pairs. Paired yes/no flags (the hallucinated share) use exact Clopper-Pearson bounds of the two
discordant shares; per-response rates (the unsupported rate, which sums several claims per
response) use a betting bound of the mean difference, valid for any values in [-1, 1].
Independent groups bound each run at alpha / 2 and combine. ``benchmarks/audit_operating.py``
computes the share gate's outcome probabilities exactly and simulates the rate gate.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, Field
from scipy import stats

from hallumeasure.stats.intervals import (
    BettingWealth,
    bet_orders,
    betting_bounds,
    betting_rejects,
    discordant_bounds,
    independent_exact_bounds,
    wealth_root,
)
from hallumeasure.stats.judge_error import JudgeError, changed_share_upper, true_rise_upper
from hallumeasure.stats.power import (
    detectable_effect,
    samples_needed,
    share_detectable_rise,
    share_samples_for,
)
from hallumeasure.stats.search import smallest_count

Outcome = Literal["pass", "regression", "inconclusive"]
#: Largest sample count the audit looks for when it says how many samples would decide.
_LIMIT = 100_000

METHODS = {
    (True, False): "betting bound of the mean per-sample difference (Waudby-Smith and Ramdas; valid at every n)",
    (True, True): "exact (Clopper-Pearson) bounds of the two discordant shares, combined (valid at every n)",
    (False, False): "betting bounds of each run's mean at alpha / 2, combined (independent groups)",
    (False, True): "exact (Clopper-Pearson) bounds of each run's share at alpha / 2, combined (independent groups)",
}


def paired_binary_sd(base: np.ndarray, cur: np.ndarray) -> float:
    """sd of 0/1 pair differences, from discordant shares with half a pseudo-pair each, so it is never 0."""
    n = base.size
    p10 = (np.sum((base > 0.5) & (cur < 0.5)) + 0.5) / (n + 1)
    p01 = (np.sum((base < 0.5) & (cur > 0.5)) + 0.5) / (n + 1)
    return float(np.sqrt(max(p10 + p01 - (p01 - p10) ** 2, 0.0)))


def rise_bounds(
    base: np.ndarray, cur: np.ndarray, *, paired: bool, binary: bool, alpha: float
) -> tuple[float | None, float | None, float | None]:
    """(difference, lower, upper) of ``cur - base``; each bound one-sided at level 1 - alpha, valid at every n."""
    if paired and binary:
        b, c = int(np.sum((base > 0.5) & (cur < 0.5))), int(np.sum((base < 0.5) & (cur > 0.5)))
        return discordant_bounds(b, c, int(base.size), alpha)
    if paired:
        return betting_bounds(cur - base, alpha)
    if binary:
        return independent_exact_bounds(int(np.sum(base > 0.5)), base.size, int(np.sum(cur > 0.5)), cur.size, alpha)
    if base.size == 0 or cur.size == 0:
        return None, None, None
    _, cur_low, cur_high = betting_bounds(cur, alpha / 2)
    _, base_low, base_high = betting_bounds(base, alpha / 2)
    assert cur_low is not None and cur_high is not None and base_low is not None and base_high is not None
    return float(cur.mean() - base.mean()), cur_low - base_high, cur_high - base_low


def rise_outcome(
    base: np.ndarray,
    cur: np.ndarray,
    bounds: tuple[float | None, float | None, float | None],
    *,
    paired: bool,
    binary: bool,
    margin: float,
    above: float,
    alpha: float,
) -> Outcome:
    """pass, regression or inconclusive from the bounds (a regression wins: it is checked first)."""
    if shows_rise(base, cur, bounds, paired=paired, binary=binary, above=above, alpha=alpha):
        return "regression"
    return (
        "pass"
        if rules_out(base, cur, bounds, paired=paired, binary=binary, margin=margin, alpha=alpha)
        else "inconclusive"
    )


def shows_rise(
    base: np.ndarray,
    cur: np.ndarray,
    bounds: tuple[float | None, float | None, float | None],
    *,
    paired: bool,
    binary: bool,
    above: float,
    alpha: float,
) -> bool:
    """Whether the rise is shown above ``above``: the lower bound of ``bounds`` (level 1 - alpha) is above it."""
    if paired and not binary and base.size:
        # The bet itself decides (the shown bounds are its bisection, equal up to 1e-12).
        return betting_rejects(-(cur - base), -above, alpha)
    low = bounds[1]
    return low is not None and low > above


def rules_out(
    base: np.ndarray,
    cur: np.ndarray,
    bounds: tuple[float | None, float | None, float | None],
    *,
    paired: bool,
    binary: bool,
    margin: float,
    alpha: float,
) -> bool:
    """Whether a rise above ``margin`` is ruled out: the upper bound of ``bounds`` (level 1 - alpha) is at or below."""
    if paired and not binary and base.size:
        return betting_rejects(cur - base, margin, alpha)
    high = bounds[2]
    return high is not None and high <= margin


class JudgedBounds(BaseModel):
    """What a gate's outcome rests on once the judge's error is counted (``hallumeasure.stats.judge_error``)."""

    regression_above_labels: float = Field(
        description="A rise of the judge's labels above this is a true rise above the regression threshold."
    )
    pass_margin_labels: float = Field(description="The labels' upper bound must be at or below this to pass.")
    pass_alpha: float = Field(description="Level of the bounds a pass rests on (alpha / 2 unless the judge is exact).")
    true_rise_upper: float | None = Field(description="Upper bound of the true rise: the smaller of the two routes.")
    changed_share_upper: float | None = Field(
        description="Upper bound of the share of pairs whose response changed (a judge-free bound of the rise)."
    )
    passed_by: Literal["labels", "changed_responses", "none"]


def judged_outcome(
    base: np.ndarray,
    cur: np.ndarray,
    bounds: tuple[float | None, float | None, float | None],
    *,
    paired: bool,
    binary: bool,
    margin: float,
    above: float,
    alpha: float,
    judge: JudgeError,
    changed: int | None = None,
) -> tuple[Outcome, JudgedBounds]:
    """pass, regression or inconclusive for a judge with error ``judge`` (``bounds`` at level 1 - alpha).

    Regression: the labels' lower bound (level 1 - alpha) above ``judge.youden_high * above``, whatever
    share of the responses the judge was unsure of. Pass: for an exact judge the labels' upper bound at or
    below the margin; otherwise either the labels' upper bound at alpha / 2 at or below
    ``judge.youden_low * margin``, or (paired, ``changed`` responses of n) the exact upper bound of the
    changed share at alpha / 2 at or below the margin.
    """
    above_l = above * judge.youden_high
    if judge.error_free:
        plain = rise_outcome(base, cur, bounds, paired=paired, binary=binary, margin=margin, above=above, alpha=alpha)
        return plain, JudgedBounds(
            regression_above_labels=above,
            pass_margin_labels=margin,
            pass_alpha=alpha,
            true_rise_upper=bounds[2],
            changed_share_upper=None,
            passed_by="labels" if plain == "pass" else "none",
        )
    half = alpha / 2
    margin_l = margin * judge.youden_low
    shows = shows_rise(base, cur, bounds, paired=paired, binary=binary, above=above_l, alpha=alpha)
    half_bounds = rise_bounds(base, cur, paired=paired, binary=binary, alpha=half)
    by_labels = margin_l > 0 and rules_out(
        base, cur, half_bounds, paired=paired, binary=binary, margin=margin_l, alpha=half
    )
    upper = true_rise_upper(half_bounds[2], judge.youden_low)
    changed_upper = changed_share_upper(changed, int(base.size), half) if paired and changed is not None else None
    by_changed = changed_upper is not None and changed_upper <= margin
    tops = [x for x in (upper, changed_upper) if x is not None]
    passed: Literal["labels", "changed_responses", "none"] = (
        "labels" if by_labels else "changed_responses" if by_changed else "none"
    )
    outcome: Outcome = "regression" if shows else "pass" if passed != "none" else "inconclusive"
    return outcome, JudgedBounds(
        regression_above_labels=above_l,
        pass_margin_labels=margin_l,
        pass_alpha=half,
        true_rise_upper=min(tops) if tops else None,
        changed_share_upper=changed_upper,
        passed_by=passed if outcome == "pass" else "none",
    )


def planning(
    base: np.ndarray,
    cur: np.ndarray,
    diff: float,
    sd: float | None,
    *,
    paired: bool,
    binary: bool,
    margin: float,
    above: float,
    alpha: float,
    power: float,
) -> tuple[float | None, int | None]:
    """(minimum detectable rise, samples that would decide if the truth is what was observed).

    Exact for the paired share (``hallumeasure.stats.power.share_outcomes`` at the observed
    discordant shares). For the paired rate, the betting bound itself, run on the observed
    differences repeated to n values with their mean moved against the decision by z(power)
    standard errors (an approximation of its power). A normal-theory t estimate for independent
    groups, which the finite-sample bounds need more samples than.
    """
    n = int(min(base.size, cur.size))
    common = {"margin": margin, "above": above, "alpha": alpha, "power": power}
    if paired and binary:
        first_only = float(np.mean((base > 0.5) & (cur < 0.5)))
        second_only = float(np.mean((base < 0.5) & (cur > 0.5)))
        mdr = share_detectable_rise(n, first_only, **common)
        if diff > above:
            needed = share_samples_for("regression", first_only, second_only, limit=_LIMIT, **common)
        elif diff < margin:
            needed = share_samples_for("pass", first_only, second_only, limit=_LIMIT, **common)
        else:
            needed = None
        return mdr, needed
    if paired:
        d = cur - base
        return _bet_detectable(d, n, above, alpha, power), _bet_samples(d, diff, margin, above, alpha, power)
    effect = detectable_effect(n, alpha, power)
    mdr = above + effect * sd if effect is not None and sd else None
    gap = diff - above if diff > above else (margin - diff if diff < margin else 0.0)
    needed = samples_needed(gap / sd, alpha, power) if sd and gap > 0 else None
    return mdr, needed


def _planned(d: np.ndarray, n: int, mean: float, shift: float) -> np.ndarray:
    """n differences shaped like ``d`` (its deviations, repeated), with mean ``mean + shift``, kept in [-1, 1]."""
    shape = np.resize(d - d.mean(), n)
    return np.clip(shape + mean + shift, -1.0, 1.0)


def _bet_samples(d: np.ndarray, diff: float, margin: float, above: float, alpha: float, power: float) -> int | None:
    """Shared samples at which the betting bound decides with about ``power`` if the truth is what was observed.

    The observed differences are repeated to n values and their mean moved against the decision
    by z(power) standard errors, so the decision at n stands for that quantile of the mean.
    """
    if margin <= diff <= above:
        return None
    z = float(stats.norm.ppf(power))
    sd = float(d.std())

    def decides(n: int) -> bool:
        if diff > above:
            return betting_rejects(-_planned(d, n, diff, -z * sd / np.sqrt(n)), -above, alpha)
        return betting_rejects(_planned(d, n, diff, z * sd / np.sqrt(n)), margin, alpha)

    return smallest_count(decides, start=2, limit=_LIMIT)


def _bet_detectable(d: np.ndarray, n: int, above: float, alpha: float, power: float) -> float | None:
    """Smallest true rise that n differences shaped like ``d`` show above ``above`` with about ``power``
    (to within 1e-9, where the bet's log wealth reaches log(1 / alpha))."""
    z = float(stats.norm.ppf(power))
    shift = -z * float(d.std()) / np.sqrt(n)
    shape = np.resize(d - d.mean(), n)
    ordered = [shape[order] for order in bet_orders(n, 0)]  # put in order once: each rise only moves and clips

    def log_wealth(rise: float) -> float:
        planned = [-np.clip(x + rise + shift, -1.0, 1.0) for x in ordered]  # as _planned(d, n, rise, shift)
        return BettingWealth.of_ordered(planned, alpha).log_wealth(-above)

    goal = 1.0 / alpha
    if log_wealth(1.0) < np.log(goal):
        return None
    if log_wealth(above) >= np.log(goal):
        return above + (1.0 - above) / 2**30  # where a bisection from [above, 1] ends
    spread = max(float(d.std()), 1e-3) / np.sqrt(n)
    guess = above + (float(stats.norm.ppf(1 - alpha)) + z) * spread
    return wealth_root(log_wealth, goal, above, 1.0, guess=guess, step=spread, xtol=1e-10)
