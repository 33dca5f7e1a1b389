"""Operating characteristics of the audit: how often it passes, flags or stays undecided, by true rise.

    PYTHONPATH=. .venv/bin/python benchmarks/audit_operating.py            # a few minutes; writes the .md and .json
    PYTHONPATH=. .venv/bin/python benchmarks/audit_operating.py --reps 100  # a quicker rate simulation

Two parts:

* **The hallucinated-share gate, exactly.** Paired yes/no flags reach the decision through the
  two discordant counts only, so P(pass), P(regression) and P(inconclusive) are finite sums
  (``hallumeasure.stats.power.share_outcomes``). Grid: n in {10, 20, 50, 100, 200, 800, 3200},
  baseline rates in {0, 0.005, 0.01, 0.02, 0.05, 0.10, 0.20}, true rises in {0, margin / 2,
  margin, 2 margin}, margins 0.02 (the rate's default) and 0.05 (the share's default). The
  pairing of the two runs (how often both flag the same response) is unknown to the audit, so
  every cell shows the range over pairing correlations from -1 to 1, and the promise is
  checked at the worst one: P(pass) <= alpha whenever the true rise >= the margin, and
  P(regression) <= alpha whenever the true rise <= 0.
* **The unsupported-rate gate, by simulation.** Responses hold 1 + Poisson(3) claims; each
  sample has its own difficulty (Beta with concentration 4, shared by both runs), and each claim
  is unsupported with that probability (plus the true rise in the current run). The audit's
  own ``decide_rise`` decides each simulated pair of runs.

The statistics are the package's; only the data generation and the grid are here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from hallumeasure.report.audit import AuditGates, decide_rise
from hallumeasure.stats.power import PAIRINGS, discordant_shares, share_outcomes, share_samples_for

HERE = Path(__file__).resolve().parent
ALPHA = 0.05
SIZES = (10, 20, 50, 100, 200, 800, 3200)
BASELINES = (0.0, 0.005, 0.01, 0.02, 0.05, 0.10, 0.20)
MARGINS = (0.02, 0.05)
RISE_FACTORS = (0.0, 0.5, 1.0, 2.0)


def share_cell(n: int, p0: float, rise: float, margin: float) -> dict[str, object]:
    """The share gate's outcome chances over every pairing, and whether the promise holds."""
    current = min(1.0, p0 + rise)
    seen = [
        share_outcomes(n, *discordant_shares(p0, current, r), margin=margin, above=margin, alpha=ALPHA)
        for r in PAIRINGS
    ]
    passes = [o.p_pass for o in seen]
    flags = [o.p_regression for o in seen]
    if rise >= margin:
        promise, worst = "P(pass) <= alpha", max(passes)
    elif rise <= 0:
        promise, worst = "P(regression) <= alpha", max(flags)
    else:
        promise, worst = "-", None
    return {
        "margin": margin,
        "n": n,
        "baseline": p0,
        "rise": rise,
        "p_pass_min": round(min(passes), 4),
        "p_pass_max": round(max(passes), 4),
        "p_regression_min": round(min(flags), 4),
        "p_regression_max": round(max(flags), 4),
        "promise": promise,
        "worst": None if worst is None else round(worst, 5),
        "holds": worst is None or worst <= ALPHA + 1e-12,
    }


def needed_at(p0: float, margin: float) -> dict[str, object]:
    """Samples to pass an unchanged model and to flag twice the margin, at independent and at correlated pairing."""
    row: dict[str, object] = {"baseline": p0, "margin": margin}
    for label, rho in (("independent", 0.0), ("correlated 0.5", 0.5)):
        common = {"margin": margin, "above": margin, "alpha": ALPHA, "power": 0.8}
        row[f"pass unchanged ({label})"] = share_samples_for("pass", *discordant_shares(p0, p0, rho), **common)
        row[f"flag 2x margin ({label})"] = share_samples_for(
            "regression", *discordant_shares(p0, p0 + 2 * margin, rho), **common
        )
    return row


def rate_cell(rng: np.random.Generator, n: int, p0: float, rise: float, margin: float, reps: int) -> dict[str, object]:
    """Simulated outcome shares of the rate gate, with a Clopper-Pearson upper bound on the promised one."""
    gates = AuditGates(max_rate_rise=margin)
    outcomes = {"pass": 0, "regression": 0, "inconclusive": 0}
    concentration = 4.0
    for _ in range(reps):
        claims = 1 + rng.poisson(3, n)
        if p0 > 0:
            difficulty = rng.beta(p0 * concentration, (1 - p0) * concentration, n)
        else:
            difficulty = np.zeros(n)
        base = rng.binomial(claims, difficulty) / claims
        cur = rng.binomial(claims, np.clip(difficulty + rise, 0, 1)) / claims
        d = decide_rise("rate", base, cur, paired=True, binary=False, margin=margin, gates=gates, plan=False)
        outcomes[d.outcome] += 1
    promised = "pass" if rise >= margin else "regression" if rise <= 0 else None
    upper = None
    if promised is not None:
        k = outcomes[promised]
        upper = 1.0 if k == reps else float(stats.beta.ppf(0.95, k + 1, reps - k))
    return {
        "n": n,
        "baseline": p0,
        "rise": rise,
        "margin": margin,
        "reps": reps,
        **{f"p_{k}": round(v / reps, 4) for k, v in outcomes.items()},
        "promise": "-" if promised is None else f"P({promised}) <= alpha",
        "observed": None if promised is None else round(outcomes[promised] / reps, 4),
        "upper_95": None if upper is None else round(upper, 4),
    }


