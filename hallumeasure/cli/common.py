"""What every command module shares: the app, its consoles, exit codes, one-line errors, option checks and
the refusal of unfinished runs. ``hallumeasure.cli`` and ``hallumeasure.cli.plan_calibrate`` register their
commands on ``app``; this module imports neither, so the command modules never import each other in a circle.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from hallumeasure.core.config import redact
from hallumeasure.core.errors import HalluMeasureError

if TYPE_CHECKING:
    from hallumeasure.core.types import RunManifest

app = typer.Typer(
    help="Measure hallucinations in grounded LLM responses, claim by claim.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
console = Console(stderr=True)
out = Console(soft_wrap=True)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
#: Stopped with Ctrl-C (128 + SIGINT, what shells report).
EXIT_INTERRUPTED = 130


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    # One line, always: a script greps it, a person reads it at once.
    message = "; ".join(line.strip() for line in str(message).splitlines() if line.strip())
    console.print(f"[red]error:[/red] {escape(redact(message))}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _one_line(exc: BaseException) -> str:
    """A one-line message for an exception: the first pydantic error, or the first line of its text."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        return f"{where}: {first['msg']}" if where else first["msg"]
    text = str(exc).strip()
    line = text.splitlines()[0] if text else ""
    return line or type(exc).__name__


def _resume_hint(path: Path, m: RunManifest) -> str:
    """The command that finishes an unfinished run (with the stages it was started with)."""
    parts = ["hallumeasure measure", m.input_path or "INPUT", "--out", str(path)]
    if m.detector != "claims":
        parts += ["--detector", m.detector]
    votes = (m.settings.get("judge") or {}).get("votes") or {}
    judges = [x for j in votes.get("judges", [m.judge]) for x in ("--judge", j)]
    if votes.get("repeats", 1) > 1:
        judges += ["--repeats", str(votes["repeats"])]
    if votes and votes.get("rule") != "majority":
        judges += ["--panel-rule", str(votes["rule"])]
    parts += ["--extractor", m.extractor, *judges, "--mode", m.mode.value, "--resume"]
    return " ".join(parts)


def _unfinished_message(path: Path, manifest: RunManifest, n_stored: int) -> str:
    return (
        f"{path} is an unfinished run (status {manifest.status!r}: it crashed, was stopped, or is still being "
        f"written; {n_stored} of {manifest.n_samples} samples stored); finish it with: "
        f"{_resume_hint(path, manifest)} (and the other options it was started with)"
    )


def _refuse_unfinished(paths: list[Path]) -> None:
    """compare / audit: numbers from a run that never finished would be read as a result; refuse them."""
    from hallumeasure.runs.store import RunStore

    for path in paths:
        with RunStore(path) as store:
            manifest = store.read_manifest()
            if manifest is not None and manifest.status != "complete":
                raise HalluMeasureError(
                    _unfinished_message(path, manifest, len(store.done_ids())) + ", then compare or audit it"
                )


def _open_unit(value: float | None) -> float | None:
    """Typer callback: a power or confidence, above 0 and below 1."""
    if value is not None and not 0 < value < 1:
        raise typer.BadParameter(f"{value} is not in the range 0<x<1.")
    return value


def _one_sided_alpha(value: float | None) -> float | None:
    """Typer callback: a one-sided error level, above 0 and below 0.5."""
    if value is not None and not 0 < value < 0.5:
        raise typer.BadParameter(f"{value} is not in the range 0<x<0.5.")
    return value
