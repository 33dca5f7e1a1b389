"""The records of an audit: each gate's result and decision, and the whole result (its settings are in
``audit_settings``).

``hallumeasure.report.audit`` fills them; ``audit.json`` is ``AuditResult`` as JSON, and its
schema is ``schemas/audit_result.schema.json``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hallumeasure.report.audit_settings import AuditGates
from hallumeasure.report.comparison import Comparison
from hallumeasure.report.runs import RunInfo
from hallumeasure.report.unsure import UnsureStats
from hallumeasure.stats.audit_bounds import JudgedBounds, Outcome
from hallumeasure.stats.groups import GroupStats
from hallumeasure.stats.judge_error import JudgeError
from hallumeasure.stats.style_shift import StyleShift

Status = Literal["pass", "regression", "inconclusive", "incomplete", "usage_error"]


class RiseDecision(BaseModel):
    """How one gated metric was decided: its difference, one-sided bounds and what n could decide it."""

    metric: str
    outcome: Outcome
    n: int = Field(description="Shared samples (paired) or responses in the smaller run (unpaired).")
    paired: bool
    difference: float | None = Field(description="current - baseline")
    lower_bound: float | None = Field(description="One-sided lower confidence bound of the difference.")
    upper_bound: float | None = Field(description="One-sided upper confidence bound of the difference.")
    confidence: float = Field(description="Level of each one-sided bound (1 - alpha).")
    margin: float = Field(description="Tolerated rise: pass when upper_bound <= margin.")
    regression_above: float = Field(
        description="Regression when lower_bound > this (the margin, or 0 with fail_on_any_significant_rise)."
    )
    sd_difference: float | None = Field(description="Standard deviation of the per-sample differences.")
    min_detectable_rise: float | None = Field(
        description="Smallest true rise flagged as a regression with the stated power at this n."
    )
    samples_needed: int | None = Field(
        description="Shared samples that decide (pass or regression) with the stated power if the true rise is "
        "the observed one; None when not computable (no spread, or observed rise = margin)."
    )
    power: float
    method: str
    undecided: int = Field(
        default=0, description="Compared samples whose response the keyless judge could not decide (either run)."
    )
    rests_on_undecided: bool = Field(
        default=False,
        description="A sensitivity line, not the gate: the regression would not show with the undecided "
        "responses counted as unchanged.",
    )
    judge_error: JudgeError | None = Field(
        default=None, description="The judge's error the decision allowed for (its Youden index J as a range)."
    )
    judged: JudgedBounds | None = Field(default=None, description="The thresholds and bounds after the judge's error.")
    changed_pairs: int | None = Field(
        default=None, description="Shared samples whose two responses differ in text (paired audits)."
    )
    style_shift: StyleShift | None = Field(
        default=None, description="How the responses' style moved between the runs, and whether it could explain it."
    )


class GateResult(BaseModel):
    name: str
    kind: Literal["regression", "completeness"]
    status: Literal["pass", "fail", "inconclusive", "skipped"]
    observed: str
    threshold: str
    message: str
    decision: RiseDecision | None = None


class AuditResult(BaseModel):
    """The outcome of an audit; ``exit_code`` follows the module's exit-code table."""

    status: Status
    exit_code: int
    headline: str = Field(
        description="One line: the outcome, the gates that decided it and why, the rate's change and the "
        "minimum detectable rise, and whether the groups were independent."
    )
    decided_by: list[str] = Field(default=[], description="Names of the gates that made the outcome.")
    undecided: dict[str, int] = Field(
        default={}, description="Responses the keyless judge could not decide, per run (baseline, current)."
    )
    baseline: str
    current: str
    gates: list[GateResult]
    settings: AuditGates
    comparison: Comparison
    baseline_stats: GroupStats
    current_stats: GroupStats
    #: What a keyless judge's unsure claims leave open in each run: the rate's bounds and the interval covering
    #: them (None: no claim unsure). Shown beside each run's rate, which keeps its own interval.
    baseline_unsure: UnsureStats | None = None
    current_unsure: UnsureStats | None = None
    runs: list[RunInfo]
    mismatches: list[str]
    policy: list[str]
    notes: list[str]
    resamples: int
    seed: int
    files: list[str] = []
