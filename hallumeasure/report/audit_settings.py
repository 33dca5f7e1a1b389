"""An audit's settings: its gates (``AuditGates``), everything else it runs with (``AuditSettings``), and the
settings of a plan for one (``PlanSettings``).

Light on purpose (pydantic and plain numbers only): the command line builds its options from these models
without loading the statistics.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from hallumeasure.core.types import Mode, RunManifest
from hallumeasure.pipeline.settings import Flag
from hallumeasure.stats.metric import Metric
from hallumeasure.stats.resampling import RESAMPLES, SEED


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
    max_hallucinated_share_rise: Annotated[
        float | None,
        Flag(off_switch=("--share-gate/--no-share-gate", "Gate the hallucinated share (off: only the rate).")),
    ] = Field(
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
    subtype_shift: Annotated[bool, Flag(decls=("--subtype-shift/--no-subtype-shift",))] = Field(
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
    judge_sensitivity: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="The judge's sensitivity as you know it (with --judge-specificity): a pass then needs the "
        "labels' upper bound at or below the margin times sensitivity + specificity - 1.",
    )
    judge_specificity: float | None = Field(
        default=None, ge=0.0, le=1.0, description="The judge's specificity as you know it (with --judge-sensitivity)."
    )
    judge_calibration: str | None = Field(
        default=None,
        description="The JSON of `hallumeasure calibrate RUN --labels FILE --json`: the judge's sensitivity and "
        "specificity measured on your labels, which a pass allows for.",
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

#: Each way of measuring a run, and the switch (flag, help) that lets an audit compare runs that differ in it.
CHANGE_SWITCHES: dict[str, tuple[str, str]] = {
    "judge": ("--allow-judge-change", "Allow another judge."),
    "extractor": ("--allow-extractor-change", "Allow another extractor."),
    "mode": ("--allow-mode-change", "Allow another mode."),
    "detector": ("--allow-detector-change", "Allow another detector."),
    "prompts": ("--allow-prompt-change", "Allow other prompt versions."),
    "votes": ("--allow-votes-change", "Allow other repeats or panel rules."),
    "policy": ("--allow-policy-change", "Allow another policy (what counts as unsupported)."),
}

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
    allow_broken_judge: bool = Field(
        default=False,
        description="Audit runs whose judge failed its own sanity checks (one label for every claim, reasons "
        "copied from the prompt, quotes in no passage); the outputs say so.",
    )
    allow_changes: Annotated[frozenset[ChangeField], Flag(members=CHANGE_SWITCHES)] = Field(
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


class PlanSettings(BaseModel):
    """The knobs of a sample-size plan: the rise to catch, the audit's gate it is planned for, and what to price."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rise: float = Field(
        ge=0.0, le=1.0, description="The true rise (current minus baseline) the audit must catch, absolute."
    )
    baseline_rate: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Without runs: the baseline's rate (the spread is then the largest a share with this mean can "
        "have). Ignored when a baseline run is given.",
    )
    correlation: float | None = Field(
        default=None,
        ge=-1.0,
        le=1.0,
        description="Correlation of the two runs' per-sample values (default: measured from two runs, else 0, "
        "which is conservative when it is positive).",
    )
    metric: Metric = Field(
        default="unsupported_rate",
        description="unsupported_rate (mean of per-response rates) or hallucinated_share (planned exactly).",
    )
    max_rate_rise: float = Field(
        default=AuditGates.model_fields["max_rate_rise"].default,
        ge=0.0,
        le=1.0,
        description="The audit's tolerated rise of the mean unsupported rate (its margin, as in the audit).",
    )
    max_hallucinated_share_rise: float = Field(
        default=AuditGates.model_fields["max_hallucinated_share_rise"].default,
        ge=0.0,
        le=1.0,
        description="The audit's tolerated rise of the hallucinated share (its margin, as in the audit).",
    )
    fail_on_any_significant_rise: bool = Field(
        default=False, description="Plan for an audit that flags any significant rise (margin 0)."
    )
    alpha: float = Field(default=0.05, gt=0.0, lt=0.5, description="One-sided error level of the audit.")
    power: float = Field(default=0.8, gt=0.0, lt=1.0, description="Wanted probability of reaching the decision.")
    judge_sensitivity: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="The judge's sensitivity as you know it (with --judge-specificity): the counts allow for its "
        "error as the audit does (default: the judge's published figures, else error-free).",
    )
    judge_specificity: float | None = Field(
        default=None, ge=0.0, le=1.0, description="The judge's specificity as you know it (with --judge-sensitivity)."
    )
    judge: str | None = Field(default=None, description="Judge to price (default: the baseline run's, else offline).")
    extractor: str | None = Field(
        default=None, description="Extractor to price (default: the baseline run's, else the judge)."
    )
    mode: Mode | None = Field(
        default=None, description="Classifier mode to price (default: the baseline run's, else cot-one)."
    )

    @field_validator("metric", mode="before")
    @classmethod
    def _known_metric(cls, value: object) -> object:
        if value not in get_args(Metric):
            choices = ", ".join(get_args(Metric))
            raise PydanticCustomError("one_of", f"must be one of {choices}, got {value!r}".replace("{", "{{"))
        return value

    @property
    def margin(self) -> float:
        """The audit's margin the plan is for: the planned metric's gate's, 0 when any significant rise fails."""
        if self.fail_on_any_significant_rise:
            return 0.0
        return self.max_hallucinated_share_rise if self.metric == "hallucinated_share" else self.max_rate_rise

    def priced_stages(self, manifest: RunManifest | None) -> tuple[str, str, Mode]:
        """(judge, extractor, mode) to price: these settings', else the run's, else offline in cot-one mode.

        A judge given here without an extractor prices that judge as its own extractor.
        """
        judge = self.judge or (manifest.judge if manifest else "offline")
        if self.extractor:
            extractor = self.extractor
        elif self.judge is not None or manifest is None:
            extractor = judge
        else:
            extractor = manifest.extractor
        mode = self.mode or (manifest.mode if manifest else Mode.COT_ONE)
        return judge, extractor, mode
