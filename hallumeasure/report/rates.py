"""A group's mean unsupported rate as every view shows it: one computation, one wording, one rounding.

``measure`` and ``show`` (terminal), ``Run.rates`` and the notebook's HTML, the viewer, ``compare`` and
``audit`` all take a group's numbers from :func:`group_rates` and their words from the functions
here. So a run shows the same two things wherever it is shown:

- the best-guess rate with its 95% bootstrap interval over responses (``0.285 [0.132, 0.438]``);
- when a keyless judge left claims unsure, the *unsure-claim bounds* (the rate with every unsure
  claim counted supported, and unsupported) and the interval that covers both bounds, labelled as
  such (``bounds 0.181-0.861, 95% CI covering them [0.083, 1.000]``), never in the rate's place.

Numbers are written with three decimals by Python (the viewer shows these strings rather than
rounding again in the browser, where ``toFixed`` rounds halves the other way).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from pydantic import BaseModel, ConfigDict

from hallumeasure.report.runs import Group, model_groups, response_units
from hallumeasure.report.unsure import UnsureStats, group_unsure_stats
from hallumeasure.runs.run import Run
from hallumeasure.stats.estimate import Estimate
from hallumeasure.stats.groups import GroupStats, Resampling, group_stats
from hallumeasure.stats.resampling import CONFIDENCE, RESAMPLES, SEED

#: The name of the whole run's group.
ALL = "(all)"
RATE_COLUMN = "mean unsupported rate [95% CI]"
SHARE_COLUMN = "hallucinated share [95% CI]"
#: Columns that a group with unsure claims adds, in this order (see :func:`unsure_cells`).
UNSURE_COLUMNS = ("unsure claims", "unsure-claim bounds", "95% CI covering the bounds", "decided")


def unsure_legend(judge: str | None = None) -> str:
    """What the unsure-claim columns mean, in one paragraph."""
    who = f"the {judge} judge" if judge else "the keyless judge"
    return (
        f"unsure claims: verdicts {who} could not tell (an LLM check would settle them). "
        "unsure-claim bounds: the mean unsupported rate with every unsure claim counted supported - and "
        "unsupported. 95% CI covering the bounds: from the lower limit of the first bound's interval to the "
        "upper limit of the second's; it is not the rate's interval. decided: responses whose hallucinated "
        "flag no unsure claim can change."
    )


class GroupRates(BaseModel):
    """One group's numbers: its statistics, and what its unsure claims leave open (None: none unsure)."""

    model_config = ConfigDict(frozen=True)

    stats: GroupStats
    unsure: UnsureStats | None = None

    @property
    def name(self) -> str:
        return self.stats.name


def number(value: float | None) -> str:
    """``0.285``, or ``-`` for a missing value."""
    return "-" if value is None or value != value else f"{value:.3f}"


def percent(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.0%}"


def estimate_text(value: Estimate | None) -> str:
    """``0.250 [0.100, 0.400]`` (``Estimate.format``), ``-`` without an estimate."""
    return "-" if value is None else value.format()


def rate_text(stats: GroupStats) -> str:
    return estimate_text(stats.mean_unsupported_rate)


def share_text(stats: GroupStats) -> str:
    return estimate_text(stats.hallucinated_share)


def unsure_cells(u: UnsureStats) -> dict[str, str]:
    """The cells of :data:`UNSURE_COLUMNS` for one group."""
    low, high = u.covering
    covering = "-" if low is None or high is None else f"[{number(low)}, {number(high)}]"
    return dict(
        zip(
            UNSURE_COLUMNS,
            (
                f"{u.n_unsure_claims} of {u.n_claims}",
                f"{number(u.rate_low.value)}-{number(u.rate_high.value)}",
                covering,
                percent(u.decided_share.value),
            ),
            strict=True,
        )
    )


def unsure_cell(u: UnsureStats | None, column: str) -> str:
    """One of :data:`UNSURE_COLUMNS` for a group, ``-`` for a group without unsure claims."""
    return "-" if u is None else unsure_cells(u)[column]


def bounds_phrase(u: UnsureStats) -> str:
    """The unsure part in one phrase: ``unsure-claim bounds 0.181-0.861, 95% CI covering them [0.083, 1.000],
    17% decided``."""
    cells = unsure_cells(u)
    return (
        f"unsure-claim bounds {cells['unsure-claim bounds']}, 95% CI covering them "
        f"{cells['95% CI covering the bounds']}, {cells['decided']} decided"
    )


def _options(resamples: int, seed: int, confidence: float) -> Resampling:
    return {"resamples": resamples, "seed": seed, "confidence": confidence}


def group_rates(
    run: Run,
    group: Group | None,
    units: pd.DataFrame,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> GroupRates:
    """The numbers of one model's group of ``run`` (``group``), or of the whole run (None).

    ``units`` are the group's response units (:func:`hallumeasure.report.runs.response_units`).
    """
    options = _options(resamples, seed, confidence)
    label = group.name if group is not None else ALL
    stats = group_stats(units, label, **options)
    model = group.model if group is not None else None
    unsure = group_unsure_stats(run.responses, run.claims, label, model, **options)
    return GroupRates(stats=stats, unsure=unsure)


def run_rates(
    run: Run, *, resamples: int = RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
) -> list[GroupRates]:
    """The whole run (``(all)``), then each model in it."""
    units = response_units(run)
    options = _options(resamples, seed, confidence)
    whole = group_rates(run, None, units, **options)
    groups = model_groups([run], {run.name: units})
    if len(groups) == 1:  # one model: its rows are the run's, and so are its numbers (the bootstrap is seeded)
        return [whole, renamed_rates(whole, groups[0].name)]
    return [whole, *(group_rates(run, g, g.units, **options) for g in groups)]


def renamed_rates(rates: GroupRates, name: str) -> GroupRates:
    """The same numbers under another group's name (a group with the very same rows)."""
    unsure = rates.unsure.model_copy(update={"name": name}) if rates.unsure is not None else None
    return GroupRates(stats=rates.stats.model_copy(update={"name": name}), unsure=unsure)


def rates_frame(rows: Sequence[GroupRates]) -> pd.DataFrame:
    """A table of groups: responses, claims, the rate and hallucinated share with intervals, error rows, and
    the unsure-claim columns when any group has unsure claims (``-`` for a group without)."""
    unsure = any(r.unsure is not None for r in rows)
    records = []
    for r in rows:
        s = r.stats
        record = {
            "group": s.name,
            "responses": s.n_responses,
            "claims": s.n_claims,
            RATE_COLUMN: rate_text(s),
            SHARE_COLUMN: share_text(s),
            "error rows": s.n_error_rows,
        }
        if unsure:
            record |= unsure_cells(r.unsure) if r.unsure is not None else dict.fromkeys(UNSURE_COLUMNS, "-")
        records.append(record)
    return pd.DataFrame(records)
