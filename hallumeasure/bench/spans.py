"""Span metrics: how well the characters a judge marks unsupported match the characters humans marked.

The definitions follow the published scorers:

* **Character precision / recall / F1** (RAGTruth's and LettuceDetect's span-level figures): the marked
  characters of every response pooled, precision = overlap / predicted characters, recall = overlap /
  gold characters, F1 their harmonic mean (0 when a denominator is 0, as in ``metrics.py``).
* **Example-level F1**: each response is positive when it has any marked character; F1 of the
  positive class over responses (LettuceDetect's "example level").
* **Mean IoU** (SemEval-2025 Mu-SHROOM): per response, |predicted ∩ gold| / |predicted ∪ gold| over
  character positions, 1.0 when both are empty, averaged over responses.

Per label type (the set's own labels, RAGTruth's ``Evident Conflict``...), recall is the share of gold
characters of that type that were marked; precision has no per-type meaning, since a judge's marks
carry its own labels. Two trivial systems stand beside every figure: **mark everything** (every
character of every response) and **mark nothing**. Intervals are percentile bootstraps over responses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import numpy as np
from pydantic import BaseModel, Field

from hallumeasure.bench.metrics import MetricCI, interval, precision_recall_f1
from hallumeasure.core.labels import Policy
from hallumeasure.core.spans import unsupported_spans
from hallumeasure.core.types import ResponseResult
from hallumeasure.runs.datasets import LabelledSample

#: The systems every span table shows, in order.
SYSTEMS = ("judge", "mark everything", "mark nothing")
METRICS = ("char_precision", "char_recall", "char_f1", "example_f1", "mean_iou")
#: Gold spans without a label type are counted under this name in the per-label table.
UNLABELLED = "(no label type)"


class SpanCounts(NamedTuple):
    """One response's character counts; the metrics are sums and means of these over responses."""

    predicted: int
    gold: int
    overlap: int
    union: int


def span_counts(predicted: Iterable[tuple[int, int]], gold: Iterable[tuple[int, int]]) -> SpanCounts:
    """Character counts of two sets of ``(start, end)`` spans over one response (overlaps counted once)."""
    p = {i for start, end in predicted for i in range(start, end)}
    g = {i for start, end in gold for i in range(start, end)}
    return SpanCounts(len(p), len(g), len(p & g), len(p | g))


def char_prf(counts: np.ndarray) -> tuple[float, float, float]:
    """Pooled character precision, recall and F1 of an ``(n, 4)`` array of ``SpanCounts``."""
    predicted, gold, overlap = (float(counts[:, i].sum()) for i in range(3))
    p = overlap / predicted if predicted else 0.0
    r = overlap / gold if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def example_f1(counts: np.ndarray) -> float:
    """F1 of "has a marked character" over responses."""
    return precision_recall_f1((counts[:, 1] > 0).astype(int), (counts[:, 0] > 0).astype(int))[2]


def mean_iou(counts: np.ndarray) -> float:
    """Mean over responses of overlap / union, 1.0 where both sides mark nothing (Mu-SHROOM's convention)."""
    if len(counts) == 0:
        return float("nan")
    union = counts[:, 3].astype(float)
    iou = np.where(union > 0, counts[:, 2] / np.where(union > 0, union, 1.0), 1.0)
    return float(iou.mean())


_METRIC_FNS: dict[str, Callable[[np.ndarray], float]] = {
    "char_precision": lambda c: char_prf(c)[0],
    "char_recall": lambda c: char_prf(c)[1],
    "char_f1": lambda c: char_prf(c)[2],
    "example_f1": example_f1,
    "mean_iou": mean_iou,
}


class SpanRow(BaseModel):
    """One system's span figures, each with its bootstrap interval."""

    system: str
    metrics: dict[str, MetricCI]


class SpanLabelRow(BaseModel):
    """Recall of the gold characters of one label type, for the judge and the two baselines."""

    label: str
    n_spans: int
    n_chars: int
    recall: dict[str, MetricCI]


class SpanScores(BaseModel):
    """The span table of a benchmark: the judge and both baselines, overall and per label type."""

    n_responses: int = Field(description="responses with span truth and a result")
    n_gold_spans: int
    n_marked_responses: int = Field(description="responses with at least one gold span")
    n_unlocated: int = Field(description="unsupported claims the judge could not place in the response")
    rows: list[SpanRow]
    per_label: list[SpanLabelRow]


