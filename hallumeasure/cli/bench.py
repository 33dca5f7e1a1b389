"""The ``bench`` and ``bench-compare`` commands: a judge scored on labelled data, and bench results side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from hallumeasure.cli.common import (
    Columns,
    app,
    check_specs,
    column_mapping,
    console,
    fail,
    one_line,
    out,
)
from hallumeasure.cli.markdown_print import print_markdown
from hallumeasure.cli.output import print_estimate
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.registry import is_keyless


@app.command()
def bench(
    datasets: Annotated[
        list[str], typer.Argument(help="Labelled JSONL/CSV files, or shared set names (bump, cliff, ...).")
    ],
    judge: Annotated[str, typer.Option(help="Judge spec.")] = "offline",
    extractor: Annotated[
        str | None, typer.Option(help="Extractor spec (default: offline for the offline judge, else the judge's).")
    ] = None,
    mode: Annotated[list[str] | None, typer.Option(help="Classifier mode(s); repeat to bench several.")] = None,
    gold_claims: Annotated[
        bool, typer.Option("--gold-claims", help="Judge the dataset's gold claims directly (no extraction).")
    ] = False,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Stratified sample of N records per dataset (seeded).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for --limit sampling and the bootstrap.")] = 13,
    concurrency: Annotated[int, typer.Option(min=1, help="Samples judged at once.")] = 4,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples for the 95% CIs.")] = 1000,
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Where the JSON and Markdown tables go (the committed tables in benchmarks/results/bench are written "
            "with an explicit --out benchmarks/results/bench).",
        ),
    ] = Path("runs/bench"),
    column: Columns = None,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Folder of the shared sets that DATASETS names (default: $HALLUMEASURE_DATA)."),
    ] = None,
    cache: Annotated[Path | None, typer.Option(help="Request cache file.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the request cache.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print expected calls, tokens and cost; call nothing.")
    ] = False,
) -> None:
    """Score a judge on labelled data with the papers' metrics (P/R/F1, AUC, subtype F1, usage)."""
    from hallumeasure.bench.run import run_bench
    from hallumeasure.bench.tables import bench_markdown, save_bench
    from hallumeasure.core.types import Mode
    from hallumeasure.pipeline.measurement import Measurement
    from hallumeasure.runs.datasets import resolve_dataset, subsample
    from hallumeasure.runs.span_sets import load_any

    modes = mode or ["cot-one"]
    for name in modes:
        if name not in {m.value for m in Mode}:
            raise fail(f"--mode must be one of {[m.value for m in Mode]}, got {name!r}")
    extractor = extractor or ("offline" if is_keyless(judge) else judge)
    check_specs({"--judge": [judge], "--extractor": [extractor]})
    try:
        run_modes = [Mode(m) for m in modes]
        setups = {
            m: Measurement.from_values(
                {"judge": [judge], "extractor": extractor, "mode": m.value, "cache": cache, "no_cache": no_cache}
            )
            for m in run_modes
        }
        models = setups[run_modes[0]].models()  # one Model per spec for every dataset and mode: one cache
        for name in datasets:
            samples = subsample(
                load_any(resolve_dataset(name, data=data), columns=column_mapping(column or [])), limit, seed=seed
            )
            for run_mode in run_modes:
                if dry_run:
                    out.print(f"[bold]{name}[/bold]")
                    print_estimate(samples, run_mode, judge, extractor, gold_claims=gold_claims)
                    continue
                stages = setups[run_mode].stages(models=models)
                jud, ext = stages.judge, None if gold_claims else stages.extractor
                result = run_bench(
                    samples,
                    jud,
                    ext,
                    gold_claims=gold_claims,
                    mode=run_mode,
                    concurrency=concurrency,
                    n_resamples=resamples,
                    seed=seed,
                )
                json_path, md_path = save_bench(result, out_dir)
                print_markdown(bench_markdown(result))
                console.print(f"wrote {json_path} and {md_path}")
    except ValueError as exc:
        raise fail(str(exc)) from exc
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc


@app.command("bench-compare")
def bench_compare(
    results: Annotated[list[Path], typer.Argument(help="Bench JSON files written by 'bench'.")],
    out_file: Annotated[Path | None, typer.Option("--out", help="Also write the table to this Markdown file.")] = None,
) -> None:
    """Put several bench results side by side (one row per judge x mode x dataset)."""
    from hallumeasure.bench.tables import compare_bench, load_bench

    loaded = []
    for path in results:
        if not path.exists():
            raise fail(f"{path} does not exist; give the JSON files written by 'hallumeasure bench'")
        if path.is_dir():
            raise fail(f"{path} is a directory; give the JSON files in it, such as {path}/*.json")
        try:
            loaded.append(load_bench(path))
        except (ValidationError, UnicodeDecodeError) as exc:
            raise fail(
                f"{path} is not a bench result (a JSON file written by 'hallumeasure bench'): {one_line(exc)}"
            ) from None
        except OSError as exc:
            raise fail(f"{path} cannot be read: {exc.strerror or one_line(exc)}") from None
    try:
        table = compare_bench(loaded)
    except (ValueError, KeyError, HalluMeasureError) as exc:
        raise fail(one_line(exc)) from exc
    print_markdown(table)
    if out_file:
        out_file.write_text(table + "\n", encoding="utf-8")
