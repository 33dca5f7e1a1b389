"""Statistics against known cases: interval coverage, test size and power, exact small cases."""

import numpy as np
import pandas as pd
import pytest

from hallumeasure.stats.bootstrap import bootstrap_mean
from hallumeasure.stats.estimate import Estimate
from hallumeasure.stats.groups import (
    LABELS,
    SUBTYPES,
    group_stats,
    paired_difference,
    subtype_shift,
    unpaired_difference,
)
from hallumeasure.stats.permutation import holm, permutation_pvalue, sign_flip_pvalue, sign_flip_test


def test_bootstrap_interval_covers_the_true_mean_at_about_the_nominal_rate():
    rng = np.random.default_rng(1234)
    true_mean = 2 / 7  # Beta(2, 5): skewed and bounded like per-response rates
    trials, hits = 300, 0
    for trial in range(trials):
        values = rng.beta(2, 5, size=40)
        est = bootstrap_mean(values, resamples=500, seed=trial)
        hits += est.low <= true_mean <= est.high
    coverage = hits / trials
    # Percentile intervals run slightly narrow at n=40; a 95% interval should still cover ~0.92-0.96.
    assert 0.89 <= coverage <= 0.985, coverage


def test_bootstrap_is_reproducible_with_a_seed_and_ignores_undefined_values():
    values = np.array([0.1, 0.5, np.nan, 0.9, 0.3])
    a = bootstrap_mean(values, resamples=300, seed=7)
    b = bootstrap_mean(values, resamples=300, seed=7)
    assert a == b
    assert a.value == pytest.approx(0.45)
    assert a.low <= a.value <= a.high
    assert bootstrap_mean(np.array([np.nan, np.nan])).value is None


def test_paired_test_keeps_its_size_when_there_is_no_difference():
    rng = np.random.default_rng(99)
    alpha, trials, rejections = 0.05, 400, 0
    for trial in range(trials):
        a = rng.uniform(0, 1, size=30)
        b = a + rng.normal(0, 0.2, size=30)  # symmetric noise, no shift
        rejections += paired_difference(a, b, "rate", resamples=400, seed=trial).p_value < alpha
    rate = rejections / trials
    assert 0.02 <= rate <= 0.09, rate


def test_paired_test_finds_a_planted_difference():
    rng = np.random.default_rng(5)
    detected = 0
    for trial in range(60):
        a = rng.uniform(0, 1, size=30)
        b = a + 0.15 + rng.normal(0, 0.2, size=30)
        diff = paired_difference(a, b, "rate", resamples=400, seed=trial)
        detected += diff.p_value < 0.05 and diff.diff.low > 0
    assert detected >= 54  # power is about 0.99 here


def test_paired_difference_uses_only_complete_pairs():
    a = np.array([0.0, 0.5, np.nan, 1.0])
    b = np.array([0.5, 0.5, 0.2, np.nan])
    diff = paired_difference(a, b, "rate", resamples=200)
    assert diff.n_pairs == 2 and diff.diff.value == pytest.approx(0.25)
    assert diff.paired and diff.a == pytest.approx(0.25) and diff.b == pytest.approx(0.5)


def test_sign_flip_is_exact_for_few_pairs():
    rng = np.random.default_rng(0)
    # Five equal positive differences: only "all +" and "all -" reach the observed mean, 2 of 32 patterns.
    assert sign_flip_pvalue(np.ones(5), rng=rng) == pytest.approx(2 / 32)
    assert sign_flip_pvalue(np.zeros(4), rng=rng) == 1.0
    assert sign_flip_pvalue(np.array([]), rng=rng) is None


def test_unpaired_permutation_test_size_and_power():
    rng = np.random.default_rng(11)
    null = sum(
        permutation_pvalue(rng.normal(0, 1, 25), rng.normal(0, 1, 25), resamples=400, rng=rng) < 0.05
        for _ in range(200)
    )
    assert 0.01 <= null / 200 <= 0.10
    diff = unpaired_difference(rng.normal(0, 1, 40), rng.normal(1, 1, 40), "x", resamples=500)
    assert not diff.paired and diff.p_value < 0.01 and diff.diff.low > 0


def _units(rates, labels, subtypes, errors=None):
    n = len(rates)
    table = pd.DataFrame(
        {
            "rate": rates,
            "hallucinated": [float(r > 0) if r == r else np.nan for r in rates],
            "n_claims": [sum(row) for row in labels],
            "n_evaluated": [sum(row[:4]) for row in labels],
            "error_rows": errors or [0] * n,
        }
    )
    table["judged_units"] = table["n_claims"] + (table["error_rows"] > 0)
    for i, name in enumerate(LABELS):
        table[f"label_{name}"] = [row[i] for row in labels]
    for name in SUBTYPES:
        table[f"subtype_{name}"] = [row.get(name, 0) for row in subtypes]
    return table