def predicted_spans(result: ResponseResult, response: str, policy: Policy) -> list[tuple[int, int]]:
    """The judge's unsupported characters of one response, as ``(start, end)`` pairs."""
    return [(s.start, s.end) for s in unsupported_spans(response, result.claims, result.verdicts, policy)]


def score_spans(
    samples: Sequence[LabelledSample],
    results: Sequence[ResponseResult],
    policy: Policy | None = None,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> SpanScores | None:
    """The span table for the samples that have span truth and a result without error; None when none has."""
    policy = policy or Policy()
    by_id = {r.sample_id: r for r in results}
    pairs = [(s, by_id[s.id]) for s in samples if s.spans is not None and s.id in by_id and by_id[s.id].error is None]
    if not pairs:
        return None

    def boot(fn: Callable[[np.ndarray], float], counts: np.ndarray) -> MetricCI:
        return interval(fn, counts, n_resamples=n_resamples, seed=seed, confidence=confidence)

    marks: dict[str, list[list[tuple[int, int]]]] = {
        "judge": [predicted_spans(r, s.response, policy) for s, r in pairs],
        "mark everything": [[(0, len(s.response))] if s.response else [] for s, _ in pairs],
        "mark nothing": [[] for _ in pairs],
    }
    gold = [[(g.start, g.end) for g in s.spans or ()] for s, _ in pairs]
    rows = []
    for system in SYSTEMS:
        counts = _array(marks[system], gold)
        rows.append(SpanRow(system=system, metrics={m: boot(_METRIC_FNS[m], counts) for m in METRICS}))
    labels = sorted({g.label or UNLABELLED for s, _ in pairs for g in s.spans or ()})
    per_label = []
    for label in labels:
        typed = [[(g.start, g.end) for g in s.spans or () if (g.label or UNLABELLED) == label] for s, _ in pairs]
        recall = {}
        for system in SYSTEMS:
            recall[system] = boot(_METRIC_FNS["char_recall"], _array(marks[system], typed))
        per_label.append(
            SpanLabelRow(
                label=label,
                n_spans=sum(len(t) for t in typed),
                n_chars=sum(span_counts([], t).gold for t in typed),
                recall=recall,
            )
        )
    unlocated = 0
    for _, r in pairs:
        verdicts = {v.claim_id: v for v in r.verdicts}
        for c in r.claims:
            v = verdicts.get(c.id)
            unlocated += bool(v and v.ok and v.label and policy.is_unsupported(v.label) and not c.located)
    return SpanScores(
        n_responses=len(pairs),
        n_gold_spans=sum(len(g) for g in gold),
        n_marked_responses=sum(1 for g in gold if g),
        n_unlocated=unlocated,
        rows=rows,
        per_label=per_label,
    )


def _array(predicted: list[list[tuple[int, int]]], gold: list[list[tuple[int, int]]]) -> np.ndarray:
    """The ``(n, 4)`` array of ``SpanCounts`` of paired responses."""
    rows = [span_counts(p, g) for p, g in zip(predicted, gold, strict=True)]
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def span_markdown(scores: SpanScores) -> list[str]:
    """The span table and the per-label recall table as Markdown lines, both baselines beside the judge."""
    header = "| system | char P | char R | char F1 | example F1 | mean IoU |"
    out = [
        "## Spans (characters marked unsupported vs marked by humans)",
        "",
        f"{scores.n_responses} responses with span truth ({scores.n_marked_responses} with a marked span, "
        f"{scores.n_gold_spans} gold spans); {scores.n_unlocated} unsupported claim(s) could not be placed in "
        "their response. Mean IoU is 1.0 for a response where neither side marks anything.",
        "",
        header,
        "|---|---|---|---|---|---|",
    ]
    out += [f"| {row.system} | " + " | ".join(row.metrics[m].fmt() for m in METRICS) + " |" for row in scores.rows]
    if scores.per_label:
        out += ["", "| gold label type | spans | chars | " + " | ".join(f"R {s}" for s in SYSTEMS) + " |"]
        out.append("|---|---|---|" + "---|" * len(SYSTEMS))
        out += [
            f"| {row.label} | {row.n_spans} | {row.n_chars} | "
            + " | ".join(row.recall[s].fmt() for s in SYSTEMS)
            + " |"
            for row in scores.per_label
        ]
    return out
