"""The ``ragtruth`` target: a folder with RAGTruth's two files, every field its README lists, so that RAGTruth's
baseline (``prepare_dataset.py``) and LettuceDetect's ``preprocess_ragtruth`` read it; ``hallumeasure bench``
reads it back as span truth.

- ``response.jsonl``: ``id``, ``source_id``, ``model`` (the sample's, ``"unknown"`` when the input named
  none), ``temperature`` (the sample's ``metadata.temperature``, else null), ``labels`` (``{start, end, text,
  label_type, meta}``, ``meta`` a string as RAGTruth's annotators' comment, with our ``confidence`` beside),
  ``split`` (``test``), ``quality`` (``good``: only measured responses are written) and ``response``;
- ``source_info.jsonl``: ``source_id``, ``task_type`` (``QA`` with a question, else ``Summary``), ``source``
  (the run's name), ``source_info`` (``{question, passages}`` for QA, the source text otherwise) and
  ``prompt`` (the question and source as one prompt).

Labels go to RAGTruth's four types by what the claim behind the span did: contradicted -> Evident
Conflict, partially supported -> Subtle Conflict, absent -> Evident Baseless Info, unevaluatable ->
Subtle Baseless Info (our label and subtype stay in ``meta``: ``"hallumeasure: absent (number)"``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hallumeasure.core.labels import Label
from hallumeasure.export.exporter import ExportOutcome, FileOptions, refuse_existing, write_jsonl
from hallumeasure.export.lettucedetect import source_prompt, task_type
from hallumeasure.report.spans import measured_spans
from hallumeasure.runs.run import Run

RAGTRUTH_TYPES: dict[Label, str] = {
    Label.CONTRADICTED: "Evident Conflict",
    Label.PARTIALLY_SUPPORTED: "Subtle Conflict",
    Label.ABSENT: "Evident Baseless Info",
    Label.UNEVALUATABLE: "Subtle Baseless Info",
}


def ragtruth_records(run: Run) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """RAGTruth's ``response.jsonl`` and ``source_info.jsonl`` records for the measured responses."""
    responses, sources = [], []
    for sample, r in measured_spans(run):
        source_id = f"{r.sample_id}:source"
        temperature = sample.metadata.get("temperature")
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            temperature = None
        responses.append(
            {
                "id": r.sample_id,
                "source_id": source_id,
                "model": r.model or "unknown",
                "temperature": temperature,
                "labels": [
                    {
                        "start": s.start,
                        "end": s.end,
                        "text": s.text,
                        "label_type": RAGTRUTH_TYPES[s.label],
                        "meta": f"hallumeasure: {s.label.value}" + (f" ({s.subtype.value})" if s.subtype else ""),
                        "confidence": s.confidence,
                    }
                    for s in r.spans
                ],
                "split": "test",
                "quality": "good",
                "response": r.response,
            }
        )
        info: Any = {"question": sample.question, "passages": sample.context} if sample.question else sample.context
        sources.append(
            {
                "source_id": source_id,
                "task_type": task_type(sample),
                "source": run.name,
                "source_info": info,
                "prompt": source_prompt(sample),
            }
        )
    return responses, sources


class RagTruthOptions(FileOptions):
    out: Path | None = Field(None, description="the folder to write (default: spans-ragtruth in the run)")


class RagTruthExporter:
    """Unsupported spans in RAGTruth's layout (a folder of response.jsonl and source_info.jsonl)."""

    name = "ragtruth"
    options = RagTruthOptions

    def export(self, run: Run, options: RagTruthOptions) -> ExportOutcome:
        """Write the two files into the folder ``options.out``, or ``spans-ragtruth`` in the run."""
        out = options.out or run.path / "spans-ragtruth"
        files = (out / "response.jsonl", out / "source_info.jsonl")
        refuse_existing(files, options)
        out.mkdir(parents=True, exist_ok=True)
        responses, sources = ragtruth_records(run)
        write_jsonl(files[0], responses)
        write_jsonl(files[1], sources)
        return ExportOutcome(self.name, files=files)
