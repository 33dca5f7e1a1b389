"""A run's verdicts as evaluation results on the spans they judged, and the places they are written to.

Every sample read from a trace carries its trace and span ids (``metadata.trace_id`` / ``span_id``). Each
measured response gives one result for the response (``hallumeasure.unsupported_rate``: the rate as the
score, ``hallucinated`` / ``grounded`` / ``unevaluatable`` / ``error`` as the label, the unsupported claims
with the source their evidence came from as the explanation) and one per claim (``hallumeasure.claim``:
the label, its reason, and the kind and id of the source its evidence came from).

Where they go:

- ``otlp_json`` / ``write_otlp_json``: OpenTelemetry ``gen_ai.evaluation.result`` events as OTLP JSON
  logs (``{"resourceLogs": ...}``), each on its span's trace and span ids; no dependency;
- ``otel_sdk.send_otlp``: the same events to a collector over OTLP/HTTP with the OpenTelemetry SDK (extra ``otel``);
- ``log_to_phoenix``: span annotations logged to a running Phoenix (extra ``phoenix``);
- ``log_to_mlflow``: MLflow feedback assessments on each trace (extra ``mlflow``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.types import ClaimVerdict, ResponseResult, Sample
from hallumeasure.runs.run import Run

EVENT_NAME = "gen_ai.evaluation.result"
RESPONSE_EVALUATION = "hallumeasure.unsupported_rate"
CLAIM_EVALUATION = "hallumeasure.claim"
SCOPE = "hallumeasure"
_HEX = re.compile(r"^[0-9a-f]+$")


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

    def attributes(self) -> dict[str, Any]:
        """The event's attributes, in the GenAI semantic conventions' names (ours under ``hallumeasure.``)."""
        out: dict[str, Any] = {
            "gen_ai.evaluation.name": self.name,
            "gen_ai.evaluation.score.label": self.label,
            "gen_ai.evaluation.explanation": self.explanation,
            "hallumeasure.sample_id": self.sample_id,
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
        **ids, name=RESPONSE_EVALUATION, score=result.unsupported_rate, label=label, explanation=explanation
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


# --- OpenTelemetry ---------------------------------------------------------------------------------------


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def otel_id(value: str | None, length: int) -> str | None:
    """``value`` as an OTLP id (``length`` lowercase hex digits), or None when it is not one."""
    if value is None:
        return None
    text = value.lower().removeprefix("0x")
    return text if len(text) == length and _HEX.match(text) else None


def otlp_json(results: Sequence[EvaluationResult], *, time_unix_nano: int = 0) -> dict[str, Any]:
    """``gen_ai.evaluation.result`` events as one OTLP JSON logs request, each on its span."""
    records = []
    for r in results:
        record: dict[str, Any] = {
            "timeUnixNano": str(time_unix_nano),
            "observedTimeUnixNano": str(time_unix_nano),
            "eventName": EVENT_NAME,
            "severityNumber": 9,
            "severityText": "INFO",
            "body": {"stringValue": r.explanation},
            "attributes": [
                {"key": "event.name", "value": {"stringValue": EVENT_NAME}},
                *({"key": k, "value": _any_value(v)} for k, v in r.attributes().items()),
            ],
        }
        trace_id, span_id = otel_id(r.trace_id, 32), otel_id(r.span_id, 16)
        if trace_id and span_id:
            record["traceId"], record["spanId"] = trace_id, span_id
        records.append(record)
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": SCOPE}}]},
                "scopeLogs": [{"scope": {"name": SCOPE}, "logRecords": records}],
            }
        ]
    }


def write_otlp_json(run: Run, path: str | Path, *, claims: bool = True) -> Path:
    """Write ``run``'s evaluation results to ``path`` as one line of OTLP JSON logs (the collector's file format)."""
    import time

    path = Path(path)
    request = otlp_json(evaluation_results(run, claims=claims), time_unix_nano=time.time_ns())
    path.write_text(json.dumps(request, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


# --- Phoenix and MLflow ----------------------------------------------------------------------------------


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
