"""The ``audit`` command: a current run against a baseline, with its own exit codes (see ``audit --help``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from hallumeasure.cli.common import (
    EXIT_USAGE,
    app,
    fail,
    one_line,
    one_sided_alpha,
    open_probability,
    open_unit,
    out,
    refuse_unfinished,
    say,
)
from hallumeasure.core.config import redact
from hallumeasure.core.errors import HalluMeasureError

if TYPE_CHECKING:
    from hallumeasure.report.audit import AuditResult


@app.command()
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
    max_rate_rise: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="Tolerated rise of the mean unsupported rate (absolute; the non-inferiority margin)."
        ),
    ] = 0.02,
    alpha: Annotated[
        float, typer.Option(callback=one_sided_alpha, help="One-sided error level of each decision, in (0, 0.5).")
    ] = 0.05,
    max_hallucinated_share_rise: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Tolerated rise of the hallucinated share (exact bounds)."),
    ] = 0.05,
    share_gate: Annotated[
        bool,
        typer.Option("--share-gate/--no-share-gate", help="Gate the hallucinated share (off: only the rate)."),
    ] = True,
    fail_on_any_significant_rise: Annotated[
        bool,
        typer.Option(
            "--fail-on-any-significant-rise",
            help="Regression as soon as a rise is shown above 0, even within the tolerated rise.",
        ),
    ] = False,
    inconclusive: Annotated[
        str, typer.Option(help="Exit code of an inconclusive audit: exit4 (4), pass (0) or fail (1).")
    ] = "exit4",
    power: Annotated[
        float,
        typer.Option(
            callback=open_unit,
            help="Power, in (0, 1), at which the minimum detectable rise and the samples needed are stated.",
        ),
    ] = 0.8,
    subtype_shift: Annotated[
        bool,
        typer.Option(
            "--subtype-shift/--no-subtype-shift",
            help="Opt-in: also fail when an error subtype becomes significantly more frequent (a test with no "
            "margin, so it can fail an audit whose rates are within their margins).",
        ),
    ] = False,
    subtype_alpha: Annotated[
        float | None,
        typer.Option(
            callback=open_probability, help="Significance level of the subtype test, in (0, 1] (default: --alpha)."
        ),
    ] = None,
    min_samples: Annotated[
        int, typer.Option(min=1, help="Fewest compared samples for a verdict (fewer: inconclusive).")
    ] = 5,
    max_error_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Tolerated share of error rows in either run.")
    ] = 0.05,
    baseline_model: Annotated[str | None, typer.Option(help="Audit only this model of the baseline run.")] = None,
    current_model: Annotated[str | None, typer.Option(help="Audit only this model of the current run.")] = None,
    allow_mismatch: Annotated[
        bool,
        typer.Option(
            "--allow-mismatch",
            help="Audit runs over different or partly shared samples (or without a manifest); the outputs say so.",
        ),
    ] = False,
    allow_judge_change: Annotated[bool, typer.Option("--allow-judge-change", help="Allow another judge.")] = False,
    allow_extractor_change: Annotated[
        bool, typer.Option("--allow-extractor-change", help="Allow another extractor.")
    ] = False,
    allow_mode_change: Annotated[bool, typer.Option("--allow-mode-change", help="Allow another mode.")] = False,
    allow_detector_change: Annotated[
        bool, typer.Option("--allow-detector-change", help="Allow another detector.")
    ] = False,
    allow_prompt_change: Annotated[
        bool, typer.Option("--allow-prompt-change", help="Allow other prompt versions.")
    ] = False,
    allow_votes_change: Annotated[
        bool, typer.Option("--allow-votes-change", help="Allow other repeats or panel rules.")
    ] = False,
    allow_policy_change: Annotated[
        bool, typer.Option("--allow-policy-change", help="Allow another policy (what counts as unsupported).")
    ] = False,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples per interval.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutation tests.")] = 0,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Settings file whose audit table sets the gates not given here "
            "(default: the nearest hallumeasure.toml or pyproject.toml).",
        ),
    ] = None,
    ctx: typer.Context = None,  # type: ignore[assignment]  # typer passes it
) -> None:
    """Audit CURRENT against BASELINE.

    Exit 0 pass, 1 regression, 2 usage error, 3 too many error rows, 4 inconclusive.
    """
    from hallumeasure.cli.options import explicit_options
    from hallumeasure.pipeline.settings import find_config, merge, read_config
    from hallumeasure.report.audit import INCONCLUSIVE_EXITS, AuditSettings, run_audit, write_usage_error
    from hallumeasure.runs.run import Run

    out_dir = out_dir or Path("runs") / "audit" / f"{baseline.name}__{current.name}"
    change_flags = {  # what AuditSettings.allow_changes names -> (the option's parameter, its value)
        "judge": ("allow_judge_change", allow_judge_change),
        "extractor": ("allow_extractor_change", allow_extractor_change),
        "mode": ("allow_mode_change", allow_mode_change),
        "detector": ("allow_detector_change", allow_detector_change),
        "prompts": ("allow_prompt_change", allow_prompt_change),
        "votes": ("allow_votes_change", allow_votes_change),
        "policy": ("allow_policy_change", allow_policy_change),
    }
    try:
        if inconclusive not in INCONCLUSIVE_EXITS:
            raise HalluMeasureError(
                f"--inconclusive must be one of {', '.join(INCONCLUSIVE_EXITS)}, got {inconclusive!r}"
            )
        given = {
            "max_rate_rise": max_rate_rise,
            "alpha": alpha,
            "max_hallucinated_share_rise": max_hallucinated_share_rise if share_gate else None,
            "subtype_shift": subtype_shift,
            "subtype_alpha": subtype_alpha,
            "min_samples": min_samples,
            "max_error_share": max_error_share,
            "fail_on_any_significant_rise": fail_on_any_significant_rise,
            "inconclusive": inconclusive,
            "power": power,
            "allow_mismatch": allow_mismatch,
            "allow_changes": frozenset(field for field, (_, allowed) in change_flags.items() if allowed),
            "baseline_model": baseline_model,
            "current_model": current_model,
            "resamples": resamples,
            "seed": seed,
        }
        # settings not given as options come from the settings file's audit table, else AuditSettings' defaults
        explicit = explicit_options(ctx, list(given))
        if not share_gate:
            explicit.add("max_hallucinated_share_rise")
        if explicit_options(ctx, [param for param, _ in change_flags.values()]):
            explicit.add("allow_changes")
        source = config or find_config(Path.cwd())
        settings = merge(
            AuditSettings,
            read_config(source, section="audit") if source else {},
            given,
            explicit=explicit,
            source=source,
        )
        base_run, cur_run = Run.load(baseline), Run.load(current)
        refuse_unfinished([base_run, cur_run])
        result = run_audit(base_run, cur_run, settings, out_dir=out_dir)
    except Exception as exc:  # noqa: BLE001 - exit 1 means "regression" here, so no failure may escape as 1
        if isinstance(exc, HalluMeasureError):
            message = redact(str(exc))
        elif isinstance(exc, ValidationError):
            message = redact(one_line(exc))
        else:
            message = redact(f"the audit could not run: {type(exc).__name__}: {one_line(exc)}")
        try:
            write_usage_error(out_dir, message)
        except Exception as write_exc:  # noqa: BLE001 - the message on stderr matters more than the files
            message += f" (and {out_dir} cannot be written: {one_line(write_exc)})"
        raise fail(message, EXIT_USAGE) from None
    try:
        _print_result(result, out_dir)
    except BrokenPipeError:
        # A reader that stopped early (``| head -1``) must not turn the audit's exit code into 1:
        # silence the rest of the output and exit as the audit decided.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except SystemExit:
        # rich's Console meets a broken pipe by silencing stdout and exiting 1 (Console.on_broken_pipe);
        # only that exit is replaced by the audit's own code.
        if not out.quiet:
            raise
    raise typer.Exit(result.exit_code)


def _print_result(result: AuditResult, out_dir: Path) -> None:
    say(f"audit: {result.headline}")
    table = Table()
    for name in ("gate", "result", "observed", "message"):
        table.add_column(name, overflow="fold")
    for gate in result.gates:
        table.add_row(escape(gate.name), gate.status.upper(), escape(str(gate.observed)), escape(gate.message))
    out.print(table)
    for line in result.policy:
        say(line)
    for note in result.notes:
        say(f"note: {note}")
    out.print(
        f"wrote {out_dir / 'audit.md'}, audit.json and audit.junit.xml; exit code {result.exit_code}", markup=False
    )
    out.file.flush()