def test_group_stats_point_estimates_on_a_hand_made_group():
    # labels per row: supported, contradicted, absent, partially_supported, unevaluatable
    units = _units(
        rates=[0.0, 0.5, 1.0, np.nan],
        labels=[[2, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 0, 1], [0, 0, 0, 0, 0]],
        subtypes=[{}, {"number": 1}, {"entity": 1}, {}],
        errors=[0, 0, 0, 2],
    )
    s = group_stats(units, "g", resamples=300, seed=1)
    assert s.n_responses == 4 and s.n_rated == 3 and s.n_error_rows == 2
    assert s.mean_unsupported_rate.value == pytest.approx(0.5)
    assert s.hallucinated_share.value == pytest.approx(2 / 3)
    assert s.label_shares["supported"].value == pytest.approx(3 / 6)
    # a subtype's share is of every judged claim (1 of 6), not of the 2 subtyped claims
    assert s.subtype_shares["number"].value == pytest.approx(1 / 6, abs=1e-6)
    assert s.error_rows.value == 2
    assert s.label_counts["absent"] == 1 and s.subtype_counts["entity"] == 1
    for est in (s.mean_unsupported_rate, s.hallucinated_share, s.label_shares["supported"]):
        assert est.low <= est.value <= est.high


def test_group_stats_of_an_empty_group_has_no_values():
    s = group_stats(_units([], [], []), "empty")
    assert s.n_responses == 0 and s.mean_unsupported_rate.value is None


def test_subtype_shift_finds_a_planted_shift_and_not_a_null_one():
    k = len(SUBTYPES)
    number, other = SUBTYPES.index("number"), SUBTYPES.index("other")
    rng = np.random.default_rng(3)
    n = 40
    a = np.zeros((n, k))
    a[:, other] = rng.integers(0, 2, n)
    b = a.copy()
    b[:, number] = rng.integers(1, 3, n)  # the current model adds number errors everywhere
    evaluated = np.full(n, 4.0)
    shift = subtype_shift(a, b, evaluated, evaluated, paired=True, resamples=1000, seed=0)
    assert shift.p_value < 0.01
    assert shift.p_holm["number"] < 0.01 and shift.rates_b["number"] > shift.rates_a["number"]
    assert shift.p_holm["other"] == 1.0

    same = subtype_shift(a, a.copy(), evaluated, evaluated, paired=False, resamples=1000, seed=0)
    assert same.p_value > 0.5 and same.p_holm["number"] is None


def test_subtype_shift_without_subtypes_says_so():
    zeros = np.zeros((5, len(SUBTYPES)))
    shift = subtype_shift(zeros, zeros, np.ones(5), np.ones(5), paired=True)
    assert shift.p_value is None and "subtype" in shift.note


def test_holm_adjustment():
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": None})
    assert adjusted == {"a": 0.03, "b": 0.06, "c": 0.06, "d": None}


def test_estimate_formatting():
    assert Estimate.of(0.25, 0.1, 0.4).format() == "0.250 [0.100, 0.400]"
    assert Estimate.of(None).format() == "-"
    assert Estimate.of(3.0, 1.0, 5.0).format(0) == "3 [1, 5]"


def test_paired_interval_agrees_with_the_exact_test_at_few_pairs():
    # The case a reviewer found: 8 pairs, exact p 0.125, yet a percentile bootstrap interval excluded 0.
    a = np.zeros(8)
    b = np.array([0.0, 0.25, 0.5, 0.5, 0.0, 1.0, 0.67, 0.0])
    assert bootstrap_mean(b - a, resamples=2000, seed=0).low > 0
    diff = paired_difference(a, b, "rate", resamples=2000, seed=0)
    assert diff.p_value == pytest.approx(0.0625)
    assert diff.diff.low <= 0 <= diff.diff.high
    assert diff.diff.low <= diff.diff.value <= diff.diff.high


@pytest.mark.parametrize("n", [3, 8, 12, 20, 40])
def test_paired_interval_excludes_zero_exactly_when_p_is_below_alpha(n):
    rng = np.random.default_rng(n)
    for trial in range(150):
        d = rng.choice([-1.0, -0.5, 0.0, 0.25, 1 / 3, 1.0], size=n) + (trial % 3) * 0.1
        p, low, high = sign_flip_test(d, resamples=2000, rng=np.random.default_rng(trial))
        assert (low <= 0 <= high) == (p >= 0.05), (d, p, low, high)
        assert low <= d.mean() + 1e-9 and d.mean() - 1e-9 <= high


def test_paired_interval_with_two_pairs_spans_every_possible_difference():
    diff = paired_difference(np.zeros(2), np.ones(2), "share")
    assert diff.p_value == pytest.approx(0.5) and (diff.diff.low, diff.diff.high) == (-1.0, 1.0)
