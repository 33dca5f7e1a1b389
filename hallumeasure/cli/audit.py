"""The ``audit`` command: a current run against a baseline, with its own exit codes (see ``audit --help``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from hallumeasure.cli.common import EXIT_USAGE, app, fail, one_line, out, refuse_unfinished, say
from hallumeasure.cli.options import with_settings
from hallumeasure.core.config import redact
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.report.audit_settings import AuditSettings

if TYPE_CHECKING:
    from hallumeasure.report.audit import AuditResult


@app.command()
@with_settings(AuditSettings, file_section="audit", on_error=lambda message, own: _usage_error(message, **own))
def audit(
    baseline: Annotated[Path, typer.Option("--baseline", help="The baseline run directory.")],
    current: Annotated[Path, typer.Option("--current", help="The run to audit against the baseline.")],
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Directory for audit.json, audit.md and audit.junit.xml (default: runs/audit/<baseline>__<current>).",
        ),
    ] = None,
    *,
    settings: AuditSettings,
) -> None:
    """Audit CURRENT against BASELINE.

    Exit 0 pass, 1 regression, 2 usage error, 3 too many error rows, 4 inconclusive.
    """
    from hallumeasure.report.audit import load_for_audit, run_audit

    try:
        base_run, cur_run = load_for_audit(baseline), load_for_audit(current)
        refuse_unfinished([base_run, cur_run])
        result = run_audit(base_run, cur_run, settings, out_dir=_out(baseline, current, out_dir))
    except Exception as exc:  # noqa: BLE001 - exit 1 means "regression" here, so no failure may escape as 1
        if isinstance(exc, HalluMeasureError):
            message = str(exc)
        elif isinstance(exc, ValidationError):
            message = one_line(exc)
        else:
            message = f"the audit could not run: {type(exc).__name__}: {one_line(exc)}"
        raise _usage_error(message, baseline, current, out_dir) from None
    # A reader that stopped early (``| head -1``) silences the rest of the output (``cli.common._Output``);
    # the audit still exits as it decided.
    _print_result(result, _out(baseline, current, out_dir))
    raise typer.Exit(result.exit_code)


def _out(baseline: Path, current: Path, out_dir: Path | None) -> Path:
    return out_dir or Path("runs") / "audit" / f"{baseline.name}__{current.name}"


def _usage_error(message: str, baseline: Path, current: Path, out_dir: Path | None) -> typer.Exit:
    """Exit 2 with ``message`` (redacted), written as the audit's outputs too: a refused audit is never exit 1."""
    from hallumeasure.report.audit import write_usage_error

    message, where = redact(message), _out(baseline, current, out_dir)
    try:
        write_usage_error(where, message)
    except Exception as write_exc:  # noqa: BLE001 - the message on stderr matters more than the files
        message += f" (and {where} cannot be written: {one_line(write_exc)})"
    return fail(message, EXIT_USAGE)


def _print_result(result: AuditResult, out_dir: Path) -> None:
    from rich import box

    say(f"audit: {result.headline}")
    # what each gate saw, one row each; then, below, what the gates that did not pass mean (each text once)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=0)
    for name in ("gate ", "result ", "observed"):
        table.add_column(name, no_wrap=name != "observed", overflow="fold")
    for gate in result.gates:
        table.add_row(escape(gate.name) + " ", gate.status.upper() + " ", escape(str(gate.observed)))
    out.print(table)
    for gate in result.gates:
        if gate.status != "pass":
            say(f"{gate.name}: {gate.message}")
    for line in result.policy:
        say(line)
    for note in result.notes:
        say(f"note: {note}")
    out.print(
        f"wrote {out_dir / 'audit.md'}, audit.json and audit.junit.xml; exit code {result.exit_code}", markup=False
    )
    out.file.flush()
