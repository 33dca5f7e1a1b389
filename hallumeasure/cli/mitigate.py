"""The ``mitigate`` command: rewrite what a run found unsupported, measure again, report before/after."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from hallumeasure.cli.common import (
    EXIT_INCOMPLETE,
    CacheFile,
    MaxConcurrency,
    MaxRetries,
    NoCache,
    Timeout,
    app,
    check_specs,
    console,
    fail,
    one_line,
    out,
)
from hallumeasure.cli.output import fitted_table, usage_line
from hallumeasure.core.errors import HalluMeasureError


@app.command()
def mitigate(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by 'measure' (any detector).")],
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="New run directory for the rewrites and mitigation.{json,md,html}.")
    ],
    rewriter: Annotated[
        str,
        typer.Option(
            help="offline (rule-based, keyless) or a model spec: fake, anthropic:<model>, bedrock:<id>, "
            "langchain:<module:Class>."
        ),
    ] = "offline",
    rounds: Annotated[
        int, typer.Option(min=1, help="Rewrite what is still unsupported again, while the mean rate falls.")
    ] = 1,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Delete an existing run in --out first.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Responses rewritten / measured at once.")] = 4,
    max_concurrency: MaxConcurrency = 8,
    max_retries: MaxRetries = 4,
    timeout: Timeout = 120.0,
    cache: CacheFile = None,
    no_cache: NoCache = False,
) -> None:
    """Rewrite the responses of RUN_DIR that have unsupported claims, measure the rewrites again, report before/after.

    The source run's extractor, judge, detector and policy are reused. Exit 3 when some rewrites failed.
    """
    from hallumeasure.detectors.rewrite import build_rewriter
    from hallumeasure.mitigate import mitigate_run
    from hallumeasure.pipeline.measurement import Measurement

    check_specs({"--rewriter": [rewriter]})
    from hallumeasure.report.render import format_number
    from hallumeasure.runs.store import existing_run_error, holds_run

    if out_dir.exists() and out_dir.resolve() == run_dir.resolve():
        raise fail("--out must be a new directory, not the source run")
    if out_dir.exists() and not overwrite and holds_run(out_dir):
        raise fail(str(existing_run_error(out_dir, resumable=False)))
    if overwrite and out_dir.exists():
        if out_dir.is_dir() and any(out_dir.iterdir()) and not holds_run(out_dir):
            raise fail(
                f"{out_dir} is not empty and holds no hallumeasure run; refusing to delete it: "
                "choose a new --out directory"
            )
        try:
            shutil.rmtree(out_dir) if out_dir.is_dir() else out_dir.unlink()
        except OSError as exc:
            raise fail(f"cannot delete {out_dir} for --overwrite: {exc.strerror or one_line(exc)}") from None
    try:
        settings: dict[str, object] = {"cache": cache, "no_cache": no_cache, "max_concurrency": max_concurrency}
        settings |= {"max_retries": max_retries, "timeout": timeout}
        model_for = Measurement.from_values(settings).models()
        rw = build_rewriter(rewriter, model_for=model_for)
        report = mitigate_run(run_dir, out_dir, rw, rounds=rounds, concurrency=concurrency, model_for=model_for)
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    rows = [
        [
            "mean unsupported rate",
            format_number(report.before.mean_unsupported_rate),
            format_number(report.after.mean_unsupported_rate),
        ],
        [
            "hallucinated share",
            format_number(report.before.hallucinated_share),
            format_number(report.after.hallucinated_share),
        ],
    ]
    out.print(f"mitigation {run_dir} -> {out_dir}", markup=False, highlight=False)
    out.print(fitted_table(["", "before", "after"], rows))
    rate = "-" if report.mitigation_rate is None else f"{report.mitigation_rate:.1%}"
    retention = "-" if report.retention is None else f"{report.retention:.1%}"
    clean = "-" if report.clean_rate is None else f"{report.clean_rate:.1%}"
    out.print(
        f"mitigation rate {rate} ({report.n_mitigated}/{report.n_originally_hallucinated} repaired; "
        f"{report.n_emptied} emptied, not counted; clean share {clean}); "
        f"retention {retention} ({report.retained} of {report.supported_before} supported claims still "
        "present and supported); "
        f"new unsupported claims {report.n_new_unsupported}; sent {report.n_sent}/{report.n_responses}; "
        + (  # the offline rewriter calls no model: no tokens to report
            f"rewrite calls {report.rewrite_usage.calls}, output tokens {report.rewrite_usage.output_tokens}; "
            if report.rewrite_usage.calls
            else ""
        )
        + f"rounds kept {report.rounds_kept}",
        markup=False,
        highlight=False,
    )
    usage = usage_line(report.rewrite_usage + report.measure_usage, [report.rewriter, report.extractor, report.judge])
    if usage is not None:
        out.print(usage, markup=False, highlight=False, soft_wrap=False)
    out.print(f"wrote {out_dir} (a run) and mitigation.md / .html / .json in it", markup=False)
    if report.n_rewrite_errors:
        console.print(
            f"[yellow]{report.n_rewrite_errors} rewrite(s) failed; those responses were kept unchanged[/yellow]"
        )
        raise typer.Exit(EXIT_INCOMPLETE)
