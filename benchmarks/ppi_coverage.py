"""Simulation study: do calibrate's corrected rates cover the truth and stay within [0, 1]?

    python benchmarks/ppi_coverage.py                       # writes benchmarks/ppi_coverage.{json,md}
    python benchmarks/ppi_coverage.py --runs 200 --no-write  # a quick look
    python benchmarks/ppi_coverage.py --jobs 8              # cells in parallel processes

The grid (issue #28): true rates {0.01, 0.05, 0.15, 0.30} x labelled responses {50, 100, 200,
400} x judge sensitivity x specificity, each in {0.7, 0.85, 0.95}, in a run of 1,000 responses,
``--runs`` simulated runs per cell (1,000 for the committed table), for two metrics:

* hallucinated share: each response is hallucinated with probability = the rate; the judge flags
  it with the given sensitivity and specificity (response level);
* mean unsupported rate: each response has 1 + Poisson(3) claims and a difficulty u ~ Beta with
  mean = the rate; each claim is unsupported with probability u and the judge labels claims with
  the given sensitivity and specificity (claim level). Rogan-Gladen uses the claim-level error
  rates measured on the labelled responses, as ``calibrate`` does.

Methods (the package's own code: the bounded estimators are called through their vectorised
draw functions; the Wald intervals are recomputed here and checked against ``ppi_mean`` on the
first run of every cell):

* ``ppi``: plain PPI (Angelopoulos et al. 2023), normal interval, unbounded;
* ``tuned``: PPI++ with cross-fitted lambda, normal interval, unbounded;
* ``stratified``: stratified PPI with a Bayesian interval (what ``calibrate`` reports as PPI);
* ``labels``: the labels alone, Jeffreys interval;
* ``rg_bayes``: Bayesian Rogan-Gladen (what ``calibrate`` reports as Rogan-Gladen);
* ``rg_delta``: the classical Rogan-Gladen with a delta-method interval, clipped to [0, 1].

Measured per cell and method: coverage of the true rate by the 95% interval, mean width, and the
share of runs whose interval or estimate leaves [0, 1] (or that give no value). The cells where
the reported methods cover less than 0.93 are written to ``hallumeasure/stats/coverage_grid.py``,
which ``calibrate`` reads to say when its interval cannot be trusted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy import stats

from hallumeasure.stats.correction import (
    DRAWS,
    _summarise,
    effective_beta,
    ppi_mean,
    rogan_gladen_draws,
    stratified_ppi_draws,
)

HERE = Path(__file__).resolve().parent
GRID_MODULE = HERE.parent / "hallumeasure" / "stats" / "coverage_grid.py"
RATES = (0.01, 0.05, 0.15, 0.30)
LABELS = (50, 100, 200, 400)
ACCURACY = (0.7, 0.85, 0.95)
N_RUN = 1000
CONCENTRATION = 4.0
METHODS = ("ppi", "tuned", "stratified", "labels", "rg_bayes", "rg_delta")
REPORTED = ("stratified", "rg_bayes")
Z = float(stats.norm.ppf(0.975))
CHUNK = 250


def _var(x: np.ndarray, axis: int = -1) -> np.ndarray:
    out: np.ndarray = x.var(axis=axis, ddof=1)
    return out


def _wald(y: np.ndarray, f: np.ndarray, g_mean: np.ndarray, g_var: np.ndarray, n_rest: int, tuned: bool):
    """Vectorised ``ppi_mean`` over runs (rows): y, f are (runs, n) labelled; g_* the unlabelled mean and variance."""
    n = y.shape[1]
    weights = np.ones_like(y)
    if tuned:
        judged_var = (
            g_var * (n_rest - 1) + _var(f) * (n - 1) + (n * n_rest / (n + n_rest)) * (f.mean(-1) - g_mean) ** 2
        ) / (n + n_rest - 1)
        half = np.arange(n) % 2
        fitted = []
        for k in (0, 1):
            yk, fk = y[:, half == k], f[:, half == k]
            cov = ((yk - yk.mean(-1, keepdims=True)) * (fk - fk.mean(-1, keepdims=True))).sum(-1) / (yk.shape[1] - 1)
            lam = np.where(judged_var > 0, cov / ((1 + n / n_rest) * np.where(judged_var > 0, judged_var, 1)), 0.0)
            fitted.append(np.clip(lam, 0.0, 1.0))
        weights = np.where(half[None, :] == 0, fitted[1][:, None], fitted[0][:, None])
    lam = weights.mean(-1)
    rect = y - weights * f
    est = lam * g_mean + rect.mean(-1)
    var = lam**2 * g_var / n_rest + _var(rect) / n
    half_width = Z * np.sqrt(var)
    return est, est - half_width, est + half_width


def _strata_stats(y: np.ndarray, flag: np.ndarray):
    """Per run and stratum (judge clear, judge flags): labelled count, mean and variance of the mean."""
    out = []
    for k in (0, 1):
        mask = flag == k
        n = mask.sum(-1).astype(float)
        s = np.where(mask, y, 0.0).sum(-1)
        ss = np.where(mask, y * y, 0.0).sum(-1)
        mean = np.where(n > 0, s / np.maximum(n, 1), 0.0)
        var = np.where(n > 1, (ss - n * mean**2) / np.maximum(n - 1, 1), 0.0)
        out.append((n, mean, np.maximum(var, 0.0) / np.maximum(n, 1)))
    return [np.stack([o[i] for o in out], axis=-1) for i in range(3)]


def _rg_delta(observed, observed_var, tp, fn, tn, fp):
    """The classical Rogan-Gladen estimate with its delta-method interval, clipped (as ``rogan_gladen``)."""
    n_pos, n_neg = tp + fn, tn + fp
    se = np.where(n_pos > 0, tp / np.maximum(n_pos, 1), np.nan)
    sp = np.where(n_neg > 0, tn / np.maximum(n_neg, 1), np.nan)
    youden = se + sp - 1
    ok = np.isfinite(youden) & (youden > 0)
    yd = np.where(ok, youden, 1.0)
    theta = (observed + sp - 1) / yd
    var = (
        observed_var
        + theta**2 * se * (1 - se) / np.maximum(n_pos, 1)
        + (1 - theta) ** 2 * sp * (1 - sp) / np.maximum(n_neg, 1)
    ) / yd**2
    half = Z * np.sqrt(np.maximum(var, 0))
    nan = np.full_like(theta, np.nan)
    return (
        np.where(ok, np.clip(theta, 0, 1), nan),
        np.where(ok, np.clip(theta - half, 0, 1), nan),
        np.where(ok, np.clip(theta + half, 0, 1), nan),
    )


def simulate_share(rng: np.random.Generator, runs: int, rate: float, n: int, sens: float, spec: float):
    """Labelled truth and judge (runs, n), and the unlabelled judge's flag count, for the hallucinated share."""
    y = (rng.random((runs, n)) < rate).astype(float)
    f = np.where(y > 0, rng.random((runs, n)) < sens, rng.random((runs, n)) > spec).astype(float)
    flagged = rng.binomial(N_RUN - n, rate * sens + (1 - rate) * (1 - spec), size=runs).astype(float)
    g_mean = flagged / (N_RUN - n)
    g_var = g_mean * (1 - g_mean) * (N_RUN - n) / (N_RUN - n - 1)
    tp, fn = (y * f).sum(-1), (y * (1 - f)).sum(-1)
    tn, fp = ((1 - y) * (1 - f)).sum(-1), ((1 - y) * f).sum(-1)
    counts = np.stack([N_RUN - flagged - f.sum(-1), flagged + f.sum(-1)], axis=-1)
    return y, f, g_mean, g_var, counts, (tp, fn, tn, fp)


