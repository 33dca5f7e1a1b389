"""The audit's verdicts through an imperfect judge: known truth, judges of given sensitivity and specificity.

    nice python benchmarks/audit_judge_error.py --jobs 2     # writes benchmarks/results/audit_judge_error.{md,json}

Each simulated audit draws n shared samples with a known truth, labels them with a judge of sensitivity
``se`` and specificity ``sp`` (its errors drawn afresh in each run), and decides both gates with the audit's
own ``decide_rise``, told the judge's error (stated, as ``--judge-sensitivity/--judge-specificity`` do):

* the hallucinated share (margin 0.05): a response is truly hallucinated with chance p in the baseline and
  p + rise in the current run (pairs share their uniform with chance 0.5, so the runs correlate);
* the mean unsupported rate (margin 0.02): 1-8 claims per response, each truly unsupported with chance p
  (p + rise in the current run), each labelled by the judge.

Every response also has a style feature, its lexical overlap with the source, and the judge's false flags
rise as the overlap falls (``DRIFT`` per unit of overlap lost). In cells where the judge *errs alike* both
runs draw the overlap from the same range (0.6-1.0); where its error *differs* the current run paraphrases
(0.3-0.7), so the judge flags more of its faithful claims: the style shift an audit can see.

Per cell: false pass at rise = margin, false regression at rise 0, power (regression) at rise = 2 x margin,
and, where the error differs, how often a regression's verdict names the style shift.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hallumeasure.report.audit import decide_rise
from hallumeasure.report.audit_settings import AuditGates
from hallumeasure.stats.judge_error import JudgeError
from hallumeasure.stats.style_shift import style_shift

RESULTS = ROOT / "benchmarks" / "results"
RATES = (0.05, 0.2)
SIZES = (200, 800, 3200)
JUDGES = ((0.95, 0.95), (0.85, 0.9), (0.7, 0.8))
MARGINS = {"hallucinated_share": 0.05, "unsupported_rate": 0.02}
DRIFT = 0.3
OVERLAP = {"alike": (0.6, 1.0), "differs": (0.3, 0.7)}


def _labels(truth: np.ndarray, overlap: np.ndarray, se: float, sp: float, rng: np.random.Generator) -> np.ndarray:
    """The judge's flags: a true positive with chance se; a false flag with chance 1 - sp + DRIFT (0.8 - overlap)."""
    false_flag = np.clip(1.0 - sp + DRIFT * (0.8 - overlap), 0.0, 1.0)
    u = rng.random(truth.shape)
    return np.where(truth, u < se, u < false_flag)


def _one(metric: str, p: float, rise: float, n: int, se: float, sp: float, error: str, rng: np.random.Generator):
    u0 = rng.random(n)
    u1 = np.where(rng.random(n) < 0.5, u0, rng.random(n))
    ob = rng.uniform(0.6, 1.0, n)
    oc = rng.uniform(*OVERLAP[error], n)
    if metric == "hallucinated_share":
        yb, yc = u0 < p, u1 < min(p + rise, 1.0)
        lb, lc = _labels(yb, ob, se, sp, rng), _labels(yc, oc, se, sp, rng)
        base, cur, claims_b, claims_c = lb.astype(float), lc.astype(float), np.ones(n), np.ones(n)
    else:
        k = rng.integers(1, 9, n)
        width = int(k.max())
        mask = np.arange(width)[None, :] < k[:, None]
        cb = rng.random((n, width)) < p
        cc = rng.random((n, width)) < min(p + rise, 1.0)
        lb = _labels(cb, ob[:, None], se, sp, rng) & mask
        lc = _labels(cc, oc[:, None], se, sp, rng) & mask
        base, cur = lb.sum(axis=1) / k, lc.sum(axis=1) / k
        claims_b = claims_c = k.astype(float)
    gates = AuditGates()
    judge = JudgeError.exact(se, sp, "stated")
    d = decide_rise(
        metric,
        base,
        cur,
        paired=True,
        binary=metric == "hallucinated_share",
        margin=MARGINS[metric],
        gates=gates,
        plan=False,
        judge=judge,
        changed=np.ones(n, dtype=bool),
    )
    named = False
    if d.outcome == "regression" and d.lower_bound is not None and d.judged is not None:
        words = rng.normal(60, 15, (2, n))
        shift = style_shift(
            np.column_stack([words[0], ob, claims_b]),
            np.column_stack([words[1], oc, claims_c]),
            base,
            change_beyond=d.lower_bound - d.judged.regression_above_labels,
        )
        named = shift.could_explain
    return d.outcome, named


