"""The ``mlflow`` target: a run's evaluation results logged to MLflow as feedback assessments on the spans they
judged (extra ``mlflow``).

Each judged span gets at most two assessments, one per metric, with the names every target uses:

- ``hallumeasure.unsupported_rate``: the unsupported rate as the value (the label when there is no rate),
  the unsupported claims as the rationale; the MLflow scorer (``api/mlflow_scorer.py``) writes the same name,
  so a trace scored in ``mlflow.genai.evaluate`` and one exported here show one column;
- ``hallumeasure.claim``: every claim of the response in one assessment, the labels in claim order as the
  value (a list), one line per claim as the rationale, the claims as rows (index, text, label, source kind
  and id, unsure) in ``metadata["claims"]`` as JSON. MLflow's trace table makes one column per assessment
  name: one name per claim (``hallumeasure.claim.0``, ``.1`` ...) made as many columns as the longest
  answer has claims, and claim 0 of one trace has nothing to do with claim 0 of the next.

An export again replaces rather than adds: the assessments already on a span under these names (and those of
earlier versions: on the trace, or named ``hallumeasure.claim.N``) are updated or deleted, so a span holds one
assessment per metric however often a run is exported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.export.evaluations import (
    CLAIM_EVALUATION,
    RESPONSE_EVALUATION,
    EvaluationOptions,
    EvaluationResult,
    evaluation_results,
)
from hallumeasure.export.exporter import ExportOutcome
from hallumeasure.runs.run import Run

SOURCE_ID = "hallumeasure"
#: The claim assessments of the first version: one name per claim, on the trace.
_OLD_CLAIM_NAME = re.compile(re.escape(CLAIM_EVALUATION) + r"\.\d+$")


@dataclass(frozen=True)
class SpanFeedback:
    """One assessment to log: its trace and span, name, value, rationale and metadata."""

    trace_id: str
    span_id: str | None
    name: str
    value: float | str | list[float | int | str | bool]
    rationale: str
    metadata: dict[str, str]


def span_feedback(results: Sequence[EvaluationResult]) -> list[SpanFeedback]:
    """The assessments for ``results``: one per judged span and metric (the claims of a span in one)."""
    out = []
    for (trace_id, span_id), group in _by_span(results):
        response = next((r for r in group if r.name == RESPONSE_EVALUATION), None)
        claims = [r for r in group if r.name == CLAIM_EVALUATION]
        if response is not None:
            out.append(
                SpanFeedback(
                    trace_id,
                    span_id,
                    RESPONSE_EVALUATION,
                    response.score if response.score is not None else response.label,
                    response.explanation,
                    {
                        "label": response.label,
                        "sample_id": response.sample_id,
                        "judge": response.judge or "",
                        "unsure": str(response.unsure).lower(),
                    },
                )
            )
        if claims:
            rows = [
                {
                    "index": c.claim_index,
                    "claim": c.claim,
                    "label": c.label,
                    "source_kind": c.source_kind,
                    "source_id": c.source_id,
                    "unsure": c.unsure,
                }
                for c in claims
            ]
            out.append(
                SpanFeedback(
                    trace_id,
                    span_id,
                    CLAIM_EVALUATION,
                    [c.label for c in claims],
                    "\n".join(_claim_line(c) for c in claims),
                    {
                        "sample_id": claims[0].sample_id,
                        "claims": json.dumps(rows, ensure_ascii=False),
                        "source_kind": ",".join(c.source_kind or "" for c in claims),
                        "source_id": ",".join(c.source_id or "" for c in claims),
                    },
                )
            )
    return out


def _by_span(results: Sequence[EvaluationResult]) -> Iterator[tuple[tuple[str, str | None], list[EvaluationResult]]]:
    groups: dict[tuple[str, str | None], list[EvaluationResult]] = {}
    for r in results:
        if r.trace_id:
            groups.setdefault((r.trace_id, r.span_id), []).append(r)
    yield from groups.items()


def _claim_line(c: EvaluationResult) -> str:
    where = f"; evidence from {c.source_kind} {c.source_id}" if c.source_kind else ""
    unsure = " (unsure)" if c.unsure else ""
    return f"{(c.claim_index or 0) + 1}. {c.claim!r}: {c.label}{unsure}{where}. {c.explanation}".rstrip()


def log_to_mlflow(run: Run, *, tracking_uri: str | None = None, claims: bool = True) -> int:
    """Log ``run``'s results to MLflow as feedback assessments on each judged span (``trace_id`` and
    ``span_id`` of MLflow traces), replacing those of an earlier export; returns how many were logged or
    updated. Needs the ``mlflow`` extra."""
    try:
        import mlflow
        from mlflow.entities import AssessmentSource, Feedback
    except ImportError as exc:
        raise ConfigError(f"logging to MLflow needs mlflow: pip install 'hallumeasure[mlflow]' ({exc})") from None
    if tracking_uri is not None:
        mlflow.set_tracking_uri(tracking_uri)
    source = AssessmentSource(source_type="CODE", source_id=SOURCE_ID)
    feedback = span_feedback(evaluation_results(run, claims=claims))
    traces = {f.trace_id for f in feedback}
    existing = {trace_id: _assessments(mlflow.get_trace(trace_id)) for trace_id in traces}
    for f in feedback:
        same = [a for a in existing[f.trace_id] if a.name == f.name and a.span_id == f.span_id]
        earlier = [a for a in existing[f.trace_id] if _first_version(a, f)]
        for old in [*same[1:], *earlier]:
            mlflow.delete_assessment(trace_id=f.trace_id, assessment_id=old.assessment_id)
        if same:
            new = Feedback(name=f.name, value=f.value, rationale=f.rationale, source=source, metadata=f.metadata)
            mlflow.update_assessment(trace_id=f.trace_id, assessment_id=same[0].assessment_id, assessment=new)
        else:
            mlflow.log_feedback(
                trace_id=f.trace_id,
                span_id=f.span_id,
                name=f.name,
                value=f.value,
                rationale=f.rationale,
                source=source,
                metadata=f.metadata,
            )
    return len(feedback)


def _assessments(trace: Any) -> list[Any]:
    return list(trace.info.assessments) if trace is not None else []


def _first_version(assessment: Any, new: SpanFeedback) -> bool:
    """Whether ``assessment`` is what the first version logged where ``new`` now goes: ours, on the trace
    rather than the span, under the same name or one name per claim."""
    if new.span_id is None or assessment.span_id is not None:
        return False
    if getattr(assessment.source, "source_id", None) != SOURCE_ID:
        return False
    return assessment.name == new.name or (
        new.name == CLAIM_EVALUATION and bool(_OLD_CLAIM_NAME.match(assessment.name))
    )


class MlflowOptions(EvaluationOptions):
    out: str | None = Field(
        None,
        description="the MLflow tracking URI (sqlite:///mlflow.db); by default, MLflow's own (MLFLOW_TRACKING_URI)",
    )


class MlflowExporter:
    """Feedback assessments logged on each judged span of MLflow traces (extra ``mlflow``)."""

    name = "mlflow"
    options = MlflowOptions

    def export(self, run: Run, options: MlflowOptions) -> ExportOutcome:
        """Log the assessments to the tracking store ``options.out`` (MLflow's default one when None)."""
        logged = log_to_mlflow(run, tracking_uri=options.out, claims=options.claims)
        where = options.out or "MLflow's default tracking store"
        return ExportOutcome(self.name, delivered=logged, unit="assessments", verb="logged", destination=where)
