"""What the cascade's keyless first pass saves: responses and claims it never sends to the LLM, per dev set.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/cascade_saving.py                 # full run: cascade_saving.{md,json}
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/cascade_saving.py --limit 100 \\
        --out /tmp/cascade_saving_slice                                               # a quick slice
    .venv/bin/python benchmarks/cascade_saving.py --render                          # re-render the .md from the .json

The first pass is the offline judge (``hallumeasure.detectors.cascade.CascadeJudge``'s default),
run exactly as the cascade runs it: the offline extractor's claims, then ``OfflineJudge.judge_now``.
For each held-out dev set of ``../shared/data`` the judge's trees are fitted on the other sets
(leave one dataset out, as in ``offline_quality.py``), because the shipped model was trained on
all of them and would clear its own training data too easily.

The cascade sends a claim to the LLM when the first pass labels it unsupported, gives it a
probability of being unsupported at or above the cascade's threshold, or marks it unsure
(``confident=False``, read from the verdicts, so the numbers follow whatever the judge does). A
response is *cleared* -- never sent -- when none of its claims is sent: the first pass has decided
it faithful. No LLM is needed to measure this, only the dev sets' response labels.

The threshold is chosen per set: the highest one at which at least 95% of the set's hallucinated
responses still send a claim (recall of hallucinated responses >= 0.95). It is tuned on the set
it is measured on, so the savings are an upper bound for that recall. Intervals are percentile
bootstraps over responses at that fixed threshold. "without the unsure rule" repeats the count as
if unsure claims were not escalated: the difference is what escalating them costs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hallumeasure.core.labels import Policy
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.judges.offline.model import BoostedTrees, OfflineModel
from hallumeasure.judges.offline.training import featurize_all, fit_models
from hallumeasure.runs.datasets import SHARED_SETS, LabelledSample, data_dir, load_labelled, subsample
from hallumeasure.stats.bootstrap import bootstrap_ci

CLONE_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # a clone's labelled sets, beside it

HERE = Path(__file__).resolve().parent
#: Share of hallucinated responses that must still reach the LLM.
RECALL = 0.95


def first_pass(judge: OfflineJudge, samples: list[LabelledSample]) -> list[list[tuple[float, bool, bool]]]:
    """Per response, per claim: (probability, labelled unsupported, unsure), as the cascade's first pass sees them."""
    extractor, policy = OfflineExtractor(), Policy()
    out = []
    for labelled in samples:
        sample = labelled.to_sample()
        verdicts = judge.judge_now(sample, extractor.claims(sample)).verdicts
        out.append(
            [
                (v.probability or 0.0, policy.is_unsupported(v.label), not v.confident)  # type: ignore[arg-type]
                for v in verdicts
                if v.ok
            ]
        )
    return out


def claim_keys(claims: list[tuple[float, bool, bool]], *, unsure_rule: bool) -> list[float]:
    """The cascade sends a claim when its key reaches the threshold: a flag or an unsure mark is always sent."""
    return [math.inf if flagged or (unsure_rule and unsure) else p for p, flagged, unsure in claims]


def threshold_for(y: np.ndarray, worst: np.ndarray) -> float:
    """The highest threshold at which at least ``RECALL`` of the hallucinated responses send a claim."""
    positives = np.sort(worst[y == 1])
    if not len(positives):
        return math.inf
    return float(positives[int(np.floor((1 - RECALL) * len(positives)))])


def savings(y: np.ndarray, keys: list[list[float]], resamples: int, seed: int) -> dict[str, Any]:
    """Threshold, recall, and the shares of responses and claims never sent, with intervals."""
    worst = np.array([max(k, default=-math.inf) for k in keys])
    t = threshold_for(y, worst)
    cleared = (worst < t).astype(float)
    n_claims = np.array([len(k) for k in keys], dtype=float)
    kept_back = np.array([sum(1 for x in k if x < t) for k in keys], dtype=float)
    boot = {"n_resamples": resamples, "seed": seed}
    return {
        "threshold": None if not math.isfinite(t) else round(t, 4),
        "recall": float((worst[y == 1] >= t).mean()) if (y == 1).any() else None,
        "responses_cleared": bootstrap_ci(np.mean, cleared, **boot).as_dict(),
        "claims_not_sent": bootstrap_ci(
            lambda a, b: float(a.sum() / b.sum()) if b.sum() else float("nan"), kept_back, n_claims, **boot
        ).as_dict(),
        "hallucinated_among_cleared": float(y[cleared == 1].mean()) if cleared.any() else None,
    }


