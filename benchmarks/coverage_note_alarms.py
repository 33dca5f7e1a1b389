"""How often calibrate's coverage note warns when the interval in fact holds (issue #39).

Run: ``PYTHONPATH=. nice python benchmarks/coverage_note_alarms.py [--runs 2000]``
Writes ``benchmarks/results/coverage_note_alarms.json`` and ``.md``.

Each cell is a grid judge whose PPI interval covers at nominal level (sensitivity 0.85,
specificity 0.95: every such cell of ``coverage_grid.COVERAGE`` at these rates and label counts
covers at least ``TARGET``). Per simulated run the labels are drawn as calibrate sees them: the
share note's counts at response level (each labelled response hallucinated with the true rate),
the rate note's at claim level (four claims per labelled response), the judge right on a positive
with chance 0.85 and on a negative with 0.95; the run's estimated rate is the true one. A warning
is a note that says the interval does not (or may not) hold. "before": the point sensitivity and
specificity, as calibrate judged them until now; "after": their Clopper-Pearson intervals.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hallumeasure.stats.coverage_check import check_coverage

SENS, SPEC, CLAIMS = 0.85, 0.95, 4
CELLS = [(r, n) for r in (0.01, 0.02, 0.05) for n in (50, 100, 200)]
OUT = Path(__file__).parent / "results"


def warns(metric: str, rate: float, pos: int, tp: int, neg: int, tn: int, n_labelled: int, by_interval: bool) -> bool:
    extra = {"sensitivity_counts": (tp, pos), "specificity_counts": (tn, neg)} if by_interval else {}
    check = check_coverage(
        metric,
        n_labelled=n_labelled,
        sensitivity=tp / pos if pos else None,
        specificity=tn / neg if neg else None,
        rate=rate,
        **extra,
    )
    return not check.holds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(39)
    rows = []
    for rate, n in CELLS:
        counts = {(m, w): 0 for m in ("share", "rate") for w in ("before", "after")}
        disagree = {"before": 0, "after": 0}
        for _ in range(args.runs):
            said = {}
            for metric, units in (("share", n), ("rate", n * CLAIMS)):
                pos = int(rng.binomial(units, rate))
                tp, tn = int(rng.binomial(pos, SENS)), int(rng.binomial(units - pos, SPEC))
                for when, by_interval in (("before", False), ("after", True)):
                    said[(metric, when)] = warns(metric, rate, pos, tp, units - pos, tn, n, by_interval)
                    counts[(metric, when)] += said[(metric, when)]
            for when in ("before", "after"):
                disagree[when] += said[("share", when)] != said[("rate", when)]
        row = {"rate": rate, "labelled": n, "runs": args.runs}
        row |= {f"{m}_{w}": round(c / args.runs, 4) for (m, w), c in counts.items()}
        row |= {f"disagree_{w}": round(c / args.runs, 4) for w, c in disagree.items()}
        rows.append(row)
        print(row, flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "coverage_note_alarms.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "# calibrate's coverage note: false alarms where the interval holds (sensitivity 0.85, specificity 0.95)",
        "",
        f"Command: `PYTHONPATH=. nice python benchmarks/coverage_note_alarms.py --runs {args.runs}`",
        "",
        "| true rate | labelled | share note before | share after | rate note before | rate after "
        "| notes disagree before | after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['rate']} | {r['labelled']} | {r['share_before']:.1%} | {r['share_after']:.1%} | "
        f"{r['rate_before']:.1%} | {r['rate_after']:.1%} | {r['disagree_before']:.1%} | {r['disagree_after']:.1%} |"
        for r in rows
    ]
    (OUT / "coverage_note_alarms.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
