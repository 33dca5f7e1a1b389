"""Estimates with uncertainty: bootstrap intervals over responses, paired and unpaired tests.

The unit of resampling is the response, never the claim: claims of one response share a
context and a writer, so they are not independent. Ratios such as "share of claims that are
absent" are therefore computed as sum-over-responses / sum-over-responses inside each
bootstrap draw (a cluster bootstrap). Every random draw comes from one seeded generator, so
the same inputs, resamples and seed always give the same numbers.

Intervals of one group's numbers and of unpaired differences are percentile bootstrap
intervals; p-values come from sign-flip (paired) or label-shuffle (unpaired) permutation
tests, exact when there are few enough pairs to enumerate. The interval of a paired
difference inverts its sign-flip test instead of bootstrapping: with few pairs a percentile
bootstrap runs narrow (at 8 pairs it can exclude 0 while the exact test gives p 0.125),
whereas the inverted interval excludes 0 exactly when p < 1 - confidence.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

import numpy as np
import pandas as pd
from pydantic import BaseModel

from hallumeasure.core.labels import Label, Subtype
from hallumeasure.report.resampling import CONFIDENCE, RESAMPLES, SEED

LABELS = [label.value for label in Label]
SUBTYPES = [subtype.value for subtype in Subtype]


class Resampling(TypedDict):
    """The bootstrap's settings, passed on as keyword arguments to the functions here."""

    resamples: int
    seed: int
    confidence: float


#: Most cells a bootstrap weight matrix may hold at once (bounds memory on large runs).
_MAX_CELLS = 2_000_000
#: Sign flips are enumerated exactly up to this many pairs (2**12 = 4096 patterns).
_EXACT_PAIRS = 12
_DIGITS = 6
#: How a paired difference is tested, as printed in reports.
PAIRED_TEST = "sign-flip permutation p-value; interval = shifts the sign-flip test does not reject"


def _round(value: float | None) -> float | None:
    if value is None or not np.isfinite(value):
        return None
    return round(float(value), _DIGITS) + 0.0  # + 0.0 turns -0.0 into 0.0


class Estimate(BaseModel):
    """A point estimate with a confidence interval; any part is None when it cannot be computed."""

    value: float | None
    low: float | None = None
    high: float | None = None

    @classmethod
    def of(cls, value: float | None, low: float | None = None, high: float | None = None) -> Estimate:
        return cls(value=_round(value), low=_round(low), high=_round(high))

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


class GroupStats(BaseModel):
    """Aggregates of one group of responses (a run, or one model in it), each with its interval."""

    name: str
    n_responses: int
    n_rated: int
    n_claims: int
    n_error_rows: int
    #: Unsupported claims under the run's policy (the count a ratio of rates rests on).
    n_unsupported: int = 0
    mean_unsupported_rate: Estimate
    hallucinated_share: Estimate
    error_rows: Estimate
    error_share: Estimate
    label_shares: dict[str, Estimate]
    #: Claims with each subtype per judged claim (the denominator of ``label_shares``, the same for every subtype).
    subtype_shares: dict[str, Estimate]
    label_counts: dict[str, int]
    subtype_counts: dict[str, int]


class Difference(BaseModel):
    """``b - a`` for one metric, with its interval and a two-sided p-value."""

    metric: str
    paired: bool
    n_a: int
    n_b: int
    n_pairs: int
    a: float | None
    b: float | None
    diff: Estimate
    p_value: float | None
    test: str


class SubtypeShift(BaseModel):
    """Whether the subtype mix differs between two groups.

    ``p_value`` is for the whole mix (chi-square statistic, permutation p-value). Per subtype,
    ``rates_*`` are subtype claims per evaluated claim and ``p_values`` / ``p_holm`` test their
    difference (Holm-adjusted across subtypes).
    """

    paired: bool
    n_a: int
    n_b: int
    counts_a: dict[str, int]
    counts_b: dict[str, int]
    statistic: float | None
    p_value: float | None
    rates_a: dict[str, float | None]
    rates_b: dict[str, float | None]
    p_values: dict[str, float | None]
    p_holm: dict[str, float | None]
    note: str | None = None


# --- small numeric helpers ----------------------------------------------------------------------


