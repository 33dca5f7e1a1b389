"""Simulation study: do the audit's and calibration's 95% intervals cover the truth, and does the audit falsely pass?

    .venv/bin/python benchmarks/interval_coverage.py            # writes benchmarks/interval_coverage.{json,md}
    .venv/bin/python benchmarks/interval_coverage.py --runs 200 --no-write   # a quick look

Synthetic runs with known truth (numpy, seeded):

* every sample has 1 + Poisson(3) claims and a difficulty u ~ Beta with mean p0; each claim is
  unsupported with probability u in the baseline run and v = u + rise (1 - u) / (1 - p0) in the
  current run, so the true mean rise of the per-sample unsupported rate is exactly ``rise``
  and the two runs are correlated through u (as two models answering the same tasks are);
* a synthetic judge labels each claim with known sensitivity and specificity; people label a
  random subset of responses without error.

Measured per setting over ``--runs`` simulated runs (>= 1000 for the committed table):

* audit: coverage of the two-sided 95% interval of the difference (paired t for the rate,
  Newcombe's paired score interval for the hallucinated share), and the false-pass rate of
  ``decide_rise`` (true rise above the margin, outcome pass) at alpha 0.05;
* calibration: coverage and mean width of the PPI interval and of the labels-only interval
  for the mean unsupported rate and the hallucinated share.

The statistics are the package's own functions; only the data generation is here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from hallumeasure.report.audit import AuditGates, decide_rise
from hallumeasure.stats.correction import labels_only_mean, ppi_mean
from hallumeasure.stats.intervals import paired_binary_interval, t_interval

HERE = Path(__file__).resolve().parent
CONCENTRATION = 4.0  # Beta(p0 c, (1 - p0) c): per-sample difficulty varies widely, as between tasks
TRUTH_DRAWS = 2_000_000


def draw_run(rng, runs: int, n: int, p0: float, rise: float):
    """Claim counts, per-sample claim probabilities (baseline, current) and unsupported counts."""
    k = 1 + rng.poisson(3, size=(runs, n))
    u = rng.beta(p0 * CONCENTRATION, (1 - p0) * CONCENTRATION, size=(runs, n))
    v = u + rise * (1 - u) / (1 - p0)
    return k, u, v, rng.binomial(k, u), rng.binomial(k, v)


def true_hallucinated_share(rng, p0: float, rise: float) -> tuple[float, float]:
    """E[any unsupported claim] for baseline and current, by a very large draw."""
    k, u, v, _, _ = draw_run(rng, 1, TRUTH_DRAWS, p0, rise)
    return float(np.mean(1 - (1 - u) ** k)), float(np.mean(1 - (1 - v) ** k))


def audit_setting(rng, runs: int, n: int, p0: float, rise: float, margin: float, share_truth) -> dict:
    k, _, _, xb, xc = draw_run(rng, runs, n, p0, rise)
    rb, rc = xb / k, xc / k
    hb, hc = (xb > 0).astype(float), (xc > 0).astype(float)
    true_share_diff = share_truth[1] - share_truth[0]
    # The share rises faster than the rate; its margin sits just below its true rise so false passes are tested.
    share_margin = round(0.8 * true_share_diff, 3) if true_share_diff > margin else margin
    gates = AuditGates(max_rate_rise=margin, max_hallucinated_share_rise=share_margin)
    cover_rate = cover_share = passes_rate = passes_share = 0
    for r in range(runs):
        _, lo, hi = t_interval(rc[r] - rb[r], 0.95)
        cover_rate += lo <= rise <= hi
        _, lo, hi = paired_binary_interval(hb[r], hc[r], 0.95)
        cover_share += lo <= true_share_diff <= hi
        passes_rate += (
            decide_rise("rate", rb[r], rc[r], paired=True, binary=False, margin=margin, gates=gates, plan=False).outcome
            == "pass"
        )
        passes_share += (
            decide_rise(
                "share", hb[r], hc[r], paired=True, binary=True, margin=share_margin, gates=gates, plan=False
            ).outcome
            == "pass"
        )
    return {
        "n_shared": n,
        "p0": p0,
        "true_rise": rise,
        "margin": margin,
        "true_share_rise": round(true_share_diff, 4),
        "share_margin": share_margin,
        "coverage_rate_diff": cover_rate / runs,
        "coverage_share_diff": cover_share / runs,
        "pass_rate_gate": passes_rate / runs,
        "pass_share_gate": passes_share / runs,
    }


def calibration_setting(
    rng, runs: int, n_run: int, n_labelled: int, p0: float, sens: float, spec: float, share_truth: float
) -> dict:
    k, u, _, _, _ = draw_run(rng, runs, n_run, p0, 0.0)
    width = k.max()
    claim = np.arange(width)[None, None, :] < k[..., None]
    truth = (rng.random((runs, n_run, width)) < u[..., None]) & claim
    flip = rng.random((runs, n_run, width))
    judge = np.where(truth, flip < sens, flip > spec) & claim
    y_rate, f_rate = truth.sum(-1) / k, judge.sum(-1) / k
    y_flag, f_flag = truth.any(-1).astype(float), judge.any(-1).astype(float)
    out = {"n_responses": n_run, "n_labelled": n_labelled, "p0": p0, "sensitivity": sens, "specificity": spec}
    for name, y, f, target in (("rate", y_rate, f_rate, p0), ("share", y_flag, f_flag, share_truth)):
        cover = {"ppi": 0, "tuned": 0, "labels": 0}
        widths: dict[str, list[float]] = {key: [] for key in cover}
        for r in range(runs):
            lab = rng.choice(n_run, size=n_labelled, replace=False)
            rest = np.ones(n_run, bool)
            rest[lab] = False
            intervals = {
                "ppi": ppi_mean(y[r, lab], f[r, lab], f[r, rest])[1:3],
                "tuned": ppi_mean(y[r, lab], f[r, lab], f[r, rest], tuned=True)[1:3],
                "labels": labels_only_mean(y[r, lab])[1:3],
            }
            for key, (lo, hi) in intervals.items():
                cover[key] += lo <= target <= hi
                widths[key].append(hi - lo)
        out[f"truth_{name}"] = round(target, 4)
        for key in cover:
            out[f"coverage_{key}_{name}"] = cover[key] / runs
            out[f"width_{key}_{name}"] = float(np.mean(widths[key]))
    return out


AUDIT_SETTINGS = [  # (n shared samples, baseline rate, true rise, margin): rises above the margin test false passes
    (10, 0.2, 0.03, 0.02),
    (30, 0.1, 0.03, 0.02),
    (30, 0.2, 0.05, 0.02),
    (100, 0.1, 0.03, 0.02),
    (400, 0.05, 0.025, 0.02),
    (400, 0.1, 0.0, 0.02),
    (1000, 0.1, 0.0, 0.02),
]
CALIBRATION_SETTINGS = [  # (responses in the run, labelled, baseline rate, judge sensitivity, specificity)
    (1000, 50, 0.15, 0.85, 0.95),
    (1000, 100, 0.15, 0.85, 0.95),
    (2000, 200, 0.1, 0.7, 0.9),
    (2000, 200, 0.2, 0.95, 0.98),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="simulated runs per setting (default 1000)")
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--render", action="store_true", help="only rewrite the .md from the committed .json")
    args = parser.parse_args(argv)
    if args.render:
        result = json.loads((HERE / "results" / "interval_coverage.json").read_text(encoding="utf-8"))
        (HERE / "results" / "interval_coverage.md").write_text(markdown(result), encoding="utf-8")
        return 0
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    audit_rows, calibration_rows = [], []
    for n, p0, rise, margin in AUDIT_SETTINGS:
        truth = true_hallucinated_share(rng, p0, rise)
        audit_rows.append(audit_setting(rng, args.runs, n, p0, rise, margin, truth))
        print(audit_rows[-1], flush=True)
    for n_run, n_lab, p0, sens, spec in CALIBRATION_SETTINGS:
        truth = true_hallucinated_share(rng, p0, 0.0)[0]
        calibration_rows.append(calibration_setting(rng, args.runs, n_run, n_lab, p0, sens, spec, truth))
        print(calibration_rows[-1], flush=True)
    seconds = time.perf_counter() - started
    result = {
        "command": "python benchmarks/interval_coverage.py" + (f" --runs {args.runs}" if args.runs != 1000 else ""),
        "runs_per_setting": args.runs,
        "seed": args.seed,
        "seconds": round(seconds, 1),
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "load_average": round(os.getloadavg()[0], 1),
        "audit": audit_rows,
        "calibration": calibration_rows,
    }
    if not args.no_write:
        (HERE / "results" / "interval_coverage.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        (HERE / "results" / "interval_coverage.md").write_text(markdown(result), encoding="utf-8")
    print(f"{seconds:.0f} s")
    return 0


def _ok(value: float, low: float = 0.93, high: float = 0.97) -> str:
    return f"{value:.3f}" + ("" if low <= value <= high else " **(outside 0.93-0.97)**")


def _mark_pass(share: float, false_pass: bool) -> str:
    """A gate's pass share; when the true rise is at or above the margin it is a false-pass rate, flagged."""
    if not false_pass:
        return f"{share:.3f}"
    return f"{share:.3f}" + (" **(above 0.05)**" if share > 0.05 else "") + " (false pass)"


