"""The records of an audit: its gates' settings, each gate's result and decision, and the whole result.

``hallumeasure.report.audit`` fills them; ``audit.json`` is ``AuditResult`` as JSON, and its
schema is ``schemas/audit_result.schema.json``.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from hallumeasure.report.comparison import Comparison
from hallumeasure.report.runs import RunInfo
from hallumeasure.report.unsure import UnsureStats
from hallumeasure.stats.audit_bounds import Outcome
from hallumeasure.stats.groups import GroupStats
from hallumeasure.stats.resampling import RESAMPLES, SEED

Status = Literal["pass", "regression", "inconclusive", "incomplete", "usage_error"]


class AuditGates(BaseModel):
    """The thresholds of a regression audit. Rises are absolute (0.02 = two percentage points)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_rate_rise: float = Field(
        default=0.02,
        ge=0.0,
        le=1.0,
        description="Tolerated rise of the mean unsupported rate (non-inferiority margin): pass when the "
        "one-sided upper bound of the rise is at or below it, regression when the lower bound is "
        "above it.",
    )
    alpha: float = Field(
        default=0.05,
        gt=0.0,
        lt=0.5,
        description="One-sided error level of each decision: the bounds are one-sided (1 - alpha) confidence bounds.",
    )
    max_hallucinated_share_rise: float | None = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="Tolerated rise of the hallucinated-response share (decided like the rate, with exact "
        "bounds); None = not gated.",
    )
    fail_on_any_significant_rise: bool = Field(
        default=False, description="Regression as soon as the lower bound of a rise is above 0, even within the margin."
    )
    inconclusive: Literal["exit4", "pass", "fail"] = Field(
        default="exit4", description="Exit code of an inconclusive audit: 4, or that of a pass (0) or a failure (1)."
    )
    power: float = Field(
        default=0.8,
        gt=0.0,
        lt=1.0,
        description="Power at which the minimum detectable rise and the samples needed are stated.",
    )
    subtype_shift: bool = Field(
        default=False,
        description="Opt-in: fail when some error subtype becomes significantly more frequent per evaluated "
        "claim (Holm-adjusted across subtypes). A significance test with no margin, so off by default: on "
        "its own it would fail audits whose rates are within their margins.",
    )
    subtype_alpha: float | None = Field(
        default=None, gt=0.0, le=1.0, description="Significance level of the subtype test; None = alpha."
    )
    min_samples: int = Field(
        default=5, ge=1, description="Fewest compared samples (pairs, or responses per side when unpaired)."
    )
    max_error_share: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="Largest tolerated share of error rows (failed samples and claims "
        "without a verdict) in either run.",
    )


#: What an audit may be told to accept as measured differently (``audit --allow-<field>-change``).
ChangeField = Literal["judge", "extractor", "mode", "detector", "prompts", "votes", "policy"]

#: Fewest bootstrap resamples that give a usable interval.
MIN_RESAMPLES = 100


class AuditSettings(AuditGates):
    """Everything an audit runs with: its gates (``AuditGates``), the differences between the two runs it
    accepts, the models it compares, and its resampling.

    The command line (``hallumeasure audit``), a settings file's audit table (``[audit]`` in
    hallumeasure.toml, ``[tool.hallumeasure.audit]`` in pyproject.toml) and Python callers fill it;
    ``audit.json`` records its gates (``gates``).
    """

    allow_mismatch: bool = Field(
        default=False,
        description="Audit runs over different or partly shared samples (or without a manifest); the outputs say so.",
    )
    allow_changes: frozenset[ChangeField] = Field(
        default=frozenset(), description="What may differ between how the two runs were measured."
    )
    baseline_model: str | None = Field(default=None, description="Audit only this model of the baseline run.")
    current_model: str | None = Field(default=None, description="Audit only this model of the current run.")
    resamples: int = Field(default=RESAMPLES, description="Bootstrap resamples per interval (at least 100).")
    seed: int = Field(default=SEED, description="Seed of the bootstrap and permutation tests.")

    @model_validator(mode="after")
    def _usable_intervals(self) -> Self:
        if self.resamples < MIN_RESAMPLES:
            # No location: the message is the one the audit has always given, on the command line too.
            raise PydanticCustomError(
                "setting_rule",
                "resamples must be at least {least} for a usable interval, got {got}",
                {"least": MIN_RESAMPLES, "got": self.resamples},
            )
        return self

    @property
    def gates(self) -> AuditGates:
        """The gates alone, as ``audit.json`` records them."""
        return AuditGates(**self.model_dump(include=set(AuditGates.model_fields)))


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
        description="A regression was shown only with the undecided responses counted; it is inconclusive instead.",
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
