"""Span figures of the keyless judges on span truth derived from the minimal-edit sets of ../shared/data.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/span_dev.py --limit 150     # writes results/span_dev.{md,json}

Span truth: BUMP's edited summaries (``meta.reference_summary``) and SummEdits' edits (``meta.seed_summary``)
come with the faithful text they were edited from. For an edit labelled unsupported, the gold span is
every character of the edited response that a word-level diff against its original marks as replaced
or inserted; faithful records (BUMP references, SummEdits edits labelled consistent) have no span. An
unsupported edit that only deletes words leaves nothing to mark in the response and is left out (counted).
Each judge runs with the offline extractor through ``bench`` (``run_bench``), so the table is the one
``hallumeasure bench`` prints, with mark-everything and mark-nothing beside the judge.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from difflib import SequenceMatcher
from pathlib import Path

from hallumeasure.bench.run import run_bench
from hallumeasure.bench.spans import METRICS, SpanScores, span_markdown
from hallumeasure.pipeline.measurement import Measurement
from hallumeasure.runs.datasets import GoldSpan, LabelledSample, data_dir, load_labelled, subsample

RESULTS = Path(__file__).resolve().parent / "results"
#: Sets whose unsupported records carry the faithful original they were edited from, and where.
ORIGINALS = {"bump": "reference_summary", "summedits": "seed_summary"}
_WORD = re.compile(r"\S+")


def edit_spans(edited: str, original: str) -> list[tuple[int, int]]:
    """Characters of ``edited`` that a word-level diff against ``original`` marks as replaced or inserted."""
    mine = [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(edited)]
    theirs = [m.group(0) for m in _WORD.finditer(original)]
    spans: list[tuple[int, int]] = []
    matcher = SequenceMatcher(None, [w for _, _, w in mine], theirs, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "insert") and i2 > i1:
            start, end = mine[i1][0], mine[i2 - 1][1]
            if spans and spans[-1][1] >= start - 1:
                start = spans.pop()[0]
            spans.append((start, end))
    return spans


def with_span_truth(samples: list[LabelledSample]) -> tuple[list[LabelledSample], int]:
    """The samples with gold spans, and how many unsupported edits had nothing to mark (left out)."""
    out, dropped = [], 0
    for s in samples:
        original = s.meta.get(ORIGINALS.get(s.dataset, ""))
        if s.label == 0:
            out.append(s.model_copy(update={"spans": ()}))
            continue
        if not isinstance(original, str):
            dropped += 1
            continue
        spans = edit_spans(s.response, original)
        if not spans:
            dropped += 1
            continue
        gold = tuple(GoldSpan(start=a, end=b, text=s.response[a:b], label=_label(s)) for a, b in spans)
        out.append(LabelledSample.model_validate({**s.model_dump(), "spans": gold}))
    return out, dropped


def _label(sample: LabelledSample) -> str | None:
    types = sample.gold_error_types()
    return types[0] if types and len(types) == 1 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data", default=os.environ.get("HALLUMEASURE_DATA") or Path(__file__).parents[2] / "shared" / "data"
    )
    parser.add_argument("--limit", type=int, default=150, help="records per set (stratified, seed 13)")
    parser.add_argument("--judges", nargs="+", default=["offline", "nli"])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--out", default=str(RESULTS / "span_dev"))
    parser.add_argument("--render", action="store_true", help="only re-render the .md from the .json")
    args = parser.parse_args()
    out = Path(args.out)
    if args.render:
        saved = json.loads(out.with_suffix(".json").read_text())
        out.with_suffix(".md").write_text(render(saved["command"], saved["results"]))
        return
    folder = data_dir(args.data)
    if folder is None or not (Path(folder) / "bump.jsonl").exists():
        sys.exit(f"no shared data in {args.data}; give --data DIR")
    command = "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/span_dev.py " + " ".join(sys.argv[1:])
    results = []
    for name in ORIGINALS:
        samples, dropped = with_span_truth(load_labelled(Path(folder) / f"{name}.jsonl"))
        samples = subsample(samples, args.limit, seed=13)
        for judge in args.judges:
            stages = Measurement.from_values({"judge": [judge], "extractor": "offline"}).stages()
            started = time.perf_counter()
            result = run_bench(samples, stages.judge, stages.extractor, n_resamples=args.resamples, seed=13)
            assert result.span is not None
            seconds = time.perf_counter() - started
            results.append(
                {
                    "dataset": name,
                    "judge": judge,
                    "dropped_deletion_only": dropped,
                    "seconds": round(seconds, 1),
                    "notes": result.notes,
                    "span": result.span.model_dump(mode="json"),
                }
            )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"command": command, "results": results}, indent=1) + "\n")
    out.with_suffix(".md").write_text(render(command, results))
    print(out.with_suffix(".md").read_text())


def render(command: str, results: list[dict]) -> str:
    """The Markdown report of saved results: the summary, what beats the baselines, and each table."""
    summary = ["| set | judge | " + " | ".join(METRICS) + " |", "|---|---|" + "---|" * len(METRICS)]
    findings, lines = [], []
    for r in results:
        rows = {row["system"]: row["metrics"] for row in r["span"]["rows"]}
        for system, metrics in rows.items():
            name = r["judge"] if system == "judge" else system
            summary.append(f"| {r['dataset']} | {name} | " + " | ".join(_fmt(metrics[m]) for m in METRICS) + " |")
        beats = [m for m in METRICS if _above(rows["judge"][m], rows["mark everything"][m], rows["mark nothing"][m])]
        behind = [
            m
            for m in METRICS
            if not _above(rows["judge"][m], rows["mark everything"][m])
            or not _above(rows["judge"][m], rows["mark nothing"][m])
        ]
        findings.append(
            f"- {r['judge']} on {r['dataset']}: above both baselines (intervals apart) on "
            f"{', '.join(beats) or 'nothing'}; not above at least one of them on {', '.join(behind) or 'nothing'}."
        )
        scores = SpanScores.model_validate(r["span"])
        lines += [f"### {r['judge']} on {r['dataset']}", "", *span_markdown(scores)[2:], ""]
        lines += [
            f"{r['dropped_deletion_only']} unsupported edits of the whole set only delete words and were left out; "
            f"{r['seconds']:.0f} s for {scores.n_responses} responses.",
            "",
        ]
        lines += [f"Note: {n}" for n in r["notes"] if "in-sample" in n] + [""]
    md = [
        "# Span figures of the keyless judges on minimal-edit span truth (dev)",
        "",
        f"Command: `{command}`",
        "",
        (__doc__ or "").split("\n\n", 2)[2].strip(),
        "",
        "**Read with care.** The shipped keyless judges were fitted on these sets (BUMP and SummEdits among "
        "them), so their figures are in-sample and overstate them; nothing in the span code was tuned on them. "
        "The gold marks only the edited words, while a judge marks whole claims (clauses), so character "
        "precision and IoU are low by construction. 95% percentile-bootstrap intervals over responses.",
        "",
        *summary,
        "",
        "What the figures say (a judge is above a baseline where its interval lies wholly above the baseline's):",
        "",
        *findings,
        "",
        *lines,
    ]
    return "\n".join(md) + "\n"


def _above(judge: dict, *baselines: dict) -> bool:
    return judge["low"] is not None and all(b["high"] is not None and judge["low"] > b["high"] for b in baselines)


def _fmt(m: dict) -> str:
    if m["point"] is None:
        return "n/a"
    if m["low"] is None:
        return f"{m['point']:.2f}"
    return f"{m['point']:.2f} [{m['low']:.2f}, {m['high']:.2f}]"


if __name__ == "__main__":
    main()
