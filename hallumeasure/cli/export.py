"""The ``export`` command: a run's verdicts back where the traces came from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hallumeasure.cli.common import app, fail, out
from hallumeasure.core.errors import HalluMeasureError


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A run measured from traces (its samples carry trace and span ids).")],
    otlp_json: Annotated[
        Path | None,
        typer.Option(help="Write gen_ai.evaluation.result events to this file as OTLP JSON logs."),
    ] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(help="Send the events to a collector over OTLP/HTTP (http://host:4318/v1/logs; extra otel)."),
    ] = None,
    phoenix: Annotated[
        str | None, typer.Option(help="Log span annotations to the Phoenix at this URL (extra phoenix).")
    ] = None,
    mlflow: Annotated[
        str | None,
        typer.Option(help="Log feedback assessments to the MLflow tracking store at this URI (extra mlflow)."),
    ] = None,
    claims: Annotated[
        bool, typer.Option("--claims/--no-claims", help="Also one result per claim, not only per response.")
    ] = True,
) -> None:
    """Write a run's verdicts back to the tracing tools: OTLP events, Phoenix annotations, MLflow assessments."""
    from hallumeasure.report import evaluations, otel_sdk
    from hallumeasure.runs.run import Run

    if not any((otlp_json, otlp_endpoint, phoenix, mlflow)):
        raise fail("say where to: --otlp-json FILE, --otlp-endpoint URL, --phoenix URL or --mlflow URI")
    try:
        run = Run.load(run_dir)
        if otlp_json is not None:
            evaluations.write_otlp_json(run, otlp_json, claims=claims)
            out.print(f"wrote {otlp_json}")
        if otlp_endpoint is not None:
            sent = otel_sdk.send_otlp(run, otlp_endpoint, claims=claims)
            out.print(f"sent {sent} events to {otlp_endpoint}")
        if phoenix is not None:
            logged = evaluations.log_to_phoenix(run, phoenix, claims=claims)
            out.print(f"logged {logged} span annotations to {phoenix}")
        if mlflow is not None:
            logged = evaluations.log_to_mlflow(run, tracking_uri=mlflow, claims=claims)
            out.print(f"logged {logged} assessments to {mlflow}")
    except HalluMeasureError as exc:
        raise fail(str(exc)) from None