def simulate_rate(rng: np.random.Generator, runs: int, rate: float, n: int, sens: float, spec: float):
    """The same for the mean unsupported rate, from claims (claim-level judge)."""
    k = 1 + rng.poisson(3, size=(runs, N_RUN))
    u = rng.beta(rate * CONCENTRATION, (1 - rate) * CONCENTRATION, size=(runs, N_RUN))
    width = int(k.max())
    claim = np.arange(width)[None, None, :] < k[..., None]
    truth = (rng.random((runs, N_RUN, width)) < u[..., None]) & claim
    draw = rng.random((runs, N_RUN, width))
    judge = np.where(truth, draw < sens, draw > spec) & claim
    y_all, f_all = truth.sum(-1) / k, judge.sum(-1) / k
    y, f, g = y_all[:, :n], f_all[:, :n], f_all[:, n:]
    lt, lj, lc = truth[:, :n], judge[:, :n], claim[:, :n]
    tp, fn = (lt & lj).sum((1, 2)), (lt & ~lj).sum((1, 2))
    tn, fp = (~lt & ~lj & lc).sum((1, 2)), (~lt & lj).sum((1, 2))
    flag_all = f_all > 0
    counts = np.stack([(~flag_all).sum(-1), flag_all.sum(-1)], axis=-1).astype(float)
    return (
        y,
        f,
        g.mean(-1),
        _var(g),
        counts,
        (tp.astype(float), fn.astype(float), tn.astype(float), fp.astype(float)),
        f_all,
    )


