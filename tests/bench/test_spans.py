"""Span metrics against hand-worked cases and the published scorers' definitions, and properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hallumeasure.bench.run import score_bench
from hallumeasure.bench.spans import char_prf, example_f1, mean_iou, score_spans, span_counts
from hallumeasure.bench.tables import bench_markdown
from hallumeasure.core.labels import Label
from hallumeasure.core.types import Claim, ClaimVerdict, ResponseResult, Span
from hallumeasure.runs.datasets import GoldSpan, LabelledSample


def _counts(*pairs):
    return np.array([span_counts(p, g) for p, g in pairs], dtype=float).reshape(-1, 4)


def test_hand_worked_character_figures():
    # response 1: predicted [0,10), gold [5,15): overlap 5, union 15
    # response 2: predicted nothing, gold [0,4): overlap 0, union 4
    # response 3: both empty (IoU 1.0 by convention)
    # response 4: predicted [2,4) and [3,6) (overlapping: 4 characters), gold nothing
    c = _counts(([(0, 10)], [(5, 15)]), ([], [(0, 4)]), ([], []), ([(2, 4), (3, 6)], []))
    p, r, f = char_prf(c)
    assert p == pytest.approx(5 / 14)  # 5 overlapping of 10 + 4 predicted characters
    assert r == pytest.approx(5 / 14)  # 5 of 10 + 4 gold characters
    assert f == pytest.approx(5 / 14)
    # examples: gold positive 1,1,0,0; predicted positive 1,0,0,1 -> P 1/2, R 1/2, F1 1/2
    assert example_f1(c) == pytest.approx(0.5)
    assert mean_iou(c) == pytest.approx((5 / 15 + 0 + 1 + 0) / 4)


def test_mark_nothing_scores_zero_and_iou_one_only_where_gold_is_empty():
    c = _counts(([], [(0, 3)]), ([], []))
    assert char_prf(c) == (0.0, 0.0, 0.0) and example_f1(c) == 0.0 and mean_iou(c) == 0.5


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=3),
            st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=3),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_metric_properties(examples):
    examples = [([(a, b) for a, b in p if a < b], [(a, b) for a, b in g if a < b]) for p, g in examples]
    c = _counts(*examples)
    p, r, f = char_prf(c)
    assert 0 <= p <= 1 and 0 <= r <= 1 and min(p, r) - 1e-12 <= f <= max(p, r) + 1e-12
    assert 0 <= mean_iou(c) <= 1 and 0 <= example_f1(c) <= 1
    perfect = _counts(*[(g, g) for _, g in examples])
    assert mean_iou(perfect) == 1.0
    if perfect[:, 1].sum():
        assert char_prf(perfect) == (1.0, 1.0, 1.0)
    # swapping prediction and gold swaps precision and recall and keeps F1 and IoU
    swapped = _counts(*[(g, p) for p, g in examples])
    assert char_prf(swapped)[:2] == pytest.approx((r, p)) and mean_iou(swapped) == pytest.approx(mean_iou(c))


RESPONSE = "Paris is in France. It has 9 million people."


def _sample(sid, spans, label="Evident Conflict"):
    gold = tuple(GoldSpan(start=a, end=b, text=RESPONSE[a:b], label=label) for a, b in spans)
    return LabelledSample(id=sid, dataset="toy", context="ctx", response=RESPONSE, label=int(bool(gold)), spans=gold)


def _result(sid, unsupported: list[tuple[int, int]]):
    claims = [
        Claim(id=f"{sid}:c{i}", sample_id=sid, index=i, text="x", spans=(Span(start=a, end=b),))
        for i, (a, b) in enumerate(unsupported)
    ]
    verdicts = [ClaimVerdict(claim_id=c.id, label=Label.CONTRADICTED, judge="t") for c in claims]
    return ResponseResult(
        sample_id=sid,
        claims=claims,
        verdicts=verdicts,
        n_claims=len(claims),
        hallucinated=bool(claims),
        n_evaluated=len(claims),
        n_unsupported=len(claims),
    )


def test_score_spans_puts_both_baselines_beside_the_judge():
    number = (RESPONSE.index("9 million"), RESPONSE.index("9 million") + 9)
    samples = [_sample("a", [number]), _sample("b", [])]
    results = [_result("a", [(20, 44)]), _result("b", [])]
    scores = score_spans(samples, results, n_resamples=50)
    assert scores is not None
    rows = {row.system: row.metrics for row in scores.rows}
    assert rows["judge"]["char_recall"].point == 1.0
    assert rows["judge"]["char_precision"].point == pytest.approx(9 / 24)
    assert rows["judge"]["mean_iou"].point == pytest.approx((9 / 24 + 1.0) / 2)
    assert rows["mark everything"]["char_recall"].point == 1.0
    assert rows["mark everything"]["char_precision"].point == pytest.approx(9 / (2 * len(RESPONSE)))
    assert rows["mark nothing"]["char_f1"].point == 0.0
    assert rows["mark nothing"]["mean_iou"].point == 0.5
    (label,) = scores.per_label
    assert (label.label, label.n_spans, label.n_chars) == ("Evident Conflict", 1, 9)
    table = bench_markdown(score_bench(samples, results, judge="t", extractor="e", n_resamples=50))
    assert "| mark everything |" in table and "| mark nothing |" in table and "mean IoU" in table


def test_no_span_truth_no_table():
    sample = LabelledSample(id="a", dataset="toy", context="c", response=RESPONSE, label=0)
    assert score_spans([sample], [_result("a", [])]) is None
