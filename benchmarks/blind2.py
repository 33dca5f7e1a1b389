"""The keyless judges on the second blind suite, run once, published as aggregates only.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/blind2.py     # writes benchmarks/results/blind2.{md,json}

The suite (tests/judges/offline/contrast/blind2/, frozen by a SHA-256 test before this ran) was written by
someone who had seen neither the code nor any result. Nothing was tuned on it, and no per-kind table of it is
published: only, per judge and per language group, the share of responses decided, the share of all responses
decided wrongly, and the accuracy among the decided ones.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import Sample
from hallumeasure.judges.offline.extractor import OfflineExtractor
from hallumeasure.judges.offline.judge import OfflineJudge

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "judges" / "offline" / "contrast" / "blind2" / "cases.jsonl"
OUT = ROOT / "benchmarks" / "results" / "blind2"


def judges() -> dict[str, Any]:
    from hallumeasure.judges.nli.judge import NliClaimJudge

    nli = NliClaimJudge()
    return {"offline": OfflineJudge(), "nli": nli, "offline+nli": OfflineJudge(assist=nli)}


def aggregate(rows: list[tuple[bool, bool | None, int]]) -> dict[str, Any]:
    """(decided, flag, label) rows to the three published shares."""
    n = len(rows)
    decided = [(flag, label) for d, flag, label in rows if d]
    wrong = sum(1 for flag, label in decided if bool(flag) != bool(label))
    return {
        "n": n,
        "decided_share": round(len(decided) / n, 4) if n else None,
        "decided_wrongly": round(wrong / n, 4) if n else None,
        "accuracy_among_decided": round(1 - wrong / len(decided), 4) if decided else None,
    }


def main() -> int:
    cases = [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]
    extractor, policy = OfflineExtractor(), Policy()
    out: dict[str, Any] = {"n_cases": len(cases), "judges": {}}
    for name, judge in judges().items():
        groups: dict[str, list[tuple[bool, bool | None, int]]] = {"all": [], "english": [], "other languages": []}
        for case in cases:
            sample = Sample(id=case["id"], context=case["context"], response=case["response"])
            claims = extractor.claims(sample)
            judgement = judge.judge_now(sample, claims)
            result = summarise_response(
                sample, claims, judgement.verdicts, policy, score=judgement.score, decidable=judgement.decidable
            )
            row = (result.decided is True, result.hallucinated, int(case["label"] == "hallucinated"))
            groups["all"].append(row)
            groups["english" if case["language"] == "en" else "other languages"].append(row)
        out["judges"][name] = {group: aggregate(rows) for group, rows in groups.items()}
    OUT.with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [
        "# The keyless judges on blind suite 2 (aggregates only, run once)",
        "",
        "Command: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/blind2.py`. Suite: "
        f"tests/judges/offline/contrast/blind2/ ({len(cases)} cases, written blind, frozen by "
        "tests/judges/offline/contrast/test_blind2_frozen.py before this ran). Decided wrongly: share of *all*",
        "responses of the group that were decided with the wrong flag. A response with no checkable claim is never",
        "decided; a response or source in another language than English is never decided by a keyless judge.",
        "",
        "| judge | language group | n | decided share | decided wrongly | accuracy among decided |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, groups in out["judges"].items():
        for group, found in groups.items():
            acc = "–" if found["accuracy_among_decided"] is None else f"{found['accuracy_among_decided']:.3f}"
            lines.append(
                f"| {name} | {group} | {found['n']} | {found['decided_share']:.3f} | "
                f"{found['decided_wrongly']:.3f} | {acc} |"
            )
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
