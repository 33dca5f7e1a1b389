"""Closed-form confidence intervals for means, shares and their differences.

These are the intervals the audit decides on and calibration reports. Each one is checked
against a reference implementation in ``tests/report/test_intervals.py`` (scipy.stats and
statsmodels) and for coverage by simulation in ``benchmarks/interval_coverage.py``.

* a mean of per-response numbers, and a paired difference of them: Student t;
* a difference of two independent means: Welch t;
* a share (k of n): Wilson score;
* a paired difference of two shares (the same responses judged yes/no twice): Newcombe's
  hybrid score interval for paired data (method 10 of Newcombe 1998, with the continuity
  corrected correlation), which keeps its coverage when discordant pairs are rare, where a
  t interval on 0/1 differences collapses to a point;
* a difference of two independent shares: Newcombe's hybrid score interval (method 10 of
  Newcombe 1998, unpaired).

Every function takes a two-sided ``confidence``; a one-sided bound at level 1 - alpha is the
matching end of the two-sided interval at confidence 1 - 2 alpha (see ``one_sided_confidence``).
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, stats

Interval = tuple[float | None, float | None]


def one_sided_confidence(alpha: float) -> float:
    """The two-sided confidence whose ends are the one-sided bounds at level ``1 - alpha``."""
    return 1.0 - 2.0 * alpha


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def _t(confidence: float, df: int) -> float:
    return float(stats.t.ppf(0.5 + confidence / 2.0, df))


def t_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high) of the Student t interval for the mean of ``values`` (NaN left out).

    With fewer than two values there is no interval (None ends). With zero spread the
    interval is the mean itself: every value agreed.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None, None, None
    mean = float(x.mean())
    if x.size < 2:
        return mean, None, None
    half = _t(confidence, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, mean - half, mean + half


def welch_interval(
    a: np.ndarray, b: np.ndarray, confidence: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """(mean(b) - mean(a), low, high): Welch's t interval for independent groups (NaN left out)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return None, None, None
    diff = float(b.mean() - a.mean())
    if a.size < 2 or b.size < 2:
        return diff, None, None
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se2 = va + vb
    if se2 == 0:
        return diff, diff, diff
    df = se2**2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2.0, df)) * math.sqrt(se2)
    return diff, diff - half, diff + half


def wilson_interval(k: int | float, n: int | float, confidence: float = 0.95) -> Interval:
    """Wilson score interval of a share ``k / n`` (None, None when n is 0)."""
    if n <= 0:
        return None, None
    return _wilson(k, n, confidence)


