"""Mitigation: rewrite the responses of a run that have unsupported claims, measure the rewrites, report before/after.

Flow (``mitigate_run``):

1. Read the source run: samples, results, manifest (policy, detector, stages).
2. Every response with at least one unsupported claim under the run's policy is sent to the
   rewriter with those claims as issues. Other responses (and whole-sample error rows) are
   never sent; they are copied unchanged, at no cost. A claim its judge could not tell
   (``confident=False``, from a keyless judge) is never an issue: its label is a guess, so it is
   left for an LLM check and counted as such in the report.
3. Each rewrite that differs from the response is measured again with the same extractor and
   judge (rebuilt from the manifest unless given).
4. With ``rounds > 1`` this repeats on what is still unsupported, while it helps: it stops when
   no response has an unsupported claim, or when a round does not lower the run's mean
   unsupported rate (that round is then discarded; its cost is still counted). Round 1 is
   always kept, even when it makes things worse, so that the report shows it.
5. The final responses are written as a new, ordinary run (``load_run`` reads it; the manifest
   keeps the source's detector, stages and policy and records ``mitigated_from``, the rewriter
   and the rounds) plus ``mitigation.json``, ``mitigation.md`` and ``mitigation.html`` in it.

Metrics (all over the source run's responses, under its policy):

- **mitigation rate**: of the responses that were hallucinated before, the share that is not
  hallucinated after *and still has a claim that counts* (a response whose rewrite could not
  be measured counts as not mitigated);
- **emptied**: a rewrite that kept no claim counting in the rate (every checkable sentence
  deleted) is no longer hallucinated, but it was deleted, not repaired: it is counted as
  emptied and never as mitigated. The **clean share** (hallucinated before, not after,
  emptied included) is reported next to the mitigation rate, so both readings are visible;
- **retention**: of the claims judged supported before, in responses whose text changed, the
  share still present and supported after. A claim is *present* when some claim of the rewrite
  aligns with it: the same text after normalisation, or a word-overlap (Dice) score of at least
  ``ALIGN_THRESHOLD`` over content words, numbers kept whole (so "42 km" and "24 km" differ);
- **new unsupported claims**: unsupported claims of a rewrite that align with no claim of the
  original, or whose aligned original claim was not unsupported; they are flagged in the report;
- **cost**: the rewriter's calls and output tokens (the cost measure of the mitigation-rate
  table in papers/detection-mitigation-service.txt), and the cost of measuring the rewrites.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hallumeasure.core.errors import ConfigError, RunStoreError
from hallumeasure.core.types import Claim, ResponseResult, RunManifest, Sample, Usage
from hallumeasure.detectors.rewrite import Rewriter
from hallumeasure.judges.protocols import (
    ClaimExtractor,
    ClaimJudge,
    Extraction,
    Judgement,
    MultiPromptStage,
    PromptedStage,
)
from hallumeasure.mitigate.metrics import ALIGN_THRESHOLD, best_match, build_report, compare_response, similarity
from hallumeasure.mitigate.render import (
    diff_html,
    diff_markdown,
    render_html,
    render_markdown,
    render_section,
    write_report,
)
from hallumeasure.mitigate.report import MitigationReport, ResponseMitigation, RoundSummary
from hallumeasure.mitigate.rounds import MitigationOutcome, mitigate_samples, unsupported_issues
from hallumeasure.pipeline.measurement import Measurement, ModelFor
from hallumeasure.pipeline.run import close_stage_models, run_measurement, run_sync
from hallumeasure.runs.store import MANIFEST, RunStore, existing_run_error

__all__ = [
    "ALIGN_THRESHOLD",
    "MitigationOutcome",
    "MitigationReport",
    "ResponseMitigation",
    "RoundSummary",
    "best_match",
    "build_report",
    "compare_response",
    "diff_html",
    "diff_markdown",
    "mitigate_run",
    "mitigate_samples",
    "read_source",
    "render_html",
    "render_markdown",
    "render_section",
    "similarity",
    "unsupported_issues",
    "write_report",
]


class _Replay(PromptedStage, MultiPromptStage):
    """Stands in for a stage while the new run is written: answers from results already measured.
    It records the stage's prompts, as the stage would."""

    def __init__(self, stage: Any, results: dict[str, ResponseResult]) -> None:
        self.stage = stage
        self.results = results
        self.name = stage.name
        self.prompt = stage.prompt if isinstance(stage, PromptedStage) else None
        self.extra_prompts = stage.extra_prompts if isinstance(stage, MultiPromptStage) else ()

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = self.stage.settings()
        return settings

    async def extract(self, sample: Sample) -> Extraction:
        result = self.results[sample.id]
        if result.error is not None:
            return Extraction(error=result.error, usage=result.usage)
        return Extraction(claims=result.claims, usage=result.usage)

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        result = self.results[sample.id]
        return Judgement(verdicts=result.verdicts, score=result.score)


