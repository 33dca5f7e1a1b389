"""Regression audit: compare a current run with a baseline run and pass or fail configurable gates.

Exit codes (``AuditResult.exit_code``):

* 0 — every gate passed;
* 1 — regression: the current run is worse beyond what the gates allow;
* 2 — usage error: the runs cannot be audited as given (missing, measured differently,
  unknown model); ``audit_runs`` raises a ``HalluMeasureError`` for these and the caller
  may record it with :func:`write_usage_error`;
* 3 — incomplete: too many error rows, or too few samples, to trust the comparison. This
  wins over 1, because a verdict on unreliable numbers is not a verdict.

Outputs: ``audit.json`` (everything), ``audit.md`` (for people) and ``audit.junit.xml``
(one testcase per gate, failures as ``<failure>``) so CI systems show each gate.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from hallumeasure.errors import ConfigError
from hallumeasure.report.comparison import Comparison, compare_groups
from hallumeasure.report.render import render_markdown
from hallumeasure.report.runs import (
    LoadedRun,
    RunInfo,
    check_comparable,
    judge_notes,
    policy_lines,
    response_units,
    run_info,
)
from hallumeasure.report.stats import SUBTYPES, GroupStats, group_stats
from hallumeasure.store import load_run

EXIT_PASS, EXIT_REGRESSION, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3

Status = Literal["pass", "regression", "incomplete", "usage_error"]


class AuditGates(BaseModel):
    """The thresholds of a regression audit. Rises are absolute (0.02 = two percentage points)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_rate_rise: float = Field(
        default=0.02, ge=0.0, le=1.0,
        description="Largest tolerated rise of the mean unsupported rate; a larger rise fails only when it is "
                    "also significant at alpha.")
    alpha: float = Field(default=0.05, gt=0.0, le=1.0,
                         description="Significance level of the paired (or unpaired) test. 1.0 = margin only.")
    max_hallucinated_share_rise: float | None = Field(
        default=None, ge=0.0, le=1.0,
        description="Largest tolerated rise of the hallucinated-response share (same significance rule); "
                    "None = not checked.")
    subtype_shift: bool = Field(
        default=True,
        description="Fail when some error subtype becomes significantly more frequent per evaluated claim "
                    "(Holm-adjusted across subtypes).")
    subtype_alpha: float | None = Field(default=None, gt=0.0, le=1.0,
                                        description="Significance level of the subtype test; None = alpha.")
    min_samples: int = Field(default=5, ge=1,
                             description="Fewest compared samples (pairs, or responses per side when unpaired).")
    max_error_share: float = Field(default=0.05, ge=0.0, le=1.0,
                                   description="Largest tolerated share of error rows (failed samples and claims "
                                               "without a verdict) in either run.")


class GateResult(BaseModel):
    name: str
    kind: Literal["regression", "completeness"]
    status: Literal["pass", "fail", "skipped"]
    observed: str
    threshold: str
    message: str


class AuditResult(BaseModel):
    """The outcome of an audit; ``exit_code`` follows the module's exit-code table."""

    status: Status
    exit_code: int
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


def _rise_gate(name: str, diff, limit: float | None, alpha: float, what: str) -> GateResult:
    if limit is None:
        return GateResult(name=name, kind="regression", status="skipped", observed="-", threshold="not set",
                          message=f"{what} gate not configured")
    threshold = f"rise <= {limit:.3f}, or not significant at alpha {alpha:g}"
    if diff.diff.value is None:
        return GateResult(name=name, kind="regression", status="skipped", observed="-", threshold=threshold,
                          message=f"no {what} could be computed for one of the runs")
    rise, p = diff.diff.value, diff.p_value
    observed = f"{diff.a:.3f} -> {diff.b:.3f} (difference {rise:+.3f}, p {p:.4f})" if p is not None else f"{rise:+.3f}"
    failed = rise > limit and p is not None and p < alpha
    if failed:
        message = f"{what} rose by {rise:.3f} (more than {limit:.3f}), significant at alpha {alpha:g}"
    elif rise > limit:
        message = f"{what} rose by {rise:.3f}, but the rise is not significant (p {p:.4f} >= {alpha:g})"
    else:
        message = f"{what} changed by {rise:+.3f}, within the tolerated {limit:.3f}"
    return GateResult(name=name, kind="regression", status="fail" if failed else "pass", observed=observed,
                      threshold=threshold, message=message)


def _subtype_gate(comparison: Comparison, gates: AuditGates) -> GateResult:
    alpha = gates.subtype_alpha or gates.alpha
    threshold = f"no subtype rate rises with Holm-adjusted p < {alpha:g}"
    if not gates.subtype_shift:
        return GateResult(name="subtype_shift", kind="regression", status="skipped", observed="-",
                          threshold="disabled", message="subtype shift gate disabled")
    shift = comparison.subtypes
    if shift.p_value is None:
        return GateResult(name="subtype_shift", kind="regression", status="skipped", observed="-",
                          threshold=threshold, message=shift.note or "no subtypes to test")
    risen = [
        x for x in SUBTYPES
        if shift.p_holm[x] is not None and shift.p_holm[x] < alpha
        and (shift.rates_b[x] or 0.0) > (shift.rates_a[x] or 0.0)
    ]
    observed = f"mix test p {shift.p_value:.4f}; " + (
        ", ".join(f"{x} {shift.rates_a[x]:.3f} -> {shift.rates_b[x]:.3f} (Holm p {shift.p_holm[x]:.4f})"
                  for x in risen) or "no significant rise")
    message = (f"significantly more frequent: {', '.join(risen)}" if risen
               else "no error subtype became significantly more frequent")
    return GateResult(name="subtype_shift", kind="regression", status="fail" if risen else "pass",
                      observed=observed, threshold=threshold, message=message)


