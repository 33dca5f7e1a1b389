"""The ``compare`` command: models compared with intervals and paired tests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape

from hallumeasure.cli.common import (
    app,
    console,
    fail,
    one_line,
    out,
    refuse_unfinished,
    say,
)
from hallumeasure.cli.output import print_rates
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.stats.resampling import RESAMPLES, SEED


@app.command()
def compare(
    runs: Annotated[
        list[Path], typer.Argument(help="Run directories written by 'measure' (one may hold several models).")
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="Directory for report.md, report.html, report.json and plots.")
    ],
    allow_mismatch: Annotated[
        bool,
        typer.Option(
            "--allow-mismatch",
            help="Compare runs measured with different judges, modes, prompts or policies; the report is marked.",
        ),
    ] = False,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="The group (model, or run) every other group is compared with; default: the first group.",
        ),
    ] = None,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples per interval.")] = RESAMPLES,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutation tests.")] = SEED,
    worst: Annotated[int, typer.Option(min=0, help="Worst examples shown per model.")] = 3,
    labels: Annotated[
        list[Path] | None,
        typer.Option(
            "--labels",
            help="Human labels (see 'calibrate'): adds the judge's agreement and corrected rates "
            "for the run they match.",
        ),
    ] = None,
) -> None:
    """Compare models: rates with bootstrap intervals, paired differences, subtype mix, worst examples."""
    from hallumeasure.report.compare import compare_runs, load_for_compare
    from hallumeasure.report.render import format_p, format_signed
    from hallumeasure.report.runs import load_runs

    try:
        loaded = load_runs(runs, read=load_for_compare)
        refuse_unfinished(loaded)
        report = compare_runs(
            loaded,
            out_dir,
            allow_mismatch=allow_mismatch,
            resamples=resamples,
            seed=seed,
            worst=worst,
            labels=labels,
            baseline=baseline,
        )
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    except ValidationError as exc:
        raise fail(one_line(exc)) from None
    from hallumeasure.report.rates import GroupRates

    unsure = {u.name: u for u in report.unsure}
    print_rates([GroupRates(stats=s, unsure=unsure.get(s.name)) for s in report.model_stats], title="models")
    if report.comparisons:
        say(f"unsupported rate against the baseline {report.baseline}:")
    for c in report.comparisons:
        d = c.unsupported_rate
        shared = f"{c.n_shared} shared samples" if c.paired else "independent groups"
        say(f"  {c.b}: {format_signed(d.diff)} (p {format_p(d.p_value)}; {shared})")
    for cal in report.calibrations:
        for corrected in cal.corrected:
            say(
                f"{corrected.metric} of {cal.run}, corrected by {cal.labels_file}: {corrected.ppi.format()} "
                f"(PPI; judge {corrected.judge.format()}, {corrected.n_labelled} labelled responses)"
            )
    for line in report.policy:
        say(line)
    for note in report.notes:
        say(f"note: {note}")
    for problem in report.mismatches:
        console.print(f"[yellow]warning:[/yellow] {escape(problem)}", highlight=False)
    out.print(
        f"wrote {out_dir / 'report.html'}, {out_dir / 'report.md'} and {out_dir / 'view.html'} (every claim)",
        markup=False,
    )
