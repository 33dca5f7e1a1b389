"""Leave-one-dataset-out quality of the offline judge, with baselines, on ../shared/data.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/offline_quality.py        # full run: offline_quality.{md,json}
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/offline_quality.py --limit 60 --resamples 200 \\
        --out benchmarks/results/offline_quality_slice                             # the small slice CI reruns
    .venv/bin/python benchmarks/offline_quality.py --render                # only re-render the .md from the .json

For each set: train on the other sets (same code, parameters and seed as the shipped model),
score the held-out set. Response level: AUC ROC of the response score and balanced accuracy of
the decision at 0.5; expected calibration error; the share of responses the judge flags (a claim
at or above a threshold, or a definite error) against the share that is hallucinated, for a grid
of thresholds (the default one is chosen from it); and the cascade's savings. Claim level (WiCE,
whose responses are single labelled claims): F1 of the unsupported class. Baselines use one
signal each and no training. Every number has a bootstrap 95% CI (resampling responses).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hallumeasure.bench.metrics import (
    balanced_accuracy,
    precision_recall_f1,
    roc_auc,
)
from hallumeasure.judges.offline.judge import DEFAULT_THRESHOLD
from hallumeasure.judges.offline.model import BoostedTrees, OfflineModel
from hallumeasure.judges.offline.signals import FEATURES
from hallumeasure.judges.offline.training import featurize_all, fit_models
from hallumeasure.runs.datasets import SHARED_SETS, data_dir, load_labelled, subsample
from hallumeasure.stats.bootstrap import bootstrap_ci

CLONE_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # a clone's labelled sets, beside it

HERE = Path(__file__).resolve().parent
SUMMARISATION = ("summedits", "bump", "cliff")
BASELINES = ("content-word overlap", "entity/number check")
#: Decision thresholds tried for the flagged share (the default is chosen from this grid, see markdown()).
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
#: Share of hallucinated responses the cascade's first pass must keep for the LLM.
CASCADE_RECALL = 0.95
_DEFINITE = FEATURES.index("definite")


def claim_scores(model: OfflineModel, row) -> list[float]:
    """The offline judge's claim probabilities, with a definite error counted as certain to be flagged."""
    return [1.0 if v[_DEFINITE] > 0 else model.claim_probability(v)[0] for v in row.claim_vectors]


def expected_calibration_error(y: np.ndarray, p: np.ndarray, bins: int = 10) -> float:
    """Mean |observed rate - mean probability| over equal-width probability bins, weighted by bin size."""
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return float(
        sum(
            abs(y[edges == b].mean() - p[edges == b].mean()) * (edges == b).sum()
            for b in range(bins)
            if (edges == b).any()
        )
        / len(y)
    )


def cascade_savings(y: np.ndarray, scores: list[list[float]]) -> dict:
    """Share of claims a first pass clears (score below a cutoff) while >= 95% of hallucinated responses keep
    at least one claim for the LLM. The cutoff is the highest that keeps that recall on this set."""
    worst = np.array([max(s) if s else 0.0 for s in scores])
    positives = np.sort(worst[y == 1])
    cutoff = float(positives[int(np.floor((1 - CASCADE_RECALL) * len(positives)))]) if len(positives) else 0.0
    claims = np.array([c for s in scores for c in s])
    return {
        "cutoff": round(cutoff, 4),
        "cleared": float((claims < cutoff).mean()) if len(claims) else 0.0,
        "recall": float((worst[y == 1] >= cutoff).mean()) if len(positives) else 0.0,
    }


def _worst(rows, name: str, agg=max) -> np.ndarray:
    i = FEATURES.index(name)
    return np.array([agg(v[i] for v in r.claim_vectors) if r.claim_vectors else 0.0 for r in rows])


