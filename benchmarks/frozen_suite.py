"""The keyless judges on the frozen minimal-pair suite: how often they decide, and how often they are right.

    PYTHONPATH=. .venv/bin/python benchmarks/frozen_suite.py     # writes benchmarks/results/frozen_suite.md and .json
    PYTHONPATH=. .venv/bin/python benchmarks/frozen_suite.py --judges offline   # one judge only

The suite (tests/judges/offline/contrast/frozen/pairs.jsonl) was written blind and is never tuned on;
its hash is checked by tests/judges/offline/test_frozen_suite.py. Each pair is a context and one claim
that either changes one fact of it (``changed:<kind>``) or restates it faithfully
(``faithful:<kind>``). The claim alone is the response: the offline extractor splits it into
claims and each judge judges them against the context. The response is *decided* when a claim is
confidently unsupported (decision: hallucinated) or every evaluated claim is confidently
supported (decision: faithful); otherwise it is left for an LLM. Reported per kind and overall:
the decided share, the accuracy among decided pairs, and the confidently-wrong share (wrong
decisions over all pairs). Deterministic; the NLI judges need the ``nli`` extra.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from hallumeasure.core.labels import LABELS_WITH_SUBTYPE, Label
from hallumeasure.core.types import Sample
from hallumeasure.judges.build import build_judge
from hallumeasure.judges.offline import OfflineExtractor

HERE = Path(__file__).resolve().parent
FROZEN = HERE.parent / "tests" / "judges" / "offline" / "contrast" / "frozen" / "pairs.jsonl"
JUDGES = ("offline", "nli", "offline+nli")
#: Bounds from issue #24 over all pairs.
WRONG_BOUND, UNDECIDED_BOUND = 0.05, 0.30


def load_pairs(path: Path = FROZEN) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def decide(labels_confident: list[tuple[Label | None, bool]]) -> str | None:
    """ "hallucinated", "faithful" or None (undecided) from (label, confident) of the evaluated claims."""
    judged = [(label, confident) for label, confident in labels_confident if label is not None]
    if any(label in LABELS_WITH_SUBTYPE and confident for label, confident in judged):
        return "hallucinated"
    if judged and all(label == Label.SUPPORTED and confident for label, confident in judged):
        return "faithful"
    return None


def run_judge(spec: str, pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    extractor, judge = OfflineExtractor(), build_judge(spec)
    rows = []
    for pair in pairs:
        sample = Sample(id=pair["id"], response=pair["claim"], context=pair["context"])
        claims = extractor.claims(sample)
        verdicts = judge.judge_now(sample, claims).verdicts  # type: ignore[attr-defined]
        evaluated = [(v.label, v.confident) for v in verdicts if v.label != Label.UNEVALUATABLE]
        decision = decide(evaluated)
        truth = "hallucinated" if pair["expected"] == "changed" else "faithful"
        rows.append({"id": pair["id"], "kind": pair["kind"], "decision": decision, "right": decision == truth})
        rows[-1]["verdicts"] = verdicts
    return rows


def shares(rows: list[dict[str, Any]]) -> dict[str, Any]:
    decided = [r for r in rows if r["decision"] is not None]
    right = sum(r["right"] for r in decided)
    n = len(rows)
    return {
        "n": n,
        "decided": len(decided) / n if n else 0.0,
        "accuracy_decided": right / len(decided) if decided else None,
        "confidently_wrong": (len(decided) - right) / n if n else 0.0,
    }


def evaluate(
    judges: tuple[str, ...] = JUDGES, pairs: list[dict[str, Any]] | None = None, keep_rows: bool = False
) -> dict[str, Any]:
    """Per judge: overall, changed, faithful and per-kind shares over ``pairs`` (the frozen suite by default)."""
    pairs = load_pairs() if pairs is None else pairs
    out: dict[str, Any] = {}
    for spec in judges:
        rows = run_judge(spec, pairs)
        kinds: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            kinds[r["kind"]].append(r)
        out[spec] = {
            "overall": shares(rows),
            "changed": shares([r for r in rows if r["kind"].startswith("changed:")]),
            "faithful": shares([r for r in rows if r["kind"].startswith("faithful:")]),
            "kinds": {k: shares(rs) for k, rs in sorted(kinds.items())},
        }
        if keep_rows:
            out[spec]["rows"] = rows
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def markdown(result: dict[str, Any], command: str) -> str:
    lines = [
        "# Keyless judges on the frozen minimal-pair suite",
        "",
        f"Command: `{command}`. Pairs: tests/judges/offline/contrast/frozen/pairs.jsonl "
        "(written blind, never tuned on). "
        "A pair is decided when a claim is confidently unsupported (hallucinated) or every evaluated claim is "
        "confidently supported (faithful); undecided pairs are left for an LLM. Confidently wrong = wrong "
        f"decisions over all pairs (bound <= {WRONG_BOUND:.0%}); undecided share bound <= {UNDECIDED_BOUND:.0%}.",
        "",
        "| judge | pairs | decided | accuracy among decided | confidently wrong |",
        "|---|---:|---:|---:|---:|",
    ]
    for spec, r in result.items():
        for part in ("overall", "changed", "faithful"):
            s = r[part]
            lines.append(
                f"| {spec} ({part}) | {s['n']} | {_pct(s['decided'])} | {_pct(s['accuracy_decided'])} | "
                f"{_pct(s['confidently_wrong'])} |"
            )
    for spec, r in result.items():
        lines += [
            "",
            f"## {spec} by kind",
            "",
            "| kind | n | decided | accuracy among decided | confidently wrong |",
            "|---|---:|---:|---:|---:|",
        ]
        for kind, s in r["kinds"].items():
            lines.append(
                f"| {kind} | {s['n']} | {_pct(s['decided'])} | {_pct(s['accuracy_decided'])} | "
                f"{_pct(s['confidently_wrong'])} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "frozen_suite")
    parser.add_argument("--judges", nargs="+", default=list(JUDGES), choices=JUDGES)
    args = parser.parse_args(argv)
    result = evaluate(tuple(args.judges))
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result, "python benchmarks/frozen_suite.py")
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
