"""The decided rule's thresholds by risk control, checked by simulation where the truth is known."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mapie")

from hallumeasure.bench.selective import calibrate_rule, measure_rule, predict


def simulate(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Responses whose score is calibrated (P(hallucinated | score) = score), flagged at 0.5, 70% decided by claims."""
    score = rng.beta(0.7, 0.7, n)
    label = (rng.random(n) < score).astype(float)
    flag = (score >= 0.5).astype(float)
    decided = (rng.random(n) < 0.7).astype(float)
    return np.column_stack([score, flag, decided, np.ones(n)]), label


def test_predict_decides_only_where_the_claims_and_the_score_agree() -> None:
    rows = np.array(
        [
            [0.05, 0, 1, 1],  # clean, low score: decided clean
            [0.05, 0, 0, 1],  # the claims leave it open: not decided
            [0.3, 0, 1, 1],  # clean but the score is in the band: not decided
            [0.95, 1, 1, 1],  # hallucinated, high score: decided hallucinated
            [0.95, 0, 1, 1],  # the flag and the score disagree: not decided
            [np.nan, np.nan, 0, 0],  # no checkable claim: never decided
        ]
    )
    out = predict(rows, 0.1, 0.9)
    assert out[0] == 0 and out[3] == 1
    assert np.isnan(out[[1, 2, 4, 5]]).all()


def test_the_chosen_rule_keeps_the_share_decided_wrongly_under_target_on_fresh_data() -> None:
    rng = np.random.default_rng(13)
    target, confidence, misses = 0.05, 0.9, 0
    fresh_rows, fresh_labels = simulate(200_000, rng)
    shares = []
    for _ in range(30):
        rows, labels = simulate(2000, rng)
        rule = calibrate_rule(rows, labels, target=target, confidence=confidence)
        assert rule is not None
        found = measure_rule(fresh_rows, fresh_labels, rule)
        misses += found["decided_wrongly"] > target
        shares.append(found["decided_share"])
    # the guarantee: a miss in at most 10% of calibration draws (30 draws: allow a binomial margin)
    assert misses <= 6
    # and it is not vacuous: a calibrated score lets the rule decide a good share
    assert np.mean(shares) > 0.2


def test_no_rule_when_the_flags_are_noise() -> None:
    rng = np.random.default_rng(5)
    n = 1500
    rows = np.column_stack([rng.random(n), rng.integers(0, 2, n), np.ones(n), np.ones(n)]).astype(float)
    labels = rng.integers(0, 2, n).astype(float)
    rule = calibrate_rule(rows, labels, target=0.05, confidence=0.9)
    # the only safe rules decide (almost) nothing
    found = measure_rule(rows, labels, rule)
    assert found["decided_wrongly"] <= 0.05


def test_per_group_control_keeps_a_noisier_group_under_target() -> None:
    rng = np.random.default_rng(3)
    clean_rows, clean_labels = simulate(1500, rng)
    noisy_rows, noisy_labels = simulate(1500, rng)
    noisy_labels = np.where(rng.random(1500) < 0.1, 1 - noisy_labels, noisy_labels)  # 10% of labels flipped
    rows, labels = np.vstack([clean_rows, noisy_rows]), np.concatenate([clean_labels, noisy_labels])
    groups = np.array(["clean"] * 1500 + ["noisy"] * 1500)
    rule = calibrate_rule(rows, labels, groups=groups)
    pooled = calibrate_rule(rows, labels)
    assert rule is not None and pooled is not None
    # the per-group rule is at least as strict as the pooled one, and holds in the noisier group
    assert rule[0] <= pooled[0] and rule[1] >= pooled[1]
    fresh_rows, fresh_labels = simulate(100_000, rng)
    fresh_labels = np.where(rng.random(100_000) < 0.1, 1 - fresh_labels, fresh_labels)
    assert measure_rule(fresh_rows, fresh_labels, rule)["decided_wrongly"] <= 0.05