def summary(result: dict) -> list[str]:
    """The headline numbers, computed from the tables (so they cannot drift from them)."""
    audit, cal = result["audit"], result["calibration"]
    cover = [r[k] for r in audit for k in ("coverage_rate_diff", "coverage_share_diff")]
    false_pass = [r["pass_rate_gate"] for r in audit if r["true_rise"] >= r["margin"]]
    false_pass += [r["pass_share_gate"] for r in audit if r["true_share_rise"] >= r["share_margin"]]
    ppi = [r[f"coverage_ppi_{m}"] for r in cal for m in ("rate", "share")]
    tuned = [r[f"coverage_tuned_{m}"] for r in cal for m in ("rate", "share")]
    narrower = [(r, m) for r in cal for m in ("rate", "share") if r[f"width_ppi_{m}"] < r[f"width_labels_{m}"]]
    wider = [
        f"sensitivity {r['sensitivity']} / specificity {r['specificity']}, {m}"
        for r in cal
        for m in ("rate", "share")
        if r[f"width_ppi_{m}"] >= r[f"width_labels_{m}"]
    ]
    tuned_narrower = sum(r[f"width_tuned_{m}"] < r[f"width_labels_{m}"] for r in cal for m in ("rate", "share"))
    lines = [
        "**Result.** "
        f"Audit intervals: coverage {min(cover):.3f}-{max(cover):.3f} (target 0.93-0.97: "
        f"{'met' if min(cover) >= 0.93 and max(cover) <= 0.97 else 'missed'}). "
        f"False-pass rate: at most {max(false_pass):.3f} "
        f"(target <= 0.05: {'met' if max(false_pass) <= 0.05 else 'missed'}). "
        f"PPI intervals: coverage {min(ppi):.3f}-{max(ppi):.3f} "
        f"({'met' if min(ppi) >= 0.93 and max(ppi) <= 0.97 else 'missed'}); narrower than the labels-only interval in "
        f"{len(narrower)} of {len(ppi)} cases"
        + (
            f", not with the weak judge ({'; '.join(wider)}): a judge that noisy adds more variance than it removes"
            if wider
            else ""
        )
        + ". "
        f"PPI++ (power-tuned): narrower than labels-only in {tuned_narrower} of {len(tuned)} cases, coverage "
        f"{min(tuned):.3f}-{max(tuned):.3f} ({'met' if min(tuned) >= 0.93 and max(tuned) <= 0.97 else 'missed'}; "
        "lambda cross-fitted over two halves of the labels).",
    ]
    return lines