def _wilson(k: int | float, n: int | float, confidence: float) -> tuple[float, float]:
    """The Wilson score interval for ``n > 0``."""
    z = _z(confidence)
    p = k / n
    denom = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def _square_and_add(
    p1: float, w1: tuple[float, float], p2: float, w2: tuple[float, float], phi: float
) -> tuple[float, float]:
    """Newcombe's combination of two Wilson intervals into one for ``p2 - p1``."""
    l1, u1 = w1
    l2, u2 = w2
    diff = p2 - p1
    down = (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2
    up = (u2 - p2) ** 2 - 2 * phi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2
    return max(-1.0, diff - math.sqrt(max(down, 0.0))), min(1.0, diff + math.sqrt(max(up, 0.0)))


def newcombe_independent(
    k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """(p2 - p1, low, high) for independent shares k1/n1 and k2/n2 (Newcombe's hybrid score interval)."""
    if n1 <= 0 or n2 <= 0:
        return None, None, None
    p1, p2 = k1 / n1, k2 / n2
    low, high = _square_and_add(p1, _wilson(k1, n1, confidence), p2, _wilson(k2, n2, confidence), 0.0)
    return p2 - p1, low, high


def newcombe_paired(
    both: int, first_only: int, second_only: int, neither: int, confidence: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """(p2 - p1, low, high) for two yes/no outcomes on the same units (Newcombe 1998, method 10).

    The 2 x 2 table counts units that were yes both times (``both``), only the first time
    (``first_only``), only the second time (``second_only``) and neither time (``neither``).
    """
    n = both + first_only + second_only + neither
    if n <= 0:
        return None, None, None
    p1, p2 = (both + first_only) / n, (both + second_only) / n
    # Correlation of the two outcomes, with Newcombe's continuity correction of the numerator.
    a: float = both * neither - first_only * second_only
    a = a - n / 2 if a > n / 2 else (0.0 if a >= 0 else a)
    denom = math.sqrt((both + first_only) * (second_only + neither) * (both + second_only) * (first_only + neither))
    phi = a / denom if denom > 0 else 0.0
    low, high = _square_and_add(
        p1,
        _wilson(both + first_only, n, confidence),
        p2,
        _wilson(both + second_only, n, confidence),
        phi,
    )
    return p2 - p1, low, high


def paired_binary_interval(
    first: np.ndarray, second: np.ndarray, confidence: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """Newcombe's paired interval of ``mean(second) - mean(first)`` for 0/1 arrays (pairs with a NaN left out)."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep] > 0.5, y[keep] > 0.5
    return newcombe_paired(
        int(np.sum(x & y)), int(np.sum(x & ~y)), int(np.sum(~x & y)), int(np.sum(~x & ~y)), confidence
    )


# --- bounds that stay valid for discrete, mostly-zero data ----------------------------------------
#
# The audit decides with these. A t or score interval is an approximation that fails exactly where
# production audits live: few or no differing pairs (a t interval of identical differences has zero
# width). The bounds below hold at their level for every sample size and every true rate.


def exact_upper(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound at level ``1 - alpha`` of a share k of n (1 when n is 0)."""
    if n <= 0 or k >= n:
        return 1.0
    return float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))


def exact_lower(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson lower bound at level ``1 - alpha`` of a share k of n (0 when k is 0)."""
    if n <= 0 or k <= 0:
        return 0.0
    return float(stats.beta.ppf(alpha, k, n - k + 1))


def discordant_bounds(
    first_only: int, second_only: int, n: int, alpha: float
) -> tuple[float | None, float | None, float | None]:
    """(p2 - p1, lower, upper) for paired yes/no outcomes, each bound valid at level ``1 - alpha``.

    p2 - p1 is the difference of the two discordant shares (yes only the second time, minus yes
    only the first time). Each bound spends alpha / 2 on an exact (Clopper-Pearson) bound of each
    discordant share, so by the union bound it holds whatever the two shares are: no asymptotics,
    and with no discordant pair the upper bound is the exact bound of 0 of n (about 3.7 / n).
    """
    if n <= 0:
        return None, None, None
    half = alpha / 2.0
    diff = (second_only - first_only) / n
    upper = exact_upper(second_only, n, half) - exact_lower(first_only, n, half)
    lower = exact_lower(second_only, n, half) - exact_upper(first_only, n, half)
    return diff, lower, upper


def independent_exact_bounds(
    k1: int, n1: int, k2: int, n2: int, alpha: float
) -> tuple[float | None, float | None, float | None]:
    """(k2/n2 - k1/n1, lower, upper) for independent shares: exact bounds of each at alpha / 2, combined."""
    if n1 <= 0 or n2 <= 0:
        return None, None, None
    half = alpha / 2.0
    upper = exact_upper(k2, n2, half) - exact_lower(k1, n1, half)
    lower = exact_lower(k2, n2, half) - exact_upper(k1, n1, half)
    return k2 / n2 - k1 / n1, lower, upper


#: Orders of the values over which a betting bound averages its wealth (an average of e-values is one).
BETTING_ORDERS = 8
#: The variance a bet assumes before it has seen any value (a quarter of the largest a value in [-1, 1] can have).
_PRIOR_VARIANCE = 0.25


class BettingWealth:
    """The bets of ``BETTING_ORDERS`` orders of some values (in [-1, 1]) against a mean of m, worked out once.

    Each order bets a predictable fraction of its wealth on every next value being below m (the
    predictable plug-in of Waudby-Smith and Ramdas 2023, tuned to the sample size), at most c / (1 - m) so
    a value of 1 cannot bankrupt it. The fraction before the cap depends on the values seen, not on m, so
    it is computed once (``of``) and a bound's search over m only recomputes the wealth. The values
    negated have the same running variance, so ``negated`` shares it.
    """

    def __init__(self, ordered: list[np.ndarray], raw: list[np.ndarray], sign: float) -> None:
        #: The values in each order, and each order's bets before the cap.
        self.x, self.raw, self.sign = ordered, raw, sign
        self.top = max(float(r.max()) for r in raw) if raw and raw[0].size else 0.0

    @classmethod
    def of(cls, values: np.ndarray, alpha: float, orders: np.ndarray) -> BettingWealth:
        """The bets on ``values`` (finite, in [-1, 1]) in each of ``orders`` at level ``alpha``."""
        return cls.of_ordered([values[order] for order in orders], alpha)

    @classmethod
    def of_ordered(cls, ordered: list[np.ndarray], alpha: float) -> BettingWealth:
        """The bets on values already put in each order (``ordered``, one array per order) at level ``alpha``."""
        raw = []
        scale = 2.0 * math.log(1.0 / alpha)
        for x in ordered:
            n = x.size
            seen = np.arange(1, n + 1, dtype=float)
            # Running mean and variance of what was seen before each value (a prior pseudo-observation first).
            mean_after = np.cumsum(x)
            mean_after /= seen
            var = np.empty(n)
            var[0] = _PRIOR_VARIANCE
            np.subtract(x[:-1], mean_after[:-1], out=var[1:])
            np.square(var[1:], out=var[1:])
            np.cumsum(var, out=var)
            var /= seen  # the variance before each value
            var *= n
            np.divide(scale, var, out=var)
            raw.append(np.sqrt(var, out=var))
        return cls(ordered, raw, 1.0)

    def negated(self) -> BettingWealth:
        """The bets on the values negated (the same running variance, so the same bets before the cap)."""
        return BettingWealth(self.x, self.raw, -self.sign)

    def log_wealths(self, m: float) -> np.ndarray:
        """The log wealth of each order after betting that the mean is below ``m``, capped at 690."""
        cap = 0.99 / (1.0 - m) if m < 1.0 else np.inf
        logs = np.empty(len(self.x))
        for i, (x, raw) in enumerate(zip(self.x, self.raw, strict=True)):
            bet = raw if cap >= self.top else np.minimum(raw, cap)
            factors = 1.0 + bet * ((m - x) if self.sign > 0 else (m + x))
            # capped in log space: past 1e300 the wealth has long cleared any 1 / alpha
            logs[i] = min(float(np.sum(np.log(np.maximum(factors, 1e-300)))), 690.0)
        return logs

    def wealth(self, m: float) -> float:
        """Average wealth over the orders of betting that the mean is below ``m``.

        If the true mean is m or more, each order's wealth is a nonnegative supermartingale, so it
        reaches 1 / alpha with probability at most alpha (Ville's inequality); so does the average.
        """
        total = 0.0
        for log in self.log_wealths(m):
            total += float(np.exp(log))
        return total / len(self.x)

    def log_wealth(self, m: float) -> float:
        """The log of ``wealth(m)``, finite even where the wealth itself underflows (for a root search)."""
        logs = self.log_wealths(m)
        top = float(logs.max())
        return top + math.log(float(np.mean(np.exp(logs - top))))


def betting_rejects(values: np.ndarray, m: float, alpha: float, *, seed: int = 0) -> bool:
    """Whether the bet rules out a mean of ``m`` or more at level ``alpha`` (values in [-1, 1], NaN left out).

    The same as ``betting_upper(values, alpha) <= m`` up to the search's tolerance, without the
    search: the audit decides with this, and shows the bounds.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0 or m >= 1.0:
        return bool(x.size and m >= 1.0)
    return prepared_bets(x, alpha, seed).wealth(m) >= 1.0 / alpha


#: The bets last prepared (one entry): the audit asks for the bound and the decisions of the same values.
_PREPARED: dict[tuple[bytes, float, int], BettingWealth] = {}


def forget_prepared_bets() -> None:
    """Let go of the bets last prepared (at 10^6 values they hold 128 MB)."""
    _PREPARED.clear()


def _digest(values: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(values).data, digest_size=16).digest()


def prepared_bets(values: np.ndarray, alpha: float, seed: int) -> BettingWealth:
    """``BettingWealth.of`` the finite ``values``, reused when the same values (or the same negated) were
    prepared last at this level: an audit bounds the mean difference both ways and decides on it again."""
    key = (_digest(values), alpha, seed)
    if key in _PREPARED:
        return _PREPARED[key]
    negated = (_digest(-values), alpha, seed)
    if negated in _PREPARED:
        return _PREPARED[negated].negated()
    bets = BettingWealth.of(values, alpha, bet_orders(values.size, seed))
    _PREPARED.clear()
    _PREPARED[key] = bets
    return bets


@functools.lru_cache(maxsize=2)
def _orders(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    orders = np.array([np.arange(n)] + [rng.permutation(n) for _ in range(BETTING_ORDERS - 1)])
    orders.setflags(write=False)
    return orders


def bet_orders(n: int, seed: int) -> np.ndarray:
    """The orders a betting bound averages over: the values as given, then fixed random permutations (read-only)."""
    return _orders(n, seed)


def wealth_root(
    log_wealth: Callable[[float], float],
    goal: float,
    low: float,
    high: float,
    *,
    guess: float | None = None,
    step: float = 0.0,
    xtol: float = 1e-12,
) -> float:
    """The point where a rising ``log_wealth`` reaches ``log(goal)`` between ``low`` (below) and ``high`` (at or
    above), to within ``xtol``: Brent's method, then a step up until the wealth is at the goal, so the point
    returned is one where the bet has won (as a bisection's upper end is). A ``guess`` with a ``step`` first
    narrows the bracket (steps doubling from the guess until the goal is crossed): fewer wealths to work out."""
    target = math.log(goal)

    def gap(m: float) -> float:
        return log_wealth(m) - target

    if guess is not None and step > 0 and low < guess < high:
        below = gap(guess) < 0
        while True:
            nxt = min(guess + step, high) if below else max(guess - step, low)
            if nxt in (low, high) or (gap(nxt) < 0) != below:
                low, high = (guess, nxt) if below else (nxt, guess)
                break
            guess, step = nxt, step * 2
    root = float(optimize.brentq(gap, low, high, xtol=xtol))
    step = xtol
    while root < high and gap(root) < 0:
        root = min(root + step, high)
        step *= 2
    return root


def betting_upper(values: np.ndarray, alpha: float, *, seed: int = 0) -> float | None:
    """Upper bound at level ``1 - alpha`` of the mean of values in [-1, 1], valid for any n (betting).

    The bound is the smallest m whose bet against "mean >= m" has grown the wealth to 1 / alpha;
    the wealth grows with m, so a root search finds it (to 1e-12). With no spread at all it still needs about
    log(1 / alpha) / m values to reach m: zeros bound the mean below m only from n near 3 / m on.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None
    if np.any(np.abs(x) > 1.0 + 1e-12):
        raise ValueError("betting bounds need values in [-1, 1]")
    bets = prepared_bets(x, alpha, seed)
    goal = 1.0 / alpha
    low, high = float(x.min()) - 1e-9, 1.0 - 1e-9
    if bets.wealth(high) < goal:
        return 1.0
    if bets.wealth(low) >= goal:
        return low
    # the bound lies a few standard errors above the mean: start there
    spread = max(float(x.std()), 1e-3) * math.sqrt(2.0 * math.log(goal) / x.size)
    return min(1.0, wealth_root(bets.log_wealth, goal, low, high, guess=float(x.mean()) + spread, step=spread / 4))


def betting_bounds(
    values: np.ndarray, alpha: float, *, seed: int = 0
) -> tuple[float | None, float | None, float | None]:
    """(mean, lower, upper) of values in [-1, 1]; each one-sided bound valid at level ``1 - alpha``."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None, None, None
    upper = betting_upper(x, alpha, seed=seed)
    lower = betting_upper(-x, alpha, seed=seed)
    return float(x.mean()), None if lower is None else -lower, upper
