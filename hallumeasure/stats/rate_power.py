"""Operating characteristics of the rate gate: how often its betting bound passes or flags at n shared samples.

The audit decides the mean unsupported rate with a betting test (``hallumeasure.stats.intervals``:
``betting_rejects``, averaged over ``BETTING_ORDERS`` fixed orders of the values). Its power has
no closed form, so it is simulated here with the audit's own decision rule, vectorised over
replicates: the same wealth, the same orders, the same caps, so a replicate passes or flags
exactly when ``decide_rise`` would (``tests/report/test_rate_power.py`` holds them equal).

The per-sample differences d (current minus baseline, in [-1, 1]) are drawn from a finite
distribution (``Differences``): the discordant yes/no outcomes of two shares (the worst spread a
rate with that mean can have) or the observed values of measured runs. Replicates use common
random numbers: replicate i at n samples is the first n draws of one stream, so the simulated
chance rises with n nearly monotonically and a bisection on n is stable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import stats

from hallumeasure.stats.intervals import BETTING_ORDERS, bet_orders

#: Simulated audits behind each printed chance (Monte Carlo sd about 0.02 at 80%): enough to tell 80% from 70%.
REPLICATES = 400
#: Simulated audits per count while searching for it: half the cost per step; the printed chance is fresh.
SEARCH_REPLICATES = 200
#: Largest count the simulation searches; beyond it the rise is too small to decide in practice.
SIM_LIMIT = 60_000
#: Matrix cells (replicates x samples) of one row block: five buffers of it stay within a core's cache.
_BLOCK_CELLS = 50_000


@dataclass(frozen=True)
class Differences:
    """A finite distribution of per-sample differences in [-1, 1]: its values and their probabilities."""

    values: np.ndarray
    probs: np.ndarray
    cdf: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        p = np.asarray(self.probs, dtype=float)
        object.__setattr__(self, "values", np.clip(np.asarray(self.values, dtype=float), -1.0, 1.0))
        object.__setattr__(self, "probs", p / p.sum())
        object.__setattr__(self, "cdf", np.cumsum(p / p.sum()))

    @classmethod
    def discordant(cls, first_only: float, second_only: float) -> Differences:
        """Differences of paired yes/no outcomes: -1 with chance ``first_only``, +1 with ``second_only``."""
        return cls(
            np.array([-1.0, 0.0, 1.0]), np.array([first_only, max(1.0 - first_only - second_only, 0.0), second_only])
        )

    @classmethod
    def observed(cls, values: np.ndarray) -> Differences:
        """The observed differences, each equally likely (a bootstrap of a measured run)."""
        x = np.asarray(values, dtype=float)
        x = x[np.isfinite(x)]
        return cls(x if x.size else np.zeros(1), np.ones(max(x.size, 1)))

    @property
    def mean(self) -> float:
        return float(np.sum(self.values * self.probs))

    @property
    def sd(self) -> float:
        return float(np.sqrt(max(np.sum(self.probs * (self.values - self.mean) ** 2), 0.0)))

    def draw(self, uniforms: np.ndarray) -> np.ndarray:
        """Differences from uniforms in [0, 1) (inverse transform, so equal uniforms give equal draws)."""
        return self.values[np.minimum(np.searchsorted(self.cdf, uniforms, side="right"), self.values.size - 1)]


def bet_decisions(d: np.ndarray, *, margin: float, above: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(passes, flags) of the rate gate for each row of ``d`` (replicates x n differences).

    Row by row the same as ``betting_rejects(d, margin, alpha)`` and ``betting_rejects(-d, -above, alpha)``
    (``decide_rise``'s rule for paired rates): the two bets share the running mean and variance.
    """
    rows, n = d.shape
    if n == 0:
        return np.zeros(rows, dtype=bool), np.zeros(rows, dtype=bool)
    wealth_pass, wealth_flag = _wealths(d, bet_orders(n, 0), margin, above, alpha)
    goal = BETTING_ORDERS / alpha
    if margin >= 1.0:
        return np.ones(rows, dtype=bool), wealth_flag >= goal
    return wealth_pass >= goal, wealth_flag >= goal