def baseline_scores(rows) -> dict[str, np.ndarray]:
    """Single-signal baselines, higher = more likely hallucinated.

    Content-word overlap: 1 - the share of the worst claim's content words found anywhere in the context.
    Entity/number check: how many numbers and capitalised names of the response the context lacks.
    """
    overlap = 1.0 - _worst(rows, "recall_global", min)
    missing = np.array(
        [
            sum(
                v[FEATURES.index("n_numbers_missing")] + v[FEATURES.index("n_entities_missing")]
                for v in r.claim_vectors
            )
            for r in rows
        ]
    )
    return dict(zip(BASELINES, (overlap, missing), strict=True))


def evaluate(name: str, train_rows, test_rows, resamples: int, seed: int) -> dict:
    fitted = fit_models(train_rows)
    model = OfflineModel(BoostedTrees.from_dict(fitted["response_model"]), fitted["evidence_rules"], {})
    y = np.array([r.label for r in test_rows])
    score = np.array([model.response_score(r.claim_vectors) or 0.0 for r in test_rows])
    boot = {"n_resamples": resamples, "seed": seed}
    out = {
        "dataset": name,
        "n": len(test_rows),
        "positives": int(y.sum()),
        "auc": bootstrap_ci(roc_auc, y, score, **boot).as_dict(),
        "balanced_accuracy": bootstrap_ci(
            lambda a, b: balanced_accuracy(a, (b >= 0.5).astype(int)), y, score, **boot
        ).as_dict(),
        "baselines": {k: bootstrap_ci(roc_auc, y, s, **boot).as_dict() for k, s in baseline_scores(test_rows).items()},
        "evidence_rules": fitted["evidence_rules"],
        "prevalence": float(y.mean()),
        "ece": expected_calibration_error(y, score),
    }
    scores = [claim_scores(model, r) for r in test_rows]
    out["triage"] = triage(y, [decision(s, r.triage) for s, r in zip(scores, test_rows, strict=True)])
    out["flagged_share"] = {f"{t:g}": float(np.mean([max(s, default=0.0) >= t for s in scores])) for t in THRESHOLDS}
    out["cascade"] = cascade_savings(y, scores)
    if name == "wice":  # one gold claim per response: unsupported when any extracted piece of it is
        p = np.array([max(model.claim_probability(v)[0] for v in r.claim_vectors) for r in test_rows])
        out["claim_f1"] = bootstrap_ci(
            lambda a, b: precision_recall_f1(a, (b >= 0.5).astype(int))[2], y, p, **boot
        ).as_dict()
    return out


def decision(probabilities: list[float], triage: list[tuple[bool, bool, bool]]) -> int | None:
    """The judge's decided verdict on a response (1 hallucinated, 0 faithful) or None when it cannot tell.

    A claim's best guess is unsupported at the default threshold or on a definite error; it is confident by
    the rules of judges/offline/confidence.py, computed once per claim at featurization.
    """
    guesses = []
    for p, (definite, sure_supported, sure_unsupported) in zip(probabilities, triage, strict=True):
        unsupported = p >= DEFAULT_THRESHOLD or definite
        guesses.append((unsupported, sure_unsupported if unsupported else sure_supported))
    if any(unsupported and sure for unsupported, sure in guesses):
        return 1
    if guesses and all(sure for _, sure in guesses):
        return 0
    return None


def triage(y: np.ndarray, decisions: list[int | None]) -> dict:
    """Decided share and accuracy among decided responses."""
    decided = [(int(t), d) for t, d in zip(y, decisions, strict=True) if d is not None]
    right = sum(t == d for t, d in decided)
    return {
        "decided": len(decided) / len(decisions) if decisions else 0.0,
        "accuracy_decided": right / len(decided) if decided else None,
        "decided_hallucinated": sum(d for _, d in decided) / len(decided) if decided else None,
    }


def _fmt(ci: dict) -> str:
    return f"{ci['point']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}]"


