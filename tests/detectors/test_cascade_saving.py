"""The arithmetic of benchmarks/cascade_saving.py: threshold at 95% recall, cleared responses, unsure claims."""

from __future__ import annotations

import math

import numpy as np
import pytest
from testdata import load_script

saving = load_script("benchmarks/cascade_saving.py")


def test_unsure_and_flagged_claims_are_always_sent():
    claims = [(0.1, False, False), (0.2, True, False), (0.05, False, True)]
    assert saving.claim_keys(claims, unsure_rule=True) == [0.1, math.inf, math.inf]
    assert saving.claim_keys(claims, unsure_rule=False) == [0.1, math.inf, 0.05]


def test_threshold_is_the_highest_that_keeps_the_recall_by_brute_force():
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(5, 60))
        y = (rng.random(n) < 0.6).astype(int)
        if not y.any():
            continue
        worst = np.round(rng.random(n), 2)
        t = saving.threshold_for(y, worst)
        positives = worst[y == 1]
        assert (positives >= t).mean() >= saving.RECALL
        higher = [c for c in np.unique(worst) if c > t]
        assert all((positives >= c).mean() < saving.RECALL for c in higher)


def test_an_unsure_claim_keeps_its_response_from_being_cleared():
    # 20 hallucinated responses with a high score, 20 faithful ones with low scores; one faithful response has an
    # unsure claim, so with the unsure rule it is sent, and fewer responses and claims are cleared
    responses = [[(0.9, False, False)] for _ in range(20)] + [[(0.1, False, False)] for _ in range(19)]
    responses.append([(0.1, False, False), (0.1, False, True)])
    y = np.array([1] * 20 + [0] * 20)
    with_rule = saving.savings(y, [saving.claim_keys(c, unsure_rule=True) for c in responses], 100, 0)
    without = saving.savings(y, [saving.claim_keys(c, unsure_rule=False) for c in responses], 100, 0)
    assert with_rule["recall"] == without["recall"] == 1.0
    assert without["responses_cleared"]["point"] == pytest.approx(20 / 40)
    assert with_rule["responses_cleared"]["point"] == pytest.approx(19 / 40)
    assert without["claims_not_sent"]["point"] == pytest.approx(21 / 41)
    # claims go one by one: the unsure claim is sent, its sure neighbour is not
    assert with_rule["claims_not_sent"]["point"] == pytest.approx(20 / 41)
    assert with_rule["hallucinated_among_cleared"] == 0.0
