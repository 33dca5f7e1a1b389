"""Minimal-pair DEV suite of the offline judge: one changed fact must be flagged, a faithful restatement not.

    .venv/bin/python benchmarks/contrast.py            # writes benchmarks/results/contrast.md and contrast.json

The pairs are hand-written in tests/judges/offline/contrast/stories.py. Every claim is judged twice: as a
one-sentence response, and inside a longer response whose other sentences are faithful
restatements of the same source. A changed fact counts as flagged when the offline judge labels
a claim of the response unsupported (contradicted, absent or partially supported); its subtype
is right when the first flagged claim has the subtype the case expects. A faithful restatement
counts as flagged when any of its claims is labelled unsupported. Deterministic, no data files.

This is the suite the rules were tuned on, so its figures are in-sample: the README and the
quality claims quote the frozen suite instead (benchmarks/frozen_suite.py). Beside the labels it
reports the triage: a response is decided when a claim is confidently unsupported or every claim
is confidently supported, and a decided response is confidently wrong when it disagrees with the case.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from hallumeasure.core.labels import Label
from hallumeasure.core.types import Sample
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge

HERE = Path(__file__).resolve().parent
STORIES_FILE = HERE.parent / "tests" / "judges" / "offline" / "contrast" / "stories.py"
#: Targets from issue #13.
FLAG_TARGET, SUBTYPE_TARGET, FAITHFUL_TARGET = 0.95, 0.80, 0.10
_UNSUPPORTED = {Label.CONTRADICTED, Label.ABSENT, Label.PARTIALLY_SUPPORTED}


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    changed: bool
    subtype: str | None
    setting: str  # "short" (the claim alone) or "long" (inside faithful sentences)
    context: str
    response: str


def _stories():
    spec = importlib.util.spec_from_file_location("contrast_stories", STORIES_FILE)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module.STORIES


def cases() -> list[Case]:
    """Every claim of the suite as a short and as a long response."""
    out: list[Case] = []
    for s, story in enumerate(_stories()):
        texts = [t for _, t in story.faithful]
        claims = [(k, False, None, t) for k, t in story.faithful] + [(k, True, st, t) for k, st, t in story.changed]
        for c, (kind, changed, subtype, text) in enumerate(claims):
            out.append(Case(f"s{s}-c{c}-short", kind, changed, subtype, "short", story.context, text))
            others = [t for t in texts if t != text][:2]
            response = " ".join([others[0], text, *others[1:]]) if others else text
            out.append(Case(f"s{s}-c{c}-long", kind, changed, subtype, "long", story.context, response))
    return out


def judge(case: Case, extractor: OfflineExtractor, judge_: OfflineJudge) -> dict:
    sample = Sample(id=case.id, response=case.response, context=case.context)
    claims = extractor.claims(sample)
    verdicts = judge_.judge_now(sample, claims).verdicts
    flagged = [(c, v) for c, v in zip(claims, verdicts, strict=True) if v.label in _UNSUPPORTED]
    first = flagged[0][1] if flagged else None
    evaluated = [v for v in verdicts if v.label is not None and v.label != Label.UNEVALUATABLE]
    sure_flag = any(v.label in _UNSUPPORTED and v.confident for v in evaluated)
    sure_pass = bool(evaluated) and all(v.label == Label.SUPPORTED and v.confident for v in evaluated)
    return {
        "decided": sure_flag or sure_pass,
        "confidently_wrong": (sure_flag and not case.changed) or (sure_pass and case.changed),
        "id": case.id,
        "kind": case.kind,
        "changed": case.changed,
        "setting": case.setting,
        "expected_subtype": case.subtype,
        "flagged": bool(flagged),
        "subtype": first.subtype.value if first and first.subtype else None,
        "reason": first.label_reason if first else None,
        "flagged_claims": [c.text for c, _ in flagged],
    }


def evaluate() -> dict:
    """Per-kind and overall shares, plus every case's outcome."""
    extractor, judge_ = OfflineExtractor(), OfflineJudge()
    rows = [judge(c, extractor, judge_) for c in cases()]
    kinds: dict[tuple[bool, str], list[dict]] = defaultdict(list)
    for r in rows:
        kinds[(r["changed"], r["kind"])].append(r)

    def shares(rs: list[dict]) -> dict:
        flagged = [r for r in rs if r["flagged"]]
        out = {
            "n": len(rs),
            "flagged": len(flagged) / len(rs) if rs else 0.0,
            "decided": sum(r["decided"] for r in rs) / len(rs) if rs else 0.0,
            "confidently_wrong": sum(r["confidently_wrong"] for r in rs) / len(rs) if rs else 0.0,
        }
        if rs and rs[0]["changed"]:
            out["right_subtype"] = sum(r["subtype"] == r["expected_subtype"] for r in flagged) / max(1, len(flagged))
        return out

    changed = [r for r in rows if r["changed"]]
    faithful = [r for r in rows if not r["changed"]]
    return {
        "overall": {
            "changed": shares(changed),
            "faithful": shares(faithful),
            "changed_short": shares([r for r in changed if r["setting"] == "short"]),
            "changed_long": shares([r for r in changed if r["setting"] == "long"]),
            "faithful_short": shares([r for r in faithful if r["setting"] == "short"]),
            "faithful_long": shares([r for r in faithful if r["setting"] == "long"]),
        },
        "kinds": {f"{'changed' if ch else 'faithful'}:{k}": shares(rs) for (ch, k), rs in sorted(kinds.items())},
        "misses": [r for r in rows if r["changed"] != r["flagged"]],
        "wrong_subtypes": [r for r in changed if r["flagged"] and r["subtype"] != r["expected_subtype"]],
    }


