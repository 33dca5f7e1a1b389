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

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeGuard, get_args

import numpy as np
from pydantic import BaseModel, Field
from scipy import optimize, stats

from hallumeasure.stats.judge_error import JudgeError
from hallumeasure.stats.metric import Metric
from hallumeasure.stats.search import smallest_count

if TYPE_CHECKING:
    from hallumeasure.stats.rate_power import Differences

#: Largest sample count the planner reports; above it the rise is too small to decide in practice.
MAX_SAMPLES = 10_000_000


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
    """How many shared samples an audit needs for each outcome, for one metric, each with its meaning."""

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
    method: str = Field(
        description="How the chances were computed: exact (the share gate), a simulation of the audit's betting "
        "bound (the rate gate), or normal theory (no distribution of differences given)."
    )
    samples_to_flag: int | None = Field(
        description="To flag a rise of R: shared samples at which a true rise of `rise` is flagged as a "
        "regression with the given power (None when rise <= the regression threshold or out of reach)."
    )
    samples_to_pass: int | None = Field(
        description="To pass when unchanged: shared samples at which a model with true rise 0 passes "
        "with the given power (None when margin is 0)."
    )
    chance_to_flag: float | None = Field(
        default=None, description="Chance that the audit flags a true rise of `rise` at samples_to_flag."
    )
    chance_to_pass: float | None = Field(
        default=None, description="Chance that the audit passes an unchanged model at samples_to_pass."
    )
    replicates: int | None = Field(
        default=None, description="Simulated audits behind each chance (None when they are exact)."
    )
    samples_to_pass_at_rise: int | None = Field(
        default=None,
        description="To pass a rise of R within the margin: shared samples at which a true rise of `rise` "
        "(< margin) passes with the given power.",
    )
    pass_chance_at_rise: float | None = Field(
        default=None,
        description="Chance that a true rise of `rise` passes at samples_to_pass (the unchanged count).",
    )
    pass_chance_at_margin: float | None = Field(
        default=None,
        description="Chance that a true rise equal to the margin passes at the largest planned count "
        "(the audit promises at most alpha).",
    )
    judge_error: JudgeError | None = Field(
        default=None, description="The judge's error the counts allow for (None: planned for an error-free judge)."
    )
    samples_to_flag_error_free: int | None = Field(
        default=None, description="samples_to_flag for an error-free judge (set when the judge's error counts)."
    )
    samples_to_pass_error_free: int | None = Field(
        default=None, description="samples_to_pass for an error-free judge (set when the judge's error counts)."
    )
    cost: PlanCost | None = None
    notes: list[str] = []

    @property
    def largest_count(self) -> int | None:
        """The largest of the planned counts (what the cost is for); None when none is in reach."""
        counts = (self.samples_to_flag, self.samples_to_pass, self.samples_to_pass_at_rise)
        return max([n for n in counts if n is not None], default=None)


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
    exact: bool = True,
    differences: Callable[[float], Differences] | None = None,
    only: Literal["regression", "pass"] | None = None,
) -> SamplePlan:
    """The sample counts that flag ``rise``, pass an unchanged model, and pass ``rise`` when within ``margin``.

    The hallucinated share is planned exactly (``share_outcomes``, the audit's own decision rule,
    with the pairing given by ``correlation``, 0 when unknown) unless ``exact`` is False. The rate
    is planned by simulating the audit's betting bound on ``differences(r)``, the per-sample
    differences at a true rise r (``hallumeasure.stats.rate_power``); without it, with the
    normal-theory power of a one-sided t test at ``sd`` (which the betting bound does not reach).
    ``only`` plans one outcome and skips the rest (the judge-error plans of ``report/plan.py``).
    """
    notes = []
    above = margin
    flag_wanted, pass_wanted = only != "pass", only != "regression"
    chance_flag: float | None = None
    chance_pass: float | None = None
    replicates: int | None = None
    if metric == "hallucinated_share" and exact:
        method = "exact: the share gate's outcome probabilities summed over the discordant counts"
        rho = 0.0 if correlation is None else correlation
        current = min(1.0, baseline_rate + rise)
        at_rise = discordant_shares(baseline_rate, current, rho)
        unchanged = discordant_shares(baseline_rate, baseline_rate, rho)
        at_margin = discordant_shares(baseline_rate, min(1.0, baseline_rate + margin), rho)

        def samples(outcome: Literal["pass", "regression"], shares: tuple[float, float]) -> int | None:
            return share_samples_for(outcome, *shares, margin=margin, above=above, alpha=alpha, power=power)

        to_flag = samples("regression", at_rise) if rise > above and flag_wanted else None
        to_pass = samples("pass", unchanged) if margin > 0 and pass_wanted else None
        to_pass_rise = samples("pass", at_rise) if 0 < rise < margin and only is None else None

        def pass_chance(shares: tuple[float, float], n: int) -> float:
            return share_outcomes(n, *shares, margin=margin, above=above, alpha=alpha).p_pass

        if to_flag is not None:
            chance_flag = share_outcomes(to_flag, *at_rise, margin=margin, above=above, alpha=alpha).p_regression
        if to_pass is not None:
            chance_pass = pass_chance(unchanged, to_pass)

    elif differences is not None:
        from hallumeasure.stats.rate_power import REPLICATES, SEARCH_REPLICATES, rate_chances, rate_count

        method = (
            f"simulation: the audit's own betting bound, the count searched on {SEARCH_REPLICATES} simulated "
            f"audits per step and each chance from {REPLICATES} fresh ones (within about 0.02)"
        )
        replicates = REPLICATES
        at_rise_d, unchanged_d, at_margin_d = differences(rise), differences(0.0), differences(margin)

        def count(outcome: Literal["pass", "regression"], d: Differences) -> tuple[int | None, float | None]:
            return rate_count(outcome, d, margin=margin, above=above, alpha=alpha, power=power)

        to_flag, chance_flag = count("regression", at_rise_d) if rise > above and flag_wanted else (None, None)
        to_pass, chance_pass = count("pass", unchanged_d) if margin > 0 and pass_wanted else (None, None)
        to_pass_rise = count("pass", at_rise_d)[0] if 0 < rise < margin and only is None else None
        at_rise, at_margin = (baseline_rate, rise), (baseline_rate, margin)
        by_rise = {rise: at_rise_d, margin: at_margin_d}

        @functools.cache  # a rise equal to the margin asks for the same chance twice
        def pass_chance(shares: tuple[float, float], n: int) -> float:
            return rate_chances(by_rise[shares[1]], n, margin=margin, above=above, alpha=alpha)[0]

    else:
        method = "normal theory: one-sided t test at the given spread (the audit's betting bound needs more)"
        to_flag = samples_needed((rise - margin) / sd, alpha, power) if sd > 0 and rise > margin else None
        to_pass = samples_needed(margin / sd, alpha, power) if sd > 0 and margin > 0 else None
        to_pass_rise = samples_needed((margin - rise) / sd, alpha, power) if sd > 0 and 0 < rise < margin else None
        at_rise, at_margin = (baseline_rate, rise), (baseline_rate, margin)

        def pass_chance(shares: tuple[float, float], n: int) -> float:
            return t_power((margin - shares[1]) / sd, n, alpha) if sd > 0 else float("nan")

    whole = only is None
    chance_at_rise = round(pass_chance(at_rise, to_pass), 4) if whole and to_pass is not None and rise > 0 else None
    largest = max([n for n in (to_flag, to_pass, to_pass_rise) if n is not None], default=None)
    chance_at_margin = (
        round(pass_chance(at_margin, largest), 4) if whole and largest is not None and margin > 0 else None
    )
    if 0 < rise < margin and to_pass is not None:
        notes.append(
            f"a true rise of {rise:g} is within the margin {margin:g}, so the audit should pass it, but less often "
            f"than an unchanged model: at the {to_pass:,} samples that pass an unchanged model it passes with "
            f"chance {chance_at_rise:.3f}; "
            + (
                f"{to_pass_rise:,} samples pass it with {power:.0%} chance"
                if to_pass_rise
                else "no count in reach passes it"
            )
        )
    elif rise == margin:
        notes.append(f"a true rise equal to the margin {margin:g} passes with chance at most {alpha:g} at any n")
    if sd == 0 and not (metric == "hallucinated_share" and exact) and differences is None:
        notes.append(
            "the differences have no spread, so this plan cannot size the audit; measure a baseline run "
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
        method=method,
        samples_to_flag=to_flag,
        samples_to_pass=to_pass,
        chance_to_flag=None if chance_flag is None else round(chance_flag, 4),
        chance_to_pass=None if chance_pass is None else round(chance_pass, 4),
        replicates=replicates,
        samples_to_pass_at_rise=to_pass_rise,
        pass_chance_at_rise=chance_at_rise,
        pass_chance_at_margin=chance_at_margin,
        notes=notes,
    )


