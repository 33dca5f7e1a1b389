"""The ``lettucedetect`` target: one JSON list of samples in LettuceDetect's layout (``HallucinationSample``:
``prompt``, ``answer``, ``labels`` as ``[{start, end, label}]``, ``split``, ``task_type``, ``dataset``,
``language``, and its optional ``context``, ``question`` and ``metadata``), the file its scripts read with
``HallucinationData.from_json(json.loads(path.read_text()))``.

``task_type`` is spelled as in LettuceDetect's RAGTruth data (``"QA"`` with a question, ``"Summary"``
without); the prompt is ``User request: {question}\\n\\n{context}`` as LettuceDetect builds it. Each label
keeps our ``text``, ``confidence`` and ``subtype`` beside LettuceDetect's keys; the sample's id and model
are in ``metadata``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from hallumeasure.core.types import Sample
from hallumeasure.export.exporter import ExportOutcome, FileOptions, refuse_existing
from hallumeasure.report.spans import measured_spans
from hallumeasure.runs.run import Run


def source_prompt(sample: Sample) -> str:
    """The sample's question and source as one prompt, laid out as LettuceDetect lays it out."""
    if sample.question:
        return f"User request: {sample.question}\n\n{sample.context}"
    return sample.context


def task_type(sample: Sample) -> str:
    """RAGTruth's task type, which LettuceDetect keeps: ``QA`` for a question with a source, else ``Summary``."""
    return "QA" if sample.question else "Summary"


def lettucedetect_records(run: Run) -> list[dict[str, Any]]:
    """LettuceDetect's sample layout, one record per measured response."""
    records = []
    for sample, r in measured_spans(run):
        records.append(
            {
                "prompt": source_prompt(sample),
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
                "task_type": task_type(sample),
                "dataset": run.name,
                "language": "en",
                "context": sample.context,
                "question": sample.question,
                "metadata": {"id": r.input_id, "model": r.model},
            }
        )
    return records


class LettuceDetectOptions(FileOptions):
    out: Path | None = Field(None, description="the JSON file to write (default: spans-lettucedetect.json in the run)")


class LettuceDetectExporter:
    """Unsupported spans in LettuceDetect's sample layout (one JSON file holding a list)."""

    name = "lettucedetect"
    options = LettuceDetectOptions

    def export(self, run: Run, options: LettuceDetectOptions) -> ExportOutcome:
        """Write the records to ``options.out``, or to ``spans-lettucedetect.json`` in the run."""
        out = options.out or run.path / "spans-lettucedetect.json"
        refuse_existing([out], options)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(lettucedetect_records(run), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        return ExportOutcome(self.name, files=(out,))
