"""Estimates with uncertainty for groups of responses: bootstrap intervals over responses, paired and unpaired tests.

The unit of resampling is the response, never the claim: claims of one response share a
context and a writer, so they are not independent. Ratios such as "share of claims that are
absent" are therefore computed as sum-over-responses / sum-over-responses inside each
bootstrap draw (a cluster bootstrap, :func:`hallumeasure.stats.bootstrap.resampling_weights`).
Every random draw comes from one seeded generator, so the same inputs, resamples and seed always
give the same numbers.

Intervals of one group's numbers and of unpaired differences are percentile bootstrap
intervals; p-values come from sign-flip (paired) or label-shuffle (unpaired) permutation
tests (:mod:`hallumeasure.stats.permutation`), exact when there are few enough pairs to enumerate.
The interval of a paired difference inverts its sign-flip test instead of bootstrapping: with few
pairs a percentile bootstrap runs narrow (at 8 pairs it can exclude 0 while the exact test gives
p 0.125), whereas the inverted interval excludes 0 exactly when p < 1 - confidence.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

import numpy as np
import pandas as pd
from pydantic import BaseModel

from hallumeasure.core.labels import Label, Subtype
from hallumeasure.stats.bootstrap import (
    MAX_CELLS,
    few_distinct,
    mean_draws,
    percentile_interval,
    ratio,
    resampling_weights,
)
from hallumeasure.stats.estimate import Estimate, rounded
from hallumeasure.stats.permutation import group_members, holm, permutation_pvalue, sign_flip_test
from hallumeasure.stats.resampling import CONFIDENCE, RESAMPLES, SEED

LABELS = [label.value for label in Label]
SUBTYPES = [subtype.value for subtype in Subtype]


class Resampling(TypedDict):
    """The bootstrap's settings, passed on as keyword arguments to the functions here."""

    resamples: int
    seed: int
    confidence: float


#: How a paired difference is tested, as printed in reports.
PAIRED_TEST = "sign-flip permutation p-value; interval = shifts the sign-flip test does not reject"


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
    parts = [rate0, rated, flag0, flagged, errors, judged, label_total, labels, subtypes]
    columns = [p if p.ndim == 2 else p[:, None] for p in parts]
    # one copy, in row order: the rows are hashed to find the distinct ones (``resampling_weights``)
    table = np.concatenate(columns, axis=1, out=np.empty((n, sum(c.shape[1] for c in columns))))
    n_labels = len(LABELS)

    def evaluate(w: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
        """All statistics for weight rows ``w`` (shape (k, len(rows))) over ``rows`` of ``table``."""
        sums = w @ rows
        rate, rated_w, flag, flagged_w, errs, judged_w, total = (sums[:, i] for i in range(7))
        return {
            "rate": ratio(rate, rated_w),
            "flag": ratio(flag, flagged_w),
            "errors": errs,
            "error_share": ratio(errs, judged_w),
            "labels": ratio(sums[:, 7 : 7 + n_labels], total[:, None]),
            # per judged claim, not per subtyped claim: one subtyped claim among 50 is 2%, not a full bar
            "subtypes": ratio(sums[:, 7 + n_labels :], total[:, None]),
        }

    point = {k: v[0] for k, v in evaluate(np.ones((1, n)), table).items()} if n else None
    rng = np.random.default_rng(seed)
    rows, weights = resampling_weights(table, resamples, rng)
    chunks = [evaluate(w, rows) for w in weights]
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
        a=rounded(a[both].mean()) if both.any() else None,
        b=rounded(b[both].mean()) if both.any() else None,
        diff=Estimate.of(value, low, high),
        p_value=rounded(p),
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
        draws = mean_draws(b, resamples, rng) - mean_draws(a, resamples, rng)
        low, high = percentile_interval(draws, confidence)
    return Difference(
        metric=metric,
        paired=False,
        n_a=int(a.size),
        n_b=int(b.size),
        n_pairs=0,
        a=rounded(a.mean()) if a.size else None,
        b=rounded(b.mean()) if b.size else None,
        diff=Estimate.of(value, low, high),
        p_value=rounded(permutation_pvalue(a, b, resamples=max(resamples, 2000), rng=rng)),
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
        return {x: rounded(s[:, i].sum() / den) if den > 0 else None for i, x in enumerate(SUBTYPES)}

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
            found = few_distinct(np.column_stack([ds, de]))
            if found is not None:
                # the swapped pairs among the c_k pairs of one distinct difference: Binomial(c_k, 1/2)
                rows, sizes = found
                chunk = max(1, MAX_CELLS // len(sizes))
                while done < resamples:
                    size = min(chunk, resamples - done)
                    swaps = rng.binomial(sizes, 0.5, size=(size, len(sizes))).astype(float)
                    ta, ta_e = base_s + swaps @ rows[:, :-1], base_e + swaps @ rows[:, -1]
                    yield ta, tot_s - ta, ta_e, tot_e - ta_e
                    done += size
                return
            chunk = max(1, MAX_CELLS // max(n, 1))
            while done < resamples:
                size = min(chunk, resamples - done)
                swap = rng.integers(0, 2, size=(size, n)).astype(float)
                ta, ta_e = base_s + swap @ ds, base_e + swap @ de
                yield ta, tot_s - ta, ta_e, tot_e - ta_e
                done += size
        else:
            table = np.column_stack([np.vstack([sa, sb]), np.concatenate([ea, eb])])
            tot_s, tot_e = table[:, :-1].sum(axis=0), table[:, -1].sum()
            draw = group_members(table, len(sa), rng)
            while done < resamples:
                member, rows = draw(resamples - done)
                ta, ta_e = member @ rows[:, :-1], member @ rows[:, -1]
                yield ta, tot_s - ta, ta_e, tot_e - ta_e
                done += len(member)

    observed_chi = _chi_square(sa.sum(axis=0)[None, :], sb.sum(axis=0)[None, :])[0]
    observed_diff = sb.sum(axis=0) / eb.sum() - sa.sum(axis=0) / ea.sum()
    chi_hits, diff_hits, total = 0, np.zeros(len(SUBTYPES)), 0
    for ta, tb, ea_k, eb_k in permutations():
        chi_hits += int(np.sum(_chi_square(ta, tb) >= observed_chi - 1e-9))
        diff = ratio(tb, eb_k[:, None]) - ratio(ta, ea_k[:, None])
        diff_hits += np.sum(np.abs(np.nan_to_num(diff)) >= np.abs(observed_diff) - 1e-12, axis=0)
        total += len(ta)
    any_subtypes = (sa.sum() + sb.sum()) > 0
    p_values = {
        x: rounded((diff_hits[i] + 1) / (total + 1)) if counts_a[x] + counts_b[x] > 0 else None
        for i, x in enumerate(SUBTYPES)
    }
    return shift.model_copy(
        update={
            "statistic": rounded(observed_chi) if any_subtypes else None,
            "p_value": rounded((chi_hits + 1) / (total + 1)) if any_subtypes else None,
            "p_values": p_values,
            "p_holm": holm(p_values),
            "note": None if any_subtypes else "no claim carries a subtype in either group",
        }
    )
