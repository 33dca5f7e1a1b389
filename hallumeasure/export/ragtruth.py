"""The ``ragtruth`` target: a folder with ``response.jsonl`` (``labels``: ``{start, end, text, label_type, meta}``)
and ``source_info.jsonl``, RAGTruth's own layout; ``hallumeasure bench`` reads it back as span truth.

Labels go to RAGTruth's four types by what the claim behind the span did: contradicted -> Evident
Conflict, partially supported -> Subtle Conflict, absent -> Evident Baseless Info, unevaluatable ->
Subtle Baseless Info (our label stays in ``meta``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hallumeasure.core.labels import Label
from hallumeasure.export.exporter import ExportOptions, ExportOutcome, write_jsonl
from hallumeasure.report.spans import response_spans
from hallumeasure.runs.run import Run

RAGTRUTH_TYPES: dict[Label, str] = {
    Label.CONTRADICTED: "Evident Conflict",
    Label.PARTIALLY_SUPPORTED: "Subtle Conflict",
    Label.ABSENT: "Evident Baseless Info",
    Label.UNEVALUATABLE: "Subtle Baseless Info",
}


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


class RagTruthOptions(ExportOptions):
    out: Path | None = Field(None, description="the folder to write (default: spans-ragtruth in the run)")


class RagTruthExporter:
    """Unsupported spans in RAGTruth's layout (a folder of response.jsonl and source_info.jsonl)."""

    name = "ragtruth"
    options = RagTruthOptions

    def export(self, run: Run, options: RagTruthOptions) -> ExportOutcome:
        """Write the two files into the folder ``options.out``, or ``spans-ragtruth`` in the run."""
        out = options.out or run.path / "spans-ragtruth"
        out.mkdir(parents=True, exist_ok=True)
        responses, sources = ragtruth_records(run)
        write_jsonl(out / "response.jsonl", responses)
        write_jsonl(out / "source_info.jsonl", sources)
        return ExportOutcome(self.name, files=(out / "response.jsonl", out / "source_info.jsonl"))
