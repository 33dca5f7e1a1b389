"""The ``calibrate`` command: a run's judge against human labels, and the export of a sample to label; a thin
shell over ``hallumeasure.report.calibrate``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError

from hallumeasure.cli.common import MeasuredRunDir, app, fail, one_line, open_unit, out, refuse_unfinished
from hallumeasure.cli.output import fitted_table
from hallumeasure.core.errors import HalluMeasureError

if TYPE_CHECKING:
    from hallumeasure.report.calibrate import CalibrationReport


@app.command()
def calibrate(
    run_dir: MeasuredRunDir,
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            help="Human labels (CSV or JSONL): claim_id or sample_id + claim, label, subtype; "
            "or sample_id + hallucinated.",
        ),
    ] = None,
    export_sample: Annotated[
        int | None,
        typer.Option(
            "--export-sample",
            min=1,
            help="Instead: write a labelling template of N randomly drawn responses (stratified by model), "
            "one row per claim.",
        ),
    ] = None,
    out_file: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="--export-sample: the CSV to write (default: runs/labels/<run>-sample.csv)."),
    ] = None,
    show_judge: Annotated[
        bool,
        typer.Option(
            "--show-judge",
            help="--export-sample: include the judge's label, subtype and reasons "
            "(hidden by default, so they do not sway the labeller).",
        ),
    ] = False,
    seed: Annotated[int, typer.Option(help="--export-sample: seed of the random draw.")] = 0,
    confidence: Annotated[
        float, typer.Option(callback=open_unit, help="Two-sided confidence of the intervals, in (0, 1).")
    ] = 0.95,
    as_json: Annotated[bool, typer.Option("--json", help="Print the calibration report as JSON.")] = False,
) -> None:
    """Measure RUN's judge against human labels and correct its rates (or --export-sample a template to label)."""
    from hallumeasure.report.calibrate import calibrate as run_calibration
    from hallumeasure.report.calibrate import export_sample as write_sample
    from hallumeasure.runs.run import Run

    if labels is not None and export_sample is not None:
        raise fail("give --labels FILE (calibrate) or --export-sample N (write a template to label), not both")
    if labels is None and export_sample is None:
        raise fail(
            "give --labels FILE to calibrate the judge against human labels, or --export-sample N to write a "
            "template of N claims to label first"
        )
    try:
        run = Run.load(run_dir)
        refuse_unfinished([run])
        if export_sample is not None:
            target = out_file or Path("runs") / "labels" / f"{run_dir.name}-sample.csv"
            n_responses, n_claims = write_sample(run, export_sample, target, show_judge=show_judge, seed=seed)
            out.print(
                f"wrote {target}: {n_claims} claims of {n_responses} responses to label (fill in label, and "
                f"subtype when unsupported); then: hallumeasure calibrate {run_dir} --labels {target}",
                markup=False,
                highlight=False,
            )
            return
        assert labels is not None  # exactly one of --labels and --export-sample, checked above
        report = run_calibration(run, labels, confidence=confidence)
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    except (ValidationError, ValueError) as exc:
        raise fail(one_line(exc)) from None
    if as_json:
        out.print_json(report.model_dump_json())
        return
    print_calibration(report)


def print_calibration(report: CalibrationReport) -> None:
    """The calibration report as terminal tables."""
    pct = f"{report.confidence:.0%}"
    out.print(
        f"calibration of {report.run} against {report.labels_file}: {report.n_claims_labelled} labelled claims, "
        f"{report.n_responses_labelled} labelled responses, {report.n_unmatched} unmatched rows",
        markup=False,
        highlight=False,
    )
    confusion = [[name, *[str(x) for x in row]] for name, row in zip(report.labels, report.confusion, strict=True)]
    out.print(
        fitted_table(
            ["human \\ judge", *[name.replace("_", " ") for name in report.labels]],
            confusion,
            title="claims: human (rows) x judge (columns)",
        )
    )
    b = report.binary_confusion

    def kappa(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    out.print(
        f"unsupported vs supported (run policy): tp {b['tp']}, fp {b['fp']}, fn {b['fn']}, tn {b['tn']}; "
        f"Cohen's kappa {kappa(report.kappa_binary)} (five labels: {kappa(report.kappa_labels)})",
        markup=False,
        highlight=False,
    )
    out.print(
        f"claim sensitivity {report.sensitivity.format()}, specificity {report.specificity.format()} ({pct} Wilson)",
        markup=False,
        highlight=False,
    )
    out.print(
        f"response sensitivity {report.response_sensitivity.format()}, specificity "
        f"{report.response_specificity.format()}",
        markup=False,
        highlight=False,
    )
    if report.subtypes:
        out.print(
            "subtype agreement: " + "; ".join(f"{s.subtype} {s.agreement.format()}" for s in report.subtypes),
            markup=False,
            highlight=False,
        )
    # One column per metric: seven columns of intervals never fit 80 columns, two do.
    estimators = [
        "judge",
        "PPI (stratified)",
        "labels only",
        "Rogan-Gladen (Bayes)",
        "labelled / unlabelled",
        "simulated coverage",
    ]
    columns = [
        [
            c.judge.format(),
            c.ppi.format(),
            c.labels_only.format(),
            c.rogan_gladen.format(),
            f"{c.n_labelled} / {c.n_unlabelled}",
            "not checked"
            if c.coverage.ppi_coverage is None
            else f"{c.coverage.ppi_coverage:.3f}" + ("" if c.coverage.holds else " (!)"),
        ]
        for c in report.corrected
    ]
    names = ["", *[c.metric.replace("_", " ") for c in report.corrected]]
    rows = [[name, *[column[i] for column in columns]] for i, name in enumerate(estimators)]
    out.print(fitted_table(names, rows, title=f"corrected rates ({pct} intervals, all within [0, 1])"))
    for c in report.corrected:
        if c.coverage.holds:  # the others are among the notes below
            out.print(f"{c.metric}: {c.coverage.message}", markup=False, highlight=False)
    for line in report.unmatched:
        out.print(f"unmatched: {line}", markup=False, highlight=False)
    for note in report.notes:
        out.print(f"note: {note}", markup=False, highlight=False)
