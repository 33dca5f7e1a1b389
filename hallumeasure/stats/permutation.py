"""Permutation tests: sign flips for paired differences, label shuffles for two groups, Holm's adjustment.

Exact (every sign pattern) for up to 12 pairs, Monte Carlo from one seeded generator otherwise; a
Monte Carlo p-value counts the observed arrangement, so it is never zero. Large samples with few distinct
values (per-response rates) draw, per distinct value, how many of its signs are flipped (a binomial) or how
many of its rows a shuffled group holds (a hypergeometric), rather than each row's: the same distribution,
at a cost that grows with the distinct values instead of the rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hallumeasure.stats.bootstrap import MAX_CELLS, few_distinct
from hallumeasure.stats.estimate import rounded
from hallumeasure.stats.resampling import CONFIDENCE

#: Sign flips are enumerated exactly up to this many pairs (2**12 = 4096 patterns).
_EXACT_PAIRS = 12


def random_members(size: int, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` rows of n zeros and ones with exactly k ones at random places (a random k-subset per row)."""
    chosen = np.argpartition(rng.random((size, n)), k - 1, axis=1)[:, :k] if 0 < k < n else None
    members = np.zeros((size, n)) if k < n else np.ones((size, n))
    if chosen is not None:
        np.put_along_axis(members, chosen, 1.0, axis=1)
    return members