def _wealths(
    d: np.ndarray, orders: np.ndarray, margin: float, above: float, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Summed wealth over ``orders`` of the pass bet and the flag bet, one of each per row of ``d``.

    Rows go through in small blocks with buffers made once: the work is a dozen passes over each
    block per order, and a block that stays in the cache makes them about twice as fast as whole arrays.
    """
    rows, n = d.shape
    seen = np.arange(1, n + 1, dtype=float)
    # the bet is sqrt(2 log(1 / alpha) / (n var_before)) with var_before = cumulative var / seen
    scale = seen * (2.0 * math.log(1.0 / alpha) / n)
    # pass: a bet that the mean is below the margin; flag: that the mean of -d is below -above.
    # The caps keep every factor at 0.01 or more, so its log needs no guard.
    cap_pass = 0.99 / (1.0 - margin) if margin < 1.0 else np.inf
    cap_flag = 0.99 / (1.0 + above)
    wealth_pass, wealth_flag = np.zeros(rows), np.zeros(rows)
    size = max(1, min(rows, _BLOCK_CELLS // n))
    x, mean, var, bet, factors = (np.empty((size, n)) for _ in range(5))
    var[:, 0] = 0.25  # intervals._PRIOR_VARIANCE
    for start in range(0, rows, size):
        block = d[start : start + size]
        k = block.shape[0]
        xs, ms, vs, bs, fs = x[:k], mean[:k], var[:k], bet[:k], factors[:k]
        for order in orders:
            np.take(block, order, axis=1, out=xs)
            np.cumsum(xs, axis=1, out=ms)
            ms /= seen
            np.subtract(xs[:, :-1], ms[:, :-1], out=vs[:, 1:])
            np.square(vs[:, 1:], out=vs[:, 1:])
            np.cumsum(vs, axis=1, out=bs)
            np.divide(scale, bs, out=bs)
            np.sqrt(bs, out=bs)
            # the running mean is spent: its buffer takes margin - x, then x - above
            bets = ((cap_pass, -1.0, margin, wealth_pass), (cap_flag, 1.0, -above, wealth_flag))
            for cap, sign, shift, wealth in bets:
                np.minimum(bs, cap, out=fs)
                np.multiply(xs, sign, out=ms)
                ms += shift
                fs *= ms
                np.log1p(fs, out=fs)
                wealth[start : start + k] += np.exp(np.minimum(fs.sum(axis=1), 690.0))
    return wealth_pass, wealth_flag


class RateSimulation:
    """The rate gate's chances at any n for one distribution of differences, with common random numbers."""

    def __init__(
        self, differences: Differences, *, margin: float, above: float, alpha: float, replicates: int, seed: int
    ) -> None:
        self.differences = differences
        self.margin, self.above, self.alpha = margin, above, alpha
        self.replicates = replicates
        self._rng = np.random.default_rng(seed)
        self._draws = np.empty((replicates, 0))
        self._seen: dict[int, tuple[float, float]] = {}

    def chances(self, n: int) -> tuple[float, float]:
        """(P(pass), P(regression)) at n shared samples, each the share of replicates."""
        if n not in self._seen:
            if self._draws.shape[1] < n:
                # new columns only: replicate i's first draws stay the same as n grows
                more = self._rng.random((self.replicates, max(n - self._draws.shape[1], n // 2)))
                self._draws = np.concatenate([self._draws, self.differences.draw(more)], axis=1)
            d = self._draws[:, :n]
            passes, flags = bet_decisions(d, margin=self.margin, above=self.above, alpha=self.alpha)
            self._seen[n] = (float(passes.mean()), float(flags.mean()))
        return self._seen[n]

    def chance(self, outcome: Literal["pass", "regression"], n: int) -> float:
        p_pass, p_flag = self.chances(n)
        return p_pass if outcome == "pass" else p_flag


def normal_guess(differences: Differences, gap: float, alpha: float, power: float) -> int:
    """A first guess of the count: the bet behaves like a z test with critical value sqrt(2 log(1 / alpha))."""
    sd = differences.sd
    if gap <= 0:
        return SIM_LIMIT
    if sd == 0:
        return max(8, math.ceil(2 * math.log(1.0 / alpha) / gap))
    z = math.sqrt(2.0 * math.log(1.0 / alpha)) + float(stats.norm.ppf(power))
    return max(8, math.ceil((z * sd / gap) ** 2))


def rate_count(
    outcome: Literal["pass", "regression"],
    differences: Differences,
    *,
    margin: float,
    above: float,
    alpha: float,
    power: float,
    replicates: int = REPLICATES,
    search_replicates: int = SEARCH_REPLICATES,
    seed: int = 0,
    limit: int = SIM_LIMIT,
) -> tuple[int | None, float | None]:
    """(n, its chance): about the smallest n (within 2%) at which ``power`` of simulated audits reach ``outcome``.

    The search runs ``search_replicates`` simulated audits per count; the chance is re-estimated on
    ``replicates`` fresh ones at the n it settles on.

    None, None when even ``limit`` samples fall short. The chance of the bet behaves like
    Phi(a sqrt(n) - c) with c = sqrt(2 log(1 / alpha)); a few secant steps on that curve, on
    common random numbers, land near the count, and 2% steps settle it. Without spread every
    replicate is the same, so one replicate and a bisection give the exact count.
    """
    gap = differences.mean - above if outcome == "regression" else margin - differences.mean
    if gap <= 0:
        return None, None
    if differences.sd == 0:
        return _deterministic_count(outcome, differences, margin=margin, above=above, alpha=alpha, limit=limit)
    sim = RateSimulation(differences, margin=margin, above=above, alpha=alpha, replicates=search_replicates, seed=seed)
    # aim one Monte Carlo sd above the power: the first n whose noisy chance crosses it is picked for that noise
    goal = min(power + math.sqrt(power * (1.0 - power) / search_replicates), 1.0)
    c = math.sqrt(2.0 * math.log(1.0 / alpha))
    target = float(stats.norm.ppf(goal)) + c
    n = min(normal_guess(differences, gap, alpha, power), limit)
    for _ in range(6):
        p = sim.chance(outcome, n)
        slope = (float(stats.norm.ppf(min(max(p, 0.02), 0.98))) + c) / math.sqrt(n)
        wanted = limit if slope <= 0 else math.ceil((target / slope) ** 2)
        wanted = min(limit, max(2, n // 3, min(wanted, 3 * n)))
        if abs(wanted - n) <= max(1, n // 50):
            break
        n = wanted
    for _ in range(40):  # up until it reaches the power
        if sim.chance(outcome, n) >= goal:
            break
        if n >= limit:
            return None, None
        n = min(limit, max(n + 1, math.ceil(n * 1.02)))
    for _ in range(40):  # down while a smaller count still reaches it
        smaller = max(2, math.floor(n / 1.02))
        if smaller >= n or sim.chance(outcome, smaller) < goal:
            break
        n = smaller
    # the printed chance comes from fresh audits, so picking n on the search's noise does not inflate it
    fresh = rate_chances(differences, n, margin=margin, above=above, alpha=alpha, replicates=replicates, seed=seed + 1)
    return n, fresh[0] if outcome == "pass" else fresh[1]


def _deterministic_count(
    outcome: Literal["pass", "regression"],
    differences: Differences,
    *,
    margin: float,
    above: float,
    alpha: float,
    limit: int,
) -> tuple[int | None, float | None]:
    sim = RateSimulation(differences, margin=margin, above=above, alpha=alpha, replicates=1, seed=0)
    high = 2
    while sim.chance(outcome, high) < 1.0:
        if high >= limit:
            return None, None
        high = min(limit, high * 2)
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        if sim.chance(outcome, mid) >= 1.0:
            high = mid
        else:
            low = mid
    return high, 1.0


def rate_chances(
    differences: Differences,
    n: int,
    *,
    margin: float,
    above: float,
    alpha: float,
    replicates: int = REPLICATES,
    seed: int = 1,
) -> tuple[float, float]:
    """(P(pass), P(regression)) of the rate gate at n, from ``replicates`` fresh simulated audits."""
    sim = RateSimulation(differences, margin=margin, above=above, alpha=alpha, replicates=replicates, seed=seed)
    return sim.chances(n)
