"""Spans on the words that are wrong: the offline judge's span figures, calibrated on one set, reported on others.

    OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/spans_heldout.py --limit 400
        # writes benchmarks/results/spans_heldout.{md,json}
    .venv/bin/python benchmarks/spans_heldout.py --render      # only re-render the .md from the .json

Where the offline judge knows which words of a claim are wrong (``ClaimVerdict.focus``: a number, date, name,
negation or quantifier, else the phrase the claim adds beyond its closest sentence), the unsupported span covers
those words; otherwise the whole claim. Three span policies are compared: *whole claim* (the spans before
focus), *values* (focus on named values only) and *values + phrases* (also the added phrases). The policy the
judge ships is chosen on SummEdits alone (character F1 of its edit spans); the other sets are reported, never
tuned on:

* BUMP: the characters a word diff of each edited summary against its faithful original marks (span_dev.py);
* CLIFF: the annotators' own spans (``meta.annotated_spans``, located in the summary; a span whose text is not
  found is dropped, and a hallucinated summary left with none is left out);
* a RAGTruth-format file written for this test (benchmarks/data/ragtruth_written/, committed before any judge
  ran on it).

The offline trees that score each shared set are refitted without it (leave one dataset out, as in
offline_quality.py); the written file is scored with the shipped trees, which never saw it. Claims come from the
offline extractor. Figures are pooled character precision, recall and F1, example F1 and mean IoU with 95%
percentile-bootstrap intervals over responses (hallumeasure/bench/spans.py), with mark-everything and
mark-nothing beside them, and recall per gold label type.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from hallumeasure.bench.spans import METRICS, SYSTEMS, SpanScores, score_spans
from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import ClaimVerdict, ResponseResult
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.judges.offline.model import BoostedTrees, OfflineModel
from hallumeasure.judges.offline.reasons import added_phrases, focus
from hallumeasure.judges.offline.signals import claim_signals
from hallumeasure.judges.offline.training import featurize_all, fit_models
from hallumeasure.runs.datasets import SHARED_SETS, GoldSpan, LabelledSample, data_dir, load_labelled, subsample
from hallumeasure.runs.span_sets import load_span_set

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from span_dev import with_span_truth  # the edit-span truth of BUMP and SummEdits

WRITTEN = HERE / "data" / "ragtruth_written"
CALIBRATION = "summedits"
REPORTED = ("bump", "cliff", "ragtruth_written")
POLICIES = ("whole claim", "values", "values + phrases")


def cliff_span_truth(samples: list[LabelledSample]) -> tuple[list[LabelledSample], int]:
    """CLIFF summaries with their annotators' spans located in the text; how many hallucinated ones had none."""
    out, dropped = [], 0
    for s in samples:
        if s.label == 0:
            out.append(s.model_copy(update={"spans": ()}))
            continue
        types = s.meta.get("aggrefact_error_types") or []
        label = types[0] if len(types) == 1 else None
        spans, cursor = [], 0
        for text in s.meta.get("annotated_spans") or []:
            at = s.response.find(text, cursor)
            at = s.response.find(text) if at < 0 else at
            if text and at >= 0:
                spans.append(GoldSpan(start=at, end=at + len(text), text=text, label=label))
                cursor = at + len(text)
        if not spans:
            dropped += 1
            continue
        out.append(LabelledSample.model_validate({**s.model_dump(), "spans": tuple(spans)}))
    return out, dropped


def trees_without(held_out: str, rows: dict[str, list[Any]]) -> OfflineModel:
    """Offline trees fitted on every shared set but ``held_out`` (as offline_quality.py does)."""
    fitted = fit_models([r for name, rs in rows.items() if name != held_out for r in rs])
    return OfflineModel(BoostedTrees.from_dict(fitted["response_model"]), fitted["evidence_rules"], {})


