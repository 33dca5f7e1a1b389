"""The ``export-spans`` command: a run's unsupported spans for LettuceDetect or RAGTruth tooling."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hallumeasure.cli.common import app, fail, one_line, out
from hallumeasure.core.errors import HalluMeasureError


@app.command("export-spans")
def export_spans(
    run_dir: Annotated[Path, typer.Argument(help="The run directory.")],
    fmt: Annotated[
        str, typer.Option("--format", help="lettucedetect (one JSONL file) or ragtruth (a folder of two JSONL files).")
    ] = "lettucedetect",
    out_path: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Where to write (default: spans.jsonl, or spans-ragtruth/, in the run)."),
    ] = None,
) -> None:
    """Write the characters behind each response's unsupported claims in a span tool's layout."""
    from hallumeasure.report.spans import SpanFormat
    from hallumeasure.report.spans import export_spans as write
    from hallumeasure.runs.run import Run

    if fmt not in {f.value for f in SpanFormat}:
        raise fail(f"--format must be one of {[f.value for f in SpanFormat]}, got {fmt!r}")
    target = out_path or run_dir / ("spans.jsonl" if fmt == SpanFormat.LETTUCEDETECT else "spans-ragtruth")
    try:
        paths = write(Run.load(run_dir), target, fmt)
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"{exc.filename or target}: {exc.strerror or one_line(exc)}") from None
    for path in paths:
        out.print(f"wrote {path}", markup=False, highlight=False, soft_wrap=True)
