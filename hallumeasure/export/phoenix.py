"""The ``phoenix`` target: a run's evaluation results logged to a running Phoenix as span annotations
(extra ``phoenix``)."""

from __future__ import annotations

from pydantic import Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.export.evaluations import EvaluationOptions, evaluation_results
from hallumeasure.export.exporter import ExportOutcome
from hallumeasure.runs.run import Run


def log_to_phoenix(run: Run, base_url: str, *, claims: bool = False) -> int:
    """Log ``run``'s results to a running Phoenix as span annotations (one per response, and per claim with
    ``claims``, named as the results); returns how many were logged. Needs the ``phoenix`` extra."""
    try:
        from phoenix.client import Client
    except ImportError as exc:
        raise ConfigError(
            f"logging to Phoenix needs arize-phoenix-client: pip install 'hallumeasure[phoenix]' ({exc})"
        ) from None
    import pandas as pd

    results = [r for r in evaluation_results(run, claims=claims) if r.span_id]
    client = Client(base_url=base_url)
    for name in dict.fromkeys(r.name for r in results):
        rows = [r for r in results if r.name == name]
        # Phoenix keeps one annotation per (span, name, identifier): a claim's index tells claims apart.
        frame = pd.DataFrame(
            {
                "span_id": [r.span_id for r in rows],
                "label": [r.label for r in rows],
                "score": [r.score for r in rows],
                "explanation": [r.explanation for r in rows],
                "identifier": [f"claim-{r.claim_index}" if r.claim_index is not None else "" for r in rows],
                "metadata": [{"source_kind": r.source_kind, "source_id": r.source_id, "claim": r.claim} for r in rows],
            }
        )
        client.spans.log_span_annotations_dataframe(
            dataframe=frame, annotation_name=name, annotator_kind="LLM", sync=True
        )
    return len(results)


class PhoenixOptions(EvaluationOptions):
    out: str = Field(description="the URL of a running Phoenix (http://127.0.0.1:6006)")


class PhoenixExporter:
    """Span annotations logged to a running Phoenix (extra ``phoenix``)."""

    name = "phoenix"
    options = PhoenixOptions

    def export(self, run: Run, options: PhoenixOptions) -> ExportOutcome:
        """Log the annotations to the Phoenix at ``options.out``."""
        logged = log_to_phoenix(run, options.out, claims=options.claims)
        return ExportOutcome(
            self.name, delivered=logged, unit="span annotations", verb="logged", destination=options.out
        )
