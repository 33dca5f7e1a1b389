"""From claim signals to the rows the model reads: one row per response, aggregated over its claims.

The model is trained on response labels (most public sets label whole responses), so its input
is a response row: the worst and the average claim on each signal that says "supported", and the
totals of each signal that says "not supported". A single claim is scored as a response made of
that claim alone. Every aggregate has a known direction (more missing numbers can only mean more
risk), which training enforces as a monotonic constraint.

The model reads only signals whose meaning holds across kinds of text: n-gram overlap, and the
typed checks (numbers, dates, names, negation, opposites, hedges, intensity, attribution).
Plain word novelty and response length are left out on purpose: on the public sets their
relation to the label flips from one set to another (faithful paraphrases use new words; in
one QA set the wrong answers are simply longer), so a model that leans on them does not
transfer. benchmarks/results/offline_quality.md shows them as baselines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hallumeasure.judges.offline.signals import ERROR_DIFFERENCE_FEATURES, FEATURES

#: Higher is safer: aggregated by the worst (min) and the average claim.
_SAFER = ("bigram_recall", "trigram_recall", "entity_support")
#: Counts of trouble: summed over claims.
_RISKIER_COUNTS = (
    "n_novel_capitalised",
    "antonym_conflict",
    "exclusive_conflict",
    *ERROR_DIFFERENCE_FEATURES,
    "n_numbers_missing",
    "n_entities_missing",
    "n_intensifiers_novel",
)
#: Flags of trouble: the worst claim.
_RISKIER_FLAGS = ("number_conflict", "date_conflict", "negation_mismatch", "hedge_dropped", "attribution_dropped")
#: No direction imposed.
_NEUTRAL = (("max", "hedge_added"),)

RESPONSE_AGGREGATES: tuple[tuple[str, str, int], ...] = (
    tuple((agg, name, -1) for name in _SAFER for agg in ("min", "mean"))
    + tuple(("sum", name, 1) for name in _RISKIER_COUNTS)
    + tuple(("max", name, 1) for name in _RISKIER_FLAGS)
    + tuple((agg, name, 0) for agg, name in _NEUTRAL)
)
# The number of claims is left out too: it identifies the data set more than it predicts errors, and
# without it a single claim is scored on the same footing as a whole response.
RESPONSE_FEATURES = tuple(f"{agg}_{name}" for agg, name, _ in RESPONSE_AGGREGATES)
RESPONSE_MONOTONIC = tuple(sign for _, _, sign in RESPONSE_AGGREGATES)

_INDEX = {name: i for i, name in enumerate(FEATURES)}
_AGG: dict[str, Callable[[Sequence[float]], float]] = {
    "min": min,
    "max": max,
    "sum": sum,
    "mean": lambda c: sum(c) / len(c),
}


#: Each response feature as (aggregate, column of the claim vectors), looked up once rather than per row.
_PLAN = tuple((_AGG[agg], _INDEX[name]) for agg, name, _ in RESPONSE_AGGREGATES)


def response_vector(vectors: Sequence[Sequence[float]]) -> list[float]:
    """Aggregate claim feature vectors into one response row (all zeros when there is no claim)."""
    if not vectors:
        return [0.0] * len(RESPONSE_FEATURES)
    columns = list(zip(*vectors, strict=True))  # one tuple per claim feature, claims in order
    return [float(aggregate(columns[column])) for aggregate, column in _PLAN]
