"""The ``export`` command: a run's results written where other tools read them, by a registered exporter.

``--to`` names the target (``hallumeasure.export``; plugins add theirs), ``--out`` where to, and the target's
own options follow (``--no-claims``), read against the options model it declares. The flags of the first
version (``--otlp-json FILE``, ``--otlp-endpoint URL``, ``--phoenix URL``, ``--mlflow URI``) still work, each
with a note naming the new spelling.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from hallumeasure.cli.common import RunDir, app, console, fail, one_line, out
from hallumeasure.core.errors import HalluMeasureError

if TYPE_CHECKING:
    from hallumeasure.export import Exporter

#: The first version's flags, in the order it ran them, and the target each is now.
OLD_FLAGS = (
    ("--otlp-json", "otlp-json"),
    ("--otlp-endpoint", "otlp-http"),
    ("--phoenix", "phoenix"),
    ("--mlflow", "mlflow"),
)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def export(
    ctx: typer.Context,
    run_dir: RunDir,
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="TARGET",
            help="The target: otlp-json, otlp-http, phoenix, mlflow, lettucedetect, ragtruth, parquet, or a "
            "plugin's (hallumeasure plugins lists them).",
        ),
    ] = None,
    out_to: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            metavar="PATH|URL",
            help="Where to: a file or folder, or the URL of a service (phoenix, otlp-http) or MLflow's tracking URI.",
        ),
    ] = None,
    otlp_json: Annotated[Path | None, typer.Option(hidden=True)] = None,
    otlp_endpoint: Annotated[str | None, typer.Option(hidden=True)] = None,
    phoenix: Annotated[str | None, typer.Option(hidden=True)] = None,
    mlflow: Annotated[str | None, typer.Option(hidden=True)] = None,
) -> None:
    """Write a run's results for another tool: verdicts back to the tracing tools (otlp-json, otlp-http,
    phoenix, mlflow: OTLP events, Phoenix annotations, MLflow assessments; --no-claims: one result per response
    only) or unsupported spans for span tools (lettucedetect: one JSON file, default spans-lettucedetect.json in
    the run; ragtruth: a folder, default spans-ragtruth in the run), or the run itself in Parquet form (parquet:
    a folder or an s3:// URI, which show, view and audit read); --overwrite replaces files already there."""
    old = [
        (flag, target, value)
        for (flag, target), value in zip(OLD_FLAGS, (otlp_json, otlp_endpoint, phoenix, mlflow), strict=True)
        if value is not None
    ]
    if old and (to is not None or out_to is not None):
        raise fail(f"give --to and --out, not {old[0][0]} as well")
    if to is not None:
        export_to(run_dir, to, out_to, ctx.args)
        return
    if not old:
        raise fail("say where to: --to TARGET (otlp-json, otlp-http, phoenix, mlflow, lettucedetect, ragtruth)")
    for flag, target, value in old:
        new = " ".join(["hallumeasure export", str(run_dir), "--to", target, "--out", str(value), *ctx.args])
        deprecated(f"{flag} is deprecated", new)
    for _flag, target, value in old:
        export_to(run_dir, target, str(value), ctx.args)


def deprecated(what: str, instead: str) -> None:
    """One line on stderr: what is deprecated and the command to write instead."""
    console.print(f"note: {escape(what)}; write: {escape(instead)}", highlight=False, soft_wrap=True)


def export_to(run_dir: Path, to: str, where: str | None, args: list[str]) -> None:
    """Export the run in ``run_dir`` with the exporter ``to``, to ``where``, with its options from ``args``;
    print what it wrote or sent."""
    from hallumeasure.export import exporter, read_options
    from hallumeasure.runs.run import Run

    try:
        target = exporter(to)
    except HalluMeasureError as exc:
        raise fail(f"--to: {exc}") from None
    given = target_options(target, args)
    if where is not None:
        given["out"] = where
    try:
        options = read_options(target, given)
        outcome = target.export(Run.load(run_dir), options)
    except HalluMeasureError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"{exc.filename or where}: {exc.strerror or one_line(exc)}") from None
    for line in outcome.lines():
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def target_options(target: Exporter[Any], args: list[str]) -> dict[str, Any]:
    """The target's own options as written after the command (``--claims``, ``--no-claims``, ``--name value``,
    ``--name=value``), by field name; anything else is refused with the options the target takes."""
    fields = {name.replace("_", "-"): name for name in target.options.model_fields if name != "out"}
    flags = {key for key, name in fields.items() if target.options.model_fields[name].annotation is bool}
    values: dict[str, Any] = {}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        key, eq, value = arg.removeprefix("--").partition("=")
        if not arg.startswith("--"):
            raise fail(f"unexpected argument {arg!r}")
        if key.startswith("no-") and key[3:] in flags and not eq:
            values[fields[key[3:]]] = False
        elif key not in fields:
            known = ", ".join(["--out", *(f"--{k}/--no-{k}" if k in flags else f"--{k} VALUE" for k in fields)])
            close = difflib.get_close_matches(key, list(fields), n=1)
            hint = f"; did you mean --{close[0]}?" if close else ""
            raise fail(f"--to {target.name} takes no option --{key}{hint} (its options: {known})")
        elif eq or key in flags:
            values[fields[key]] = value if eq else True
        elif rest and not rest[0].startswith("--"):
            values[fields[key]] = rest.pop(0)
        else:
            raise fail(f"--{key} needs a value")
    return values