def _sample_gate(comparison: Comparison, base: GroupStats, cur: GroupStats, gates: AuditGates) -> GateResult:
    # Pairs count only when both sides have a rate: a shared sample that failed on one side tells nothing.
    n = comparison.unsupported_rate.n_pairs if comparison.paired else min(base.n_rated, cur.n_rated)
    what = "shared samples rated in both runs" if comparison.paired else "rated responses in the smaller run"
    ok = n >= gates.min_samples
    return GateResult(
        name="sample_count", kind="completeness", status="pass" if ok else "fail", observed=f"{n} {what}",
        threshold=f">= {gates.min_samples}",
        message=f"{n} {what}" + ("" if ok else f", fewer than the {gates.min_samples} needed for a verdict"),
    )


def _error_gate(base: GroupStats, cur: GroupStats, gates: AuditGates) -> GateResult:
    shares = {"baseline": base.error_share.value or 0.0, "current": cur.error_share.value or 0.0}
    counts = {"baseline": base.n_error_rows, "current": cur.n_error_rows}
    over = [k for k, v in shares.items() if v > gates.max_error_share]
    observed = "; ".join(f"{k} {counts[k]} error rows ({shares[k]:.3f})" for k in shares)
    message = (f"too many error rows in the {' and '.join(over)} run; re-run or resume the measurement first"
               if over else "error rows within the limit")
    return GateResult(name="error_rows", kind="completeness", status="fail" if over else "pass",
                      observed=observed, threshold=f"error share <= {gates.max_error_share:.3f}", message=message)


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

    results = [
        _sample_gate(comparison, base_stats, cur_stats, gates),
        _error_gate(base_stats, cur_stats, gates),
        _rise_gate("unsupported_rate", comparison.unsupported_rate, gates.max_rate_rise, gates.alpha,
                   "mean unsupported rate"),
        _rise_gate("hallucinated_share", comparison.hallucinated_share, gates.max_hallucinated_share_rise,
                   gates.alpha, "hallucinated share"),
        _subtype_gate(comparison, gates),
    ]
    failed = {g.kind for g in results if g.status == "fail"}
    if "completeness" in failed:
        status, code = "incomplete", EXIT_INCOMPLETE
    elif "regression" in failed:
        status, code = "regression", EXIT_REGRESSION
    else:
        status, code = "pass", EXIT_PASS
    result = AuditResult(
        status=status, exit_code=code, baseline=base_name, current=cur_name, gates=results, settings=gates,
        comparison=comparison, baseline_stats=base_stats, current_stats=cur_stats,
        runs=[run_info(r) for r in runs], mismatches=found, policy=policy_lines(runs), notes=judge_notes(runs),
        resamples=resamples, seed=seed,
    )
    if out_dir is not None:
        result = write_audit(result, out_dir)
    return result


# --- outputs -------------------------------------------------------------------------------------


def junit_xml(gates: list[GateResult], *, error: str | None = None) -> str:
    """JUnit XML with one testcase per gate (or one errored testcase for a usage error)."""
    failures = sum(g.status == "fail" for g in gates)
    skipped = sum(g.status == "skipped" for g in gates)
    tests = len(gates) + (1 if error else 0)
    counts = {"tests": str(tests), "failures": str(failures), "errors": str(int(error is not None)),
              "skipped": str(skipped), "time": "0"}
    root = ET.Element("testsuites", {"name": "hallumeasure audit", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "hallumeasure.audit", **counts})
    for gate in gates:
        case = ET.SubElement(suite, "testcase", {"classname": f"hallumeasure.audit.{gate.kind}", "name": gate.name,
                                                 "time": "0"})
        if gate.status == "fail":
            failure = ET.SubElement(case, "failure", {"message": gate.message, "type": gate.kind})
            failure.text = f"observed: {gate.observed}\nthreshold: {gate.threshold}"
        elif gate.status == "skipped":
            ET.SubElement(case, "skipped", {"message": gate.message})
        else:
            ET.SubElement(case, "system-out").text = f"observed: {gate.observed}\nthreshold: {gate.threshold}"
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
    subtypes = [x for x in SUBTYPES if result.comparison.subtypes.counts_a.get(x)
                or result.comparison.subtypes.counts_b.get(x)]
    (out / "audit.md").write_text(render_markdown("audit.md.j2", audit=result, subtypes=subtypes), encoding="utf-8")
    (out / "audit.junit.xml").write_text(junit_xml(result.gates), encoding="utf-8")
    return result


def write_usage_error(out_dir: str | Path, message: str) -> None:
    """Record an audit that could not run (exit code 2) in the same three files, so CI shows why."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {"status": "usage_error", "exit_code": EXIT_USAGE, "message": message}
    (out / "audit.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    (out / "audit.md").write_text(render_markdown("audit_error.md.j2", message=message), encoding="utf-8")
    (out / "audit.junit.xml").write_text(junit_xml([], error=message), encoding="utf-8")