def _markdown(shares: list[dict], needed: list[dict], rates: list[dict], seconds: float, reps: int) -> str:
    held = sum(bool(r["holds"]) for r in shares)
    lines = [
        "# Audit operating characteristics",
        "",
        "Generated by `PYTHONPATH=. .venv/bin/python benchmarks/audit_operating.py` "
        f"({seconds:.0f} s). Alpha 0.05 one-sided; the data are in `audit_operating.json`.",
        "",
        "## Hallucinated-share gate: exact",
        "",
        f"Every cell keeps its promise: **{held} of {len(shares)}** cells (P(pass) <= 0.05 whenever the true "
        "rise >= the margin; P(regression) <= 0.05 whenever the true rise <= 0), at the worst pairing of the "
        "two runs. Each probability is a sum over the discordant counts, not a simulation; each range is "
        "over pairing correlations from -1 to 1 (at baseline 0 there is only one pairing).",
        "",
        "### Samples needed (80% chance), from the same sums",
        "",
        "| baseline rate | margin | pass unchanged (independent) | flag 2x margin (independent) "
        "| pass unchanged (correlation 0.5) | flag 2x margin (correlation 0.5) |",
        "|---|---|---|---|---|---|",
    ]
    for r in needed:
        lines.append(
            f"| {r['baseline']:g} | {r['margin']:g} | {r['pass unchanged (independent)']} | "
            f"{r['flag 2x margin (independent)']} | {r['pass unchanged (correlated 0.5)']} | "
            f"{r['flag 2x margin (correlated 0.5)']} |"
        )
    lines += [
        "",
        "### Every cell",
        "",
        "| margin | n | baseline | true rise | P(pass) | P(regression) | promise | worst | holds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in shares:
        lines.append(
            f"| {r['margin']:g} | {r['n']} | {r['baseline']:g} | {r['rise']:g} | "
            f"{r['p_pass_min']:.4f}-{r['p_pass_max']:.4f} | {r['p_regression_min']:.4f}-{r['p_regression_max']:.4f} | "
            f"{r['promise']} | {'-' if r['worst'] is None else format(r['worst'], '.5f')} | "
            f"{'yes' if r['holds'] else '**NO**'} |"
        )
    lines += [
        "",
        "## Unsupported-rate gate: simulated",
        "",
        f"{reps} simulated audits per cell; responses hold 1 + Poisson(3) claims, per-sample difficulty "
        "Beta(4 p0, 4 (1 - p0)) shared by both runs. 'upper 95%' is the Clopper-Pearson upper bound of the "
        "promised chance: the promise holds when it is at or below 0.05 or, at worst, when the observed share is.",
        "",
        "| margin | n | baseline | true rise | P(pass) | P(regression) | P(inconclusive) | promise | observed "
        "| upper 95% |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rates:
        lines.append(
            f"| {r['margin']:g} | {r['n']} | {r['baseline']:g} | {r['rise']:g} | {r['p_pass']:.3f} | "
            f"{r['p_regression']:.3f} | {r['p_inconclusive']:.3f} | {r['promise']} | "
            f"{'-' if r['observed'] is None else r['observed']} | {'-' if r['upper_95'] is None else r['upper_95']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300, help="simulated audits per rate cell (default 300)")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="directory for audit_operating.md and .json")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    shares = [
        share_cell(n, p0, round(f * margin, 6), margin)
        for margin in MARGINS
        for n in SIZES
        for p0 in BASELINES
        for f in RISE_FACTORS
    ]
    needed = [needed_at(p0, margin) for margin in MARGINS for p0 in (0.005, 0.01, 0.02, 0.05, 0.10)]
    rng = np.random.default_rng(28)
    rates = [
        rate_cell(rng, n, p0, round(f * 0.02, 6), 0.02, args.reps)
        for n in (50, 200, 800)
        for p0 in (0.0, 0.01, 0.05, 0.10)
        for f in (0.0, 1.0, 2.0)
    ]
    seconds = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {"alpha": ALPHA, "share_gate": shares, "share_samples_needed": needed, "rate_gate": rates}
    (args.out / "audit_operating.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    (args.out / "audit_operating.md").write_text(_markdown(shares, needed, rates, seconds, args.reps), encoding="utf-8")
    broken = [r for r in shares if not r["holds"]]
    print(f"{len(shares) - len(broken)} of {len(shares)} share cells keep their promise; {seconds:.0f} s")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