def bootstrap_weights(n: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Resampling with replacement as count weights: chunks of a (resamples, n) matrix whose rows sum to n."""
    if n == 0:
        return
    chunk = max(1, _MAX_CELLS // n)
    left = resamples
    while left > 0:
        size = min(chunk, left)
        picks = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
        yield np.bincount(picks.ravel(), minlength=size * n).reshape(size, n).astype(float)
        left -= size


def random_members(size: int, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` rows of n zeros and ones with exactly k ones at random places (a random k-subset per row)."""
    chosen = np.argpartition(rng.random((size, n)), k - 1, axis=1)[:, :k] if 0 < k < n else None
    members = np.zeros((size, n)) if k < n else np.ones((size, n))
    if chosen is not None:
        np.put_along_axis(members, chosen, 1.0, axis=1)
    return members


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """Percentile interval of bootstrap draws, ignoring draws that were undefined (NaN)."""
    draws = np.asarray(draws, dtype=float)
    draws = draws[np.isfinite(draws)]
    if draws.size == 0:
        return None, None
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _mean_draws(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws of the mean of ``values`` (NaN = undefined, left out of each draw)."""
    valid = np.isfinite(values)
    filled = np.where(valid, values, 0.0)
    draws = [_ratio(w @ filled, w @ valid) for w in bootstrap_weights(len(values), resamples, rng)]
    return np.concatenate(draws) if draws else np.array([])


def bootstrap_mean(
    values: np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
) -> Estimate:
    """Mean of ``values`` (NaN = undefined, left out) with a percentile bootstrap interval."""
    values = np.asarray(values, dtype=float)
    valid = np.isfinite(values)
    point = float(values[valid].mean()) if valid.any() else None
    draws = _mean_draws(values, resamples, np.random.default_rng(seed))
    return Estimate.of(point, *percentile_interval(draws, confidence))


def _sign_flip_sums(d: np.ndarray, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """For each sign pattern s: ``s @ d`` and ``s @ 1``. All 2**n patterns for up to 12 pairs, else
    ``resamples`` random ones plus the observed (all +) pattern."""
    n = d.size
    if n <= _EXACT_PAIRS:
        patterns = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        return patterns @ d, patterns.sum(axis=1).astype(float)
    sums, counts, done = [np.array([d.sum()])], [np.array([float(n)])], 0
    chunk = max(1, _MAX_CELLS // n)
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


def sign_flip_greater(
    d: np.ndarray, shift: float = 0.0, *, resamples: int = 10000, rng: np.random.Generator
) -> float | None:
    """One-sided sign-flip p-value that the mean of paired differences ``d`` is above ``shift``.

    Flips the signs of ``d - shift``: exact for up to 12 pairs (so it can never go below
    2**-n: with four pairs or fewer no difference is significant at 5%), Monte Carlo otherwise.
    """
    x = np.asarray(d, dtype=float) - shift
    if x.size == 0:
        return None
    sums, _ = _sign_flip_sums(x, resamples, rng)
    return float(np.mean(sums >= x.sum() - 1e-12 * max(1.0, abs(x.sum()))))


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
    chunk = max(1, _MAX_CELLS // n)
    while done < resamples:
        size = min(chunk, resamples - done)
        sum_b = random_members(size, n, nb, rng) @ pooled
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
        adjusted[key] = _round(running)
    return adjusted


# --- one group -----------------------------------------------------------------------------------


def group_stats(
    units: pd.DataFrame, name: str, *, resamples: int = RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
) -> GroupStats:
    """Every aggregate of one group of responses, with bootstrap intervals over responses.

    ``units`` is a response table from :func:`hallumeasure.report.runs.response_units`.
    """
    n = len(units)
    rate = units["rate"].to_numpy(dtype=float)
    rated = np.isfinite(rate)
    rate0 = np.where(rated, rate, 0.0)
    flag = units["hallucinated"].to_numpy(dtype=float)
    flagged = np.isfinite(flag)
    flag0 = np.where(flagged, flag, 0.0)
    errors = units["error_rows"].to_numpy(dtype=float)
    judged = units["judged_units"].to_numpy(dtype=float)
    labels = units[[f"label_{x}" for x in LABELS]].to_numpy(dtype=float)
    subtypes = units[[f"subtype_{x}" for x in SUBTYPES]].to_numpy(dtype=float)
    label_total = labels.sum(axis=1)

    def evaluate(w: np.ndarray) -> dict[str, np.ndarray]:
        """All statistics for weight rows ``w`` (shape (k, n)); the point estimate uses ones."""
        return {
            "rate": _ratio(w @ rate0, w @ rated),
            "flag": _ratio(w @ flag0, w @ flagged),
            "errors": w @ errors,
            "error_share": _ratio(w @ errors, w @ judged),
            "labels": _ratio(w @ labels, (w @ label_total)[:, None]),
            # per judged claim, not per subtyped claim: one subtyped claim among 50 is 2%, not a full bar
            "subtypes": _ratio(w @ subtypes, (w @ label_total)[:, None]),
        }

    point = {k: v[0] for k, v in evaluate(np.ones((1, n))).items()} if n else None
    rng = np.random.default_rng(seed)
    chunks = [evaluate(w) for w in bootstrap_weights(n, resamples, rng)]
    draws = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]} if chunks else {}

    def estimate(key: str, column: int | None = None) -> Estimate:
        if point is None:
            return Estimate.of(None)
        value = point[key] if column is None else point[key][column]
        sample = draws[key] if column is None else draws[key][:, column]
        return Estimate.of(value, *percentile_interval(sample, confidence))

    return GroupStats(
        name=name,
        n_responses=n,
        n_rated=int(rated.sum()),
        n_claims=int(units["n_claims"].sum()),
        n_error_rows=int(errors.sum()),
        n_unsupported=int(units["n_unsupported"].sum()) if "n_unsupported" in units.columns else 0,
        mean_unsupported_rate=estimate("rate"),
        hallucinated_share=estimate("flag"),
        error_rows=estimate("errors"),
        error_share=estimate("error_share"),
        label_shares={x: estimate("labels", i) for i, x in enumerate(LABELS)},
        subtype_shares={x: estimate("subtypes", i) for i, x in enumerate(SUBTYPES)},
        label_counts={x: int(labels[:, i].sum()) for i, x in enumerate(LABELS)},
        subtype_counts={x: int(subtypes[:, i].sum()) for i, x in enumerate(SUBTYPES)},
    )


# --- two groups ----------------------------------------------------------------------------------


def paired_difference(
    a: np.ndarray,
    b: np.ndarray,
    metric: str,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Difference:
    """Mean of ``b - a`` over pairs where both are defined, with the sign-flip test and its inverted interval.

    Both metrics compared this way are shares in [0, 1], so an interval end that the test
    cannot bound (two or three pairs) is reported as the largest possible difference, -1 or 1.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both = np.isfinite(a) & np.isfinite(b)
    d = b[both] - a[both]
    rng = np.random.default_rng(seed)
    p, low, high = sign_flip_test(d, confidence=confidence, resamples=max(resamples, 2000), rng=rng)
    value = float(d.mean()) if d.size else None
    if value is not None and low is not None and high is not None:
        low, high = max(low, -1.0), min(high, 1.0)
    return Difference(
        metric=metric,
        paired=True,
        n_a=int(np.isfinite(a).sum()),
        n_b=int(np.isfinite(b).sum()),
        n_pairs=int(both.sum()),
        a=_round(a[both].mean()) if both.any() else None,
        b=_round(b[both].mean()) if both.any() else None,
        diff=Estimate.of(value, low, high),
        p_value=_round(p),
        test=PAIRED_TEST,
    )


def unpaired_difference(
    a: np.ndarray,
    b: np.ndarray,
    metric: str,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Difference:
    """``mean(b) - mean(a)`` for independent groups: bootstrap of each group, permutation p-value."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    rng = np.random.default_rng(seed)
    value = b.mean() - a.mean() if a.size and b.size else None
    low = high = None
    if value is not None:
        draws = _mean_draws(b, resamples, rng) - _mean_draws(a, resamples, rng)
        low, high = percentile_interval(draws, confidence)
    return Difference(
        metric=metric,
        paired=False,
        n_a=int(a.size),
        n_b=int(b.size),
        n_pairs=0,
        a=_round(a.mean()) if a.size else None,
        b=_round(b.mean()) if b.size else None,
        diff=Estimate.of(value, low, high),
        p_value=_round(permutation_pvalue(a, b, resamples=max(resamples, 2000), rng=rng)),
        test="independent bootstrap interval; label-shuffle permutation p-value",
    )


def _chi_square(table_a: np.ndarray, table_b: np.ndarray) -> np.ndarray:
    """Chi-square statistic of 2 x K tables given as rows of ``table_a`` and ``table_b`` (shape (k, K))."""
    total = table_a + table_b
    n_a, n_b = table_a.sum(axis=1, keepdims=True), table_b.sum(axis=1, keepdims=True)
    grand = n_a + n_b
    stat = np.zeros(len(table_a))
    for observed, n_row in ((table_a, n_a), (table_b, n_b)):
        expected = total * n_row / np.where(grand > 0, grand, 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cell = np.where(expected > 0, (observed - expected) ** 2 / np.where(expected > 0, expected, 1), 0.0)
        stat += cell.sum(axis=1)
    return stat


def subtype_shift(
    subtypes_a: np.ndarray,
    subtypes_b: np.ndarray,
    evaluated_a: np.ndarray,
    evaluated_b: np.ndarray,
    *,
    paired: bool,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> SubtypeShift:
    """Test whether the error-subtype mix and each subtype's rate differ between two groups.

    Rows are responses (pairs, aligned row by row, when ``paired``); columns follow ``SUBTYPES``.
    The null distribution swaps a and b inside pairs (paired) or shuffles responses between
    the groups (unpaired), so claims of one response always move together.
    """
    sa, sb = np.asarray(subtypes_a, dtype=float), np.asarray(subtypes_b, dtype=float)
    ea, eb = np.asarray(evaluated_a, dtype=float), np.asarray(evaluated_b, dtype=float)
    rng = np.random.default_rng(seed)
    counts_a = {x: int(sa[:, i].sum()) if len(sa) else 0 for i, x in enumerate(SUBTYPES)}
    counts_b = {x: int(sb[:, i].sum()) if len(sb) else 0 for i, x in enumerate(SUBTYPES)}

    def rates(s: np.ndarray, e: np.ndarray) -> dict[str, float | None]:
        den = e.sum()
        return {x: _round(s[:, i].sum() / den) if den > 0 else None for i, x in enumerate(SUBTYPES)}

    shift = SubtypeShift(
        paired=paired,
        n_a=len(sa),
        n_b=len(sb),
        counts_a=counts_a,
        counts_b=counts_b,
        statistic=None,
        p_value=None,
        rates_a=rates(sa, ea),
        rates_b=rates(sb, eb),
        p_values=dict.fromkeys(SUBTYPES),
        p_holm=dict.fromkeys(SUBTYPES),
    )
    if len(sa) == 0 or len(sb) == 0 or ea.sum() == 0 or eb.sum() == 0:
        return shift.model_copy(update={"note": "not enough responses with evaluated claims to test"})

    # Each permutation yields group tables (k, K) and evaluated totals (k,) for a and b.
    def permutations() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        done = 0
        if paired:
            n = len(sa)
            base_s, base_e = sa.sum(axis=0), ea.sum()
            ds, de = sb - sa, eb - ea
            tot_s, tot_e = base_s + sb.sum(axis=0), base_e + eb.sum()
            chunk = max(1, _MAX_CELLS // max(n, 1))
            while done < resamples:
                size = min(chunk, resamples - done)
                swap = rng.integers(0, 2, size=(size, n)).astype(float)
                ta, ta_e = base_s + swap @ ds, base_e + swap @ de
                yield ta, tot_s - ta, ta_e, tot_e - ta_e
                done += size
        else:
            s = np.vstack([sa, sb])
            e = np.concatenate([ea, eb])
            n, na = len(s), len(sa)
            tot_s, tot_e = s.sum(axis=0), e.sum()
            chunk = max(1, _MAX_CELLS // n)
            while done < resamples:
                size = min(chunk, resamples - done)
                member = random_members(size, n, na, rng)
                ta, ta_e = member @ s, member @ e
                yield ta, tot_s - ta, ta_e, tot_e - ta_e
                done += size

    observed_chi = _chi_square(sa.sum(axis=0)[None, :], sb.sum(axis=0)[None, :])[0]
    observed_diff = sb.sum(axis=0) / eb.sum() - sa.sum(axis=0) / ea.sum()
    chi_hits, diff_hits, total = 0, np.zeros(len(SUBTYPES)), 0
    for ta, tb, ea_k, eb_k in permutations():
        chi_hits += int(np.sum(_chi_square(ta, tb) >= observed_chi - 1e-9))
        diff = _ratio(tb, eb_k[:, None]) - _ratio(ta, ea_k[:, None])
        diff_hits += np.sum(np.abs(np.nan_to_num(diff)) >= np.abs(observed_diff) - 1e-12, axis=0)
        total += len(ta)
    any_subtypes = (sa.sum() + sb.sum()) > 0
    p_values = {
        x: _round((diff_hits[i] + 1) / (total + 1)) if counts_a[x] + counts_b[x] > 0 else None
        for i, x in enumerate(SUBTYPES)
    }
    return shift.model_copy(
        update={
            "statistic": _round(observed_chi) if any_subtypes else None,
            "p_value": _round((chi_hits + 1) / (total + 1)) if any_subtypes else None,
            "p_values": p_values,
            "p_holm": holm(p_values),
            "note": None if any_subtypes else "no claim carries a subtype in either group",
        }
    )
