"""Leave-one-dataset-out quality of the offline judge, with baselines, on ../shared/data.

    .venv/bin/python benchmarks/offline_quality.py                 # full run, writes offline_quality.{md,json}
    .venv/bin/python benchmarks/offline_quality.py --limit 150 --out /tmp/q   # a quick slice

For each set: train on the other sets (same code and seed as the shipped model), score the
held-out set. Response level: AUC ROC of the response score and balanced accuracy at 0.5.
Claim level (WiCE, whose responses are single labelled claims): F1 of the unsupported class.
Baselines use one signal each and no training. Every number has a bootstrap 95% CI.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hallumeasure.datasets import SHARED_SETS, load_labelled, shared_data_dir, subsample
from hallumeasure.metrics import balanced_accuracy, bootstrap_ci, precision_recall_f1, roc_auc
from hallumeasure.offline.judge import RESPONSE_FEATURES, response_vector
from hallumeasure.offline.model import BoostedTrees
from hallumeasure.offline.signals import FEATURES
from hallumeasure.offline.training import featurize_all, fit_models

HERE = Path(__file__).resolve().parent
SUMMARISATION = ("summedits", "bump", "cliff")


def _col(name: str) -> int:
    return RESPONSE_FEATURES.index(name)


def baseline_scores(rows) -> dict[str, np.ndarray]:
    """Single-signal baselines: higher = more likely hallucinated."""
    overlap = np.array([1.0 - r.response[_col("min_recall_global")] for r in rows])
    ent_num = np.array([r.response[_col("sum_n_numbers_missing")] + r.response[_col("sum_n_entities_missing")]
                        for r in rows])
    return {"content-word overlap": overlap, "entity/number check": (ent_num > 0).astype(float) + 0.01 * ent_num}


def evaluate(name: str, train_rows, test_rows, resamples: int, seed: int) -> dict:
    model = fit_models(train_rows)
    response = BoostedTrees.from_dict(model["response_model"])
    y = np.array([r.label for r in test_rows])
    score = np.array([response.probability(r.response) for r in test_rows])
    boot = {"n_resamples": resamples, "seed": seed}
    out = {
        "dataset": name,
        "n": len(test_rows),
        "positives": int(y.sum()),
        "auc": bootstrap_ci(roc_auc, y, score, **boot).as_dict(),
        "balanced_accuracy": bootstrap_ci(lambda a, b: balanced_accuracy(a, b >= 0.5), y, score, **boot).as_dict(),
        "baselines": {k: bootstrap_ci(roc_auc, y, s, **boot).as_dict() for k, s in baseline_scores(test_rows).items()},
    }
    if name == "wice":  # one gold claim per response: judge the whole response as that claim
        p = np.array([max(response.probability(response_vector([v])) for v in r.claim_vectors) for r in test_rows])
        out["claim_f1"] = bootstrap_ci(lambda a, b: precision_recall_f1(a, (b >= 0.5).astype(int))[2], y, p,
                                       **boot).as_dict()
    return out


def _fmt(ci: dict) -> str:
    return f"{ci['point']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}]"


def markdown(results: list[dict], command: str) -> str:
    lines = [
        "# Offline judge: leave-one-dataset-out quality",
        "",
        f"Command: `{command}`. Each row: trained on the other sets, scored on this one.",
        "AUC ROC and balanced accuracy (threshold 0.5) at response level, bootstrap 95% CIs; baselines are one",
        "signal each with no training. Claim F1 is the unsupported class on WiCE's single labelled claims.",
        "",
        "| held-out set | n | AUC ROC | balanced accuracy | claim F1 | baseline: content-word overlap AUC "
        "| baseline: entity/number check AUC |",
        "|---|---:|---|---|---|---|---|",
    ]
    for r in results:
        claim = _fmt(r["claim_f1"]) if "claim_f1" in r else "-"
        lines.append(f"| {r['dataset']} | {r['n']} | {_fmt(r['auc'])} | {_fmt(r['balanced_accuracy'])} | {claim} | "
                     f"{_fmt(r['baselines']['content-word overlap'])} | {_fmt(r['baselines']['entity/number check'])} |")
    summ = [r["auc"]["point"] for r in results if r["dataset"] in SUMMARISATION]
    if summ:
        lines += ["", f"Mean AUC over the summarisation sets ({', '.join(SUMMARISATION)}): {np.mean(summ):.3f} "
                  "(target 0.75; for scale, a trained 184M-parameter model reaches about 0.77 on SummEval)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--limit", type=int, default=None, help="stratified sample of N records per set")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=HERE / "offline_quality")
    args = parser.parse_args(argv)
    if args.data is None or not Path(args.data).is_dir():
        print("no labelled data found: pass --data DIR", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows = {name: featurize_all(subsample(load_labelled(Path(args.data) / f"{name}.jsonl"), args.limit,
                                          seed=args.seed)) for name in SHARED_SETS}
    results = []
    for name in SHARED_SETS:
        train = [r for other, rs in rows.items() if other != name for r in rs]
        results.append(evaluate(name, train, rows[name], args.resamples, args.seed))
        print(f"{name}: AUC {_fmt(results[-1]['auc'])}", file=sys.stderr)
    command = "python benchmarks/offline_quality.py" + (f" --limit {args.limit}" if args.limit else "") + (
        f" --resamples {args.resamples}" if args.resamples != 1000 else "")
    seconds = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"command": command, "seconds": round(seconds),
                                                         "results": results, "features": list(FEATURES)},
                                                        indent=2) + "\n")
    text = markdown(results, command)
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
