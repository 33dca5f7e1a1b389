"""Regression audit: compare a current run with a baseline run; each gated metric passes, regresses or is undecided.

A gated metric (the mean unsupported rate, margin 0.02; the hallucinated share, margin 0.05)
is decided from one-sided bounds, at level 1 - alpha, of its difference d = current -
baseline (paired over shared samples):

* ``pass`` — the rise is ruled out: the upper bound is at or below the tolerated rise (the
  non-inferiority margin);
* ``regression`` — the rise is shown: the lower bound is above the margin (above 0 with
  ``fail_on_any_significant_rise``);
* ``inconclusive`` — neither. The gate then says the minimum detectable rise at this sample
  size and how many shared samples would decide.

The bounds hold at every sample size and every true rate (``hallumeasure.stats.audit_bounds``):
exact Clopper-Pearson bounds of the discordant shares for the share, a betting bound for the
rate. So P(pass) <= alpha whenever the true rise is at least the margin, and P(regression) <=
alpha whenever there is no rise; with no differing pair a gate passes only once the sample size
itself bounds the rise (about 3 / margin pairs). ``benchmarks/results/audit_operating.md`` computes this
exactly for the share and by simulation for the rate. The subtype-shift gate (a significance
test with no margin) is opt-in. The first line of every output names the gates that decided.

The bounds are of the judge's labels. A judge that errs alike in both runs shrinks a true difference
by its Youden index J (``hallumeasure.stats.judge_error``), so a regression is read from the labels
whatever share of the responses the judge was unsure of (they stay as a sensitivity line), and a pass
needs the margin shrunk by the judge's smallest J, or few enough changed responses
(``hallumeasure.report.audit_judge`` says where J comes from). Each rise gate also measures how the
responses' style moved (``hallumeasure.stats.style_shift``) and says when that could explain the change.

The runs must be measured alike and over the same samples (``hallumeasure.report.audit_inputs``).

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

from collections.abc import Collection
from pathlib import Path

import numpy as np
import pandas as pd

from hallumeasure.core.errors import ConfigError
from hallumeasure.report.audit_inputs import SampleOverlap, check_audit_inputs, undecided_column
from hallumeasure.report.audit_judge import judge_error_for, style_columns, style_text_features
from hallumeasure.report.audit_models import AuditResult, GateResult, RiseDecision, Status
from hallumeasure.report.audit_outputs import junit_xml, write_audit, write_usage_error
from hallumeasure.report.audit_settings import MIN_RESAMPLES, AuditGates, AuditSettings
from hallumeasure.report.comparison import MIN_PAIRS, Comparison, compare_groups
from hallumeasure.report.runs import (
    judge_notes,
    pairing,
    policy_lines,
    response_units,
    run_info,
    text_unit_columns,
)
from hallumeasure.report.unsure import group_unsure_stats
from hallumeasure.runs.run import Run
from hallumeasure.stats.audit_bounds import (
    METHODS,
    judged_outcome,
    paired_binary_sd,
    planning,
    rise_bounds,
    shows_rise,
)
from hallumeasure.stats.groups import SUBTYPES, GroupStats, group_stats
from hallumeasure.stats.intervals import forget_prepared_bets
from hallumeasure.stats.judge_error import JudgeError, changed_samples_for
from hallumeasure.stats.power import difference_sd
from hallumeasure.stats.resampling import RESAMPLES, SEED
from hallumeasure.stats.style_shift import style_shift

EXIT_PASS, EXIT_REGRESSION, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INCONCLUSIVE = 0, 1, 2, 3, 4
__all__ = [
    "AuditGates",
    "AuditResult",
    "AuditSettings",
    "GateResult",
    "RiseDecision",
    "Status",
    "audit_runs",
    "decide_rise",
    "junit_xml",
    "load_for_audit",
    "run_audit",
    "write_audit",
    "write_usage_error",
]

#: What an inconclusive audit exits with: its own code 4, or that of a pass or a regression.
INCONCLUSIVE_EXITS = {"exit4": EXIT_INCONCLUSIVE, "pass": EXIT_PASS, "fail": EXIT_REGRESSION}


def audit_columns(piece: pd.DataFrame) -> pd.DataFrame:
    """What an audit keeps of a piece of a run's responses in place of their texts: the task key, the label and
    subtype counts, and the style features (``Run.load_columns``)."""
    return pd.concat([text_unit_columns(piece), style_text_features(piece)], axis=1)


def load_for_audit(run: Run | str | Path, *, name: str | None = None) -> Run:
    """``run`` itself when loaded already, else the run in that directory read as the columns an audit needs
    (``Run.load_columns``): no claim, verdict or text is kept, so a run of millions of responses fits in memory."""
    return run if isinstance(run, Run) else Run.load_columns(run, audit_columns, name=name)


def _select(run: Run, model: str | None) -> tuple[pd.DataFrame, str]:
    units = response_units(run)
    units["undecided"] = undecided_column(run)
    units = pd.concat([units, style_columns(run)], axis=1)
    if model is None:
        return units, run.name
    chosen = units[units["model"] == model].reset_index(drop=True)
    if chosen.empty:
        known = ", ".join(sorted(set(units["model"]))) or "(none)"
        raise ConfigError(f"run {run.name} has no responses of model {model!r}; its models are: {known}")
    return chosen, f"{run.name} [{model}]"


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
    unchanged: np.ndarray | None = None,
    judge: JudgeError | None = None,
    changed: np.ndarray | None = None,
) -> RiseDecision:
    """Decide one metric from the one-sided bounds of ``cur - base`` (aligned pairs when ``paired``).

    The bounds hold at their level whatever the sample size and however rare the differences
    (see ``_METHODS``): with no differing pair a gate passes only once n itself bounds the rise
    below the margin (about 3 / margin pairs). ``judge`` is the judge's error (``stats/judge_error.py``;
    None: an exact judge): a regression is read from the judge's labels, a pass needs the margin
    shrunk by the judge's Youden index, or few enough ``changed`` pairs (paired: the two responses differ).
    ``unchanged`` marks pairs (or current responses, unpaired) that the judge could not decide: they do
    not change the outcome, and ``rests_on_undecided`` says whether a regression would still be shown
    with them set to the baseline's value (paired) or left out (unpaired). ``plan=False`` skips the
    minimum detectable rise and the samples needed (simulations).
    """
    base, cur = np.asarray(base, dtype=float), np.asarray(cur, dtype=float)
    judge = judge or JudgeError.error_free_judge("assumed", "")
    above = 0.0 if gates.fail_on_any_significant_rise else margin
    flags = np.zeros(cur.size, dtype=bool) if unchanged is None else np.asarray(unchanged, dtype=bool)
    moved = None if changed is None else np.asarray(changed, dtype=bool)
    if paired:
        keep = np.isfinite(base) & np.isfinite(cur)
        base, cur, flags = base[keep], cur[keep], flags[keep]
        moved = None if moved is None else moved[keep]
        n = int(base.size)
    else:
        flags = flags[np.isfinite(cur)]
        base, cur = base[np.isfinite(base)], cur[np.isfinite(cur)]
        n = int(min(base.size, cur.size))
    options = {"paired": paired, "binary": binary}
    bounds = rise_bounds(base, cur, alpha=gates.alpha, **options)
    diff, low, high = bounds
    n_changed = None if moved is None or not paired else int(moved.sum())
    outcome, judged = judged_outcome(
        base, cur, bounds, margin=margin, above=above, alpha=gates.alpha, judge=judge, changed=n_changed, **options
    )
    rests_on_undecided = False
    if outcome == "regression" and flags.any():
        # a sensitivity line, not the gate: would the rise still show with the undecided responses unchanged?
        if paired:
            alt_cur, alt_base = np.where(flags, base, cur), base
        else:
            alt_cur, alt_base = cur[~flags], base
        alt = rise_bounds(alt_base, alt_cur, alpha=gates.alpha, **options)
        rests_on_undecided = not shows_rise(
            alt_base, alt_cur, alt, above=judged.regression_above_labels, alpha=gates.alpha, **options
        )
    above, margin_plan = judged.regression_above_labels, judged.pass_margin_labels
    sd, mdr, needed = None, None, None
    if paired and binary:
        sd = paired_binary_sd(base, cur) if n else None
    elif paired:
        sd = difference_sd(base, cur)[0]
    elif n >= 2:
        # A difference of one draw from each group: an audit of n per group behaves like n such pairs.
        sd = float(np.sqrt(base.var(ddof=1) + cur.var(ddof=1)))
    if plan and n >= 2 and diff is not None:
        mdr, needed = planning(
            base,
            cur,
            diff,
            sd,
            paired=paired,
            binary=binary,
            margin=margin_plan,
            above=above,
            alpha=gates.alpha,
            power=gates.power,
        )
        if n_changed is not None and not judge.error_free and outcome != "regression":
            by_changed = changed_samples_for(n_changed / n, margin, judged.pass_alpha)
            if by_changed is not None and (needed is None or by_changed < needed):
                needed = by_changed
    forget_prepared_bets()  # the bounds and decisions of these values shared them; nothing else will
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
        regression_above=0.0 if gates.fail_on_any_significant_rise else margin,
        sd_difference=_r(sd),
        min_detectable_rise=_r(mdr),
        samples_needed=needed,
        power=gates.power,
        method=METHODS[(paired, binary)],
        undecided=int(flags.sum()),
        rests_on_undecided=rests_on_undecided,
        judge_error=judge,
        judged=judged,
        changed_pairs=n_changed,
    )


_STYLE = ["style_words", "style_overlap", "style_claims"]
#: What the audit and its comparison read of the paired tables.
_PAIRED_COLUMNS = (
    "rate",
    "hallucinated",
    "n_evaluated",
    "undecided",
    "response_hash",
    *_STYLE,
    *(f"subtype_{x}" for x in SUBTYPES),
)


def _with_style(decision: RiseDecision, base: pd.DataFrame, cur: pd.DataFrame, column: str) -> RiseDecision:
    """The decision with the style shift between the two tables, and whether it could explain the outcome."""
    d = decision
    if d.outcome == "regression" and d.lower_bound is not None and d.judged is not None:
        beyond = d.lower_bound - d.judged.regression_above_labels
    elif d.difference is not None:
        beyond = max(d.difference, 0.0)
    else:
        beyond = 0.0
    shift = style_shift(
        base[_STYLE].to_numpy(dtype=float),
        cur[_STYLE].to_numpy(dtype=float),
        base[column].to_numpy(dtype=float),
        change_beyond=beyond,
    )
    return d.model_copy(update={"style_shift": shift})


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
    judged, judge = d.judged, d.judge_error
    if d.outcome == "regression":
        threshold_l = d.regression_above if judged is None else judged.regression_above_labels
        message = (
            f"{what} rose by {d.difference:.3f}; the rise is shown: its lower bound {d.lower_bound:+.3f} "
            f"is above {threshold_l:.3f}"
        )
        if judge is not None and judge.youden_high < 1 and d.regression_above > 0:
            message += (
                f" (the margin {d.regression_above:.3f} times the judge's largest J {judge.youden_high:.3f}: a judge "
                "that errs alike in both runs shrinks a true rise, so a labelled rise above it is a true rise above "
                "the margin)"
            )
        else:
            message += " (read from the judge's labels, which a judge that errs alike in both runs can only shrink)"
    elif d.outcome == "pass":
        message = f"{what} changed by {d.difference:+.3f}; a rise above {d.margin:.3f} is ruled out"
        if judged is None or (judged.passed_by == "labels" and (judge is None or judge.error_free)):
            message += f" (upper bound {d.upper_bound:+.3f})"
        elif judged.passed_by == "labels" and judge is not None:
            level = f"{1 - judged.pass_alpha:.1%}"
            message += (
                f": the labels' {level} upper bound is at or below {judged.pass_margin_labels:.4f}, the margin times "
                f"the judge's smallest J {judge.youden_low:.3f} (true rise at most {_bound(judged.true_rise_upper)})"
            )
        else:
            message += (
                f": only {d.changed_pairs} of {d.n} responses changed, and the {1 - judged.pass_alpha:.1%} upper bound "
                f"of that share, {judged.changed_share_upper:.4f}, bounds the rise whatever the judge"
            )
    else:
        message = (
            f"{what} changed by {d.difference:+.3f}; neither a rise above {d.regression_above:.3f} nor its "
            f"absence is shown at {d.n} samples"
        )
        if judge is not None and not judge.error_free and judged is not None:
            message += (
                f" (with the judge's error: a pass needs the labels' upper bound at or below "
                f"{judged.pass_margin_labels:.4f} or few changed responses; true rise at most "
                f"{_bound(judged.true_rise_upper)})"
            )
        if d.min_detectable_rise is not None:
            message += f"; minimum detectable rise {d.min_detectable_rise:.3f} at {d.power:.0%} power"
        message += (
            f"; about {d.samples_needed} shared samples would decide if the true change is the observed one"
            if d.samples_needed is not None
            else ""
        )
    if judge is not None and judge.source != "scripted":
        message += f"; judge error: {judge.detail}"
    if d.rests_on_undecided:
        message += "; sensitivity: with the undecided responses counted as unchanged the rise would not show"
    if d.style_shift is not None and d.style_shift.shifted:
        message += f"; {d.style_shift.describe()}"
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
        f"too many error rows in the {' and '.join(over)} run ("
        + ", ".join(f"{k} {shares[k]:.3f}" for k in over)
        + f" > {gates.max_error_share:.3f}); re-run or resume the measurement first"
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


def deciding_gates(status: Status, gates: list[GateResult]) -> list[GateResult]:
    """The gates that made the status: the failing completeness gates of an incomplete audit, the failing
    gates of a regression, the inconclusive ones of an inconclusive audit, every gate that ran for a pass."""
    if status == "incomplete":
        return [g for g in gates if g.kind == "completeness" and g.status == "fail"]
    wanted = {"regression": "fail", "inconclusive": "inconclusive", "pass": "pass"}.get(status)
    return [g for g in gates if g.status == wanted]


def headline(
    status: Status, code: int, gates: list[GateResult], rate: RiseDecision | None, context: list[str] | None = None
) -> str:
    """The first line of every audit output: outcome, exit code, the gates that decided and why, the rate's change.

    ``context`` adds what a reader must know before trusting the line (independent groups,
    undecided responses).
    """
    deciding = deciding_gates(status, gates)
    text = f"{status.upper()} (exit code {code})"
    if deciding:
        text += f", decided by {', '.join(g.name for g in deciding)}"
    first = deciding[0] if deciding and status != "pass" else None
    if first is not None and first.name != "unsupported_rate":
        text += f": {first.message}"
    if rate is not None and rate.difference is not None and status != "incomplete":
        text += "; " if first is not None and first.name != "unsupported_rate" else ": "
        text += (
            f"mean unsupported rate {rate.difference:+.3f}, {rate.confidence:.0%} one-sided bounds "
            f"[{_bound(rate.lower_bound)}, {_bound(rate.upper_bound)}], margin {rate.margin:.3f}"
        )
        where = f"at {rate.n} {'shared ' if rate.paired else ''}samples"
        if rate.min_detectable_rise is not None:
            text += f"; minimum detectable rise {rate.min_detectable_rise:.3f} {where}"
        else:
            text += f"; minimum detectable rise not estimable {where}"
        if status == "inconclusive" and rate.outcome == "inconclusive" and rate.samples_needed is not None:
            text += f"; about {rate.samples_needed} would decide"
    if rate is not None and rate.style_shift is not None and rate.style_shift.could_explain and status != "incomplete":
        text += f"; {rate.style_shift.describe()}"
    for line in context or []:
        text += f"; {line}"
    return text


def _undecided_note(units: pd.DataFrame, name: str) -> str | None:
    count = int(units["undecided"].sum())
    return f"{count} of {len(units)} responses of {name} undecided by the judge" if count else None


def audit_runs(
    baseline: Run | str | Path,
    current: Run | str | Path,
    gates: AuditGates | None = None,
    *,
    out_dir: str | Path | None = None,
    allow_mismatch: bool = False,
    allow_changes: Collection[str] = (),
    allow_broken_judge: bool = False,
    baseline_model: str | None = None,
    current_model: str | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> AuditResult:
    """Audit ``current`` against ``baseline`` (loaded runs or their directories); write the audit files when
    ``out_dir`` is given. A directory is read as the columns an audit needs (``load_for_audit``), so runs of
    millions of responses fit in memory; the audit is the same as of the runs read whole.

    The runs must be measured alike (``allow_changes`` names the fields of
    ``hallumeasure.report.audit_inputs.CHANGE_FLAGS`` that may differ) and hold the same samples
    (``allow_mismatch`` allows others; without shared samples they are then compared as
    independent groups). A run whose judge failed its sanity checks is refused unless
    ``allow_broken_judge``. Raises ``HalluMeasureError`` (exit code 2) when the runs cannot be
    audited as given.
    """
    base_run, cur_run = load_for_audit(baseline), load_for_audit(current)
    gates = gates or AuditGates()
    if resamples < MIN_RESAMPLES:
        raise ConfigError(f"resamples must be at least {MIN_RESAMPLES} for a usable interval, got {resamples}")
    runs = [base_run, cur_run]
    base_units, base_name = _select(base_run, baseline_model)
    cur_units, cur_name = _select(cur_run, current_model)
    # once: the overlap, the comparison and the gates share it, with the columns they read
    paired_up = pairing(base_units, cur_units, columns=_PAIRED_COLUMNS)
    overlap = SampleOverlap(base_units, cur_units, paired_up)
    found = check_audit_inputs(
        base_run,
        cur_run,
        overlap,
        allow_changes=allow_changes,
        allow_mismatch=allow_mismatch,
        allow_broken_judge=allow_broken_judge,
    )
    options = {"resamples": resamples, "seed": seed}
    base_stats = group_stats(base_units, base_name, **options)
    cur_stats = group_stats(cur_units, cur_name, **options)
    unsure = [
        group_unsure_stats(run.responses, run.claims, name, model, **options)
        for run, name, model in ((base_run, base_name, baseline_model), (cur_run, cur_name, current_model))
    ]
    comparison = compare_groups(base_units, cur_units, base_name, cur_name, paired_up=paired_up, **options)

    pa, pb = paired_up.a, paired_up.b
    paired = len(pa) >= MIN_PAIRS
    if paired:
        ta, tb = pa, pb
        unchanged = (pa["undecided"].to_numpy() > 0) | (pb["undecided"].to_numpy() > 0)
    else:
        ta, tb = base_units, cur_units
        unchanged = cur_units["undecided"].to_numpy() > 0
    changed = pa["response_hash"].to_numpy() != pb["response_hash"].to_numpy() if paired else None
    margins = {"unsupported_rate": gates.max_rate_rise, "hallucinated_share": gates.max_hallucinated_share_rise}
    judge = base_run.manifest.judge if base_run.manifest else None
    decisions = {
        name: None
        if margin is None
        else _with_style(
            decide_rise(
                name,
                ta[column].to_numpy(dtype=float),
                tb[column].to_numpy(dtype=float),
                paired=paired,
                binary=name == "hallucinated_share",
                margin=margin,
                gates=gates,
                unchanged=unchanged,
                judge=judge_error_for(
                    judge,
                    name,
                    sensitivity=gates.judge_sensitivity,
                    specificity=gates.judge_specificity,
                    calibration=gates.judge_calibration,
                    alpha=gates.alpha / 4,
                ),
                changed=changed,
            ),
            ta,
            tb,
            column,
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
    context = []
    if not paired:
        context.append(f"independent groups, not paired: {overlap.describe()}")
    elif not overlap.complete:
        context.append(f"paired over the {len(pa)} shared samples only: {overlap.describe()}")
    notes = (_undecided_note(base_units, "the baseline"), _undecided_note(cur_units, "the current run"))
    context += [x for x in notes if x]
    result = AuditResult(
        status=status,
        exit_code=code,
        headline=headline(status, code, results, decisions["unsupported_rate"], context),
        decided_by=[g.name for g in deciding_gates(status, results)],
        undecided={"baseline": int(base_units["undecided"].sum()), "current": int(cur_units["undecided"].sum())},
        baseline=base_name,
        current=cur_name,
        gates=results,
        settings=gates,
        comparison=comparison,
        baseline_stats=base_stats,
        current_stats=cur_stats,
        baseline_unsure=unsure[0],
        current_unsure=unsure[1],
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


#: ``audit_runs`` on runs already loaded (it takes them as they are).
audit_loaded = audit_runs


def run_audit(
    baseline_dir: Run | str | Path,
    current_dir: Run | str | Path,
    settings: AuditSettings | None = None,
    *,
    out_dir: str | Path | None = None,
) -> AuditResult:
    """Audit ``current_dir`` against ``baseline_dir`` with ``settings`` (see ``audit_runs``)."""
    settings = settings or AuditSettings()
    return audit_runs(
        baseline_dir,
        current_dir,
        settings.gates,
        out_dir=out_dir,
        allow_mismatch=settings.allow_mismatch,
        allow_changes=settings.allow_changes,
        allow_broken_judge=settings.allow_broken_judge,
        baseline_model=settings.baseline_model,
        current_model=settings.current_model,
        resamples=settings.resamples,
        seed=settings.seed,
    )
