"""The app's callback (-v, --version and the logging they set up) and the ``version`` command."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from hallumeasure.cli.common import VERBOSE_FLAGS, VERBOSE_HELP, app, out
from hallumeasure.core.config import RedactingFilter
from hallumeasure.version import __version__


def _print_version(value: bool) -> None:
    if value:
        out.print(f"hallumeasure {__version__}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def main(
    verbose: Annotated[
        int,
        typer.Option(
            *VERBOSE_FLAGS,
            count=True,
            show_default=False,
            help=VERBOSE_HELP + " Also accepted after the command's name.",
        ),
    ] = 0,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit.")
    ] = False,
) -> None:
    configure_logging(verbose)


def configure_logging(verbose: int) -> None:
    """Our loggers at the asked level; other libraries stay at warnings until -vvv. Secrets are redacted."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_hallumeasure", False)]:
        root.removeHandler(old)
    handler._hallumeasure = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose >= 3 else logging.WARNING)
    ours = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.getLogger("hallumeasure").setLevel(ours)


@app.command()
def version() -> None:
    """Print the package version."""
    out.print(__version__)
