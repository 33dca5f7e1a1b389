"""The ``plan`` command: the samples an audit needs to catch a rise; a thin shell over ``hallumeasure.report.power``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from hallumeasure.cli.common import (
    app,
    check_specs,
    fail,
    one_line,
    one_sided_alpha,
    open_unit,
    out,
    refuse_unfinished,
)
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.judges.nli import KEYLESS_JUDGES

if TYPE_CHECKING:
    import pandas as pd

    from hallumeasure.runs.store import RunData

METRICS = {
    "unsupported_rate": ("rate", "mean unsupported rate"),
    "hallucinated_share": ("hallucinated", "hallucinated share"),
}


def _units(run_dir: Path) -> tuple[RunData, pd.DataFrame]:
    from hallumeasure.report.runs import LoadedRun, response_units
    from hallumeasure.runs.store import load_run

    data = load_run(run_dir)
    return data, response_units(LoadedRun(run_dir.name, data))


@app.command()
def plan(
    rise: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="The true rise (current minus baseline) the audit must catch, absolute: 0.05 = five points.",
        ),
    ],
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", help="A measured run: its per-sample spread (and its samples, to price the plan)."),
    ] = None,
    current: Annotated[
        Path | None,
        typer.Option(
            "--current",
            help="A second run over the same samples: the spread of the paired differences, pairing included.",
        ),
    ] = None,
    baseline_rate: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Without runs: the baseline's rate (the spread is then the largest a share with this mean can have).",
        ),
    ] = None,
    correlation: Annotated[
        float | None,
        typer.Option(
            min=-1.0,
            max=1.0,
            help="Correlation of the two runs' per-sample values (default: measured with --current, "
            "else 0, which is conservative when it is positive).",
        ),
    ] = None,
    metric: Annotated[
        str, typer.Option(help="unsupported_rate (mean of per-response rates) or hallucinated_share.")
    ] = "unsupported_rate",
    max_rate_rise: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="The audit's tolerated rise (its --max-rate-rise or --max-hallucinated-share-rise)."
        ),
    ] = 0.02,
    fail_on_any_significant_rise: Annotated[
        bool,
        typer.Option(
            "--fail-on-any-significant-rise", help="Plan for an audit that flags any significant rise (margin 0)."
        ),
    ] = False,
    alpha: Annotated[
        float, typer.Option(callback=one_sided_alpha, help="One-sided error level of the audit, in (0, 0.5).")
    ] = 0.05,
    power: Annotated[
        float, typer.Option(callback=open_unit, help="Wanted probability of reaching the decision, in (0, 1).")
    ] = 0.8,
    judge: Annotated[
        str | None, typer.Option(help="Judge to price (default: the baseline run's, else offline).")
    ] = None,
    extractor: Annotated[
        str | None, typer.Option(help="Extractor to price (default: the baseline run's, else the judge).")
    ] = None,
    mode: Annotated[
        str | None, typer.Option(help="Classifier mode to price (default: the baseline run's, else cot-one).")
    ] = None,
    samples: Annotated[
        Path | None,
        typer.Option(
            "--samples",
            help="Without a baseline run: an input file whose samples show how long yours are, to price the plan.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """How many shared samples an audit needs for each outcome, the chance to pass at the margin, and the cost.

    Each count says what it is for: to flag a true rise of RISE, to pass an unchanged model, and
    (when RISE is within the margin) to pass RISE. The hallucinated share is planned exactly.
    """
    import numpy as np

    from hallumeasure.core.types import Mode, Sample
    from hallumeasure.report.power import difference_sd, is_metric, plan_cost, plan_samples, sd_from_rates
    from hallumeasure.report.runs import pair_up

    check_specs({"--judge": [judge] if judge else [], "--extractor": [extractor] if extractor else []})
    if not is_metric(metric):
        raise fail(f"--metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if baseline is None and baseline_rate is None:
        raise fail("give --baseline RUN (measured spread) or --baseline-rate P (worst-case spread)")
    if current is not None and baseline is None:
        raise fail("--current needs --baseline: the spread comes from the pairs of the two runs")
    column, what = METRICS[metric]
    margin = 0.0 if fail_on_any_significant_rise else max_rate_rise
    priced: list[Sample] = []
    manifest = None
    try:
        if baseline is not None:
            refuse_unfinished([baseline] + ([current] if current else []))
            data, units = _units(baseline)
            manifest = data.manifest
            values = units[column].to_numpy(dtype=float)
            rate = float(np.nanmean(values)) if np.isfinite(values).any() else 0.0
            if current is not None:
                _, cur_units = _units(current)
                pa, pb, _ = pair_up(units, cur_units)
                sd, rho, n_pairs = difference_sd(pa[column].to_numpy(dtype=float), pb[column].to_numpy(dtype=float))
                if sd is None:
                    raise fail(
                        f"{baseline} and {current} share fewer than 2 rated samples; "
                        "give --baseline alone or --baseline-rate"
                    )
                correlation = rho if correlation is None else correlation
                source = f"paired differences of {baseline.name} and {current.name} ({n_pairs} shared samples)"
            else:
                rho = 0.0 if correlation is None else correlation
                spread = float(np.nanstd(values, ddof=1)) if np.isfinite(values).sum() > 1 else 0.0
                sd = spread * float(np.sqrt(max(2 * (1 - rho), 0.0)))
                correlation = rho
                source = (
                    f"spread of {baseline.name} ({int(np.isfinite(values).sum())} samples), the same spread "
                    f"assumed for the current run, correlation {rho:g}"
                )
            priced = [
                Sample(
                    id=str(r["sample_id"]),
                    context=r["context"],
                    response=r["response"],
                    question=r["question"] if isinstance(r["question"], str) else None,
                )
                for r in data.responses.to_dict(orient="records")
            ]
        else:
            assert baseline_rate is not None  # refused above when both are missing
            rate = float(baseline_rate)
            correlation = 0.0 if correlation is None else correlation
            sd = sd_from_rates(rate, rise, correlation)
            source = f"baseline rate {rate:g}, largest spread of a share with that mean, correlation {correlation:g}"
        if samples is not None:
            from hallumeasure.runs.inputs import load_samples

            priced = load_samples(samples).samples
        result = plan_samples(
            metric=metric,
            baseline_rate=round(rate, 6),
            rise=rise,
            margin=margin,
            sd=sd,
            source=source,
            alpha=alpha,
            power=power,
            correlation=None if correlation is None else round(correlation, 6),
        )
        counts = (result.samples_to_flag, result.samples_to_pass, result.samples_to_pass_at_rise)
        wanted = max([n for n in counts if n is not None], default=None)
        if priced and wanted:
            judge_given = judge is not None
            judge = judge or (manifest.judge if manifest else "offline")
            extractor = extractor or (judge if judge_given else manifest.extractor if manifest else judge)
            run_mode = Mode(mode) if mode else (manifest.mode if manifest else Mode.COT_ONE)
            result = result.model_copy(
                update={"cost": plan_cost(priced, wanted, judge=judge, extractor=extractor, mode=run_mode.value)}
            )
    except ValueError as exc:
        raise fail(one_line(exc)) from None
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        out.print_json(result.model_dump_json())
        return
    level = f"{1 - alpha:.0%} one-sided, {power:.0%} power"
    out.print(
        f"plan for the {what}: baseline {result.baseline_rate:.3f}, sd of per-sample differences "
        f"{result.sd_difference:.3f} ({escape(source)})",
        markup=False,
        highlight=False,
    )

    def count(n: int | None) -> str:
        return "-" if n is None else f"{n:,}"

    out.print(f"method: {result.method}", markup=False, highlight=False)
    out.print(
        f"to flag a rise of {rise:g} (shared samples at which a true rise of {rise:g} is flagged as a regression; "
        f"margin {margin:g}; {level}): {count(result.samples_to_flag)}",
        markup=False,
        highlight=False,
    )
    if margin > 0:
        out.print(
            f"to pass when unchanged (true rise 0 passes; {level}): {count(result.samples_to_pass)}",
            markup=False,
            highlight=False,
        )
        if 0 < rise < margin:
            out.print(
                f"to pass a rise of {rise:g} (within the margin; {level}): {count(result.samples_to_pass_at_rise)}",
                markup=False,
                highlight=False,
            )
        if result.pass_chance_at_margin is not None:
            out.print(
                f"chance to pass at the margin (true rise {margin:g}) at the largest count above: "
                f"{result.pass_chance_at_margin:.4f} (the audit promises at most {alpha:g})",
                markup=False,
                highlight=False,
            )
    for note in result.notes:
        out.print(f"note: {note}", markup=False, highlight=False)
    cost = result.cost
    if cost is not None and cost.judge in KEYLESS_JUDGES and cost.extractor in KEYLESS_JUDGES:
        # No provider is called: a token count would only suggest a bill that never comes.
        out.print(
            f"measuring {cost.samples:,} samples with judge {cost.judge} and extractor {cost.extractor} calls no "
            "provider: no tokens to pay for, no cost",
            markup=False,
            highlight=False,
        )
    elif cost is not None:
        dollars = (
            "unknown (no price for this judge; add one with HALLUMEASURE_PRICES)"
            if cost.dollars is None
            else f"about ${cost.dollars:,.2f} at list prices of {cost.prices_as_of}"
        )
        out.print(
            f"measuring {cost.samples:,} samples once with judge {cost.judge}, extractor {cost.extractor}, "
            f"mode {cost.mode}: ~{cost.calls:,} calls, ~{cost.input_tokens:,} input and "
            f"~{cost.output_tokens:,} output tokens; cost {dollars} (each run of the audit pays this; a "
            "cached baseline is free)",
            markup=False,
            highlight=False,
        )
    elif wanted:
        out.print("cost: give --baseline RUN or --samples FILE to price the plan", markup=False, highlight=False)
