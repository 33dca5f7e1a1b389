"""Does the simulation grid vouch for calibrate's intervals at a run's settings?

``benchmarks/ppi_coverage.py`` measures, per cell of (metric, true rate, labelled responses,
judge sensitivity, judge specificity), how often the 95% intervals of stratified PPI and of the
Bayesian Rogan-Gladen cover the truth, and writes the table to ``coverage_grid.py``. Here a run
is placed on that grid and given the lowest coverage among the cells around it: for each
coordinate the grid values on either side of the run's value (one value when it lies on or
beyond an end of the grid; every value when it is unknown, such as the sensitivity when no
labelled response is positive). The judge's sensitivity and specificity come from few labels
(one to three positives at low rates), so when their counts are given each is read as its 95%
Clopper-Pearson interval: every grid value the interval reaches is plausible, and the check
warns only when no plausible judge is covered (the interval excludes the covered part of the
grid), as a point estimate from three labels would cry wolf.
Rates above 0.70 are read as their mirror image (one minus the
rate, with sensitivity and specificity swapped); rates between 0.30 and 0.70 use the 0.30
cells, the nearest simulated (coverage varied little between 0.15 and 0.30). Fewer labels
than the grid's smallest count, a judge weaker than its weakest, or a confidence other than
95% are outside the grid: the check says it was not made rather than guessing.
"""

from __future__ import annotations

import itertools

from pydantic import BaseModel, Field
from scipy import stats

from hallumeasure.stats.coverage_grid import ACCURACY, COVERAGE, LABELS, RATES, RUNS_PER_CELL

#: Coverage below this (of a nominal 95% interval) means the interval does not hold.
TARGET = 0.93
GRID_CONFIDENCE = 0.95


class CoverageCheck(BaseModel):
    """Where a run sits on the simulation grid, and what coverage its intervals had there."""

    checked: bool = Field(description="False when the run lies outside the simulated grid.")
    holds: bool = Field(description="Checked, and the PPI interval covered at least TARGET of simulated runs.")
    ppi_coverage: float | None = Field(
        description="Lowest simulated coverage of the PPI interval in the cells around the run."
    )
    rogan_gladen_coverage: float | None = Field(description="The same for the Bayesian Rogan-Gladen interval.")
    cells: str = Field(description="The grid cells consulted.")
    message: str = Field(description="The verdict in one sentence.")


def _around(value: float | None, grid: tuple[float, ...]) -> list[float]:
    if value is None:
        return list(grid)
    value = round(value, 9)  # so that 1 - 0.95 lands on the grid's 0.05
    if value <= grid[0]:
        return [grid[0]]
    if value >= grid[-1]:
        return [grid[-1]]
    if value in grid:
        return [value]
    upper = next(g for g in grid if g > value)
    return [grid[grid.index(upper) - 1], upper]


def _plausible(counts: tuple[int, int] | None, grid: tuple[float, ...]) -> tuple[list[float], float | None]:
    """Grid values a share of ``counts`` (k of n) may have: those its 95% Clopper-Pearson interval reaches
    and the ones bracketing its ends; and the interval's upper end (None without labels)."""
    if counts is None or counts[1] == 0:
        return list(grid), None
    k, n = counts
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=GRID_CONFIDENCE, method="exact")
    low, high = float(ci.low), float(ci.high)
    inside = {g for g in grid if low <= g <= high} | set(_around(low, grid)) | set(_around(high, grid))
    return sorted(inside), high


def _values(xs: list[float]) -> str:
    return "/".join(f"{x:g}" for x in xs)


