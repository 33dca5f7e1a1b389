"""Runs whose finished manifests are compared with those the all-in-memory finish wrote (``test_finish_stream``).

``finished_manifests(root)`` measures the two example files with the keyless judge and writes a synthetic run
(error rows, votes, rows without stored decisions, LLM verdicts that fail every sanity check), finishes each, and
returns each manifest as JSON without its timestamps. Run as a script, it prints them: that is how
``finish_expected.json`` was written, by the code before finishing streamed the store (commit c960d23):

    PYTHONPATH=<c960d23's hallumeasure>:tests python -m pipeline.finish_runs > tests/pipeline/finish_expected.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hallumeasure.core.labels import Label, Policy, Subtype
from hallumeasure.core.types import Claim, ClaimVerdict, ErrorKind, Evidence, Mode, ResponseResult, Sample, Usage, Vote
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.pipeline.judge_checks import ContextProbe
from hallumeasure.pipeline.run import finish_manifest, new_manifest, run_measurement
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.store import RunStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: A judge that is not keyless, so the label and reason checks read its verdicts.
LLM_JUDGE = "anthropic:claude-haiku-4-5"
#: A reason of the prompts' own examples, which the copied_reasons check looks for.
COPIED = "Only the duration is wrong: 18 months instead of 14."
TIMESTAMPS = ("started_at", "finished_at")


def measured_run(path: Path, name: str) -> None:
    loaded = load_samples(EXAMPLES / name)
    run_measurement(
        loaded.samples,
        path,
        OfflineExtractor(),
        OfflineJudge(),
        mode=Mode.COT_ONE,
        input_sha256="0" * 64,
        input_path=f"examples/{name}",
        input_problems=loaded.problems,
    )


def _result(i: int) -> ResponseResult:
    """Response ``i`` of the synthetic run: every 7th an error row, every 5th with votes, every 3rd without stored
    decisions (as a run written before they were), a few rates that are not exact in binary."""
    sid = f"s{i}"
    if i % 7 == 3:
        return ResponseResult(
            sample_id=sid,
            model="m",
            error="judge failed",
            error_kind=ErrorKind.PROVIDER,
            usage=Usage(calls=1, input_tokens=10 + i),
        )
    n = 1 + i % 3
    claims = [Claim(id=f"{sid}-c{k}", sample_id=sid, index=k, text=f"claim {k} of {i}") for k in range(n)]
    verdicts = []
    for k, claim in enumerate(claims):
        failed = (i + k) % 11 == 0
        verdicts.append(
            ClaimVerdict(
                claim_id=claim.id,
                label=None if failed else (Label.PARTIALLY_SUPPORTED if (i + k) % 40 else Label.SUPPORTED),
                label_reason=COPIED if (i + k) % 8 == 0 else "The claim adds what the context does not say.",
                subtype=None if failed else Subtype.OVERGENERALIZATION if k else None,
                judge=LLM_JUDGE if i % 10 else "offline",
                error="no answer" if failed else None,
                error_kind=ErrorKind.UNREADABLE_ANSWER if failed else None,
                evidence=(Evidence(quote="a quote"),) if i % 2 else (),
                evidence_verified=None if i % 2 == 0 else bool(i % 13 == 1),
                confident=(i + k) % 6 != 0,
            )
        )
    votes = (
        [
            Vote(claim_id=c.id, judge=LLM_JUDGE, repeat=r, label=Label.SUPPORTED, label_reason="ok")
            for c in claims
            for r in range(2)
        ]
        if i % 5 == 0
        else []
    )
    errors = sum(1 for v in verdicts if not v.ok)
    evaluated = n - errors
    unsupported = sum(1 for v in verdicts if v.ok and v.label != Label.SUPPORTED)
    rate = unsupported / evaluated if evaluated else None
    stored_decisions = i % 3 != 0
    return ResponseResult(
        sample_id=sid,
        model="m",
        claims=claims,
        verdicts=verdicts,
        votes=votes,
        label_counts={Label.PARTIALLY_SUPPORTED: unsupported, Label.SUPPORTED: evaluated - unsupported},
        subtype_counts={Subtype.OVERGENERALIZATION: n - 1},
        n_claims=n,
        n_evaluated=evaluated,
        n_unsupported=unsupported,
        n_errors=errors,
        unsupported_rate=rate,
        hallucinated=None if rate is None else rate > 0.1,
        score=None if rate is None else round(rate / 3, 7),
        decided=(i % 4 != 0) if stored_decisions else None,
        unsupported_rate_low=(rate / 3 if rate else rate) if stored_decisions else None,
        unsupported_rate_high=(min(1.0, rate + 0.1) if rate is not None else None) if stored_decisions else None,
        usage=Usage(calls=2, input_tokens=100 + i, output_tokens=7 * i, cost_usd=0.0001 * i),
    )


def synthetic_run(path: Path, n: int = 180) -> None:
    samples = [Sample(id=f"s{i}", model="m", context=f"context {i}", response=f"response {i}") for i in range(n + 2)]
    with RunStore(path, write=True) as store:
        manifest = new_manifest(
            path,
            OfflineExtractor(),
            OfflineJudge(),
            mode=Mode.COT_ONE,
            input_sha256="1" * 64,
            input_path=None,
            n_samples=n + 2,
            policy=Policy(),
            detector="claims",
            settings={},
        )
        store.add_samples(samples)
        store.write_manifest(manifest)
        store.write_results([_result(i) for i in range(n)])
        probe = ContextProbe(claims=[f"s{i}-c0" for i in range(1, 7)], same=6, usage=Usage(calls=6))
        finish_manifest(store, manifest, n_samples=n + 2, measured_now=n, skipped=1, probe=probe)


def finished_manifests(root: Path) -> dict[str, Any]:
    """Each run's finished manifest as JSON, without its timestamps."""
    found = {}
    for name, build in (
        ("samples", lambda p: measured_run(p, "samples.jsonl")),
        ("rag_samples", lambda p: measured_run(p, "rag_samples.jsonl")),
        ("synthetic", synthetic_run),
    ):
        path = root / name
        build(path)
        manifest = json.loads((path / "manifest.json").read_text())
        found[name] = {k: v for k, v in manifest.items() if k not in TIMESTAMPS}
    return found


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        json.dump(finished_manifests(Path(tmp)), sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
