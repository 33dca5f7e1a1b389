"""Long-source robustness: response-level AUC and judge tokens per claim as distractor articles grow the source.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/long_source.py                # -> long_source.{md,json}
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/long_source.py --limit 40     # a quick look

For a stratified subsample of a SummEval-like dev set (default: cliff, 586 XSum/CNN-DM summaries
with human labels), each source is grown to 2x, 8x and 32x its length by adding the articles of other
records (distinct sources), with the original at a seeded random position among them. Each length is
measured with the offline extractor and two judges:

- the offline judge (response score = its calibrated response probability);
- the scripted fake LLM judge (detectors/scripted.py through FakeAPI, cot-one; response score = the
  share of unsupported claims). It is a word-overlap heuristic, not a model: its AUC says whether
  retrieval keeps the right text in front of a judge that reads words, not how an LLM would score.

Both judge under the same ``--max-context-tokens`` budget (default 1000 source tokens, about the
80th percentile of the articles), so a source over the budget is cut to the BM25 view for its claims. "1x, no budget"
is the reference: the original article, whole. Judge input tokens per claim are the simulators'
counts (words and marks) of the scripted judge's requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

from hallumeasure.bench.metrics import roc_auc
from hallumeasure.core.text import count_tokens
from hallumeasure.core.types import Sample
from hallumeasure.detectors.scripted import scripted_responder
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.runs.datasets import data_dir, load_labelled, resolve_dataset, subsample
from hallumeasure.sources.rag import SourceOptions

CLONE_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # a clone's labelled sets, beside it

HERE = Path(__file__).resolve().parent
MULTIPLIERS = (1, 2, 8, 32)


def grow(sample: Sample, others: list[str], times: int, rng: random.Random) -> Sample:
    """``sample`` with distractor articles added until its source is ``times`` as long.

    The original article is placed at random among them.
    """
    if times == 1:
        return sample
    target = len(sample.context) * times
    pieces, length = [], len(sample.context)
    while length < target:
        article = rng.choice(others)
        if article != sample.context:
            pieces.append(article)
            length += len(article) + 2
    pieces.insert(rng.randrange(len(pieces) + 1), sample.context)
    return sample.model_copy(update={"context": "\n\n".join(pieces)})


def measure(samples: list[Sample], labels: list[int], judge_name: str, budget: int | None) -> dict:
    options = SourceOptions(max_context_tokens=budget)
    if judge_name == "offline":
        judge = OfflineJudge()
        api = None
    else:
        api = FakeAPI("scripted", responder=scripted_responder)
        judge = LLMJudge(Model(api, max_concurrency=8))
    started = time.perf_counter()
    results = asyncio.run(measure_samples(samples, OfflineExtractor(), judge, sources=options, concurrency=8))
    seconds = time.perf_counter() - started
    scores = [(r.score if judge_name == "offline" else r.unsupported_rate) for r in results]
    keep = [(label, score) for label, score in zip(labels, scores, strict=True) if score is not None]
    claims = sum(r.n_claims for r in results)
    row = {
        "judge": judge_name,
        "responses": len(keep),
        "claims": claims,
        "auc": round(roc_auc([k[0] for k in keep], [k[1] for k in keep]), 4),
        "claims_cut": sum(1 for r in results for v in r.verdicts if v.shown),
        "errors": sum(1 for r in results if r.error) + sum(r.n_errors for r in results),
        "seconds": round(seconds, 1),
    }
    if api is not None:
        calls = [r for r in api.requests if r.tool and r.tool.name == "record_verdict"]
        tokens = sum(count_tokens(r.system + "".join(m.text for m in r.messages)) for r in calls)
        row["judge_input_tokens_per_claim"] = round(tokens / max(1, len(calls)), 1)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", help="only re-render the .md from this results .json")
    parser.add_argument("--data", default="cliff")
    parser.add_argument("--limit", type=int, default=150, help="records (stratified by label, seed 13)")
    parser.add_argument("--max-context-tokens", type=int, default=1000)
    parser.add_argument("--out", default=str(HERE / "results" / "long_source"))
    args = parser.parse_args()
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        Path(args.render).with_suffix(".md").write_text(render(saved["meta"], saved["rows"]))
        return 0
    try:
        records = load_labelled(resolve_dataset(args.data, data=data_dir() or CLONE_DATA))
    except Exception as exc:  # noqa: BLE001 - no shared data on this machine
        print(f"cannot load {args.data}: {exc}", file=sys.stderr)
        return 2
    chosen = subsample(records, args.limit)
    samples = [r.to_sample() for r in chosen]
    labels = [r.label for r in chosen]
    others = sorted({r.context for r in records})
    rows = []
    for judge_name in ("offline", "scripted"):
        reference = measure(samples, labels, judge_name, None)
        rows.append({"length": "1x, no budget", **reference})
        for times in MULTIPLIERS:
            rng = random.Random(f"{args.data}-{times}")
            grown = [grow(s, others, times, rng) for s in samples]
            row = measure(grown, labels, judge_name, args.max_context_tokens)
            row["source_tokens_mean"] = round(sum(count_tokens(s.context) for s in grown) / len(grown))
            row["auc_drop"] = round(reference["auc"] - row["auc"], 4)
            rows.append({"length": f"{times}x", **row})
            print(json.dumps(rows[-1]), flush=True)
    meta = {
        "data": args.data,
        "records": len(samples),
        "positives": sum(labels),
        "max_context_tokens": args.max_context_tokens,
        "chunk_tokens": 160,
        "ranker": "bm25s",
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "command": "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/long_source.py " + " ".join(sys.argv[1:]),
    }
    Path(args.out + ".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    Path(args.out + ".md").write_text(render(meta, rows))
    return 0


def render(meta: dict, rows: list[dict]) -> str:
    lines = [
        "# Long-source robustness",
        "",
        f"`{meta['command']}`",
        "",
        f"{meta['records']} records of `{meta['data']}` ({meta['positives']} hallucinated), stratified subsample "
        f"(seed 13). Sources grown with distractor articles of other records; judged under "
        f"--max-context-tokens {meta['max_context_tokens']} (BM25 views of {meta['chunk_tokens']}-token chunks). "
        f"AUC drop is against '1x, no budget' (the original article, whole). Load average while measuring: "
        f"{', '.join(f'{x:.1f}' for x in meta['load_average'])} on {meta['cpus']} CPUs.",
        "",
        "| judge | length | source tokens (mean) | AUC | AUC drop | claims judged on a view "
        "| judge input tokens / claim | error rows | seconds |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['judge']} | {r['length']} | {r.get('source_tokens_mean', '')} | {r['auc']:.3f} | "
            f"{r.get('auc_drop', '')} | {r['claims_cut']}/{r['claims']} | "
            f"{r.get('judge_input_tokens_per_claim', 'n/a (no LLM)')} | {r['errors']} | {r['seconds']} |"
        )
    lines += [
        "",
        "Targets (issue #15): AUC drop at most 0.02 at 8x and 0.04 at 32x; judge input tokens per claim within "
        "1.2x across lengths.",
        "",
    ]
    for judge in dict.fromkeys(r["judge"] for r in rows):
        mine = {r["length"]: r for r in rows if r["judge"] == judge}
        checks = [
            f"8x drop {mine['8x']['auc_drop']:+.3f} ({'met' if mine['8x']['auc_drop'] <= 0.02 else 'MISSED'})",
            f"32x drop {mine['32x']['auc_drop']:+.3f} ({'met' if mine['32x']['auc_drop'] <= 0.04 else 'MISSED'})",
        ]
        tokens = [r["judge_input_tokens_per_claim"] for r in mine.values() if "judge_input_tokens_per_claim" in r]
        if tokens:
            ratio = max(tokens) / min(tokens)
            checks.append(f"tokens per claim max/min {ratio:.2f}x ({'met' if ratio <= 1.2 else 'MISSED'})")
        lines.append(f"- {judge}: " + "; ".join(checks))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