def check_coverage(
    metric: str,
    *,
    n_labelled: int,
    sensitivity: float | None,
    specificity: float | None,
    rate: float | None,
    confidence: float = GRID_CONFIDENCE,
    sensitivity_counts: tuple[int, int] | None = None,
    specificity_counts: tuple[int, int] | None = None,
) -> CoverageCheck:
    """Place a run on the grid of ``metric`` ("share" or "rate") and read the coverage there.

    With ``sensitivity_counts`` and ``specificity_counts`` (judged positive of labelled positive,
    judged negative of labelled negative) the judge is every one their intervals allow, and the
    most favourable plausible judge decides; without them the point values do, at their worst
    neighbour.
    """

    def outside(why: str) -> CoverageCheck:
        return CoverageCheck(
            checked=False,
            holds=False,
            ppi_coverage=None,
            rogan_gladen_coverage=None,
            cells="",
            message=f"coverage not checked: {why}; the interval may not hold",
        )

    if abs(confidence - GRID_CONFIDENCE) > 1e-9:
        return outside(f"the simulation grid checks {GRID_CONFIDENCE:.0%} intervals, not {confidence:.0%}")
    if n_labelled < LABELS[0]:
        return outside(
            f"{n_labelled} labelled responses is fewer than the {LABELS[0]} the simulation grid starts at; "
            f"label at least {LABELS[0]}"
        )
    if rate is not None and rate > 1 - RATES[-1]:
        rate, sensitivity, specificity = 1 - rate, specificity, sensitivity
        sensitivity_counts, specificity_counts = specificity_counts, sensitivity_counts
    by_interval = sensitivity_counts is not None or specificity_counts is not None
    plausible_sens, top_sens = _plausible(sensitivity_counts, ACCURACY)
    plausible_spec, top_spec = _plausible(specificity_counts, ACCURACY)
    weak = [
        f"{name} {value:.2f}" + ("" if top is None else f" (95% interval up to {top:.2f})")
        for name, value, top in (
            ("sensitivity", sensitivity, top_sens if by_interval else None),
            ("specificity", specificity, top_spec if by_interval else None),
        )
        if value is not None and value < ACCURACY[0] and (not by_interval or top is None or top < ACCURACY[0])
    ]
    if weak:
        return outside(f"judge {' and '.join(weak)} is below the {ACCURACY[0]} the simulation grid starts at")
    labels = _around(float(n_labelled), tuple(float(x) for x in LABELS))
    rates = _around(min(rate, RATES[-1]) if rate is not None else None, RATES)
    if by_interval:
        sens, spec = plausible_sens, plausible_spec
    else:
        sens, spec = _around(sensitivity, ACCURACY), _around(specificity, ACCURACY)

    def worst(se: float, sp: float) -> tuple[float, float]:
        cells = [COVERAGE[(metric, r, int(n), se, sp)] for r, n in itertools.product(rates, labels)]
        return min(c[0] for c in cells), min(c[1] for c in cells)

    judges = [worst(se, sp) for se, sp in itertools.product(sens, spec)]
    # by interval: the most favourable plausible judge (a warning needs every plausible one to fail);
    # by point: the worst neighbour
    pick = max if by_interval else min
    ppi = pick(c[0] for c in judges)
    rg = pick(c[1] for c in judges)
    cells = (
        f"rate {_values(rates)}, {_values(labels)} labelled, sensitivity {_values(sens)}, "
        f"specificity {_values(spec)}{' (within their 95% intervals)' if by_interval else ''} "
        f"({RUNS_PER_CELL} simulated runs each)"
    )
    holds = ppi >= TARGET
    if holds:
        message = (
            f"the PPI interval covered the truth in at least {ppi:.1%} of simulated runs around this run ({cells})"
            if not by_interval
            else f"the PPI interval covered the truth in {ppi:.1%} of simulated runs at a judge this run's labels "
            f"allow ({cells})"
        )
    else:
        message = (
            f"the PPI interval does not hold here: around this run ({cells}) it covered the truth in only "
            f"{ppi:.1%} of simulated runs{' at best' if by_interval else ''}, against {GRID_CONFIDENCE:.0%} "
            "claimed; label more responses"
        )
    if rg < TARGET:
        message += f"; the Rogan-Gladen interval covered only {rg:.1%}"
    return CoverageCheck(
        checked=True, holds=holds, ppi_coverage=ppi, rogan_gladen_coverage=rg, cells=cells, message=message
    )
