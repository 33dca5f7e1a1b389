"""The ``phoenix`` target: a run's evaluation results logged to a running Phoenix as span annotations
(extra ``phoenix``).

One annotation per response and, by default, per claim (``claims=False`` / ``--no-claims``: responses only),
named as the results (``hallumeasure.unsupported_rate``, ``hallumeasure.claim``); Phoenix keeps one
annotation per span, name and identifier, and a claim's identifier is ``claim-<index>``, so logging again
replaces. ``annotator_kind`` is what the judge is: ``CODE`` for a keyless judge (the registry's
``is_keyless``), ``LLM`` otherwise. An unsure verdict (a keyless judge's best guess,
``confident=False``) keeps its label and has ``"unsure": true`` in the annotation's metadata (false
otherwise), so a Phoenix filter on the metadata finds the claims that need an LLM check.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.export.evaluations import EvaluationOptions, EvaluationResult, evaluation_results
from hallumeasure.export.exporter import ExportOutcome
from hallumeasure.registry import is_keyless
from hallumeasure.runs.run import Run


def annotator_kind(judge: str | None) -> Literal["CODE", "LLM"]:
    """Phoenix's kind of annotator for ``judge``: ``CODE`` when it calls no model, ``LLM`` otherwise."""
    return "CODE" if judge and is_keyless(judge) else "LLM"


def span_annotations(results: list[EvaluationResult]) -> list[dict[str, Any]]:
    """The rows of Phoenix's span-annotation frame (``log_span_annotations_dataframe``), one per result on a span."""
    return [
        {
            "span_id": r.span_id,
            "name": r.name,
            "annotator_kind": annotator_kind(r.judge),
            "label": r.label,
            "score": r.score,
            "explanation": r.explanation,
            # Phoenix keeps one annotation per (span, name, identifier): a claim's index tells claims apart.
            "identifier": f"claim-{r.claim_index}" if r.claim_index is not None else "",
            "metadata": {
                "sample_id": r.sample_id,
                "judge": r.judge,
                "unsure": r.unsure,
                "source_kind": r.source_kind,
                "source_id": r.source_id,
                "claim": r.claim,
            },
        }
        for r in results
        if r.span_id
    ]


def log_to_phoenix(run: Run, base_url: str, *, claims: bool = True) -> int:
    """Log ``run``'s results to a running Phoenix as span annotations (one per response, and per claim unless
    ``claims=False``); returns how many were logged. Needs the ``phoenix`` extra."""
    try:
        from phoenix.client import Client
    except ImportError as exc:
        raise ConfigError(
            f"logging to Phoenix needs arize-phoenix-client: pip install 'hallumeasure[phoenix]' ({exc})"
        ) from None
    import pandas as pd

    rows = span_annotations(evaluation_results(run, claims=claims))
    if rows:
        Client(base_url=base_url).spans.log_span_annotations_dataframe(dataframe=pd.DataFrame(rows), sync=True)
    return len(rows)


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
