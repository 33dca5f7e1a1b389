"""The ``mlflow`` target: a run's evaluation results logged to MLflow as feedback assessments on each trace
(extra ``mlflow``)."""

from __future__ import annotations

from pydantic import Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.export.evaluations import EvaluationOptions, evaluation_results
from hallumeasure.export.exporter import ExportOutcome
from hallumeasure.runs.run import Run


def log_to_mlflow(run: Run, *, tracking_uri: str | None = None, claims: bool = False) -> int:
    """Log ``run``'s results to MLflow as feedback assessments on each trace (``trace_id`` of MLflow traces);
    returns how many were logged. Needs the ``mlflow`` extra."""
    try:
        import mlflow
        from mlflow.entities import AssessmentSource
    except ImportError as exc:
        raise ConfigError(f"logging to MLflow needs mlflow: pip install 'hallumeasure[mlflow]' ({exc})") from None
    if tracking_uri is not None:
        mlflow.set_tracking_uri(tracking_uri)
    source = AssessmentSource(source_type="CODE", source_id="hallumeasure")
    logged = 0
    for r in evaluation_results(run, claims=claims):
        if not r.trace_id:
            continue
        logged += 1
        mlflow.log_feedback(
            trace_id=r.trace_id,
            name=r.name if r.claim_index is None else f"{r.name}.{r.claim_index}",
            value=r.score if r.score is not None else r.label,
            rationale=r.explanation,
            source=source,
            metadata={"label": r.label, "span_id": r.span_id or "", "source_kind": r.source_kind or ""},
        )
    return logged


class MlflowOptions(EvaluationOptions):
    out: str | None = Field(
        None,
        description="the MLflow tracking URI (sqlite:///mlflow.db); by default, MLflow's own (MLFLOW_TRACKING_URI)",
    )


class MlflowExporter:
    """Feedback assessments logged on each MLflow trace (extra ``mlflow``)."""

    name = "mlflow"
    options = MlflowOptions

    def export(self, run: Run, options: MlflowOptions) -> ExportOutcome:
        """Log the assessments to the tracking store ``options.out`` (MLflow's default one when None)."""
        logged = log_to_mlflow(run, tracking_uri=options.out, claims=options.claims)
        where = options.out or "MLflow's default tracking store"
        return ExportOutcome(self.name, delivered=logged, unit="assessments", verb="logged", destination=where)