def evaluate(name: str, model: OfflineModel, samples: list[LabelledSample], resamples: int, seed: int) -> dict:
    claims = first_pass(OfflineJudge(model=model), samples)
    y = np.array([s.label for s in samples])
    n_unsure = sum(unsure for c in claims for _, _, unsure in c)
    return {
        "dataset": name,
        "n_responses": len(samples),
        "hallucinated": int(y.sum()),
        "n_claims": sum(len(c) for c in claims),
        "n_unsure_claims": int(n_unsure),
        "with_unsure_rule": savings(y, [claim_keys(c, unsure_rule=True) for c in claims], resamples, seed),
        "without_unsure_rule": savings(y, [claim_keys(c, unsure_rule=False) for c in claims], resamples, seed),
    }


def _pct(ci: dict) -> str:
    return f"{ci['point']:.1%} [{ci['low']:.1%}, {ci['high']:.1%}]"


def markdown(results: list[dict], command: str, seconds: int) -> str:
    lines = [
        "# Cascade saving: what the offline first pass never sends to the LLM",
        "",
        f"Command: `{command}` ({seconds} s). Script: `benchmarks/cascade_saving.py` (its docstring says how).",
        "",
        "First pass: the offline judge, its trees fitted on the other dev sets (leave one dataset out). A claim goes "
        "to the LLM when labelled unsupported, when its probability reaches the threshold, or when the judge marks "
        f"it unsure. The threshold is the highest that keeps {RECALL:.0%} of the set's hallucinated responses "
        "sending a claim (tuned on the set itself: an upper bound on the saving). A response is cleared when it "
        "sends no claim. Intervals: 95% bootstrap over responses at that threshold. 'labels only': the claims "
        "labelled unsupported (and the unsure ones) already reach the recall, so no probability threshold is needed.",
        "",
        "| dev set | responses | hallucinated | claims | unsure claims | threshold | recall | responses cleared "
        "| claims not sent | hallucinated among cleared | claims not sent without the unsure rule |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|",
    ]
    for r in results:
        w, wo = r["with_unsure_rule"], r["without_unsure_rule"]
        among = w["hallucinated_among_cleared"]
        threshold = "labels only" if w["threshold"] is None else w["threshold"]
        lines.append(
            f"| {r['dataset']} | {r['n_responses']} | {r['hallucinated']} | {r['n_claims']} | {r['n_unsure_claims']} "
            f"| {threshold} | {w['recall']:.3f} | {_pct(w['responses_cleared'])} "
            f"| {_pct(w['claims_not_sent'])} | {'-' if among is None else f'{among:.1%}'} "
            f"| {_pct(wo['claims_not_sent'])} |"
        )
    unsure = sum(r["n_unsure_claims"] for r in results)
    lines += [
        "",
        (
            f"{unsure} claims were marked unsure over all sets; escalating them is what separates the last column "
            "from the claims-not-sent column."
            if unsure
            else "The offline judge marked no claim unsure in this run (it marks every claim confident until its "
            "confidence rules land), so both claim columns agree; rerun the command when it marks some."
        ),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir() or CLONE_DATA)
    parser.add_argument("--limit", type=int, default=None, help="stratified sample of N records per set")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "cascade_saving")
    parser.add_argument("--render", action="store_true", help="only rewrite OUT.md from OUT.json")
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(args.out.with_suffix(".json").read_text())
        args.out.with_suffix(".md").write_text(markdown(saved["results"], saved["command"], saved["seconds"]))
        return 0
    if args.data is None or not Path(args.data).is_dir():
        print("no labelled data found: pass --data DIR", file=sys.stderr)
        return 2
    started = time.perf_counter()
    samples = {
        name: subsample(load_labelled(Path(args.data) / f"{name}.jsonl"), args.limit, seed=args.seed)
        for name in SHARED_SETS
    }
    rows = {name: featurize_all(s) for name, s in samples.items()}
    results = []
    for name in SHARED_SETS:
        fitted = fit_models([r for other, rs in rows.items() if other != name for r in rs])
        model = OfflineModel(BoostedTrees.from_dict(fitted["response_model"]), fitted["evidence_rules"], {})
        results.append(evaluate(name, model, samples[name], args.resamples, args.seed))
        w = results[-1]["with_unsure_rule"]
        print(f"{name}: responses cleared {_pct(w['responses_cleared'])}", file=sys.stderr)
    command = (
        "python benchmarks/cascade_saving.py"
        + (f" --limit {args.limit}" if args.limit else "")
        + (f" --resamples {args.resamples}" if args.resamples != 1000 else "")
    )
    seconds = round(time.perf_counter() - started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps({"command": command, "seconds": seconds, "recall": RECALL, "results": results}, indent=2) + "\n"
    )
    text = markdown(results, command, seconds)
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
