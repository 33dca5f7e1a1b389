"""Does the audit, run at ``plan``'s count, reach the chance ``plan`` prints? (issue #39)

Run: ``PYTHONPATH=. nice python benchmarks/plan_operating.py [--replicates 1000]``
Writes ``benchmarks/results/plan_operating.json`` and ``.md``.

Per cell (baseline rate, true rise; margin 0.02, alpha 0.05, power 0.8) the plan is made from the
baseline rate as ``hallumeasure plan --baseline-rate P --rise R`` makes it, then the audit's own rate
decision (``hallumeasure.stats.audit_bounds.rise_outcome``, paired rates, the betting test) is run on
``--replicates`` independent pairs of runs of that many samples: per-response yes/no outcomes,
baseline Bernoulli(P), current Bernoulli(P + R), independent (the plan's default correlation 0).
Rise 0 checks "to pass when unchanged", rise 0.04 "to flag a rise of 0.04". The seeds differ from
the plan's own, so the two estimates are independent.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from hallumeasure.report.plan import PlanSettings, plan_audit
from hallumeasure.stats.audit_bounds import rise_outcome

CELLS = [(0.01, 0.0), (0.01, 0.04), (0.05, 0.0), (0.05, 0.04)]
MARGIN = 0.02
OUT = Path(__file__).parent / "results"


def audit_rate(p: float, rise: float, n: int, replicates: int, seed: int) -> tuple[float, float]:
    """(share passed, share flagged) of ``replicates`` audits of n pairs at these rates."""
    rng = np.random.default_rng(seed)
    outcomes = []
    for _ in range(replicates):
        base = (rng.random(n) < p).astype(float)
        cur = (rng.random(n) < p + rise).astype(float)
        outcomes.append(
            rise_outcome(
                base, cur, (None, None, None), paired=True, binary=False, margin=MARGIN, above=MARGIN, alpha=0.05
            )
        )
    return outcomes.count("pass") / replicates, outcomes.count("regression") / replicates


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicates", type=int, default=1000)
    args = parser.parse_args()
    rows = []
    for p, rise in CELLS:
        t = time.time()
        plan = plan_audit(PlanSettings(rise=rise, baseline_rate=p, max_rate_rise=MARGIN))
        plan_s = time.time() - t
        wanted = "regression" if rise > MARGIN else "pass"
        n = plan.samples_to_flag if wanted == "regression" else plan.samples_to_pass
        printed = plan.chance_to_flag if wanted == "regression" else plan.chance_to_pass
        assert n is not None and printed is not None
        p_pass, p_flag = audit_rate(p, rise, n, args.replicates, seed=1000 + len(rows))
        seen = p_flag if wanted == "regression" else p_pass
        # sd of the difference of two independent estimates (the plan's and this one)
        se = math.sqrt(printed * (1 - printed) / (plan.replicates or 1) + seen * (1 - seen) / args.replicates)
        rows.append(
            {
                "baseline": p,
                "rise": rise,
                "outcome": wanted,
                "n": n,
                "printed": printed,
                "audit": round(seen, 4),
                "z": round((seen - printed) / se, 2) if se else 0.0,
                "audit_replicates": args.replicates,
                "plan_replicates": plan.replicates,
                "plan_seconds": round(plan_s, 1),
                "unchanged_count_at_this_rise": plan.samples_to_pass,
            }
        )
        print(rows[-1], flush=True)
        OUT.mkdir(exist_ok=True)
        (OUT / "plan_operating.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "# plan's printed chance against the audit run at plan's count (rate gate, margin 0.02)",
        "",
        "Command: `PYTHONPATH=. nice python benchmarks/plan_operating.py --replicates "
        f"{args.replicates}`; z = (audit - printed) / sd of the difference.",
        "",
        "| baseline | true rise | outcome | plan's count | printed chance | audit's rate | z | plan s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['baseline']} | {r['rise']} | {r['outcome']} | {r['n']:,} | {r['printed']:.3f} | {r['audit']:.3f} "
        f"({r['audit_replicates']} audits) | {r['z']:+.2f} | {r['plan_seconds']} |"
        for r in rows
    ]
    (OUT / "plan_operating.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