def markdown(result: dict) -> str:
    lines = [
        "# Interval coverage and audit error rates (simulation with known truth)",
        "",
        f"Command: `{result['command']}` ({result['runs_per_setting']} simulated runs per setting, seed "
        f"{result['seed']}, {result['seconds']} s on {result['machine']}, shared with other jobs: "
        f"1-minute load average {result.get('load_average', '?')} at the end). "
        "Target: every nominal 95% interval covers the truth in 93-97% of runs; "
        "the audit's false-pass rate (true rise above the margin, outcome pass) is at most 5%; "
        "the PPI interval is narrower than the labels-only one. Monte Carlo error of a coverage near 0.95 "
        f"over {result['runs_per_setting']} runs: +-{1.96 * (0.95 * 0.05 / result['runs_per_setting']) ** 0.5:.3f}.",
        "",
        *summary(result),
        "",
        "## Audit: paired intervals of current - baseline, and the pass rate",
        "",
        "Rate: paired t interval of per-sample unsupported rates. Share: Newcombe's paired score interval of the "
        "hallucinated share. 'pass' columns: share of runs whose gate outcome was pass (alpha 0.05, one-sided); "
        "when the true rise is at or above the margin this is the false-pass rate (must be <= 0.05); below it, the "
        "power to pass.",
        "",
        "| shared samples | baseline rate | true rise (rate) | margin (rate) | true rise (share) | margin (share) | "
        "coverage rate diff | coverage share diff | pass, rate gate | pass, share gate |",
        "|---:|---:|---:|---:|---:|---:|---|---|---|---|",
    ]
    for r in result["audit"]:
        false_pass = r["true_rise"] >= r["margin"]
        share_false = r["true_share_rise"] >= r["share_margin"]
        lines.append(
            f"| {r['n_shared']} | {r['p0']} | {r['true_rise']} | {r['margin']} | {r['true_share_rise']} | "
            f"{r['share_margin']} | "
            f"{_ok(r['coverage_rate_diff'])} | {_ok(r['coverage_share_diff'])} | "
            f"{_mark_pass(r['pass_rate_gate'], false_pass)} | {_mark_pass(r['pass_share_gate'], share_false)} |"
        )
    lines += [
        "",
        "## Calibration: PPI-corrected against labels-only intervals",
        "",
        "A synthetic judge with the given claim-level sensitivity and specificity labels every claim; people label a "
        "random subset of responses. Truth: the true mean unsupported rate and hallucinated share.",
        "",
        "PPI = prediction-powered inference (lambda 1); PPI++ = power-tuned (lambda estimated). `calibrate` "
        "reports both.",
        "",
        "| responses | labelled | rate | judge sens / spec | metric | truth | coverage PPI | coverage PPI++ | "
        "coverage labels only | width PPI | width PPI++ | width labels only |",
        "|---:|---:|---:|---|---|---:|---|---|---|---:|---:|---:|",
    ]
    for r in result["calibration"]:
        for name, label in (("rate", "mean unsupported rate"), ("share", "hallucinated share")):
            lines.append(
                f"| {r['n_responses']} | {r['n_labelled']} | {r['p0']} | {r['sensitivity']} / {r['specificity']} | "
                f"{label} | {r[f'truth_{name}']} | {_ok(r[f'coverage_ppi_{name}'])} | "
                f"{_ok(r[f'coverage_tuned_{name}'])} | {_ok(r[f'coverage_labels_{name}'])} | "
                f"{r[f'width_ppi_{name}']:.4f} | {r[f'width_tuned_{name}']:.4f} | {r[f'width_labels_{name}']:.4f} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
