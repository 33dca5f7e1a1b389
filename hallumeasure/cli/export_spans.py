"""The ``export-spans`` command, deprecated: ``hallumeasure export RUN --to lettucedetect|ragtruth`` does it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hallumeasure.cli.common import RunDir, app, fail
from hallumeasure.cli.export import deprecated, export_to

#: The span layouts this command wrote, each now an exporter of that name.
FORMATS = ("lettucedetect", "ragtruth")


@app.command("export-spans", hidden=True)
def export_spans(
    run_dir: RunDir,
    fmt: Annotated[
        str, typer.Option("--format", help="lettucedetect (one JSON file) or ragtruth (a folder of two JSONL files).")
    ] = "lettucedetect",
    out_path: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Where to write (default: spans-lettucedetect.json, or spans-ragtruth/, in the run)."
        ),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace files already there.")] = False,
) -> None:
    """Deprecated: write the run's unsupported spans in a span tool's layout (use export --to)."""
    if fmt not in FORMATS:
        raise fail(f"--format must be one of {list(FORMATS)}, got {fmt!r}")
    args = ["--overwrite"] if overwrite else []
    new = " ".join(
        ["hallumeasure export", str(run_dir), "--to", fmt, *(["--out", str(out_path)] if out_path else []), *args]
    )
    deprecated("export-spans is deprecated", new)
    export_to(run_dir, fmt, None if out_path is None else str(out_path), args)