def _samples_sha256(samples: Sequence[Sample]) -> str:
    digest = hashlib.sha256()
    for sample in samples:
        digest.update(sample.model_dump_json().encode("utf-8") + b"\n")
    return digest.hexdigest()


def read_source(run_dir: str | Path) -> tuple[RunManifest, list[tuple[Sample, ResponseResult]]]:
    """The manifest and (sample, result) pairs of a complete run, in input order."""
    with RunStore(run_dir) as store:
        manifest = store.read_manifest()
        samples = store.samples()
        results = {r.sample_id: r for r in store.results()}
    if manifest is None:
        raise RunStoreError(f"{run_dir} has no {MANIFEST}; it is not a finished hallumeasure run")
    missing = [s.id for s in samples if s.id not in results]
    if missing:
        raise RunStoreError(
            f"{run_dir} is incomplete ({len(missing)} sample(s) without a result); "
            "finish it with 'hallumeasure measure --resume' before mitigating"
        )
    return manifest, [(s, results[s.id]) for s in samples]


def mitigate_run(
    run_dir: str | Path,
    out: str | Path,
    rewriter: Rewriter,
    *,
    extractor: ClaimExtractor | None = None,
    judge: ClaimJudge | None = None,
    rounds: int = 1,
    concurrency: int = 4,
    model_for: ModelFor | None = None,
    threshold: float = ALIGN_THRESHOLD,
) -> MitigationReport:
    """Rewrite the unsupported responses of ``run_dir``, measure them, write the new run and its report to ``out``.

    The rewrites are measured as the source run was: its stages, policy, source options and work limits are
    rebuilt from the settings its manifest records (``Measurement.of_run``), and the new run's manifest records
    them again. ``extractor`` and ``judge`` replace the rebuilt stages when given; ``model_for(spec)`` supplies
    their models. The models of the stages and the rewriter are closed at the end.
    """
    out = Path(out)
    if out.resolve() == Path(run_dir).resolve():
        raise ConfigError("--out must be a new directory, not the source run")
    if (out / MANIFEST).exists():
        raise existing_run_error(out, resumable=False)
    manifest, pairs = read_source(run_dir)
    measurement = Measurement.of_run(manifest)
    if extractor is None or judge is None:
        built = measurement.stages(models=model_for)
        extractor, judge = extractor or built.extractor, judge or built.judge
    outcome = run_sync(
        _mitigate_and_close(pairs, rewriter, extractor, judge, measurement, rounds=rounds, concurrency=concurrency)
    )
    spent = {state.original.id: state for state in outcome.states}
    # The new run carries what this mitigation spent on measuring; copied responses cost nothing.
    replayed = {sid: st.result.model_copy(update={"usage": st.measure_usage}) for sid, st in spent.items()}
    rewrite_usage = sum((s.rewrite_usage for s in outcome.states), Usage())
    run_measurement(
        outcome.samples,
        out,
        _Replay(extractor, replayed),
        _Replay(judge, replayed),
        mode=manifest.mode,
        input_sha256=_samples_sha256(outcome.samples),
        input_path=None,
        policy=measurement.policy,
        concurrency=concurrency,
        detector=manifest.detector,
        sources=measurement.sources,
        settings={
            "effective": measurement.settings.model_dump(mode="json"),
            "mitigated_from": {
                "run": str(run_dir),
                "run_id": manifest.run_id,
                "input_sha256": manifest.input_sha256,
                "judge": manifest.judge,
            },
            "rewriter": {"name": rewriter.name, **rewriter.settings()},
            "rounds": {
                "requested": rounds,
                "kept": sum(1 for r in outcome.rounds if r.kept),
                "summaries": [r.model_dump() for r in outcome.rounds],
            },
            "rewrite_usage": rewrite_usage.model_dump(),
            "usage_note": "per-response usage is the cost of measuring the rewrite; copied responses cost 0",
        },
        keep_results=False,
    )
    report = build_report(
        outcome,
        manifest.policy,
        source_run=str(run_dir),
        mitigated_run=str(out),
        detector=manifest.detector,
        extractor=manifest.extractor,
        judge=manifest.judge,
        rewriter=rewriter,
        rounds_requested=rounds,
        threshold=threshold,
    )
    write_report(report, out)
    return report


async def _mitigate_and_close(
    pairs: Sequence[tuple[Sample, ResponseResult]],
    rewriter: Rewriter,
    extractor: ClaimExtractor,
    judge: ClaimJudge,
    measurement: Measurement,
    *,
    rounds: int,
    concurrency: int,
) -> MitigationOutcome:
    try:
        return await mitigate_samples(
            pairs,
            rewriter,
            extractor,
            judge,
            measurement.policy,
            rounds=rounds,
            concurrency=concurrency,
            sources=measurement.sources,
            limits=measurement.limits,
        )
    finally:
        await close_stage_models(extractor, judge, rewriter)
