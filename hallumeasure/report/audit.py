"""Regression audit: compare a current run with a baseline run; each gated metric passes, regresses or is undecided.

A gated metric (the mean unsupported rate; the hallucinated share when a margin is set for
it) is decided from the one-sided interval, at level 1 - alpha, of its difference d =
current - baseline (paired over shared samples when there are any):

* ``pass`` — the rise is ruled out: the upper bound is at or below the tolerated rise (the
  non-inferiority margin ``max_rate_rise``);
* ``regression`` — the rise is shown: the lower bound is above the margin (above 0 with
  ``fail_on_any_significant_rise``);
* ``inconclusive`` — neither: too few samples for the spread of d. The gate then says the
  minimum detectable rise at this sample size and how many shared samples would decide.

So a large observed rise on few samples is never a pass: "no regression" must be shown.
Intervals: Student t for per-response rates, Newcombe's score interval for yes/no shares
(see ``hallumeasure.report.intervals``); their coverage is measured in
``benchmarks/interval_coverage.py``.

Exit codes (``AuditResult.exit_code``):

* 0 — pass: every gate passed;
* 1 — regression: some gate shows the current run worse beyond what it allows;
* 2 — usage error: the runs cannot be audited as given (missing, measured differently,
  unknown model); ``audit_runs`` raises a ``HalluMeasureError`` for these and the caller
  may record it with :func:`write_usage_error`;
* 3 — incomplete: too many error rows to trust the comparison. This wins over 1 and 4,
  because a verdict on unreliable numbers is not a verdict;
* 4 — inconclusive: no regression shown, but no gate could rule one out either (also when
  fewer than ``min_samples`` samples are shared). ``inconclusive="pass"`` or ``"fail"``
  turns this into exit 0 or 1; the status stays ``inconclusive``.

Outputs: ``audit.json`` (everything), ``audit.md`` (for people) and ``audit.junit.xml``
(one testcase per gate, failures as ``<failure>``) so CI systems show each gate.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.report.comparison import MIN_PAIRS, Comparison, compare_groups
from hallumeasure.report.intervals import (
    newcombe_independent,
    one_sided_confidence,
    paired_binary_interval,
    t_interval,
    welch_interval,
)
from hallumeasure.report.power import detectable_effect, difference_sd, samples_needed
from hallumeasure.report.render import render_markdown
from hallumeasure.report.runs import (
    LoadedRun,
    RunInfo,
    check_comparable,
    judge_notes,
    pair_up,
    policy_lines,
    response_units,
    run_info,
)
from hallumeasure.report.stats import SUBTYPES, GroupStats, group_stats, sign_flip_greater
from hallumeasure.runs.store import load_run

EXIT_PASS, EXIT_REGRESSION, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INCONCLUSIVE = 0, 1, 2, 3, 4

Status = Literal["pass", "regression", "inconclusive", "incomplete", "usage_error"]
Outcome = Literal["pass", "regression", "inconclusive"]
#: What an inconclusive audit exits with: its own code 4, or that of a pass or a regression.
INCONCLUSIVE_EXITS = {"exit4": EXIT_INCONCLUSIVE, "pass": EXIT_PASS, "fail": EXIT_REGRESSION}


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
        default=None,
        ge=0.0,
        le=1.0,
        description="Tolerated rise of the hallucinated-response share (decided like the rate); None = not gated.",
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
        default=True,
        description="Fail when some error subtype becomes significantly more frequent per evaluated claim "
        "(Holm-adjusted across subtypes).",
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
    headline: str = Field(description="One line: the outcome and the minimum detectable rise.")
    baseline: str
    current: str
    gates: list[GateResult]
    settings: AuditGates
    comparison: Comparison
    baseline_stats: GroupStats
    current_stats: GroupStats
    runs: list[RunInfo]
    mismatches: list[str]
    policy: list[str]
    notes: list[str]
    resamples: int
    seed: int
    files: list[str] = []


def _select(run: LoadedRun, model: str | None) -> tuple[pd.DataFrame, str]:
    units = response_units(run)
    if model is None:
        return units, run.name
    chosen = units[units["model"] == model].reset_index(drop=True)
    if chosen.empty:
        known = ", ".join(sorted(set(units["model"]))) or "(none)"
        raise ConfigError(f"run {run.name} has no responses of model {model!r}; its models are: {known}")
    return chosen, f"{run.name} [{model}]"


_METHODS = {
    (True, False): "paired t interval of the per-sample differences (decisions also need the exact sign-flip test)",
    (True, True): "Newcombe's paired score interval (method 10)",
    (False, False): "Welch t interval (independent groups)",
    (False, True): "Newcombe's score interval for independent shares (method 10)",
}


def _paired_binary_sd(base: np.ndarray, cur: np.ndarray) -> float:
    """sd of 0/1 pair differences, from discordant shares with half a pseudo-pair each, so it is never 0."""
    n = base.size
    p10 = (np.sum((base > 0.5) & (cur < 0.5)) + 0.5) / (n + 1)
    p01 = (np.sum((base < 0.5) & (cur > 0.5)) + 0.5) / (n + 1)
    return float(np.sqrt(max(p10 + p01 - (p01 - p10) ** 2, 0.0)))


def _sign_flip_guard(d: np.ndarray, margin: float, gates: AuditGates) -> tuple[bool, bool]:
    """Whether the exact sign-flip test also shows the rise / rules it out at alpha (one-sided).

    The t bounds decide; this guard keeps a few pairs from deciding on their own (a t interval
    of three identical differences has zero width). It only ever turns a decision into
    inconclusive, so it cannot raise the false-pass rate. Used up to 50 pairs.
    """
    if d.size == 0:
        return False, False
    if d.size > _GUARD_PAIRS:
        return True, True  # the t bounds stand alone: the sign-flip distribution is close to normal by now
    above = 0.0 if gates.fail_on_any_significant_rise else margin
    rng = np.random.default_rng(0)
    rise = sign_flip_greater(d, above, resamples=_GUARD_RESAMPLES, rng=rng)
    fall = sign_flip_greater(-d, -margin, resamples=_GUARD_RESAMPLES, rng=rng)
    return rise is not None and rise < gates.alpha, fall is not None and fall < gates.alpha


#: Sign patterns of the Monte Carlo guard test beyond 12 pairs; beyond _GUARD_PAIRS pairs there is no guard.
_GUARD_RESAMPLES = 4000
_GUARD_PAIRS = 50


def decide_rise(
    metric: str,
    base: np.ndarray,
    cur: np.ndarray,
    *,
    paired: bool,
    binary: bool,
    margin: float,
    gates: AuditGates,
    plan: bool = True,
) -> RiseDecision:
    """Decide one metric from the one-sided bounds of ``cur - base`` (aligned pairs when ``paired``).

    ``plan=False`` skips the minimum detectable rise and the samples needed (simulations).
    """
    base, cur = np.asarray(base, dtype=float), np.asarray(cur, dtype=float)
    level = one_sided_confidence(gates.alpha)
    exact = (True, True)
    if paired:
        keep = np.isfinite(base) & np.isfinite(cur)
        base, cur = base[keep], cur[keep]
        n = int(base.size)
        if binary:
            diff, low, high = paired_binary_interval(base, cur, level)
            sd = _paired_binary_sd(base, cur) if n else None
        else:
            diff, low, high = t_interval(cur - base, level)
            sd = difference_sd(base, cur)[0]
            exact = _sign_flip_guard(cur - base, margin, gates)
    else:
        base, cur = base[np.isfinite(base)], cur[np.isfinite(cur)]
        n = int(min(base.size, cur.size))
        if binary:
            diff, low, high = newcombe_independent(
                int(np.sum(base > 0.5)), base.size, int(np.sum(cur > 0.5)), cur.size, level
            )
        else:
            diff, low, high = welch_interval(base, cur, level)
        # A difference of one draw from each group: an audit of n per group behaves like n such pairs.
        sd = float(np.sqrt(base.var(ddof=1) + cur.var(ddof=1))) if n >= 2 else None
    above = 0.0 if gates.fail_on_any_significant_rise else margin
    shows_rise, rules_out = exact
    if low is not None and low > above and shows_rise:
        outcome: Outcome = "regression"
    elif high is not None and high <= margin and rules_out:
        outcome = "pass"
    else:
        outcome = "inconclusive"
    effect = detectable_effect(n, gates.alpha, gates.power) if n >= 2 and plan else None
    mdr = above + effect * sd if effect is not None and sd else None
    needed = None
    if diff is not None and sd and plan:
        gap = diff - above if diff > above else (margin - diff if diff < margin else 0.0)
        needed = samples_needed(gap / sd, gates.alpha, gates.power) if gap > 0 else None
    return RiseDecision(
        metric=metric,
        outcome=outcome,
        n=n,
        paired=paired,
        difference=_r(diff),
        lower_bound=_r(low),
        upper_bound=_r(high),
        confidence=1 - gates.alpha,
        margin=margin,
        regression_above=above,
        sd_difference=_r(sd),
        min_detectable_rise=_r(mdr),
        samples_needed=needed,
        power=gates.power,
        method=_METHODS[(paired, binary)],
    )


def _r(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), 6) + 0.0


def _bound(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _rise_gate(name: str, what: str, decision: RiseDecision | None) -> GateResult:
    if decision is None:
        return GateResult(
            name=name,
            kind="regression",
            status="skipped",
            observed="-",
            threshold="not set",
            message=f"{what} gate not configured",
        )
    d = decision
    level = f"{d.confidence:.0%} one-sided"
    threshold = f"pass: upper bound <= {d.margin:.3f}; regression: lower bound > {d.regression_above:.3f}"
    if d.difference is None:
        return GateResult(
            name=name,
            kind="regression",
            status="skipped",
            observed="-",
            threshold=threshold,
            message=f"no {what} could be computed for one of the runs",
            decision=d,
        )
    observed = (
        f"difference {d.difference:+.3f}, {level} bounds [{_bound(d.lower_bound)}, {_bound(d.upper_bound)}] "
        f"over {d.n} {'shared samples' if d.paired else 'responses per run'}"
    )
    if d.outcome == "regression":
        message = (
            f"{what} rose by {d.difference:.3f}; the rise is shown: its lower bound {d.lower_bound:+.3f} "
            f"is above {d.regression_above:.3f}"
        )
    elif d.outcome == "pass":
        message = (
            f"{what} changed by {d.difference:+.3f}; a rise above {d.margin:.3f} is ruled out "
            f"(upper bound {d.upper_bound:+.3f})"
        )
    else:
        message = (
            f"{what} changed by {d.difference:+.3f}; neither a rise above {d.regression_above:.3f} nor its "
            f"absence is shown at {d.n} samples"
        )
        if d.min_detectable_rise is not None:
            message += f"; minimum detectable rise {d.min_detectable_rise:.3f} at {d.power:.0%} power"
        message += (
            f"; about {d.samples_needed} shared samples would decide if the true change is the observed one"
            if d.samples_needed is not None
            else ""
        )
    status = {"pass": "pass", "regression": "fail", "inconclusive": "inconclusive"}[d.outcome]
    return GateResult(
        name=name, kind="regression", status=status, observed=observed, threshold=threshold, message=message, decision=d
    )


def _subtype_gate(comparison: Comparison, gates: AuditGates) -> GateResult:
    alpha = gates.subtype_alpha or gates.alpha
    threshold = f"no subtype rate rises with Holm-adjusted p < {alpha:g}"
    if not gates.subtype_shift:
        return GateResult(
            name="subtype_shift",
            kind="regression",
            status="skipped",
            observed="-",
            threshold="disabled",
            message="subtype shift gate disabled",
        )
    shift = comparison.subtypes
    if shift.p_value is None:
        return GateResult(
            name="subtype_shift",
            kind="regression",
            status="skipped",
            observed="-",
            threshold=threshold,
            message=shift.note or "no subtypes to test",
        )
    risen = [
        x
        for x in SUBTYPES
        if (holm := shift.p_holm[x]) is not None
        and holm < alpha
        and (shift.rates_b[x] or 0.0) > (shift.rates_a[x] or 0.0)
    ]
    observed = f"mix test p {shift.p_value:.4f}; " + (
        ", ".join(f"{x} {shift.rates_a[x]:.3f} -> {shift.rates_b[x]:.3f} (Holm p {shift.p_holm[x]:.4f})" for x in risen)
        or "no significant rise"
    )
    message = (
        f"significantly more frequent: {', '.join(risen)}"
        if risen
        else "no error subtype became significantly more frequent"
    )
    return GateResult(
        name="subtype_shift",
        kind="regression",
        status="fail" if risen else "pass",
        observed=observed,
        threshold=threshold,
        message=message,
    )


def _sample_gate(comparison: Comparison, base: GroupStats, cur: GroupStats, gates: AuditGates) -> GateResult:
    # Pairs count only when both sides have a rate: a shared sample that failed on one side tells nothing.
    n = comparison.unsupported_rate.n_pairs if comparison.paired else min(base.n_rated, cur.n_rated)
    what = "shared samples rated in both runs" if comparison.paired else "rated responses in the smaller run"
    ok = n >= gates.min_samples
    return GateResult(
        name="sample_count",
        kind="completeness",
        status="pass" if ok else "inconclusive",
        observed=f"{n} {what}",
        threshold=f">= {gates.min_samples}",
        message=f"{n} {what}" + ("" if ok else f", fewer than the {gates.min_samples} needed for a verdict"),
    )


def _error_gate(base: GroupStats, cur: GroupStats, gates: AuditGates) -> GateResult:
    shares = {"baseline": base.error_share.value or 0.0, "current": cur.error_share.value or 0.0}
    counts = {"baseline": base.n_error_rows, "current": cur.n_error_rows}
    over = [k for k, v in shares.items() if v > gates.max_error_share]
    observed = "; ".join(f"{k} {counts[k]} error rows ({shares[k]:.3f})" for k in shares)
    message = (
        f"too many error rows in the {' and '.join(over)} run; re-run or resume the measurement first"
        if over
        else "error rows within the limit"
    )
    return GateResult(
        name="error_rows",
        kind="completeness",
        status="fail" if over else "pass",
        observed=observed,
        threshold=f"error share <= {gates.max_error_share:.3f}",
        message=message,
    )


def overall_status(gates: list[GateResult]) -> Status:
    """incomplete (error rows) > regression > inconclusive > pass."""
    if any(g.kind == "completeness" and g.status == "fail" for g in gates):
        return "incomplete"
    if any(g.status == "fail" for g in gates):
        return "regression"
    if any(g.status == "inconclusive" for g in gates):
        return "inconclusive"
    return "pass"


def exit_code(status: Status, gates: AuditGates) -> int:
    """The exit code of a status; an inconclusive audit exits as ``gates.inconclusive`` says."""
    if status == "inconclusive":
        return INCONCLUSIVE_EXITS[gates.inconclusive]
    return {"pass": EXIT_PASS, "regression": EXIT_REGRESSION, "incomplete": EXIT_INCOMPLETE, "usage_error": EXIT_USAGE}[
        status
    ]


def headline(status: Status, code: int, rate: RiseDecision | None) -> str:
    """The first line of every audit output: outcome, exit code, the rate's change and what this n can detect."""
    text = f"{status.upper()} (exit code {code})"
    if rate is None or rate.difference is None:
        return text
    text += (
        f": mean unsupported rate {rate.difference:+.3f}, {rate.confidence:.0%} one-sided bounds "
        f"[{_bound(rate.lower_bound)}, {_bound(rate.upper_bound)}], margin {rate.margin:.3f}"
    )
    where = f"at {rate.n} {'shared ' if rate.paired else ''}samples"
    if rate.min_detectable_rise is not None:
        text += f"; minimum detectable rise {rate.min_detectable_rise:.3f} {where}"
    else:
        text += f"; minimum detectable rise not estimable {where} (the differences have no spread)"
    if status == "inconclusive" and rate.samples_needed is not None:
        text += f"; about {rate.samples_needed} would decide"
    return text


