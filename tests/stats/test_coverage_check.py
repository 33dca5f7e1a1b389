"""Placing a run on the simulated coverage grid (hallumeasure/stats/coverage_check.py)."""

import pytest

from hallumeasure.stats import coverage_check
from hallumeasure.stats.coverage_check import TARGET, check_coverage
from hallumeasure.stats.coverage_grid import COVERAGE


def test_a_run_on_a_grid_point_reads_that_cell():
    check = check_coverage("share", n_labelled=100, sensitivity=0.85, specificity=0.95, rate=0.05)
    assert check.checked and check.ppi_coverage == COVERAGE[("share", 0.05, 100, 0.85, 0.95)][0]
    assert check.rogan_gladen_coverage == COVERAGE[("share", 0.05, 100, 0.85, 0.95)][1]
    assert check.holds == (check.ppi_coverage >= TARGET)


def test_between_grid_points_the_lowest_neighbour_counts():
    check = check_coverage("rate", n_labelled=150, sensitivity=0.9, specificity=0.99, rate=0.1)
    around = [COVERAGE[("rate", r, n, se, 0.95)][0] for r in (0.05, 0.15) for n in (100, 200) for se in (0.85, 0.95)]
    assert check.ppi_coverage == min(around)
    assert "rate 0.05/0.15, 100/200 labelled, sensitivity 0.85/0.95, specificity 0.95" in check.cells


def test_unknown_sensitivity_consults_every_sensitivity():
    check = check_coverage("share", n_labelled=400, sensitivity=None, specificity=0.95, rate=0.01)
    assert check.ppi_coverage == min(COVERAGE[("share", 0.01, 400, se, 0.95)][0] for se in (0.7, 0.85, 0.95))


def test_high_rates_read_the_mirrored_cell():
    check = check_coverage("share", n_labelled=200, sensitivity=0.7, specificity=0.95, rate=0.95)
    assert check.ppi_coverage == COVERAGE[("share", 0.05, 200, 0.95, 0.7)][0]


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"n_labelled": 30}, "30 labelled responses is fewer than the 50"),
        ({"sensitivity": 0.6}, "judge sensitivity 0.60 is below the 0.7"),
        ({"confidence": 0.9}, "checks 95% intervals, not 90%"),
    ],
)
def test_outside_the_grid_the_check_says_it_was_not_made(kwargs, reason):
    settings = {"n_labelled": 100, "sensitivity": 0.85, "specificity": 0.85, "rate": 0.15, **kwargs}
    check = check_coverage("share", **settings)
    assert not check.checked and not check.holds and check.ppi_coverage is None
    assert reason in check.message and "may not hold" in check.message


def test_a_cell_that_under_covers_is_named_plainly(monkeypatch):
    table = dict(COVERAGE)
    table[("share", 0.05, 50, 0.7, 0.7)] = (0.881, 0.902)
    monkeypatch.setattr(coverage_check, "COVERAGE", table)
    check = check_coverage("share", n_labelled=50, sensitivity=0.7, specificity=0.7, rate=0.05)
    assert check.checked and not check.holds
    assert "does not hold here" in check.message and "only 88.1%" in check.message
    assert "Rogan-Gladen interval covered only 90.2%" in check.message