def judged(samples: list[LabelledSample], judge: OfflineJudge) -> list[tuple[LabelledSample, ResponseResult]]:
    """Each sample's claims (offline extractor) judged, as a stored result would hold them."""
    extractor, policy, out = OfflineExtractor(), Policy(), []
    for s in samples:
        sample = s.to_sample()
        claims = extractor.claims(sample)
        j = judge.judge_now(sample, claims)
        out.append((s, summarise_response(sample, claims, j.verdicts, policy, score=j.score, decidable=j.decidable)))
    return out


def with_policy(pairs: list[tuple[LabelledSample, ResponseResult]], policy: str) -> list[ResponseResult]:
    """The results with their verdicts' focus as ``policy`` keeps it."""
    if policy == "values + phrases":
        return [r for _, r in pairs]
    out = []
    for s, r in pairs:
        texts = {c.id: c.text for c in r.claims}
        verdicts = [_kept(v, texts.get(v.claim_id, ""), s.context, policy) for v in r.verdicts]
        out.append(r.model_copy(update={"verdicts": verdicts}))
    return out


def _kept(verdict: ClaimVerdict, claim: str, context: str, policy: str) -> ClaimVerdict:
    if not verdict.focus:
        return verdict
    if policy == "values":
        signals = claim_signals(claim, context)
        phrases = added_phrases(signals)
        if not (phrases and focus(signals) == phrases):
            return verdict
    return verdict.model_copy(update={"focus": ()})


