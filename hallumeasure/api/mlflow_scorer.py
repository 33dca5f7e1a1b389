"""A scorer for ``mlflow.genai.evaluate``: each trace's final answer checked against the trace's own sources.

    from hallumeasure.api.mlflow_scorer import grounded_scorer

    mlflow.genai.evaluate(data=mlflow.search_traces(), scorers=[grounded_scorer(judge="offline")])

The scorer reads the trace as ``hallumeasure measure`` reads an MLflow trace (``runs/traces/mlflow.py``:
retrieved documents, tool results, the system prompt), checks its final answer (``check``) and returns one
``Feedback``: the unsupported rate as the value (``"unevaluatable"`` when no claim could be judged, as for an
answer with no source), the unsupported claims with the source their evidence came from as the rationale.
Needs the ``mlflow`` extra.
"""

from __future__ import annotations

from typing import Any

from hallumeasure.api.check import Result, check
from hallumeasure.api.measure import load_input
from hallumeasure.core.errors import ConfigError, InputError
from hallumeasure.export.evaluations import RESPONSE_EVALUATION

#: The name the ``mlflow`` export gives the same value, so that scorer and export fill one column.
NAME = RESPONSE_EVALUATION


def grounded_scorer(*, name: str = NAME, judge: str | list[str] = "offline", **settings: Any) -> Any:
    """An MLflow ``Scorer`` that checks each trace's final answer with ``judge`` (and ``MeasureSettings`` fields)."""
    try:
        from mlflow.entities import Feedback
        from mlflow.genai.scorers import scorer
    except ImportError as exc:
        raise ConfigError(f"the MLflow scorer needs mlflow: pip install 'hallumeasure[mlflow]' ({exc})") from None

    def score(trace: Any) -> Any:
        try:
            loaded = load_input([trace.to_dict()], fmt="mlflow")
        except InputError as exc:
            return Feedback(value="unevaluatable", rationale=str(exc))
        result = check(loaded.samples[0], judge=judge, **settings)
        return Feedback(value=_value(result), rationale=rationale(result))

    return scorer(score, name=name)


def _value(result: Result) -> float | str:
    if result.error is not None:
        return "error"
    return result.unsupported_rate if result.unsupported_rate is not None else "unevaluatable"


def rationale(result: Result) -> str:
    """The unsupported claims of ``result``, each with its label, reason and the source of its evidence."""
    if result.error is not None:
        return f"not checked: {result.error}"
    lines = [f"{result.n_unsupported} of {result.n_evaluated} evaluated claims unsupported (judge {result.judge})"]
    for claim in result.claims:
        if claim.unsupported or claim.label is None:
            where = next(
                (
                    f"; evidence from {e.source_kind.value if e.source_kind else 'source'} {e.passage_id}"
                    for e in claim.evidence
                    if e.verified
                ),
                "",
            )
            label = claim.label.value if claim.label else "error"
            lines.append(f"- {claim.text!r}: {label}{where}. {claim.label_reason or claim.error or ''}".rstrip())
    return "\n".join(lines)