def cell(args: tuple) -> dict:
    metric, p, n, (se, sp), error, replicates, seed = args
    rng = np.random.default_rng(seed)
    margin = MARGINS[metric]
    row: dict = {"metric": metric, "baseline": p, "n": n, "se": se, "sp": sp, "error": error, "replicates": replicates}
    for name, rise in (("at_zero", 0.0), ("at_margin", margin), ("at_double", 2 * margin)):
        outs = [_one(metric, p, rise, n, se, sp, error, rng) for _ in range(replicates)]
        row[f"pass_{name}"] = sum(o == "pass" for o, _ in outs) / replicates
        row[f"regression_{name}"] = sum(o == "regression" for o, _ in outs) / replicates
        flagged = [named for o, named in outs if o == "regression"]
        row[f"named_{name}"] = (sum(flagged) / len(flagged)) if flagged else None
    return row


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def markdown(rows: list[dict], command: str, seconds: float) -> str:
    alike = [r for r in rows if r["error"] == "alike"]
    worst_pass = max(r["pass_at_margin"] for r in alike)
    worst_reg = max(r["regression_at_zero"] for r in alike)
    lines = [
        "# Audit verdicts through an imperfect judge (known truth)",
        "",
        f"Command: `{command}` ({seconds:.0f} s). Each cell: the replicates of its gate (share "
        f"{rows[0]['replicates']}, rate {rows[-1]['replicates']}) simulated audits; the judge's sensitivity and "
        "specificity are given to the audit (`--judge-sensitivity`, `--judge-specificity`). Margins: share 0.05, "
        "rate 0.02; alpha 0.05. Every pair's responses differ (no "
        "judge-free bound). Pairs share their draw with chance 0.5.",
        "",
        f"**Judge errs alike in both runs: false pass at rise = margin at most {_pct(worst_pass)}, false regression "
        f"at rise 0 at most {_pct(worst_reg)} over {len(alike)} cells (target: at most 5% each).**",
        "",
        "| gate | judge errs | baseline | n | se | sp | J | false pass (rise = margin) | false regression (rise 0) | "
        "pass (rise 0) | power (rise = 2 x margin) | regressions naming the style shift (rise 0 / 2 x margin) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        j = r["se"] + r["sp"] - 1
        lines.append(
            f"| {r['metric']} | {r['error']} | {r['baseline']} | {r['n']} | {r['se']} | {r['sp']} | {j:.2f} | "
            f"{_pct(r['pass_at_margin'])} | {_pct(r['regression_at_zero'])} | {_pct(r['pass_at_zero'])} | "
            f"{_pct(r['regression_at_double'])} | {_pct(r['named_at_zero'])} / {_pct(r['named_at_double'])} |"
        )
    differs = [r for r in rows if r["error"] == "differs"]
    if differs:
        regs = sum(r["regression_at_zero"] * r["replicates"] for r in differs)
        named = sum((r["named_at_zero"] or 0) * r["regression_at_zero"] * r["replicates"] for r in differs)
        lines += [
            "",
            f"Where the judge's error differs (the current run paraphrases, so the judge falsely flags more of it), "
            f"an unchanged model is called a regression in {_pct(min(r['regression_at_zero'] for r in differs))}"
            f"-{_pct(max(r['regression_at_zero'] for r in differs))} of audits; of those false regressions the "
            f"verdict names the style shift as a possible explanation in {_pct(named / regs if regs else None)} "
            f"({int(named)} of {int(regs)}).",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--share-replicates", type=int, default=1000)
    parser.add_argument("--rate-replicates", type=int, default=200)
    parser.add_argument(
        "--rate-sizes", default="200,800,3200", help="shared samples of the rate gate's cells (its bet is slow)"
    )
    parser.add_argument("--quick", action="store_true", help="a small grid, for a test")
    args = parser.parse_args()
    sizes, judges, rates = (SIZES, JUDGES, RATES) if not args.quick else ((200,), JUDGES[:1], RATES[:1])
    tasks = []
    seed = 0
    rate_sizes = tuple(int(x) for x in args.rate_sizes.split(",")) if not args.quick else sizes

    def sizes_of(metric: str) -> tuple[int, ...]:
        return sizes if metric == "hallucinated_share" else rate_sizes

    for metric, p, judge in itertools.product(MARGINS, rates, judges):
        for n in sizes_of(metric):
            reps = args.share_replicates if metric == "hallucinated_share" else args.rate_replicates
            tasks.append((metric, p, n, judge, "alike", reps, seed))
            seed += 1
    for metric, p in itertools.product(MARGINS, rates):
        for n in sizes_of(metric):
            reps = args.share_replicates if metric == "hallucinated_share" else args.rate_replicates
            tasks.append((metric, p, n, JUDGES[1], "differs", reps, seed))
            seed += 1
    start = time.time()
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(cell, tasks))
    seconds = time.time() - start
    command = "python benchmarks/audit_judge_error.py " + " ".join(sys.argv[1:])
    if args.quick:
        print(markdown(rows, command.strip(), seconds))
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "audit_judge_error.json").write_text(
        json.dumps({"command": command.strip(), "seconds": round(seconds), "rows": rows}, indent=1) + "\n"
    )
    (RESULTS / "audit_judge_error.md").write_text(markdown(rows, command.strip(), seconds))
    print((RESULTS / "audit_judge_error.md").read_text())


if __name__ == "__main__":
    main()
