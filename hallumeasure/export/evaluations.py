"""A run's verdicts as evaluation results on the spans they judged: what the ``otlp-json``, ``otlp-http``,
``phoenix`` and ``mlflow`` exporters write.

Every sample read from a trace carries its trace and span ids (``metadata.trace_id`` / ``span_id``). Each
measured response gives one result for the response (``hallumeasure.unsupported_rate``: the rate as the
score, ``hallucinated`` / ``grounded`` / ``unevaluatable`` / ``error`` as the label, the unsupported claims
with the source their evidence came from as the explanation) and one per claim (``hallumeasure.claim``:
the label, its reason, and the kind and id of the source its evidence came from). The same two names are
used by every target and by the MLflow scorer (``api/mlflow_scorer.py``), so a tool shows one column per
metric whichever way the results came in.

Each result names the judge that gave it (``judge``: the run's for a response, the verdict's for a claim),
so a target can say what kind of annotator it was (``CODE`` for a keyless judge, ``LLM`` otherwise), and
whether it is ``unsure``: a keyless verdict whose signals could not tell (``confident=False``: its label is
a best guess that needs an LLM check), or, for a response, one with such a verdict among its claims.

Where they go (one module each):

- ``otlp_json``: OpenTelemetry ``gen_ai.evaluation.result`` events as OTLP JSON logs (``{"resourceLogs": ...}``),
  each on its span's trace and span ids; no dependency;
- ``otlp_http``: the same events to a collector over OTLP/HTTP with the OpenTelemetry SDK (extra ``otel``);
- ``phoenix``: span annotations logged to a running Phoenix (extra ``phoenix``);
- ``mlflow``: MLflow feedback assessments on each judged span (extra ``mlflow``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

from hallumeasure.core.types import ClaimVerdict, ResponseResult, Sample
from hallumeasure.export.exporter import ExportOptions
from hallumeasure.runs.run import Run

RESPONSE_EVALUATION = "hallumeasure.unsupported_rate"
CLAIM_EVALUATION = "hallumeasure.claim"


class EvaluationResult(BaseModel):
    """One evaluation of one span: what ``gen_ai.evaluation.result`` carries, and the claim it is about."""

    trace_id: str | None
    span_id: str | None
    sample_id: str
    name: str
    score: float | None = None
    label: str
    explanation: str = ""
    #: Claim results: the claim's position and text, and the source its evidence came from.
    claim_index: int | None = None
    claim: str | None = None
    source_kind: str | None = None
    source_id: str | None = None
    #: The judge spec that gave the result (None for a run without a manifest).
    judge: str | None = None
    #: A best guess that a keyless judge could not confirm (the verdict's ``confident`` was False).
    unsure: bool = False

    def attributes(self) -> dict[str, Any]:
        """The event's attributes, in the GenAI semantic conventions' names (ours under ``hallumeasure.``)."""
        out: dict[str, Any] = {
            "gen_ai.evaluation.name": self.name,
            "gen_ai.evaluation.score.label": self.label,
            "gen_ai.evaluation.explanation": self.explanation,
            "hallumeasure.sample_id": self.sample_id,
            "hallumeasure.unsure": self.unsure,
        }
        if self.score is not None:
            out["gen_ai.evaluation.score.value"] = self.score
        if self.claim_index is not None:
            out["hallumeasure.claim.index"] = self.claim_index
            out["hallumeasure.claim.text"] = self.claim or ""
        if self.source_kind is not None:
            out["hallumeasure.evidence.source_kind"] = self.source_kind
            out["hallumeasure.evidence.source_id"] = self.source_id or ""
        return out


def evaluation_results(run: Run, *, claims: bool = True) -> list[EvaluationResult]:
    """The evaluation results of every response of ``run`` (and of every claim, with ``claims``)."""
    samples = {s.id: s for s in run.samples}
    out = []
    for result in run.results:
        sample = samples.get(result.sample_id)
        if sample is not None:
            out += list(_results_of(sample, result, run, claims=claims))
    return out


def _results_of(sample: Sample, result: ResponseResult, run: Run, *, claims: bool) -> Iterator[EvaluationResult]:
    ids = {"trace_id": _meta(sample, "trace_id"), "span_id": _meta(sample, "span_id"), "sample_id": sample.id}
    verdicts = {v.claim_id: v for v in result.verdicts}
    unsure = any(v.ok and not v.confident for v in result.verdicts)
    policy = run.policy
    unsupported = []
    for claim in result.claims:
        verdict = verdicts.get(claim.id)
        if verdict is not None and verdict.label is not None and policy.is_unsupported(verdict.label):
            unsupported.append(f"{claim.text!r} ({verdict.label.value}{_where(verdict)})")
    if result.error is not None:
        label = "error"
    elif result.hallucinated is None or not result.n_evaluated:
        label = "unevaluatable"
    else:
        label = "hallucinated" if result.hallucinated else "grounded"
    explanation = (
        f"{result.n_unsupported} of {result.n_evaluated} evaluated claims unsupported"
        + (": " + "; ".join(unsupported) if unsupported else "")
        + (f"; {result.error}" if result.error else "")
    )
    yield EvaluationResult(
        **ids,
        name=RESPONSE_EVALUATION,
        score=result.unsupported_rate,
        label=label,
        explanation=explanation,
        judge=run.judge,
        unsure=unsure,
    )
    if not claims:
        return
    for claim in result.claims:
        verdict = verdicts.get(claim.id)
        if verdict is None:
            continue
        source = next((e for e in verdict.evidence if e.verified), None)
        unsupported_claim = verdict.label is not None and policy.is_unsupported(verdict.label)
        yield EvaluationResult(
            **ids,
            name=CLAIM_EVALUATION,
            score=None if verdict.label is None else float(unsupported_claim),
            label=verdict.label.value if verdict.label is not None else "error",
            explanation=verdict.label_reason or verdict.error or "",
            claim_index=claim.index,
            claim=claim.text,
            source_kind=source.source_kind.value if source is not None and source.source_kind else None,
            source_id=source.passage_id if source is not None else None,
            judge=verdict.judge,
            unsure=verdict.ok and not verdict.confident,
        )


def _where(verdict: ClaimVerdict) -> str:
    found = [e for e in verdict.evidence if e.verified and e.passage_id]
    if not found:
        return ""
    e = found[0]
    kind = e.source_kind.value.replace("_", " ") if e.source_kind else "source"
    return f"; evidence from {kind} {e.passage_id}"


def _meta(sample: Sample, key: str) -> str | None:
    value = sample.metadata.get(key)
    return str(value) if value not in (None, "") else None


class EvaluationOptions(ExportOptions):
    """What the four evaluation targets share: whether claims get results of their own."""

    claims: bool = Field(True, description="also one result per claim, not only per response")