def span_rows(
    name: str, samples: list[LabelledSample], judge: OfflineJudge, dropped: int, resamples: int
) -> dict[str, Any]:
    started = time.perf_counter()
    pairs = judged(samples, judge)
    scores = {}
    for p in POLICIES:
        found = score_spans(samples, with_policy(pairs, p), n_resamples=resamples, seed=13)
        assert found is not None  # every sample here has span truth
        scores[p] = found.model_dump(mode="json")
    return {"dataset": name, "dropped": dropped, "seconds": round(time.perf_counter() - started), "policies": scores}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir() or HERE.parents[1] / "shared" / "data")
    parser.add_argument("--limit", type=int, default=400, help="stratified sample of N records per shared set")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "spans_heldout")
    parser.add_argument("--render", action="store_true", help="only re-render the .md from the .json")
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(args.out.with_suffix(".json").read_text())
        args.out.with_suffix(".md").write_text(render(saved))
        return 0
    if not (Path(args.data) / "bump.jsonl").exists():
        print("no labelled data found: pass --data DIR", file=sys.stderr)
        return 2
    loaded = {name: load_labelled(Path(args.data) / f"{name}.jsonl") for name in SHARED_SETS}
    rows = {name: featurize_all(samples) for name, samples in loaded.items()}
    truth = {
        "summedits": with_span_truth(loaded["summedits"]),
        "bump": with_span_truth(loaded["bump"]),
        "cliff": cliff_span_truth(loaded["cliff"]),
    }
    results = []
    for name in (CALIBRATION, "bump", "cliff"):
        samples, dropped = truth[name]
        samples = subsample(samples, args.limit, seed=13)
        results.append(span_rows(name, samples, OfflineJudge(model=trees_without(name, rows)), dropped, args.resamples))
        print(f"{name}: done", file=sys.stderr)
    results.append(span_rows("ragtruth_written", load_span_set(WRITTEN), OfflineJudge(), 0, args.resamples))
    calibration = results[0]["policies"]
    chosen = max(POLICIES, key=lambda p: _f1(calibration[p]))
    command = "OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/spans_heldout.py" + (
        f" --limit {args.limit}" if args.limit else ""
    )
    saved = {"command": command, "chosen": chosen, "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(saved, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(render(saved))
    print(args.out.with_suffix(".md").read_text())
    return 0


def _f1(scores: dict[str, Any]) -> float:
    judge = next(r for r in scores["rows"] if r["system"] == "judge")
    return float(judge["metrics"]["char_f1"]["point"] or 0.0)


def _fmt(m: dict[str, Any]) -> str:
    if m["point"] is None:
        return "n/a"
    if m["low"] is None:
        return f"{m['point']:.3f}"
    return f"{m['point']:.3f} [{m['low']:.3f}, {m['high']:.3f}]"


def render(saved: dict[str, Any]) -> str:
    """The Markdown report: per set, each span policy beside the two trivial systems, then recall per label."""
    head = (__doc__ or "").split("\n\n", 2)[2].strip()
    md = [
        "# Spans on the words that are wrong: calibrated on SummEdits, reported on held-out sets",
        "",
        f"Command: `{saved['command']}`",
        "",
        head,
        "",
        f"**Chosen on {CALIBRATION}: {saved['chosen']}** (the highest character F1 there); the judge ships it.",
        "",
        "| set | role | responses | system | " + " | ".join(METRICS) + " |",
        "|---|---|---:|---|" + "---|" * len(METRICS),
    ]
    details = []
    for r in saved["results"]:
        role = "calibration" if r["dataset"] == CALIBRATION else "held out"
        for policy in POLICIES:
            scores = SpanScores.model_validate(r["policies"][policy])
            rows = {row.system: row for row in scores.rows}
            systems = ["judge"] if policy != POLICIES[0] else list(SYSTEMS)
            for system in systems:
                label = f"judge: {policy}" if system == "judge" else system
                metrics = rows[system].metrics
                md.append(
                    f"| {r['dataset']} | {role} | {scores.n_responses} | {label} | "
                    + " | ".join(_fmt(metrics[m].model_dump()) for m in METRICS)
                    + " |"
                )
        chosen = SpanScores.model_validate(r["policies"][saved["chosen"]])
        whole = SpanScores.model_validate(r["policies"][POLICIES[0]])
        details += [
            f"### {r['dataset']} ({role})",
            "",
            f"{chosen.n_responses} responses ({chosen.n_marked_responses} with a gold span, {chosen.n_gold_spans} "
            f"spans); {r['dropped']} hallucinated responses had no span to score and were left out; "
            f"{r['seconds']} s.",
            "",
            "| gold label type | spans | chars | R judge (whole claim) | R judge (chosen) | R mark everything |",
            "|---|---:|---:|---|---|---|",
        ]
        for before, after in zip(whole.per_label, chosen.per_label, strict=True):
            details.append(
                f"| {after.label} | {after.n_spans} | {after.n_chars} | {_fmt(before.recall['judge'].model_dump())} "
                f"| {_fmt(after.recall['judge'].model_dump())} | "
                f"{_fmt(after.recall['mark everything'].model_dump())} |"
            )
        details.append("")
    md += ["", "What the figures say (above: the interval lies wholly above the other's):", "", *findings(saved), ""]
    md += [
        "Recall per label type falls with narrower spans by construction (fewer characters are marked); "
        "per-type precision has no meaning, since the judge's marks carry its own labels.",
        "",
        *details,
    ]
    return "\n".join(md) + "\n"


def findings(saved: dict[str, Any]) -> list[str]:
    """One line per set: character F1 of the chosen policy against whole claims and both trivial systems."""
    out = []
    for r in saved["results"]:
        chosen = {row["system"]: row["metrics"]["char_f1"] for row in r["policies"][saved["chosen"]]["rows"]}
        whole = next(row for row in r["policies"][POLICIES[0]]["rows"] if row["system"] == "judge")
        f1, everything, nothing = chosen["judge"], chosen["mark everything"], chosen["mark nothing"]
        out.append(
            f"- {r['dataset']}: char F1 {f1['point']:.3f} (whole claims {whole['metrics']['char_f1']['point']:.3f}, "
            f"mark everything {everything['point']:.3f}, mark nothing {nothing['point']:.3f}); "
            f"{_verdict(f1, everything)} mark everything, {_verdict(f1, nothing)} mark nothing, "
            f"{_verdict(f1, whole['metrics']['char_f1'])} whole claims."
        )
    return out


def _verdict(a: dict[str, Any], b: dict[str, Any]) -> str:
    if a["low"] is not None and b["high"] is not None and a["low"] > b["high"]:
        return "above"
    if a["high"] is not None and b["low"] is not None and a["high"] < b["low"]:
        return "below"
    return "not apart from"


if __name__ == "__main__":
    sys.exit(main())
