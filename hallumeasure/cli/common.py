"""What every command module shares: the app, its consoles, exit codes, one-line errors, option checks, the
options and model factory of the commands that call providers, and the refusal of unfinished runs. Each command
module (``hallumeasure.cli.measure``, ...) registers its command on ``app``; this module imports none of them, so
the command modules never import each other in a circle.
"""

from __future__ import annotations

import copy
import errno
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from typer.core import TyperArgument, TyperGroup, TyperOption

from hallumeasure.core.config import RedactingFilter, redact
from hallumeasure.core.errors import HalluMeasureError

if TYPE_CHECKING:
    from hallumeasure.core.types import RunManifest
    from hallumeasure.models.batch import BatchProgress
    from hallumeasure.runs.run import Run

#: -v / --verbose: accepted by the app and by every command, so it works before or after the command's name.
VERBOSE_FLAGS = ("-v", "--verbose")
VERBOSE_HELP = (
    "Log what hallumeasure does: -v steps and retries, -vv every call, cache hit and timing, "
    "-vvv also the libraries' own debug logs."
)


def configure_logging(verbose: int) -> None:
    """Our loggers at the asked level; other libraries stay at warnings until -vvv. Secrets are redacted."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_hallumeasure", False)]:
        root.removeHandler(old)
    handler._hallumeasure = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose >= 3 else logging.WARNING)
    ours = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.getLogger("hallumeasure").setLevel(ours)


def _command_verbose(ctx: Any, _param: Any, value: int) -> int:
    """-v given after the command's name: adds to any -v given before it, and sets the logging up again."""
    if value:
        before = ctx.parent.params.get("verbose", 0) if ctx.parent is not None else 0
        configure_logging(int(before or 0) + value)
    return value


class _UpperArgument(TyperArgument):
    """An argument shown as its name in capitals (INPUT, RUNS...), without typer's {braces} and <type>."""

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        name = self.metavar or (self.name or "").upper()
        name = name if self.required else f"[{name}]"
        return [name + ("..." if self.nargs != 1 else "")]

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


#: typer's type labels (<int range>...) as the plain metavars of click's own help.
_METAVARS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "file": "FILE"}


def _metavar(param: TyperOption, ctx: Any) -> str | None:
    shown = getattr(param, "display_type", None)
    label = shown(ctx) if callable(shown) else None
    if not label:
        return None
    label = str(label).strip("<>").replace(" range", "")
    if label.startswith("list[") and label.endswith("]"):
        label = label[5:-1]
    if "|" in label:  # a closed set: its values
        return "[" + label + "]"
    return _METAVARS.get(label, label.upper())


class _Group(TyperGroup):
    """The app's command group: gives every command -v/--verbose and plain metavars (TEXT, INTEGER, PATH), and
    takes a closed stdout (``| head -2``) as no failure."""

    def invoke(self, ctx: Any) -> Any:
        # Output through ``out`` meets a closed pipe in ``_Output.on_broken_pipe`` and goes on; this catches
        # click's own writes (a command's help), which click would end with exit 1.
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            let_go_of_stdout()
            raise typer.Exit(EXIT_OK) from None

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and not getattr(command, "_hallumeasure_ready", False):
            _prepare(command, ctx, self)
        return command


def _prepare(command: Any, ctx: Any, group: TyperGroup) -> None:
    _plain_metavars(command, ctx)
    own = next((p for p in group.params if "--verbose" in p.opts), None)
    if own is not None and not any(set(VERBOSE_FLAGS) & set(p.opts) for p in command.params):
        # A copy of the app's own -v: the same counting flag, read by a callback rather than passed on.
        verbose = copy.copy(own)
        verbose.expose_value = False
        verbose.callback = _command_verbose
        verbose.help = VERBOSE_HELP  # type: ignore[attr-defined]  # an Option: the app's -v
        verbose.name = "verbose"
        command.params = [*command.params, verbose]
    command._hallumeasure_ready = True


def _plain_metavars(command: Any, ctx: Any) -> None:
    for param in command.params:
        if isinstance(param, TyperArgument):
            param.__class__ = _UpperArgument
            param.metavar = param.metavar or (param.name or "").upper()
        elif isinstance(param, TyperOption) and not param.is_flag and param.metavar is None:
            param.metavar = _metavar(param, ctx)