def markdown(results: list[dict], command: str) -> str:
    lines = [
        "# Offline judge: leave-one-dataset-out quality",
        "",
        f"Command: `{command}`. Each row: trained on the other sets, scored on this one.",
        "AUC ROC and balanced accuracy (decision at 0.5) at response level, bootstrap 95% CIs; baselines are one",
        "signal each with no training. Claim F1 is the unsupported class on WiCE's single labelled claims.",
        "",
        "| held-out set | n | AUC ROC | balanced accuracy | claim F1 | baseline: content-word overlap AUC "
        "| baseline: entity/number check AUC |",
        "|---|---:|---|---|---|---|---|",
    ]
    for r in results:
        claim = _fmt(r["claim_f1"]) if "claim_f1" in r else "-"
        lines.append(
            f"| {r['dataset']} | {r['n']} | {_fmt(r['auc'])} | {_fmt(r['balanced_accuracy'])} | {claim} | "
            + " | ".join(_fmt(r["baselines"][b]) for b in BASELINES)
            + " |"
        )
    summ = [r for r in results if r["dataset"] in SUMMARISATION]
    if summ:
        mean = float(np.mean([r["auc"]["point"] for r in summ]))
        met = [r["dataset"] for r in summ if r["auc"]["point"] >= 0.75]
        lines += [
            "",
            f"Mean AUC over the summarisation sets ({', '.join(SUMMARISATION)}): {mean:.3f}. "
            f"Target: AUC >= 0.75 on each; met on: {', '.join(met) or 'none'}"
            + "".join(
                f"; {r['dataset']} misses it by {0.75 - r['auc']['point']:.3f}"
                for r in summ
                if r["auc"]["point"] < 0.75
            )
            + ". For scale, a trained 184M-parameter model reaches about 0.77 on SummEval.",
        ]
    default = f"{DEFAULT_THRESHOLD:g}"
    lines += [
        "",
        f"Calibration and decisions (default threshold {default}; a claim is flagged when its probability "
        "reaches it or a definite error is found). Cascade: the share of claims the offline first pass clears "
        f"while {CASCADE_RECALL:.0%} of the hallucinated responses keep a claim for the LLM (cutoff chosen on "
        "the set itself, so an upper bound).",
        "",
        "| held-out set | positive share | flagged share | gap | ECE | AUC | cascade: claims cleared (cutoff) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        flagged = r["flagged_share"][default]
        lines.append(
            f"| {r['dataset']} | {r['prevalence']:.1%} | {flagged:.1%} | {flagged - r['prevalence']:+.1%} | "
            f"{r['ece']:.3f} | {r['auc']['point']:.3f} | {r['cascade']['cleared']:.1%} "
            f"({r['cascade']['cutoff']:.2f}) |"
        )
    if all("triage" in r for r in results):
        lines += [
            "",
            "Triage (judges/offline/confidence.py): a response is decided when a claim is confidently unsupported "
            "(hallucinated) or every claim is confidently supported (faithful); the rest is left for an LLM.",
            "",
            "| held-out set | decided share | accuracy among decided | decided as hallucinated | ECE of the score |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in results:
            t = r["triage"]
            acc = "-" if t["accuracy_decided"] is None else f"{t['accuracy_decided']:.1%}"
            hall = "-" if t["decided_hallucinated"] is None else f"{t['decided_hallucinated']:.1%}"
            lines.append(f"| {r['dataset']} | {t['decided']:.1%} | {acc} | {hall} | {r['ece']:.3f} |")
    gaps = {
        t: float(np.mean([abs(r["flagged_share"][t] - r["prevalence"]) for r in results]))
        for t in results[0]["flagged_share"]
    }
    best = min(gaps, key=gaps.get)
    within = [r["dataset"] for r in results if abs(r["flagged_share"][default] - r["prevalence"]) <= 0.10]
    lines += [
        "",
        "Mean |flagged share - positive share| by threshold: "
        + ", ".join(f"{t}: {g:.3f}" for t, g in gaps.items())
        + f". Smallest at {best}; the default is "
        f"{default}. Within 10 points at the default on: {', '.join(within) or 'none'}.",
    ]
    lines += [
        "",
        "Flagged share by threshold: "
        + "; ".join(
            f"{r['dataset']} " + ", ".join(f"{t}: {v:.0%}" for t, v in r["flagged_share"].items()) for r in results
        ),
    ]
    beats = [r["dataset"] for r in results if all(r["auc"]["point"] > r["baselines"][b]["point"] for b in BASELINES)]
    short = [r["dataset"] for r in results if r["dataset"] not in beats]
    lines += [
        "",
        f"The trained judge has a higher AUC than both one-signal baselines on: {', '.join(beats) or 'none'}"
        + (
            f"; not on: {', '.join(short)} (see the row for how far, and whether the intervals overlap)."
            if short
            else "."
        ),
        "",
        NOTES,
    ]
    return "\n".join(lines) + "\n"


NOTES = """Notes.
- The judge is a gradient-boosted tree model over cheap signals (n-gram overlap, copied fragments and the
  numbers, names, negations, opposites, hedges and intensifiers that differ inside them, missing numbers and
  names, dates, attribution), with Platt calibration and evidence rules whose precision is measured on the
  training sets (hallumeasure/judges/offline/model.py). It cannot follow a paraphrase or an argument.
- Typed value slots (hallumeasure/judges/offline/slots.py): numbers with their unit noun, money, shares, years,
  clock times in any format ("9 a.m." = "9:00" = "09:00" = "nine o'clock"), dates, months, weekdays, names,
  quantifiers, modality and speakers are read from the claim and from its closest context sentences; a value
  the context does not hold is a *definite error* (with a negation, opposite or exclusive value swapped in
  aligned text). A definite error flags the claim whatever the trees say, and its measured precision on the
  training sets (evidence rule "definite") is the claim's probability floor. The hand-written minimal pairs
  in benchmarks/results/contrast.md measure this layer. The response score is raised by the original evidence rules
  only: raising it by the value-slot rules too lowered CLIFF to 0.784 and HaluEval QA to 0.980 in a
  development run. Against the table before this layer: wice 0.728 -> 0.738, summedits 0.643 -> 0.643,
  bump 0.611 -> 0.614, cliff 0.795 -> 0.793, halueval_qa 0.994 -> 0.994.
- Default threshold 0.65: the calibration weighs both classes equally and a short claim with no telling
  signal sits near 0.5, so 0.5 flags far more responses than are hallucinated. 0.6 has a slightly smaller
  mean gap here (see above) but flags about a fifth of the contrast suite's faithful restatements; 0.65
  keeps them under 10%. The flagged share cannot track the positive share on two sets at any threshold:
  CLIFF (+22 points; its faithful LLM summaries often carry a name or number its source excerpt lacks,
  a definite error that is flagged at any threshold, precision about 0.5 there) and HaluEval QA (-20
  points; its wrong answers are short claims with no value to compare, which the trees rank well, AUC
  0.994, but score below any threshold in the grid at claim level). A per-domain threshold would close
  these gaps; one default cannot.
- SummEdits and BUMP are built from minimal edits of a faithful summary; faithful paraphrases there use new
  words as much as the errors do, so plain word novelty carries no signal (the overlap baseline is near 0.5).
- Plain word novelty and response length are not model inputs: their relation to the label flips between the
  sets, and a model using them transferred worse in this leave-one-set-out protocol.
- Tried and dropped: sentence-embedding similarity from the WordLlama table that ships inside its wheel (it
  loads with no download). In development runs of this protocol it changed the mean summarisation AUC by
  less than 0.01 and lowered halueval_qa, so the judge neither uses nor depends on it.
- Misreadings fixed (issue #45): a decimal split by a space after its point ("98. 7 per cent") is one number
  and no sentence end; a list marker ("3.") is no claim and no number of one; a short form of a name ("West
  Brom", "Man Utd", "Barca", "UN") is no other name; roles swapped around a relation inside one sentence
  ("French cuisine was influenced by Italian") are never confidently supported. Against the table before
  them (same code otherwise, rerun on this machine): AUC wice 0.737 -> 0.737, summedits 0.641 -> 0.641,
  bump 0.612 -> 0.612, cliff 0.792 -> 0.799, halueval_qa 0.994 -> 0.995; responses decided wrongly by the
  triage above (all held-out responses) wice 28 -> 26, summedits 199 -> 193, bump 82 -> 83, cliff 51 -> 43,
  halueval_qa 43 -> 43 (bump's one more comes from the refitted trees, not from a rule that fired).
- Kept: swaps between members of a closed set of exclusive values (colours, kin, periods, units, ordinals,
  seasons, directions...: "wife" where the context says "brother") inside copied text and in the two closest
  sentences, and negations that restate a complementary word ("did not change" against "stayed the same").
  They fire rarely but with high measured precision; against the previous model they moved AUC by summedits
  +0.011, bump +0.004, cliff -0.006, wice +0.001, halueval_qa -0.001.
- Also tried and dropped (development runs of this protocol, trees without the evidence rules and without
  the exclusive-value signals, where the signals then shipped give summedits 0.602, bump 0.596, cliff 0.811):
  the part of speech of each new word (lemminflect's tables; new nouns against new verbs and adjectives):
  summedits 0.596, bump 0.592, cliff 0.818;
  and how close each new word is to its nearest context word in GloVe 6B 50-d vectors (a 76 MB wheel):
  summedits 0.572, bump 0.592, cliff 0.816. On SummEdits both signals rank the faithful summaries as the
  riskier ones (one-signal AUC 0.43 to 0.48): its faithful rewrites bring in synonyms ("probe" for
  "investigation"), its errors swap in close relatives ("wife" for "brother", "quarter" for "year"),
  and word vectors place both as near neighbours.
- What is left on these two sets is telling a synonym from a swapped relative inside a reworded sentence,
  which needs a trained entailment model. None ships inside a wheel on this machine's package index (the
  entailment packages there, summac, alignscore and guardrails-ai-provenance-nli, are code only, under
  32 KB each, and fetch their weights from a model hub at run time), and such a model would
  not meet the 200 responses a second on one core that the offline judge is held to. For scale: the
  SummEdits authors report most LLMs they tested near chance on it and GPT-4 at 82.4% balanced accuracy
  (Laban et al. 2023, arXiv:2305.14540)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir() or CLONE_DATA)
    parser.add_argument("--limit", type=int, default=None, help="stratified sample of N records per set")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "offline_quality")
    parser.add_argument(
        "--render", action="store_true", help="only rewrite OUT.md from OUT.json (after the default threshold changed)"
    )
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(args.out.with_suffix(".json").read_text())
        args.out.with_suffix(".md").write_text(markdown(saved["results"], saved["command"]))
        return 0
    if args.data is None or not Path(args.data).is_dir():
        print("no labelled data found: pass --data DIR", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows = {
        name: featurize_all(subsample(load_labelled(Path(args.data) / f"{name}.jsonl"), args.limit, seed=args.seed))
        for name in SHARED_SETS
    }
    results = []
    for name in SHARED_SETS:
        train = [r for other, rs in rows.items() if other != name for r in rs]
        results.append(evaluate(name, train, rows[name], args.resamples, args.seed))
        print(f"{name}: AUC {_fmt(results[-1]['auc'])}", file=sys.stderr)
    command = (
        "python benchmarks/offline_quality.py"
        + (f" --limit {args.limit}" if args.limit else "")
        + (f" --resamples {args.resamples}" if args.resamples != 1000 else "")
    )
    seconds = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps(
            {"command": command, "seconds": round(seconds), "results": results, "features": list(FEATURES)}, indent=2
        )
        + "\n"
    )
    text = markdown(results, command)
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
