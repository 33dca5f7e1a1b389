"""The ``view`` command: one self-contained HTML page to look at runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hallumeasure.cli.common import (
    app,
    console,
    fail,
    one_line,
    out,
)
from hallumeasure.core.errors import HalluMeasureError


@app.command()
def view(
    runs: Annotated[
        list[Path], typer.Argument(help="Run directories; two runs over the same samples are shown side by side.")
    ],
    out_file: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="The HTML file to write (default: view.html in the first run's directory)."),
    ] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the file in the default web browser.")] = False,
    max_responses: Annotated[
        int, typer.Option(min=1, help="Most responses embedded; more are cut, with a note on the page.")
    ] = 2000,  # report.viewer.DEFAULT_MAX_RESPONSES (not imported: the CLI starts without pandas)
    max_mb: Annotated[
        float,
        typer.Option(
            min=0.1, help="Most megabytes of run data embedded; the responses past it are cut, with a note on the page."
        ),
    ] = 15.0,  # report.viewer.DEFAULT_MAX_MB
    skip: Annotated[
        int, typer.Option(min=0, help="Leave out the first N responses of each run (the page after a cut one).")
    ] = 0,
    sample: Annotated[
        bool,
        typer.Option(
            "--sample",
            help="For a run larger than the page: show a sample picked by a hash of the ids (the same every time) "
            "instead of the first responses; the page says so.",
        ),
    ] = False,
) -> None:
    """Write one self-contained HTML page to look at runs: claims highlighted in the response, reasons, evidence."""
    from hallumeasure.report.runs import load_runs
    from hallumeasure.report.viewer import build_viewer_data, write_page

    target = out_file or runs[0] / "view.html"
    try:
        data = build_viewer_data(load_runs(runs), max_responses=max_responses, max_mb=max_mb, skip=skip, sampled=sample)
        path = write_page(data, target)
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"{exc.filename or target}: {exc.strerror or one_line(exc)}") from None
    for note in data.notes:  # what the page left out, and how to see it
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    shortened = sum(1 for r in data.responses if r.shortened)
    if shortened:
        console.print(
            f"note: {shortened} response(s) too long to embed whole are shortened on the page (it says where to "
            "read all of them)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    size = path.stat().st_size
    out.print(
        f"wrote {path} ({size / 1e6:.1f} MB, one file, works offline); open in a browser:",
        markup=False,
        highlight=False,
        soft_wrap=False,
    )
    # last, whole and never wrapped (soft_wrap), so that a terminal can link it
    out.print(path.resolve().as_uri(), markup=False, highlight=False, soft_wrap=True)
    if open_browser:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
