import math

import numpy as np
import pytest

from hallumeasure.bench.metrics import (
    accuracy,
    balanced_accuracy,
    macro_f1,
    per_class_prf,
    precision_recall_f1,
    roc_auc,
    weighted_f1,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def sk():
    """scikit-learn's metrics, the reference the agreement tests compare against."""
    return pytest.importorskip("sklearn.metrics")


CASES = range(60)


def _binary_case(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 80))
    y = rng.integers(0, 2, n)
    y[0], y[1] = 0, 1  # both classes present
    # Coarse scores so that ties are frequent.
    scores = np.round(y * rng.uniform(0, 1) + rng.normal(0, 1, n), int(rng.integers(0, 3)))
    pred = rng.integers(0, 2, n)
    return y, scores, pred


@pytest.mark.parametrize("seed", CASES)
def test_binary_metrics_agree_with_sklearn(seed: int, sk) -> None:
    y, scores, pred = _binary_case(seed)
    assert roc_auc(y, scores) == pytest.approx(sk.roc_auc_score(y, scores))
    assert balanced_accuracy(y, pred) == pytest.approx(sk.balanced_accuracy_score(y, pred))
    assert accuracy(y, pred) == pytest.approx(sk.accuracy_score(y, pred))
    p, r, f = precision_recall_f1(y, pred)
    assert p == pytest.approx(sk.precision_score(y, pred, zero_division=0))
    assert r == pytest.approx(sk.recall_score(y, pred, zero_division=0))
    assert f == pytest.approx(sk.f1_score(y, pred, zero_division=0))
    _, _, f0 = precision_recall_f1(y, pred, positive=0)
    assert f0 == pytest.approx(sk.f1_score(y, pred, pos_label=0, zero_division=0))


@pytest.mark.parametrize("seed", CASES)
def test_multiclass_f1_agrees_with_sklearn(seed: int, sk) -> None:
    rng = np.random.default_rng(1000 + seed)
    names = np.array(["number", "entity", "temporal", "other", "hyperbole"])
    n = int(rng.integers(1, 60))
    y = names[rng.integers(0, 5, n)]
    pred = np.where(rng.uniform(size=n) < 0.5, y, names[rng.integers(0, 5, n)])
    assert macro_f1(y, pred) == pytest.approx(sk.f1_score(y, pred, average="macro", zero_division=0))
    assert weighted_f1(y, pred) == pytest.approx(sk.f1_score(y, pred, average="weighted", zero_division=0))
    labels = ["number", "entity", "temporal"]
    assert macro_f1(y, pred, labels) == pytest.approx(
        sk.f1_score(y, pred, labels=labels, average="macro", zero_division=0)
    )
    assert weighted_f1(y, pred, labels) == pytest.approx(
        sk.f1_score(y, pred, labels=labels, average="weighted", zero_division=0)
    )
    assert balanced_accuracy(y, pred) == pytest.approx(sk.balanced_accuracy_score(y, pred))


def test_all_ties_give_half_and_perfect_ranking_gives_one() -> None:
    assert roc_auc([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5]) == 0.5
    assert roc_auc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.9]) == 1.0
    assert roc_auc([True, False], [0.0, 1.0]) == 0.0


def test_one_class_edge_cases() -> None:
    assert math.isnan(roc_auc([1, 1, 1], [0.2, 0.5, 0.9]))
    assert math.isnan(roc_auc([0, 0], [0.2, 0.5]))
    # No predicted positives and no true positives: zero division gives 0.0, no warning.
    assert precision_recall_f1([0, 0, 0], [0, 0, 0]) == (0.0, 0.0, 0.0)
    assert precision_recall_f1([1, 1], [1, 1]) == (1.0, 1.0, 1.0)
    assert balanced_accuracy([1, 1, 1], [1, 0, 1]) == pytest.approx(2 / 3)
    assert macro_f1([], []) == 0.0
    assert weighted_f1(["a"], ["b"], labels=["c"]) == 0.0
    assert per_class_prf(["a", "b"], ["a", "a"])["b"] == (0.0, 0.0, 0.0, 1)


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="length"):
        precision_recall_f1([0, 1], [0])
