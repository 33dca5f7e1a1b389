"""A run's unsupported spans, per response, and their export for span tools.

Two layouts are written:

* ``lettucedetect``: one JSON line per response in LettuceDetect's sample layout, ``prompt`` (the question
  and the source), ``answer`` and ``labels`` (``[{start, end, label}]``, with our ``text``,
  ``confidence`` and ``subtype`` kept beside them), so its evaluation scripts and ours read the same file.
* ``ragtruth``: a folder with ``response.jsonl`` (``labels``: ``{start, end, text, label_type, meta}``)
  and ``source_info.jsonl``, RAGTruth's own layout; ``hallumeasure bench`` reads it back as span truth.

Labels go to RAGTruth's four types by what the claim behind the span did: contradicted -> Evident
Conflict, partially supported -> Subtle Conflict, absent -> Evident Baseless Info, unevaluatable ->
Subtle Baseless Info (our label stays in ``meta``).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from hallumeasure.core.labels import Label
from hallumeasure.core.spans import UnsupportedSpan, unsupported_spans
from hallumeasure.runs.run import Run

RAGTRUTH_TYPES: dict[Label, str] = {
    Label.CONTRADICTED: "Evident Conflict",
    Label.PARTIALLY_SUPPORTED: "Subtle Conflict",
    Label.ABSENT: "Evident Baseless Info",
    Label.UNEVALUATABLE: "Subtle Baseless Info",
}


class SpanFormat(StrEnum):
    LETTUCEDETECT = "lettucedetect"
    RAGTRUTH = "ragtruth"


class ResponseSpans(BaseModel):
    """One response of a run with the characters behind its unsupported claims."""

    sample_id: str
    input_id: str
    model: str | None = None
    response: str
    spans: list[UnsupportedSpan]
    #: Indexes of unsupported claims that could not be placed in the response (so have no span).
    unlocated: list[int]
    #: Whether the response was measured (False: not yet, or it failed; ``spans`` is then empty).
    measured: bool


def response_spans(run: Run) -> list[ResponseSpans]:
    """Every response of ``run`` with its unsupported spans, in input order."""
    by_id = {r.sample_id: r for r in run.results}
    out = []
    for sample in run.samples:
        result = by_id.get(sample.id)
        measured = result is not None and result.error is None
        spans = unsupported_spans(sample.response, result.claims, result.verdicts, run.policy) if result else []
        unlocated = []
        if result is not None:
            verdicts = {v.claim_id: v for v in result.verdicts}
            unlocated = [
                c.index
                for c in result.claims
                if not c.located
                and (v := verdicts.get(c.id)) is not None
                and v.ok
                and v.label is not None
                and run.policy.is_unsupported(v.label)
            ]
        out.append(
            ResponseSpans(
                sample_id=sample.id,
                input_id=sample.given_id,
                model=sample.model,
                response=sample.response,
                spans=spans,
                unlocated=unlocated,
                measured=measured,
            )
        )
    return out


def lettucedetect_records(run: Run) -> list[dict[str, Any]]:
    """LettuceDetect's sample layout, one record per measured response."""
    samples = {s.id: s for s in run.samples}
    records = []
    for r in response_spans(run):
        if not r.measured:
            continue
        sample = samples[r.sample_id]
        prompt = "\n\n".join(x for x in (sample.question, sample.context) if x)
        records.append(
            {
                "id": r.input_id,
                "prompt": prompt,
                "answer": r.response,
                "labels": [
                    {
                        "start": s.start,
                        "end": s.end,
                        "label": s.label.value,
                        "text": s.text,
                        "confidence": s.confidence,
                        "subtype": s.subtype.value if s.subtype else None,
                    }
                    for s in r.spans
                ],
                "split": "test",
                "task_type": "qa" if sample.question else "summary",
                "dataset": run.name,
                "language": "en",
                "model": r.model,
            }
        )
    return records


def ragtruth_records(run: Run) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """RAGTruth's ``response.jsonl`` and ``source_info.jsonl`` records for the measured responses."""
    samples = {s.id: s for s in run.samples}
    responses, sources = [], []
    for r in response_spans(run):
        if not r.measured:
            continue
        sample = samples[r.sample_id]
        source_id = f"{r.sample_id}:source"
        responses.append(
            {
                "id": r.sample_id,
                "source_id": source_id,
                "model": r.model,
                "labels": [
                    {
                        "start": s.start,
                        "end": s.end,
                        "text": s.text,
                        "label_type": RAGTRUTH_TYPES[s.label],
                        "meta": {"label": s.label.value, "subtype": s.subtype.value if s.subtype else None},
                        "confidence": s.confidence,
                    }
                    for s in r.spans
                ],
                "split": "test",
                "response": r.response,
            }
        )
        info: Any = {"question": sample.question, "passages": sample.context} if sample.question else sample.context
        sources.append(
            {"source_id": source_id, "task_type": "QA" if sample.question else "Summary", "source_info": info}
        )
    return responses, sources


def export_spans(run: Run, out: str | Path, fmt: SpanFormat | str = SpanFormat.LETTUCEDETECT) -> list[Path]:
    """Write ``run``'s unsupported spans to ``out`` (a JSONL file, or for ``ragtruth`` a folder); the paths written."""
    fmt = SpanFormat(fmt)
    out = Path(out)
    if fmt is SpanFormat.LETTUCEDETECT:
        out.parent.mkdir(parents=True, exist_ok=True)
        _write_jsonl(out, lettucedetect_records(run))
        return [out]
    out.mkdir(parents=True, exist_ok=True)
    responses, sources = ragtruth_records(run)
    _write_jsonl(out / "response.jsonl", responses)
    _write_jsonl(out / "source_info.jsonl", sources)
    return [out / "response.jsonl", out / "source_info.jsonl"]


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