def cell(args: tuple[str, float, int, float, float, int, int]) -> dict:
    """One cell of the grid: every method's coverage, width and escapes from [0, 1]."""
    metric, rate, n, sens, spec, runs, seed = args
    rng = np.random.default_rng(seed)
    results: dict[str, list[np.ndarray]] = {m: [] for m in METHODS}
    for start in range(0, runs, CHUNK):
        size = min(CHUNK, runs - start)
        if metric == "share":
            y, f, g_mean, g_var, counts, (tp, fn, tn, fp) = simulate_share(rng, size, rate, n, sens, spec)
            observed = (counts[:, 1]) / N_RUN
            observed_var = observed * (1 - observed) / (N_RUN - 1)
            g_first = np.r_[
                np.ones(int(g_mean[0] * (N_RUN - n) + 0.5)), np.zeros(N_RUN - n - int(g_mean[0] * (N_RUN - n) + 0.5))
            ]
        else:
            y, f, g_mean, g_var, counts, (tp, fn, tn, fp), f_all = simulate_rate(rng, size, rate, n, sens, spec)
            observed = f_all.mean(-1)
            observed_var = _var(f_all) / N_RUN
            g_first = f_all[0, n:]
        for key, tuned in (("ppi", False), ("tuned", True)):
            est, lo, hi = _wald(y, f, g_mean, g_var, N_RUN - n, tuned)
            if start == 0:  # the vectorised formula is the package's
                ref = ppi_mean(y[0], f[0], g_first, tuned=tuned)
                assert np.allclose([est[0], lo[0], hi[0]], ref[:3]), (key, ref, est[0])
            results[key].append(np.stack([est, lo, hi]))
        n_s, mean_s, var_s = _strata_stats(y, (f > 0).astype(int))
        draws = stratified_ppi_draws(counts, n_s, mean_s, var_s, DRAWS, rng)
        results["stratified"].append(np.stack(_summarise(draws, 0.95)))
        var_y = _var(y) / n
        a, b = effective_beta(y.mean(-1), var_y, np.full(size, float(n)))
        dist = stats.beta(a, b)
        results["labels"].append(np.stack([dist.median(), dist.ppf(0.025), dist.ppf(0.975)]))
        rg = rogan_gladen_draws(observed, observed_var, np.full(size, float(N_RUN)), (tp, fn), (tn, fp), DRAWS, rng)
        med, lo, hi = _summarise(rg, 0.95)
        few = np.isfinite(rg).mean(-1) < 0.05
        results["rg_bayes"].append(np.stack([np.where(few, np.nan, x) for x in (med, lo, hi)]))
        results["rg_delta"].append(np.stack(_rg_delta(observed, observed_var, tp, fn, tn, fp)))
    row: dict = {"metric": metric, "rate": rate, "n_labelled": n, "sensitivity": sens, "specificity": spec}
    for key in METHODS:
        est, lo, hi = np.concatenate(results[key], axis=1)
        valued = np.isfinite(lo) & np.isfinite(hi)
        row[f"coverage_{key}"] = round(float(np.mean(valued & (lo <= rate) & (rate <= hi))), 4)
        row[f"width_{key}"] = round(float(np.nanmean(np.where(valued, hi - lo, np.nan))), 4) if valued.any() else None
        row[f"outside_{key}"] = int(np.sum(valued & ((lo < 0) | (hi > 1) | (est < 0) | (est > 1))))
        row[f"no_value_{key}"] = int(np.sum(~valued))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="simulated runs per cell (default 1000)")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--jobs", type=int, default=1, help="cells computed in parallel processes")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--render", action="store_true", help="only rewrite the .md and the grid module from the .json")
    args = parser.parse_args(argv)
    if args.render:
        result = json.loads((HERE / "results" / "ppi_coverage.json").read_text(encoding="utf-8"))
        _write(result)
        return 0
    cells = [
        (metric, rate, n, sens, spec, args.runs, args.seed * 100_000 + i)
        for i, (metric, rate, n, sens, spec) in enumerate(
            itertools.product(("share", "rate"), RATES, LABELS, ACCURACY, ACCURACY)
        )
    ]
    started = time.perf_counter()
    rows = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for row in pool.map(cell, cells):
            rows.append(row)
            print(
                {
                    k: row[k]
                    for k in (
                        "metric",
                        "rate",
                        "n_labelled",
                        "sensitivity",
                        "specificity",
                        "coverage_ppi",
                        "coverage_stratified",
                        "coverage_rg_bayes",
                    )
                },
                flush=True,
            )
    seconds = time.perf_counter() - started
    result = {
        "command": "python benchmarks/ppi_coverage.py" + (f" --runs {args.runs}" if args.runs != 1000 else ""),
        "runs_per_cell": args.runs,
        "seed": args.seed,
        "responses_per_run": N_RUN,
        "draws": DRAWS,
        "seconds": round(seconds, 1),
        "jobs": args.jobs,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "cells": rows,
    }
    if not args.no_write:
        (HERE / "results" / "ppi_coverage.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        _write(result)
    print(f"{seconds:.0f} s")
    return 0


NAMES = {
    "ppi": "PPI (normal)",
    "tuned": "PPI++ (normal)",
    "stratified": "stratified PPI (Bayes)",
    "labels": "labels only (Jeffreys)",
    "rg_bayes": "Rogan-Gladen (Bayes)",
    "rg_delta": "Rogan-Gladen (delta, clipped)",
}
METRICS = {"share": "hallucinated share", "rate": "mean unsupported rate"}
LOW, HIGH = 0.93, 0.97


def summary_rows(result: dict) -> list[dict]:
    """Per metric and method: the range of coverage, cells below and above the target, escapes from [0, 1]."""
    rows = []
    for metric in METRICS:
        cells = [c for c in result["cells"] if c["metric"] == metric]
        for key in METHODS:
            cover = [c[f"coverage_{key}"] for c in cells]
            rows.append(
                {
                    "metric": metric,
                    "method": key,
                    "min": min(cover),
                    "max": max(cover),
                    "below": sum(x < LOW for x in cover),
                    "above": sum(x > HIGH for x in cover),
                    "cells": len(cells),
                    "outside": sum(c[f"outside_{key}"] for c in cells),
                    "no_value": sum(c[f"no_value_{key}"] for c in cells),
                    "runs": len(cells) * result["runs_per_cell"],
                }
            )
    return rows


def markdown(result: dict) -> str:
    runs = result["runs_per_cell"]
    lines = [
        "# Calibration: coverage and bounds of the corrected rates (simulation with known truth)",
        "",
        f"Command: `{result['command']}` ({runs} simulated runs of {result['responses_per_run']} responses per cell, "
        f"seed {result['seed']}, {result['draws']} posterior draws per interval, {result['seconds']} s with "
        f"{result['jobs']} processes on {result['machine']}). Target: every nominal 95% interval covers the true "
        f"rate in 93-97% of runs, and no estimate or interval leaves [0, 1]. Monte Carlo error of a coverage near "
        f"0.95 over {runs} runs: +-{1.96 * (0.95 * 0.05 / runs) ** 0.5:.3f}.",
        "",
        "Grid: true rate {0.01, 0.05, 0.15, 0.30} x labelled responses {50, 100, 200, 400} x judge sensitivity x "
        "specificity in {0.7, 0.85, 0.95}: 144 cells per metric. `calibrate` reports stratified PPI as its PPI "
        "and the Bayesian Rogan-Gladen; the others are here for comparison.",
        "",
        "## Summary",
        "",
        "| metric | method | coverage min-max | cells below 0.93 | cells above 0.97 | runs leaving [0, 1] | "
        "runs without a value |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in summary_rows(result):
        lines.append(
            f"| {METRICS[r['metric']]} | {NAMES[r['method']]} | {r['min']:.3f}-{r['max']:.3f} | "
            f"{r['below']} of {r['cells']} | {r['above']} of {r['cells']} | {r['outside']} of {r['runs']} | "
            f"{r['no_value']} of {r['runs']} |"
        )
    for metric, title in METRICS.items():
        lines += [
            "",
            f"## {title[0].upper() + title[1:]}: every cell",
            "",
            "Coverage per method (values outside 0.93-0.97 in bold), then the mean width of the stratified PPI, "
            "plain PPI and labels-only intervals, and the runs whose plain PPI estimate or interval left [0, 1].",
            "",
            "| rate | labelled | sens | spec | PPI | PPI++ | stratified | labels | RG Bayes | RG delta | "
            "width strat. | width PPI | width labels | PPI outside [0, 1] |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for c in result["cells"]:
            if c["metric"] != metric:
                continue
            cover = " | ".join(_mark(c[f"coverage_{key}"]) for key in METHODS)
            lines.append(
                f"| {c['rate']} | {c['n_labelled']} | {c['sensitivity']} | {c['specificity']} | {cover} | "
                f"{c['width_stratified']:.3f} | {c['width_ppi']:.3f} | {c['width_labels']:.3f} | {c['outside_ppi']} |"
            )
    return "\n".join(lines) + "\n"


def _mark(value: float) -> str:
    return f"{value:.3f}" if LOW <= value <= HIGH else f"**{value:.3f}**"


def grid_module(result: dict) -> str:
    """The source of ``hallumeasure/stats/coverage_grid.py``: the reported methods' coverage per cell."""
    lines = [
        '"""Measured coverage of calibrate\'s 95% intervals per simulated cell; written by benchmarks/ppi_coverage.py.',
        "",
        "Do not edit: run ``python benchmarks/ppi_coverage.py`` (or ``--render`` from its committed JSON).",
        "Keys: (metric, true rate, labelled responses, judge sensitivity, judge specificity);",
        "values: (coverage of stratified PPI, coverage of Bayesian Rogan-Gladen).",
        '"""',
        "",
        f"RUNS_PER_CELL = {result['runs_per_cell']}",
        f"RESPONSES_PER_RUN = {result['responses_per_run']}",
        f"RATES = {RATES!r}",
        f"LABELS = {LABELS!r}",
        f"ACCURACY = {ACCURACY!r}",
        "COVERAGE: dict[tuple[str, float, int, float, float], tuple[float, float]] = {",
    ]
    for c in result["cells"]:
        key = f'("{c["metric"]}", {c["rate"]!r}, {c["n_labelled"]}, {c["sensitivity"]!r}, {c["specificity"]!r})'
        lines.append(f"    {key}: ({c['coverage_stratified']!r}, {c['coverage_rg_bayes']!r}),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _write(result: dict) -> None:
    (HERE / "results" / "ppi_coverage.md").write_text(markdown(result), encoding="utf-8")
    GRID_MODULE.write_text(grid_module(result), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
