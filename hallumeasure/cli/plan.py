"""The ``plan`` command: the samples an audit needs to catch a rise; a thin shell over ``hallumeasure.report.plan``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from hallumeasure.cli.common import app, fail, one_line, out, refuse_unfinished, say
from hallumeasure.cli.options import with_settings
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.registry import PartKind, is_keyless
from hallumeasure.report.audit_settings import PlanSettings

#: What the output calls each metric.
METRICS = {"unsupported_rate": "mean unsupported rate", "hallucinated_share": "hallucinated share"}


@app.command()
@with_settings(PlanSettings, file_section="plan")
def plan(
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
    samples: Annotated[
        Path | None,
        typer.Option(
            "--samples",
            help="Without a baseline run: an input file whose samples show how long yours are, to price the plan.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    *,
    settings: PlanSettings,
) -> None:
    """How many shared samples an audit needs for each outcome, the chance to pass at the margin, and the cost.

    Each count says what it is for: to flag a true rise of RISE, to pass an unchanged model, and
    (when RISE is within the margin) to pass RISE, and the chance it reaches under the audit's own
    rule: exact for the hallucinated share, simulated audits for the rate.
    """
    from hallumeasure.report.plan import plan_audit
    from hallumeasure.runs.run import Run

    if baseline is None and settings.baseline_rate is None:
        raise fail("give --baseline RUN (measured spread) or --baseline-rate P (worst-case spread)")
    if current is not None and baseline is None:
        raise fail("--current needs --baseline: the spread comes from the pairs of the two runs")
    rise, alpha, power, what = settings.rise, settings.alpha, settings.power, METRICS[settings.metric]
    try:
        base_run = Run.load(baseline) if baseline is not None else None
        cur_run = Run.load(current) if current is not None else None
        refuse_unfinished([run for run in (base_run, cur_run) if run is not None])
        result = plan_audit(settings, baseline=base_run, current=cur_run, samples=samples)
    except ValueError as exc:
        raise fail(one_line(exc)) from None
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    margin, source, wanted = settings.margin, result.source, result.largest_count
    if as_json:
        out.print_json(result.model_dump_json())
        return
    level = f"{1 - alpha:.0%} one-sided, {power:.0%} power"
    say(
        f"plan for the {what}: baseline {result.baseline_rate:.3f}, sd of per-sample differences "
        f"{result.sd_difference:.3f} ({escape(source)})"
    )

    how = "exact" if result.replicates is None else f"in {result.replicates} simulated audits"

    def count(n: int | None, chance: float | None = None) -> str:
        if n is None:
            return "- (out of reach)"
        return f"{n:,}" + ("" if chance is None else f" (reaches it with chance {chance:.2f}, {how})")

    say(f"method: {result.method}")
    say(
        f"to flag a rise of {rise:g} (shared samples at which a true rise of {rise:g} is flagged as a regression; "
        f"margin {margin:g}; {level}): {count(result.samples_to_flag, result.chance_to_flag)}"
    )
    if margin > 0:
        say(
            f"to pass when unchanged (true rise 0 passes; {level}): "
            f"{count(result.samples_to_pass, result.chance_to_pass)}"
        )
        if 0 < rise < margin:
            say(f"to pass a rise of {rise:g} (within the margin; {level}): {count(result.samples_to_pass_at_rise)}")
        if result.pass_chance_at_margin is not None:
            say(
                f"chance to pass at the margin (true rise {margin:g}) at the largest count above: "
                f"{result.pass_chance_at_margin:.4f} (the audit promises at most {alpha:g})"
            )
    for note in result.notes:
        say(f"note: {note}")
    cost = result.cost
    if cost is not None and is_keyless(cost.judge) and is_keyless(cost.extractor, PartKind.EXTRACTOR):
        # No provider is called: a token count would only suggest a bill that never comes.
        say(
            f"measuring {cost.samples:,} samples with judge {cost.judge} and extractor {cost.extractor} calls no "
            "provider: no tokens to pay for, no cost"
        )
    elif cost is not None:
        dollars = (
            "unknown (no price for this judge; add one with HALLUMEASURE_PRICES)"
            if cost.dollars is None
            else f"about ${cost.dollars:,.2f} at list prices of {cost.prices_as_of}"
        )
        say(
            f"measuring {cost.samples:,} samples once with judge {cost.judge}, extractor {cost.extractor}, "
            f"mode {cost.mode}: ~{cost.calls:,} calls, ~{cost.input_tokens:,} input and "
            f"~{cost.output_tokens:,} output tokens; cost {dollars} (each run of the audit pays this; a "
            "cached baseline is free)"
        )
    elif wanted:
        say("cost: give --baseline RUN or --samples FILE to price the plan")
