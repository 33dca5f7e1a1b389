"""Coverage of the judge-variance intervals, by simulation with known truth.

Command (the committed results; about 30 minutes on a loaded 2-core machine, 10 with --runs 1000):

    nice .venv/bin/python benchmarks/judge_stability.py --runs 3000

writes ``benchmarks/results/judge_stability.json`` and ``benchmarks/results/judge_stability.md``.

The simulated world: a response has 2 + Poisson(3) claims; its share of truly unsupported claims is
p ~ Beta(2, 6); a claim is unsupported with probability p. The judge is stable on clear claims (it
calls a truly unsupported claim unsupported with probability 0.97, a supported one with 0.03) and
unstable on ambiguous ones (a share ``ambiguous`` of the claims, each with its own probability
q ~ Uniform(0.2, 0.8) of being called unsupported). Every repeat draws each vote anew.

Two quantities are known exactly:
- the per-call rate: the mean unsupported rate that one judge call gives, E[q];
- the majority rate: the mean unsupported rate of the K-vote majority, E[P(Binomial(K, q) > K/2)].

Intervals checked (nominal 95%), each over ``--runs`` simulated runs:
- ``repeat-aware``: hallumeasure's ``judge_variance_stats`` per-vote rate (responses bootstrapped, each
  with all its repeats; expanded percentile interval), for the per-call rate;
- ``combined``: the same bootstrap of the majority verdicts' rate, for the majority rate;
- ``single call``: a run with one repeat (K=1), responses bootstrapped (``bootstrap_mean``, the plain
  percentile interval that ``compare`` uses), for the per-call rate: valid too, and wider than
  ``repeat-aware`` because one call per claim is noisier;
- ``two-stage``: responses bootstrapped, then repeats re-drawn within each response: shown because it
  is the obvious design and it double-counts the judge's noise (over-covers).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import integrate, stats

from hallumeasure.core.labels import Policy
from hallumeasure.report.stability import judge_variance_stats
from hallumeasure.stats.bootstrap import bootstrap_mean, percentile_interval

HERE = Path(__file__).resolve().parent
CLEAR_HIT, CLEAR_FALSE = 0.97, 0.03
BETA = (2.0, 6.0)
LOW, HIGH = 0.2, 0.8


def truths(ambiguous: float, repeats: int) -> tuple[float, float]:
    """(per-call rate, majority rate) of the simulated world, exactly."""
    mean_p = BETA[0] / sum(BETA)
    per_call = ambiguous * (LOW + HIGH) / 2 + (1 - ambiguous) * (mean_p * CLEAR_HIT + (1 - mean_p) * CLEAR_FALSE)

    def majority(q: float) -> float:  # ties (even K) go to the more severe label: unsupported
        return (
            float(stats.binom.sf(np.ceil(repeats / 2) - 1, repeats, q))
            if repeats % 2 == 0
            else float(stats.binom.sf(repeats // 2, repeats, q))
        )

    ambiguous_majority = integrate.quad(majority, LOW, HIGH)[0] / (HIGH - LOW)
    clear_majority = mean_p * majority(CLEAR_HIT) + (1 - mean_p) * majority(CLEAR_FALSE)
    return per_call, ambiguous * ambiguous_majority + (1 - ambiguous) * clear_majority


def simulate(rng: np.random.Generator, n: int, repeats: int, ambiguous: float) -> pd.DataFrame:
    """The votes of one simulated run: one row per response, claim and repeat."""
    sizes = 2 + rng.poisson(3, n)
    p = rng.beta(*BETA, n)
    sample = np.repeat(np.arange(n), sizes)
    truth = rng.random(sample.size) < p[sample]
    unclear = rng.random(sample.size) < ambiguous
    q = np.where(unclear, rng.uniform(LOW, HIGH, sample.size), np.where(truth, CLEAR_HIT, CLEAR_FALSE))
    says = rng.random((repeats, sample.size)) < q
    claim = np.arange(sample.size)
    return pd.DataFrame(
        {
            "sample_id": np.tile(sample.astype(str), repeats),
            "claim_id": np.tile(claim.astype(str), repeats),
            "judge": "sim",
            "repeat": np.repeat(np.arange(repeats), sample.size),
            "label": np.where(says.ravel(), "absent", "supported"),
            "error": None,
        }
    )


def _response_rates(votes: pd.DataFrame, repeat: int | None = None) -> pd.Series:
    mine = votes if repeat is None else votes[votes["repeat"] == repeat]
    unsupported = (mine["label"] == "absent").astype(float)
    return unsupported.groupby(mine["sample_id"], sort=False).mean()


def _majority_rates(votes: pd.DataFrame, repeats: int) -> pd.Series:
    per_claim = (votes["label"] == "absent").groupby([votes["sample_id"], votes["claim_id"]], sort=False).sum()
    unsupported = (per_claim >= repeats / 2).astype(float)  # ties go to the more severe label
    return unsupported.groupby(level=0, sort=False).mean()


def two_stage(votes: pd.DataFrame, repeats: int, resamples: int, rng: np.random.Generator) -> tuple[float, float]:
    """Responses with replacement, then repeats with replacement within each drawn response."""
    rates = (
        (votes["label"] == "absent")
        .astype(float)
        .groupby([votes["sample_id"], votes["repeat"]], sort=False)
        .mean()
        .unstack()
        .to_numpy()
    )  # responses x repeats
    n = len(rates)
    rows = rng.integers(0, n, (resamples, n))
    cols = rng.integers(0, repeats, (resamples, n, repeats))
    draws = rates[rows[:, :, None], cols].mean(axis=(1, 2))
    low, high = percentile_interval(draws, 0.95)
    return float(low), float(high)


def run_setting(n: int, repeats: int, ambiguous: float, runs: int, resamples: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    per_call, majority = truths(ambiguous, repeats)
    policy = Policy()
    hits = {"repeat-aware": 0, "combined": 0, "single call": 0, "two-stage": 0}
    widths = {name: [] for name in hits}
    flips = []
    for run in range(runs):
        votes = simulate(rng, n, repeats, ambiguous)
        combined = _majority_rates(votes, repeats)
        result = judge_variance_stats("sim", votes, combined, policy, resamples=resamples, seed=run)
        single = bootstrap_mean(_response_rates(votes, repeat=0).to_numpy(), resamples=resamples, seed=run)
        staged = two_stage(votes, repeats, resamples, rng)
        checks = {
            "repeat-aware": ((result.per_vote_rate.low, result.per_vote_rate.high), per_call),
            "combined": ((result.combined_rate.low, result.combined_rate.high), majority),
            "single call": ((single.low, single.high), per_call),
            "two-stage": (staged, per_call),
        }
        for name, ((low, high), truth) in checks.items():
            hits[name] += int(low <= truth <= high)
            widths[name].append(high - low)
        per_claim = (votes["label"] == "absent").groupby(votes["claim_id"]).mean()
        flips.append(float(((per_claim > 0) & (per_claim < 1)).mean()))
    return {
        "responses": n,
        "repeats": repeats,
        "ambiguous_share": ambiguous,
        "runs": runs,
        "resamples": resamples,
        "truth": {"per_call_rate": round(per_call, 6), "majority_rate": round(majority, 6)},
        "mean_flipped_share": round(float(np.mean(flips)), 4),
        "coverage": {name: round(h / runs, 4) for name, h in hits.items()},
        "mean_width": {name: round(float(np.mean(w)), 4) for name, w in widths.items()},
    }


SETTINGS = [  # (responses, repeats, ambiguous share)
    (100, 3, 0.1),
    (100, 3, 0.4),
    (60, 5, 0.4),
]


def markdown(results: list[dict], command: str, load: str) -> str:
    lines = [
        "# Judge stability: coverage of nominal 95% intervals (simulation with known truth)",
        "",
        f"Command: `{command}`. Machine load when run: {load}. Target: 93-97% coverage.",
        "",
        "| responses | repeats | ambiguous claims | claims flipped | repeat-aware | combined (majority) "
        "| single call | two-stage (double counts) | width repeat-aware / single call |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        c, w = r["coverage"], r["mean_width"]
        lines.append(
            f"| {r['responses']} | {r['repeats']} | {r['ambiguous_share']:.0%} | {r['mean_flipped_share']:.1%} "
            f"| {c['repeat-aware']:.1%} | {c['combined']:.1%} | {c['single call']:.1%} | {c['two-stage']:.1%} "
            f"| {w['repeat-aware']:.3f} / {w['single call']:.3f} |"
        )
    lines += [
        "",
        f"Each row: {results[0]['runs']} simulated runs, {results[0]['resamples']} bootstrap resamples each. "
        "'repeat-aware' and 'combined' are hallumeasure's `judge_variance_stats`; see the script's docstring "
        "for the simulated world and each interval.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "judge_stability")
    args = parser.parse_args()
    started = time.perf_counter()
    results = [run_setting(n, k, a, args.runs, args.resamples, args.seed + i) for i, (n, k, a) in enumerate(SETTINGS)]
    load = "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())
    command = f"nice .venv/bin/python benchmarks/judge_stability.py --runs {args.runs} --resamples {args.resamples}"
    payload = {
        "command": command,
        "load": load,
        "seconds": round(time.perf_counter() - started, 1),
        "settings": results,
    }
    args.out.with_suffix(".json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(results, command, load), encoding="utf-8")
    print(markdown(results, command, load))


if __name__ == "__main__":
    main()
