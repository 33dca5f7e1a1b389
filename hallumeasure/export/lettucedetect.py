"""The ``lettucedetect`` target: one JSON line per measured response in LettuceDetect's sample layout,
``prompt`` (the question and the source), ``answer`` and ``labels`` (``[{start, end, label}]``, with our
``text``, ``confidence`` and ``subtype`` kept beside them), so its evaluation scripts and ours read the same file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hallumeasure.export.exporter import ExportOptions, ExportOutcome, write_jsonl
from hallumeasure.report.spans import response_spans
from hallumeasure.runs.run import Run


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


class LettuceDetectOptions(ExportOptions):
    out: Path | None = Field(None, description="the JSONL file to write (default: spans.jsonl in the run)")


class LettuceDetectExporter:
    """Unsupported spans in LettuceDetect's sample layout (one JSONL file)."""

    name = "lettucedetect"
    options = LettuceDetectOptions

    def export(self, run: Run, options: LettuceDetectOptions) -> ExportOutcome:
        """Write the records to ``options.out``, or to ``spans.jsonl`` in the run."""
        out = options.out or run.path / "spans.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(out, lettucedetect_records(run))
        return ExportOutcome(self.name, files=(out,))
