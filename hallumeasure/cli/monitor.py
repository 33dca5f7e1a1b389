"""The ``monitor`` command: the guard's logged traffic re-judged by an LLM judge, and its figures."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hallumeasure.cli.common import EXIT_FAILURE, EXIT_INCOMPLETE, app, fail, one_line, out
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.core.types import Mode
from hallumeasure.pipeline.settings import MeasureSettings

if TYPE_CHECKING:
    from hallumeasure.pipeline.budget import BudgetRecord


@app.command()
def monitor(
    log_dir: Annotated[Path, typer.Argument(help="The guard's --log-dir (it holds traffic.jsonl).")],
    judge: Annotated[str, typer.Option(help="The reference judge, e.g. anthropic:<model> (an LLM).")],
    extractor: Annotated[
        str | None, typer.Option(help="Claim extractor (default: the judge's model; 'offline' for rules).")
    ] = None,
    mode: Annotated[str, typer.Option(help="The judge's prompt mode.")] = Mode.COT_ONE.value,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Run directory (default LOG_DIR/monitor).")] = None,
    export_disagreements: Annotated[
        Path | None,
        typer.Option(
            help="Write the responses where guard and judge disagree, labelled by the judge, as JSONL "
            "in the labelled-data format (for training the keyless judges)."
        ),
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option(
            help="Human labels of some logged responses: a CSV with columns request_id and hallucinated (1/0, "
            "true/false); adds the corrected hallucination rate and the guard against people."
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Responses judged at once.")] = 4,
    sample_rate: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help=MeasureSettings.model_fields["sample_rate"].description)
    ] = None,
    max_cost: Annotated[
        float | None, typer.Option(min=0.0, help=MeasureSettings.model_fields["max_cost"].description)
    ] = None,
    cache: Annotated[Path | None, typer.Option(help="Request cache file (default: the shared cache).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Re-judge the guard's sampled traffic with a reference judge: precision, recall, block and rewrite rates."""
    from hallumeasure.guard.monitor import monitor_traffic
    from hallumeasure.pipeline.budget import BudgetStoppedError
    from hallumeasure.pipeline.measurement import Measurement
    from hallumeasure.pipeline.run import run_sync
    from hallumeasure.registry import is_keyless

    try:
        human = _read_labels(labels) if labels is not None else None
        extractor_spec = extractor or ("offline" if is_keyless(judge) else judge)
        settings = {"judge": [judge], "extractor": extractor_spec, "mode": mode, "cache": cache, "max_cost": max_cost}
        measurement = Measurement.from_values(settings)
        budget = measurement.run_budget()  # before any model is built: a model without a price is refused here
        stages = measurement.stages()
        built_judge, built_extractor = stages.judge, stages.extractor
        report = monitor_traffic(
            log_dir,
            built_extractor,
            built_judge,
            out=out_dir,
            mode=Mode(mode),
            concurrency=concurrency,
            export_disagreements=export_disagreements,
            human_labels=human,
            sample_rate=sample_rate,
            budget=budget,
        )
    except BudgetStoppedError as exc:  # what the budget allowed; the answers paid for are kept in the cache
        out.print(f"budget reached: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INCOMPLETE) from None
    except (HalluMeasureError, OSError, ValueError) as exc:
        raise fail(one_line(exc)) from None
    finally:
        from hallumeasure.pipeline.run import close_stage_models

        if "built_judge" in locals():
            run_sync(close_stage_models(*(s for s in (locals().get("built_extractor"), built_judge) if s)))
    if as_json:
        out.print_json(report.model_dump_json())
        return
    lines = [
        f"guard ({report.guard_judge}) against {report.reference_judge}: {report.n_logged} logged responses, "
        f"{report.n_judged} judged" + (f", {report.n_unreadable} unreadable log lines" if report.n_unreadable else ""),
        f"  precision        {report.precision.text()}",
        f"  recall           {report.recall.text()}",
        f"  block rate       {report.block_rate.text()}",
        f"  rewrite rate     {report.rewrite_rate.text()}",
        f"  flag rate        {report.flag_rate.text()}",
        f"  rewrite success  {report.rewrite_success.text()}",
        f"  hallucinated     {report.hallucination_rate.text()} (by the reference judge)",
        f"  disagreements    {report.n_disagreements}"
        + (f" (written to {export_disagreements})" if export_disagreements else ""),
        f"run: {report.run_dir} (hallumeasure view {report.run_dir})",
    ]
    if report.budget is not None:
        lines.insert(1, _budget_line(report.budget))
    if report.n_human_labels:
        est, low, high = report.hallucination_rate_corrected or (None, None, None)
        corrected = "-" if est is None else f"{est:.3f} [{low:.3f}, {high:.3f}]"
        lines[-1:-1] = [
            f"with {report.n_human_labels} human labels:",
            f"  hallucinated, corrected by the labels (stratified PPI)  {corrected}",
            f"  precision against people  {report.precision_vs_people.text() if report.precision_vs_people else '-'}",
            f"  recall against people     {report.recall_vs_people.text() if report.recall_vs_people else '-'}",
        ]
    out.print("\n".join(lines), markup=False, highlight=False)
    if report.n_judged == 0:
        raise typer.Exit(EXIT_FAILURE)


def _budget_line(record: BudgetRecord) -> str:
    if record.keyless:
        return f"  --max-cost ${record.max_cost:,.2f} changed nothing: the judge calls no provider, so it costs 0"
    return (
        f"  budget: ${record.spent:,.4f} spent of ${record.max_cost:,.2f}; {record.picked} logged request(s) "
        f"judged, {record.left_out} left out (hash threshold {record.threshold!r}: --sample-rate with it picks "
        "the same ones)"
    )


def _read_labels(path: Path) -> dict[str, bool]:
    """``request_id -> hallucinated`` from a CSV; a clear error for a missing column or an unreadable value."""
    import pandas as pd

    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"request_id", "hallucinated"} - set(table.columns)
    if missing:
        raise ValueError(f"{path} needs the columns request_id and hallucinated; missing: {', '.join(sorted(missing))}")
    values = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}
    out: dict[str, bool] = {}
    for row, (rid, value) in enumerate(zip(table["request_id"], table["hallucinated"], strict=True), start=2):
        if value.strip().lower() not in values:
            raise ValueError(f"{path}, row {row}: hallucinated must be 1/0, true/false or yes/no; got {value!r}")
        out[rid.strip()] = values[value.strip().lower()]
    return out
