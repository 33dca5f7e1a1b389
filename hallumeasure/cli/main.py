"""The app's callback (-v, --version and the logging they set up) and the ``version`` command."""

from __future__ import annotations

from typing import Annotated

import typer

from hallumeasure.cli.common import VERBOSE_FLAGS, VERBOSE_HELP, app, configure_logging, out
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


@app.command()
def version() -> None:
    """Print the package version."""
    out.print(__version__)