def markdown(result: dict, command: str) -> str:
    o = result["overall"]
    ch, fa = o["changed"], o["faithful"]
    lines = [
        "# Offline judge: minimal-pair contrast suite (dev: tuned on, in-sample)",
        "",
        f"Command: `{command}`. Hand-written pairs in tests/judges/offline/contrast/stories.py; each claim judged "
        "alone (short) and inside a response whose other sentences are faithful (long). "
        "tests/judges/offline/test_contrast.py reruns it and holds the targets.",
        "",
        f"- Changed facts flagged: **{ch['flagged']:.1%}** of {ch['n']} (target >= {FLAG_TARGET:.0%}); "
        f"short {o['changed_short']['flagged']:.1%}, long {o['changed_long']['flagged']:.1%}.",
        f"- Right subtype among the flagged: **{ch['right_subtype']:.1%}** (target >= {SUBTYPE_TARGET:.0%}).",
        f"- Faithful restatements flagged: **{fa['flagged']:.1%}** of {fa['n']} (target <= {FAITHFUL_TARGET:.0%}); "
        f"short {o['faithful_short']['flagged']:.1%}, long {o['faithful_long']['flagged']:.1%}.",
        f"- Triage: decided {ch['decided']:.1%} of changed facts and {fa['decided']:.1%} of faithful restatements; "
        f"confidently wrong {ch['confidently_wrong']:.1%} and {fa['confidently_wrong']:.1%}.",
        "",
        "These are in-sample figures (the rules were tuned on this suite); out-of-sample figures are in "
        "benchmarks/results/frozen_suite.md.",
        "",
        "| case kind | n | flagged | right subtype (of flagged) | decided | confidently wrong |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, s in result["kinds"].items():
        subtype = f"{s['right_subtype']:.0%}" if "right_subtype" in s else "-"
        lines.append(
            f"| {name} | {s['n']} | {s['flagged']:.0%} | {subtype} | {s['decided']:.0%} "
            f"| {s['confidently_wrong']:.0%} |"
        )
    lines += ["", "Changed facts missed and faithful restatements flagged:", ""]
    for r in result["misses"]:
        what = "missed" if r["changed"] else "flagged"
        lines.append(f"- {what} ({r['kind']}, {r['setting']}, {r['id']}): {r['reason'] or '-'}")
    lines += ["", "Flagged with another subtype than expected:", ""]
    for r in result["wrong_subtypes"]:
        lines.append(f"- {r['kind']} ({r['setting']}, {r['id']}): expected {r['expected_subtype']}, got {r['subtype']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "contrast")
    args = parser.parse_args(argv)
    result = evaluate()
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result, "python benchmarks/contrast.py")
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