app = typer.Typer(
    cls=_Group,
    help="Measure hallucinations in grounded LLM responses, claim by claim.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: rich's boxes cut option names at 80 and even 100 columns, and its markup
    # swallowed text in brackets such as the [doc2] of --citation-pattern.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


def check_specs(specs: dict[str, list[str]]) -> None:
    """Refuse a spec that names no registered judge or provider, with the closest known one ("did you mean")."""
    from hallumeasure.registry import PartKind, registry

    kinds = {"--extractor": PartKind.EXTRACTOR, "--rewriter": PartKind.REWRITER}
    for option, values in specs.items():
        for spec in values:
            try:
                registry().resolve(spec, kinds.get(option, PartKind.JUDGE))
            except HalluMeasureError as exc:
                raise fail(f"{option}: {exc}") from None


def let_go_of_stdout() -> None:
    """The reader of stdout is gone (``| head -2``): send the rest of the output to the null device, so that
    later writes, and Python's own flush at exit, do not fail ("Exception ignored ... BrokenPipeError")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # not a file (a test's captured output): replace the object
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stdout for the rest of the process
    finally:
        os.close(devnull)


class _Output(Console):
    """The commands' stdout. A reader that stops early is no failure: rich would exit 1 at the first write to a
    closed pipe; here the output goes quiet and the command finishes its work and exits with its own code."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        let_go_of_stdout()


console = Console(stderr=True)
# Wrapped at word boundaries to the terminal (80 columns when piped): a terminal breaks a longer line
# mid-word. Machine-read output (print_json) is never wrapped.
out = _Output()


def say(text: str) -> None:
    """One line of a command's own output, printed as it is (no rich markup, no highlighting)."""
    out.print(text, markup=False, highlight=False)


EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
#: Stopped with Ctrl-C (128 + SIGINT, what shells report).
EXIT_INTERRUPTED = 130


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    # One line, always: a script greps it, a person reads it at once.
    message = "; ".join(line.strip() for line in str(message).splitlines() if line.strip())
    console.print(f"[red]error:[/red] {escape(redact(message))}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def one_line(exc: BaseException) -> str:
    """A one-line message for an exception: the first pydantic error, or the first line of its text."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        return f"{where}: {first['msg']}" if where else first["msg"]
    text = str(exc).strip()
    line = text.splitlines()[0] if text else ""
    return line or type(exc).__name__


def _resume_hint(path: Path, m: RunManifest) -> str:
    """The command that finishes an unfinished run (with the stages it was started with)."""
    parts = ["hallumeasure measure", m.input_path or "INPUT", "--out", str(path)]
    if m.detector != "claims":
        parts += ["--detector", m.detector]
    votes = (m.settings.get("judge") or {}).get("votes") or {}
    judges = [x for j in votes.get("judges", [m.judge]) for x in ("--judge", j)]
    if votes.get("repeats", 1) > 1:
        judges += ["--repeats", str(votes["repeats"])]
    if votes and votes.get("rule") != "majority":
        judges += ["--panel-rule", str(votes["rule"])]
    parts += ["--extractor", m.extractor, *judges, "--mode", m.mode.value, "--resume"]
    return " ".join(parts)


def resume_command(run: Run) -> str:
    """How to finish ``run`` from the command line."""
    if run.manifest is None:
        return f"hallumeasure measure INPUT --out {run.path} --resume"
    return f"{_resume_hint(run.path, run.manifest)} (and the other options it was started with)"


def refuse_unfinished(runs: Sequence[Run]) -> None:
    """compare / audit / plan / calibrate: refuse a run that never finished (``runs.run.refuse_unfinished``)."""
    from hallumeasure.runs.run import refuse_unfinished as refuse

    refuse(runs, resume_command, then=", then compare or audit it")


def open_unit(value: float | None) -> float | None:
    """Typer callback: a power or confidence, above 0 and below 1."""
    if value is not None and not 0 < value < 1:
        raise typer.BadParameter(f"{value} is not in the range 0<x<1.")
    return value


def one_sided_alpha(value: float | None) -> float | None:
    """Typer callback: a one-sided error level, above 0 and below 0.5."""
    if value is not None and not 0 < value < 0.5:
        raise typer.BadParameter(f"{value} is not in the range 0<x<0.5.")
    return value


def _positive(value: float | None) -> float | None:
    """Typer callback: a float option that must be above 0 (a deadline or an interval)."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"{value} is not above 0.")
    return value


def open_probability(value: float | None) -> float | None:
    """Typer callback: a significance level, above 0 and at most 1."""
    if value is not None and not 0 < value <= 1:
        raise typer.BadParameter(f"{value} is not in the range 0<x<=1.")
    return value


# Options of every command that calls providers (measure, mitigate): one definition each.
MaxConcurrency = Annotated[int, typer.Option(min=1, help="Provider calls in flight at once, per model.")]
MaxRetries = Annotated[int, typer.Option(min=0, help="Retries of a failed provider call.")]
Timeout = Annotated[float, typer.Option(callback=_positive, help="Deadline of one provider call, seconds.")]
CacheFile = Annotated[
    Path | None, typer.Option(help="Request cache file (default: $HALLUMEASURE_CACHE_DIR/requests.sqlite).")
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the request cache.")]

# Arguments and options that several commands declare the same way.
MeasuredRunDir = Annotated[Path, typer.Argument(help="A run directory written by 'measure'.")]
RunDir = Annotated[Path, typer.Argument(help="The run directory.")]
#: --column field=name, read by ``column_mapping``.
Columns = Annotated[list[str] | None, typer.Option(help="Map a field to your column: --column response=answer.")]


def column_mapping(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field or not column:
            raise fail(f"--column takes field=name, got {pair!r}")
        mapping[field.strip()] = column.strip()
    return mapping


def batch_progress(progress: BatchProgress) -> None:
    status = progress.status
    resumed = " (submitted by an earlier run)" if progress.resumed else ""
    console.print(
        f"batch {escape(status.batch_id.rsplit('/', 1)[-1])}{resumed}: {status.done}/{status.total} done, "
        f"{escape(status.state)}, {progress.elapsed:.0f} s",
        highlight=False,
    )