def audit_runs(
    baseline_dir: str | Path,
    current_dir: str | Path,
    gates: AuditGates | None = None,
    *,
    out_dir: str | Path | None = None,
    allow_mismatch: bool = False,
    baseline_model: str | None = None,
    current_model: str | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> AuditResult:
    """Audit ``current_dir`` against ``baseline_dir``; write the audit files when ``out_dir`` is given.

    Raises ``HalluMeasureError`` (exit code 2) when the runs cannot be audited as given.
    """
    gates = gates or AuditGates()
    if resamples < 100:
        raise ConfigError(f"resamples must be at least 100 for a usable interval, got {resamples}")
    base_run = LoadedRun(Path(baseline_dir).name, load_run(baseline_dir))
    cur_run = LoadedRun(Path(current_dir).name, load_run(current_dir))
    runs = [base_run, cur_run]
    found = check_comparable(runs, allow_mismatch)
    base_units, base_name = _select(base_run, baseline_model)
    cur_units, cur_name = _select(cur_run, current_model)
    options = {"resamples": resamples, "seed": seed}
    base_stats = group_stats(base_units, base_name, **options)
    cur_stats = group_stats(cur_units, cur_name, **options)
    comparison = compare_groups(base_units, cur_units, base_name, cur_name, **options)

    pa, pb, _ = pair_up(base_units, cur_units)
    paired = len(pa) >= MIN_PAIRS
    ta, tb = (pa, pb) if paired else (base_units, cur_units)
    margins = {"unsupported_rate": gates.max_rate_rise, "hallucinated_share": gates.max_hallucinated_share_rise}
    decisions = {
        name: None
        if margin is None
        else decide_rise(
            name,
            ta[column].to_numpy(dtype=float),
            tb[column].to_numpy(dtype=float),
            paired=paired,
            binary=name == "hallucinated_share",
            margin=margin,
            gates=gates,
        )
        for name, column, margin in (
            ("unsupported_rate", "rate", margins["unsupported_rate"]),
            ("hallucinated_share", "hallucinated", margins["hallucinated_share"]),
        )
    }
    results = [
        _sample_gate(comparison, base_stats, cur_stats, gates),
        _error_gate(base_stats, cur_stats, gates),
        _rise_gate("unsupported_rate", "mean unsupported rate", decisions["unsupported_rate"]),
        _rise_gate("hallucinated_share", "hallucinated share", decisions["hallucinated_share"]),
        _subtype_gate(comparison, gates),
    ]
    status = overall_status(results)
    code = exit_code(status, gates)
    result = AuditResult(
        status=status,
        exit_code=code,
        headline=headline(status, code, decisions["unsupported_rate"]),
        baseline=base_name,
        current=cur_name,
        gates=results,
        settings=gates,
        comparison=comparison,
        baseline_stats=base_stats,
        current_stats=cur_stats,
        runs=[run_info(r) for r in runs],
        mismatches=found,
        policy=policy_lines(runs),
        notes=judge_notes(runs),
        resamples=resamples,
        seed=seed,
    )
    if out_dir is not None:
        result = write_audit(result, out_dir)
    return result


# --- outputs -------------------------------------------------------------------------------------


def junit_xml(gates: list[GateResult], *, error: str | None = None, result: AuditResult | None = None) -> str:
    """JUnit XML with one testcase per gate (or one errored testcase for a usage error).

    An inconclusive gate is a ``<failure type="inconclusive">``, or ``<skipped>`` when the audit
    treats inconclusive as a pass. The suite's properties carry the outcome, exit code and headline.
    """
    lenient = result is not None and result.settings.inconclusive == "pass"
    failing = [g for g in gates if g.status == "fail" or (g.status == "inconclusive" and not lenient)]
    skipped = sum(g.status == "skipped" or (g.status == "inconclusive" and lenient) for g in gates)
    tests = len(gates) + (1 if error else 0)
    counts = {
        "tests": str(tests),
        "failures": str(len(failing)),
        "errors": str(int(error is not None)),
        "skipped": str(skipped),
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": "hallumeasure audit", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "hallumeasure.audit", **counts})
    if result is not None:
        properties = ET.SubElement(suite, "properties")
        for name, value in (
            ("outcome", result.status),
            ("exit_code", str(result.exit_code)),
            ("headline", result.headline),
        ):
            ET.SubElement(properties, "property", {"name": name, "value": value})
    for gate in gates:
        case = ET.SubElement(
            suite, "testcase", {"classname": f"hallumeasure.audit.{gate.kind}", "name": gate.name, "time": "0"}
        )
        details = f"observed: {gate.observed}\nthreshold: {gate.threshold}"
        if gate in failing:
            kind = "inconclusive" if gate.status == "inconclusive" else gate.kind
            failure = ET.SubElement(case, "failure", {"message": gate.message, "type": kind})
            failure.text = details
        elif gate.status in ("skipped", "inconclusive"):
            ET.SubElement(case, "skipped", {"message": gate.message})
        else:
            ET.SubElement(case, "system-out").text = details
    if error is not None:
        case = ET.SubElement(suite, "testcase", {"classname": "hallumeasure.audit", "name": "usage", "time": "0"})
        ET.SubElement(case, "error", {"message": error, "type": "usage_error"}).text = error
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_audit(result: AuditResult, out_dir: str | Path) -> AuditResult:
    """Write ``audit.json``, ``audit.md`` and ``audit.junit.xml``; returns the result with ``files`` set."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = result.model_copy(update={"files": ["audit.json", "audit.md", "audit.junit.xml"]})
    (out / "audit.json").write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    subtypes = [
        x for x in SUBTYPES if result.comparison.subtypes.counts_a.get(x) or result.comparison.subtypes.counts_b.get(x)
    ]
    (out / "audit.md").write_text(render_markdown("audit.md.j2", audit=result, subtypes=subtypes), encoding="utf-8")
    (out / "audit.junit.xml").write_text(junit_xml(result.gates, result=result), encoding="utf-8")
    return result


def write_usage_error(out_dir: str | Path, message: str) -> None:
    """Record an audit that could not run (exit code 2) in the same three files, so CI shows why."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {"status": "usage_error", "exit_code": EXIT_USAGE, "message": message}
    (out / "audit.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    (out / "audit.md").write_text(render_markdown("audit_error.md.j2", message=message), encoding="utf-8")
    (out / "audit.junit.xml").write_text(junit_xml([], error=message), encoding="utf-8")