def group_members(
    table: np.ndarray, k: int, rng: np.random.Generator
) -> Callable[[int], tuple[np.ndarray, np.ndarray]]:
    """Random k-subsets of the rows of ``table``, as ``draw(left) -> (members, rows)``: up to ``left`` rows of
    weights over ``rows``, each weight row the count of chosen rows of each of ``rows``.

    A large table with few distinct rows draws how many of each distinct row the subset holds (a
    multivariate hypergeometric draw): the same distribution as choosing rows one by one, at a cost of K
    cells instead of n. Otherwise the rows are ``table`` itself and the weights zeros and ones
    (``random_members``)."""
    n = len(table)
    found = few_distinct(table)
    if found is None:
        chunk = max(1, MAX_CELLS // max(n, 1))
        return lambda left: (random_members(min(chunk, left), n, k, rng), table)
    rows, sizes = found
    chunk = max(1, MAX_CELLS // len(sizes))
    return lambda left: (rng.multivariate_hypergeometric(sizes, k, size=min(chunk, left)).astype(float), rows)


def _sign_flip_sums(d: np.ndarray, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """For each sign pattern s: ``s @ d`` and ``s @ 1``. All 2**n patterns for up to 12 pairs, else
    ``resamples`` random ones plus the observed (all +) pattern."""
    n = d.size
    if n <= _EXACT_PAIRS:
        patterns = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        return patterns @ d, patterns.sum(axis=1).astype(float)
    sums, counts, done = [np.array([d.sum()])], [np.array([float(n)])], 0
    found = few_distinct(d[:, None])
    if found is not None:
        # The signs of the c_k pairs of one distinct value v_k add up to 2 Binomial(c_k, 1/2) - c_k: draw that sum.
        values, sizes = found[0][:, 0], found[1]
        chunk = max(1, MAX_CELLS // len(sizes))
        while done < resamples:
            size = min(chunk, resamples - done)
            net = 2.0 * rng.binomial(sizes, 0.5, size=(size, len(sizes))) - sizes
            sums.append(net @ values)
            counts.append(net.sum(axis=1))
            done += size
        return np.concatenate(sums), np.concatenate(counts)
    chunk = max(1, MAX_CELLS // n)
    while done < resamples:
        size = min(chunk, resamples - done)
        signs = rng.integers(0, 2, size=(size, n)) * 2 - 1
        sums.append(signs @ d)
        counts.append(signs.sum(axis=1).astype(float))
        done += size
    return np.concatenate(sums), np.concatenate(counts)


def sign_flip_test(
    d: np.ndarray, *, confidence: float = CONFIDENCE, resamples: int = 10000, rng: np.random.Generator
) -> tuple[float | None, float | None, float | None]:
    """Sign-flip test of paired differences ``d``: (p-value that their mean is zero, interval low, high).

    The interval inverts the same test: it holds every shift ``delta`` for which the test of
    ``d - delta`` gives p >= 1 - confidence. So it excludes 0 exactly when p < 1 - confidence,
    which a percentile bootstrap does not promise (it runs narrow with few pairs). Exact (all
    2**n sign patterns) for up to 12 pairs, Monte Carlo with one fixed set of patterns
    otherwise (the observed pattern is counted, so p is never zero). An end that no pattern
    bounds (very few pairs) is infinite.
    """
    d = np.asarray(d, dtype=float)
    n = d.size
    if n == 0:
        return None, None, None
    total = d.sum()
    sums, counts = _sign_flip_sums(d, resamples, rng)
    tol = 1e-12 * max(1.0, abs(total))
    p = float(np.mean(np.abs(sums) >= abs(total) - tol))
    # Pattern s is as extreme as the data at shift delta when |A - delta B| >= |D - n delta|
    # (A = s @ d, B = s @ 1, D = sum d): a closed interval of delta around D / n, between the
    # roots (A - D) / (B - n) and (A + D) / (B + n); unbounded for the all-+ and all-- patterns.
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = np.where(counts != n, (sums - total) / (counts - n), -np.inf)
        r2 = np.where(counts != -n, (sums + total) / (counts + n), np.inf)
    # Rounded so that a tie (an end that is 0 up to float error) counts as the p-value counts it.
    ends_low = np.round(np.where(np.abs(counts) == n, -np.inf, np.minimum(r1, r2)), 9)
    ends_high = np.round(np.where(np.abs(counts) == n, np.inf, np.maximum(r1, r2)), 9)
    # p(delta) = share of patterns whose interval holds delta; keep delta while p >= alpha.
    k = len(sums)
    needed = max(1, int(np.ceil((1.0 - confidence) * k - 1e-9)))
    low = float(np.sort(ends_low)[needed - 1])
    high = float(np.sort(ends_high)[::-1][needed - 1])
    return p, low, high


def sign_flip_pvalue(d: np.ndarray, *, resamples: int = 10000, rng: np.random.Generator) -> float | None:
    """Two-sided p-value that the mean of paired differences ``d`` is zero (signs flipped at random).

    Exact (all 2**n sign patterns) for up to 12 pairs, Monte Carlo otherwise; the Monte Carlo
    p-value counts the observed pattern so it is never zero.
    """
    return sign_flip_test(d, resamples=resamples, rng=rng)[0]


def permutation_pvalue(
    a: np.ndarray, b: np.ndarray, *, resamples: int = 10000, rng: np.random.Generator
) -> float | None:
    """Two-sided p-value that ``a`` and ``b`` have the same mean (group labels shuffled at random)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        return None
    pooled = np.concatenate([a, b])
    observed = abs(b.mean() - a.mean())
    tol = 1e-12 * max(1.0, observed)
    n, nb, total = pooled.size, b.size, pooled.sum()
    hits, done = 0, 0
    draw = group_members(pooled[:, None], nb, rng)
    while done < resamples:
        members, rows = draw(resamples - done)
        size = len(members)
        sum_b = members @ rows[:, 0]
        stat = np.abs(sum_b / nb - (total - sum_b) / (n - nb))
        hits += int(np.sum(stat >= observed - tol))
        done += size
    return (hits + 1) / (resamples + 1)


def holm(p_values: dict[str, float | None]) -> dict[str, float | None]:
    """Holm step-down adjustment (controls the family-wise error rate); None stays None."""
    known = sorted(((p, k) for k, p in p_values.items() if p is not None))
    m = len(known)
    adjusted: dict[str, float | None] = dict.fromkeys(p_values)
    running = 0.0
    for i, (p, key) in enumerate(known):
        running = max(running, min(1.0, (m - i) * p))
        adjusted[key] = rounded(running)
    return adjusted
