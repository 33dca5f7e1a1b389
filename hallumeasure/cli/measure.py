"""The ``measure`` command: every sample of an input into a run directory."""

from __future__ import annotations

import math
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from hallumeasure.cli.common import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    Columns,
    app,
    batch_progress,
    column_mapping,
    console,
    fail,
    one_line,
    out,
)
from hallumeasure.cli.options import with_settings
from hallumeasure.cli.output import (
    print_error_reasons,
    print_estimate,
    print_summary,
    print_usage,
)
from hallumeasure.cli.progress import SampleProgress
from hallumeasure.core.config import redact
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.core.types import RunManifest
from hallumeasure.pipeline.settings import MeasureSettings

if TYPE_CHECKING:
    from hallumeasure.pipeline.ray_engine import RayOptions


class Engine(StrEnum):
    """Where the samples are measured."""

    LOCAL = "local"
    RAY = "ray"


class OutFormat(StrEnum):
    """The form of a run the Ray engine writes (see the Scale out page)."""

    SQLITE = "sqlite"
    PARQUET = "parquet"


@app.command()
@with_settings(MeasureSettings)
def measure(
    input: Annotated[  # noqa: A002 - the parameter's name is the argument's name, INPUT, in --help
        Path,
        typer.Argument(
            help="Samples (JSONL, CSV or Parquet with context and response) or traces (see --input-format)."
        ),
    ],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Run directory to write.")],
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue an interrupted run in --out (not with --overwrite).")
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Delete an existing run in --out first (not with --resume).")
    ] = False,
    column: Columns = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the expected calls, tokens and cost; call nothing.")
    ] = False,
    engine: Annotated[
        Engine,
        typer.Option(
            "--engine",
            help="Where to measure: this process, or a Ray cluster (the ray extra).",
        ),
    ] = Engine.LOCAL,
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", envvar="RAY_ADDRESS", help="Ray cluster to join (default: start one)."),
    ] = None,
    ray_workers: Annotated[
        int | None,
        typer.Option("--ray-workers", min=1, help="Ray actors (default: CPUs - 1)."),
    ] = None,
    ray_batch_size: Annotated[int, typer.Option("--ray-batch-size", min=1, help="Rows per Ray batch.")] = 256,
    out_format: Annotated[
        OutFormat,
        typer.Option("--out-format", help="Ray: sqlite, or parquet written by workers.", show_default=False),
    ] = OutFormat.SQLITE,
    *,
    settings: MeasureSettings,
    config_file: Path | None = None,
) -> None:
    """Measure every sample of INPUT into a run directory.

    The options from --extractor on can also be set in hallumeasure.toml or in the tool.hallumeasure table of
    pyproject.toml; an option given here wins.
    """
    from hallumeasure.models.model import ProviderUnreachableError
    from hallumeasure.pipeline.budget import BudgetStoppedError, describe_pick
    from hallumeasure.pipeline.measurement import Measurement, check_run_dir
    from hallumeasure.runs.inputs import load_samples

    s = settings  # validated by MeasureSettings: its closed sets of values and the combinations that cannot run
    if engine is Engine.RAY:
        from hallumeasure.pipeline.ray_engine import RayOptions

        _measure_on_ray(
            input,
            out_dir,
            s,
            config_file,
            column,
            resume,
            overwrite,
            dry_run,
            RayOptions(
                address=ray_address, workers=ray_workers, batch_size=ray_batch_size, out_format=out_format.value
            ),
        )
        return
    try:  # the refusals of the one door: resume with overwrite, a run already in --out (with_settings refused
        # an unknown judge or extractor spec)
        if not dry_run:
            check_run_dir(out_dir, resume=resume, overwrite=overwrite, spell=lambda name: f"--{name}")
        measurement = Measurement(s, config_file=config_file, batch_progress=batch_progress)
        loaded = load_samples(
            input,
            columns=column_mapping(column or []),
            model=s.model_name,
            strict=s.strict_input,
            delimiter=s.delimiter,
            fmt=s.input_format,
        )
    except HalluMeasureError as exc:
        raise fail(str(exc)) from None
    for problem in loaded.problems:
        who = f" (id {problem.sample_id})" if problem.sample_id else ""
        console.print(
            f"[yellow]skipped[/yellow] row {problem.row}{escape(who)}: {escape(problem.message)}",
            highlight=False,
            soft_wrap=True,
        )
    judges = measurement.judges
    if dry_run:
        from hallumeasure.sources.rag import capped_for_estimate

        picked_input, record = measurement.pick(loaded)
        picked = picked_input.samples
        if record is not None:
            out.print(describe_pick(record, len(loaded.samples)), markup=False, highlight=False)
        judged = [x for x in picked if measurement.limits.response_error(x.response) is None]
        if len(judged) < len(picked):
            out.print(
                f"{len(picked) - len(judged)} response(s) over --max-response-chars "
                f"({s.max_response_chars:,} characters) left out: they would be error rows, and cost nothing",
                markup=False,
                highlight=False,
            )
        samples = capped_for_estimate(judged, judges[0], measurement.sources)
        print_estimate(samples, s.mode, judges[0], measurement.extractor, batch=s.batch)
        if measurement.voting:
            out.print(
                f"votes: each claim is judged {s.repeats} time(s) by each of {len(judges)} judge(s); the judge "
                f"calls above are for one judge asked once: multiply them by {s.repeats * len(judges)} "
                "(judges priced differently: see each with its own --judge)"
            )
        return
    try:
        picked_input, record = measurement.pick(loaded)
        if record is not None and (record.keyless or not resume):
            console.print(escape(describe_pick(record, len(loaded.samples))), highlight=False, soft_wrap=True)
        total = len(picked_input.samples)
        with SampleProgress(total, already=_stored_count(out_dir) if resume else 0) as progress:
            manifest = measurement.run(
                loaded,
                out_dir,
                resume=resume,
                overwrite=overwrite,
                progress=progress.advance,
                activity=progress.activity,
            )
    except KeyboardInterrupt:
        stored = _stored_count(out_dir)
        console.print(
            f"[yellow]interrupted[/yellow]: {stored} of {len(loaded.samples)} samples are stored in "
            f"{escape(str(out_dir))} (marked interrupted; work in flight was dropped). Resume with:",
            highlight=False,
            soft_wrap=True,
        )
        console.print(escape(redact(_resume_command(out_dir))), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except ProviderUnreachableError as exc:  # a wrong endpoint: say where the run stands and how to go on
        stored = _stored_count(out_dir)
        raise fail(f"{exc}. {stored} sample(s) stored in {out_dir}; once the endpoint is right, add --resume") from exc
    except BudgetStoppedError as exc:  # not a failure: the run did what the budget allowed, and can go on
        console.print(f"[yellow]budget reached[/yellow]: {escape(str(exc))}:", soft_wrap=True)
        command = _resume_command(out_dir, max_cost=f"{math.ceil(exc.enough * 100) / 100:.2f}")
        console.print(escape(redact(command)), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INCOMPLETE) from None
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:  # the request cache or the run directory cannot be written
        where = f"{exc.filename}: " if exc.filename else ""
        raise fail(f"{where}{exc.strerror or one_line(exc)}") from None
    _report(out_dir, manifest)


def _report(out_dir: Path, manifest: RunManifest) -> None:
    """The summary of a finished run; exit with ``EXIT_INCOMPLETE`` when rows ended as errors or were skipped."""
    data = print_summary(out_dir)
    print_usage(manifest)
    budget = manifest.settings.get("budget")
    if isinstance(budget, dict) and not budget.get("keyless"):
        out.print(
            f"budget: ${budget['spent']:,.4f} spent of ${budget['max_cost']:,.2f} (estimated "
            f"${budget['estimated_cost']:,.2f}); {budget['left_out']:,} response(s) left out (hash threshold "
            f"{budget['threshold']!r}: --sample-rate with it picks the same responses)",
            markup=False,
            highlight=False,
        )
    out.print(f"see every claim: hallumeasure view {out_dir}", markup=False, highlight=False, soft_wrap=False)
    errors = manifest.counts.get("error_responses", 0) + manifest.counts.get("claim_errors", 0)
    skipped = manifest.counts.get("skipped_input_rows", 0)
    if errors or skipped:
        console.print(
            f"[yellow]{manifest.counts.get('error_responses', 0)} response(s) and "
            f"{manifest.counts.get('claim_errors', 0)} claim(s) ended as error rows; "
            f"{skipped} input row(s) skipped[/yellow]"
        )
        print_error_reasons(data, console, run_dir=out_dir)
        raise typer.Exit(EXIT_INCOMPLETE)


def _measure_on_ray(
    input: Path,  # noqa: A002 - as in measure
    out_dir: Path,
    s: MeasureSettings,
    config_file: Path | None,
    column: list[str] | None,
    resume: bool,
    overwrite: bool,
    dry_run: bool,
    options: RayOptions,
) -> None:
    """``measure --engine ray``: the same run, measured by Ray workers and written by this process."""
    from hallumeasure.models.model import ProviderUnreachableError
    from hallumeasure.pipeline.measurement import Measurement, check_run_dir
    from hallumeasure.pipeline.ray_engine import measure_on_ray

    if dry_run:
        raise fail("--dry-run reads the input in this process: run it without --engine ray")
    if s.input_format:
        raise fail("--engine ray reads JSON Lines, CSV and Parquet rows: drop --input-format")
    try:
        check_run_dir(out_dir, resume=resume, overwrite=overwrite, spell=lambda name: f"--{name}")
        # the input streams in: its size is not known ahead, so the progress counts what is stored
        with SampleProgress(None, already=_stored_count(out_dir) if resume else 0) as progress:
            manifest = measure_on_ray(
                input,
                out_dir,
                Measurement(s, config_file=config_file),
                options=options,
                columns=column_mapping(column or []),
                resume=resume,
                overwrite=overwrite,
                progress=progress.advance,
            )
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted[/yellow]: {_stored_count(out_dir)} samples are stored; resume with:")
        console.print(escape(redact(_resume_command(out_dir))), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except ProviderUnreachableError as exc:
        stored = _stored_count(out_dir)
        raise fail(f"{exc}. {stored} sample(s) stored in {out_dir}; once the endpoint is right, add --resume") from exc
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    _report(out_dir, manifest)


def _stored_count(run_dir: Path) -> int:
    """The responses a run folder holds results for (SQLite or Parquet parts); 0 when it holds none yet."""
    from hallumeasure.runs.parquet_run import ParquetDataset, is_parquet_run
    from hallumeasure.runs.store import DATABASE, RunStore

    try:
        if is_parquet_run(run_dir):
            return ParquetDataset(run_dir).stored_count()
        if not (run_dir / DATABASE).exists():
            return 0
        with RunStore(run_dir) as store:
            return len(store.done_ids())
    except (HalluMeasureError, OSError):
        return 0


def _resume_command(run_dir: Path, *, max_cost: str | None = None) -> str:
    """The command line that was typed, with --resume in place of --overwrite, so that it goes on where it stopped
    (and with ``max_cost`` as its --max-cost, when given)."""
    import shlex

    args = [a for a in sys.argv[1:] if a != "--overwrite"]
    if "measure" not in args:  # called from Python rather than the shell: name the run directory at least
        args = ["measure", "INPUT", "--out", str(run_dir), "(the options it was started with)"]
    if "--resume" not in args:
        args.append("--resume")
    if max_cost is not None:
        at = next((i for i, a in enumerate(args) if a == "--max-cost" or a.startswith("--max-cost=")), None)
        if at is not None:
            del args[at : at + (1 if "=" in args[at] else 2)]
        args += ["--max-cost", max_cost]
    return shlex.join(["hallumeasure", *args])
