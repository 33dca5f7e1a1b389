"""Does the simulation grid vouch for calibrate's intervals at a run's settings?

``benchmarks/ppi_coverage.py`` measures, per cell of (metric, true rate, labelled responses,
judge sensitivity, judge specificity), how often the 95% intervals of stratified PPI and of the
Bayesian Rogan-Gladen cover the truth, and writes the table to ``coverage_grid.py``. Here a run
is placed on that grid and given the lowest coverage among the cells around it: for each
coordinate the grid values on either side of the run's value (one value when it lies on or
beyond an end of the grid; every value when it is unknown, such as the sensitivity when no
labelled response is positive). Rates above 0.70 are read as their mirror image (one minus the
rate, with sensitivity and specificity swapped); rates between 0.30 and 0.70 use the 0.30
cells, the nearest simulated (coverage varied little between 0.15 and 0.30). Fewer labels
than the grid's smallest count, a judge weaker than its weakest, or a confidence other than
95% are outside the grid: the check says it was not made rather than guessing.
"""

from __future__ import annotations

import itertools

from pydantic import BaseModel, Field

from hallumeasure.report.coverage_grid import ACCURACY, COVERAGE, LABELS, RATES, RUNS_PER_CELL

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
) -> CoverageCheck:
    """Place a run on the grid of ``metric`` ("share" or "rate") and read the coverage there."""

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
    weak = [
        f"{name} {value:.2f}"
        for name, value in (("sensitivity", sensitivity), ("specificity", specificity))
        if value is not None and value < ACCURACY[0]
    ]
    if weak:
        return outside(f"judge {' and '.join(weak)} is below the {ACCURACY[0]} the simulation grid starts at")
    labels = _around(float(n_labelled), tuple(float(x) for x in LABELS))
    rates = _around(min(rate, RATES[-1]) if rate is not None else None, RATES)
    sens, spec = _around(sensitivity, ACCURACY), _around(specificity, ACCURACY)
    found = [COVERAGE[(metric, r, int(n), se, sp)] for r, n, se, sp in itertools.product(rates, labels, sens, spec)]
    ppi = min(c[0] for c in found)
    rg = min(c[1] for c in found)
    cells = (
        f"rate {_values(rates)}, {_values(labels)} labelled, sensitivity {_values(sens)}, "
        f"specificity {_values(spec)} ({RUNS_PER_CELL} simulated runs each)"
    )
    holds = ppi >= TARGET
    if holds:
        message = (
            f"the PPI interval covered the truth in at least {ppi:.1%} of simulated runs around this run ({cells})"
        )
    else:
        message = (
            f"the PPI interval does not hold here: around this run ({cells}) it covered the truth in only "
            f"{ppi:.1%} of simulated runs, against {GRID_CONFIDENCE:.0%} claimed; label more responses"
        )
    if rg < TARGET:
        message += f"; the Rogan-Gladen interval covered only {rg:.1%}"
    return CoverageCheck(
        checked=True, holds=holds, ppi_coverage=ppi, rogan_gladen_coverage=rg, cells=cells, message=message
    )
