"""Command line: a thin shell over the library, one module per command.

Importing a command's module registers it on ``app`` (``hallumeasure.cli.common``), in the order ``--help``
lists them.

Exit codes: 0 success; 1 unexpected failure; 2 bad usage, input or configuration;
3 the run finished but some samples or claims ended as error rows (see the summary).
``audit`` has its own table: 0 pass, 1 regression, 2 usage, 3 too many error rows, 4 inconclusive.
"""

from __future__ import annotations

# isort: off
from hallumeasure.cli import (  # noqa: F401 - imported for the commands they register, in this order
    main,
    measure,
    mitigate,
    bench,
    show,
    view,
    export,
    export_spans,
    compare,
    audit,
    plan,
    calibrate,
    serve,
    monitor,
    plugins,
)

# isort: on
from hallumeasure.cli.common import app

__all__ = ["app", "run"]


def run() -> None:  # pragma: no cover - console entry wrapper
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