# --- exact operating characteristics of the hallucinated-share gate --------------------------------
#
# For paired yes/no flags the audit's decision depends only on the two discordant counts: b
# responses flagged only in the baseline, c only in the current run (see
# ``hallumeasure.stats.intervals.discordant_bounds``). (b, c) is trinomial, so the chance of each
# outcome is a finite sum, computed here exactly rather than simulated.


class ShareOutcomes(BaseModel):
    """Exact chances of the share gate's three outcomes at ``n`` shared samples."""

    n: int
    p_pass: float
    p_regression: float
    p_inconclusive: float


def discordant_shares(baseline: float, current: float, correlation: float) -> tuple[float, float]:
    """(flagged only in the baseline, flagged only in the current) shares of two yes/no outcomes.

    The correlation is clipped to what two outcomes with these means can have.
    """
    s = math.sqrt(baseline * (1 - baseline) * current * (1 - current))
    both = baseline * current + correlation * s
    both = min(max(both, max(0.0, baseline + current - 1.0)), min(baseline, current))
    return max(baseline - both, 0.0), max(current - both, 0.0)


@functools.lru_cache(maxsize=64)
def _exact_bounds(n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson upper and lower bounds of k of n for every k, as ``exact_upper`` / ``exact_lower``."""
    from hallumeasure.stats.intervals import exact_lower, exact_upper

    k = np.arange(n + 1)
    with np.errstate(all="ignore"):
        upper = np.where(k >= n, 1.0, stats.beta.ppf(1.0 - alpha, k + 1, np.maximum(n - k, 1)))
        lower = np.where(k <= 0, 0.0, stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1))
    # the vectorised values are the scalar ones; checked on the ends so a scipy change cannot split them
    assert upper[0] == exact_upper(0, n, alpha) and lower[n] == exact_lower(n, n, alpha)
    upper.setflags(write=False)
    lower.setflags(write=False)
    return upper, lower


#: From this many pairs on, ``share_outcomes`` sums over the likely counts only (``_likely``).
WINDOW_FROM = 20_000
#: The chance a count outside ``_likely``'s range may hold, on each side.
_TAIL = 1e-20
#: Counts whose exact bounds are computed (and cached) together.
_BLOCK = 4096


def _likely(n: int, p: float) -> tuple[int, int]:
    """(low, high): counts of Binomial(n, p) outside which each side holds less than ``_TAIL`` of the chance."""
    if n <= 0 or p <= 0.0:
        return 0, 0
    if p >= 1.0:
        return n, n
    # the upper end as the lower end of the failures: scipy's isf gives n for tails this small
    low, high = stats.binom.ppf(_TAIL, n, p), n - stats.binom.ppf(_TAIL, n, 1.0 - p)
    return max(int(low) - 1, 0), min(int(high) + 1, n)


@functools.lru_cache(maxsize=1024)
def _bounds_block(n: int, alpha: float, block: int) -> tuple[np.ndarray, np.ndarray]:
    """``_exact_bounds(n, alpha)`` for the counts of one block of ``_BLOCK``, computed the same way."""
    k = np.arange(block * _BLOCK, min((block + 1) * _BLOCK, n + 1))
    with np.errstate(all="ignore"):
        upper = np.where(k >= n, 1.0, stats.beta.ppf(1.0 - alpha, k + 1, np.maximum(n - k, 1)))
        lower = np.where(k <= 0, 0.0, stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1))
    return upper, lower


def _bounds_between(n: int, alpha: float, low: int, high: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact upper and lower bounds of k of n for k from ``low`` to ``high``, from cached blocks."""
    blocks = [_bounds_block(n, alpha, b) for b in range(low // _BLOCK, high // _BLOCK + 1)]
    start = (low // _BLOCK) * _BLOCK
    upper = np.concatenate([u for u, _ in blocks])[low - start : high - start + 1]
    lower = np.concatenate([lo for _, lo in blocks])[low - start : high - start + 1]
    return upper, lower


def share_outcomes(
    n: int, first_only: float, second_only: float, *, margin: float, above: float, alpha: float
) -> ShareOutcomes:
    """Exact P(pass), P(regression), P(inconclusive) of the share gate at n pairs with these discordant shares.

    Pass: upper bound <= margin; regression: lower bound > ``above`` (the margin, or 0 when any
    significant rise fails); the bounds are those of ``discordant_bounds`` at level 1 - alpha. From
    ``WINDOW_FROM`` pairs on, the sums leave out counts that hold less than 1e-20 of the chance.
    """
    # c given b is binomial over the n - b pairs not flagged only in the baseline.
    q = second_only / (1.0 - first_only) if first_only < 1.0 else 0.0
    q = min(max(q, 0.0), 1.0)
    if n < WINDOW_FROM:
        counts = np.arange(n + 1)
        upper, lower = _exact_bounds(n, alpha / 2.0)  # both rise with the count
        upper_c, lower_c, upper_b, lower_b, c_first = upper, lower, upper, lower, 0
    else:
        # Only the counts that hold all but _TAIL of each count's chance: a count outside them changes a
        # chance by less than _TAIL, and the bounds of n + 1 counts would take seconds at 10^6 pairs.
        b_low, b_high = _likely(n, first_only)
        c_first, c_last = _likely(n - b_high, q)[0], _likely(n - b_low, q)[1]
        counts = np.arange(b_low, b_high + 1)
        upper_b, lower_b = _bounds_between(n, alpha / 2.0, b_low, b_high)
        upper_c, lower_c = _bounds_between(n, alpha / 2.0, c_first, c_last)
    p_b = stats.binom.pmf(counts, n, first_only)
    rest = n - counts
    # pass when upper_c[c] - lower_b[b] <= margin: c up to the last c whose bound fits (bounds rise with c)
    last_pass = np.searchsorted(upper_c, margin + lower_b, side="right") - 1 + c_first
    last_pass = np.minimum(last_pass, rest)
    p_pass = float(np.sum(p_b * np.where(last_pass >= 0, stats.binom.cdf(last_pass, rest, q), 0.0)))
    # regression when lower_c[c] - upper_b[b] > above: c from the first c whose bound clears it
    first_reg = np.searchsorted(lower_c, above + upper_b, side="right") + c_first
    p_reg = float(np.sum(p_b * np.where(first_reg <= rest, stats.binom.sf(first_reg - 1, rest, q), 0.0)))
    p_pass, p_reg = min(max(p_pass, 0.0), 1.0), min(max(p_reg, 0.0), 1.0)
    return ShareOutcomes(n=n, p_pass=p_pass, p_regression=p_reg, p_inconclusive=max(0.0, 1.0 - p_pass - p_reg))


#: Pairing correlations over which the worst case of a promise is taken (0 = independent flags).
PAIRINGS = tuple(round(x, 2) for x in np.linspace(-1.0, 1.0, 41))


def share_samples_for(
    outcome: Literal["pass", "regression"],
    first_only: float,
    second_only: float,
    *,
    margin: float,
    above: float,
    alpha: float,
    power: float,
    limit: int = 200_000,
) -> int | None:
    """Smallest n at which the share gate reaches ``outcome`` with probability ``power`` (None above ``limit``).

    The chance rises with n apart from small saw-teeth of discrete data, so a doubling search and a
    bisection find an n at which it reaches ``power`` while n - 1 falls short.
    """

    def chance(n: int) -> float:
        o = share_outcomes(n, first_only, second_only, margin=margin, above=above, alpha=alpha)
        return o.p_pass if outcome == "pass" else o.p_regression

    # the chance rises with n apart from small saw-teeth
    return smallest_count(lambda n: chance(n) >= power, start=8, limit=limit)


def share_detectable_rise(
    n: int, first_only: float, *, margin: float, above: float, alpha: float, power: float
) -> float | None:
    """Smallest true rise of the share that n pairs flag as a regression with probability ``power``.

    The rise adds responses flagged only in the current run to the observed ``first_only`` share
    (responses flagged only in the baseline). None when even the largest rise is not flagged so often.
    """

    def chance(rise: float) -> float:
        return share_outcomes(n, first_only, first_only + rise, margin=margin, above=above, alpha=alpha).p_regression

    top = 1.0 - 2.0 * first_only
    if top <= above or chance(top) < power:
        return None
    low, high = above, top
    for _ in range(30):
        mid = (low + high) / 2.0
        if chance(mid) >= power:
            high = mid
        else:
            low = mid
    return high
