"""The ``view`` command: one self-contained HTML page to look at runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hallumeasure.cli.common import (
    app,
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
    ] = 2000,
) -> None:
    """Write one self-contained HTML page to look at runs: claims highlighted in the response, reasons, evidence."""
    from hallumeasure.report.viewer import write_viewer

    target = out_file or runs[0] / "view.html"
    try:
        path = write_viewer(runs, target, max_responses=max_responses)
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"{exc.filename or target}: {exc.strerror or one_line(exc)}") from None
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
