"""The bridge from a settings model (``hallumeasure.pipeline.settings``) to typer: one command-line option per
field, with the field's flag, help text, bounds and default, and the merge of options, configuration file and
defaults into the model a command receives.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from enum import Enum
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

import annotated_types
import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from hallumeasure.cli.common import check_specs, console, fail
from hallumeasure.core.errors import ConfigError
from hallumeasure.pipeline.settings import CONFIG_FILE, Flag, find_config, merge, read_config

_R = TypeVar("_R")


def _bounds(info: FieldInfo) -> tuple[dict[str, Any], float | None]:
    """typer's min / max from the field's ge / le, and an exclusive lower bound (gt) to check by callback."""
    options: dict[str, Any] = {}
    above: float | None = None
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            options["min"] = item.ge
        elif isinstance(item, annotated_types.Le):
            options["max"] = item.le
        elif isinstance(item, annotated_types.Gt) and isinstance(item.gt, int | float):
            above = item.gt
    return options, above


def _above(bound: float) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is not None and not value > bound:
            raise typer.BadParameter(f"{value} is not above {bound:g}.")
        return value

    return check


def _as_typed(annotation: Any) -> Any:
    """The type typer parses an option as: a closed set of values (an enum, a Literal) is read as text, so that
    the settings model refuses a value outside it with its own message (and --help shows the field's help)."""
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return str
    if get_origin(annotation) is Literal and all(isinstance(x, str) for x in get_args(annotation)):
        return str
    return annotation


def option_parameters(model: type[BaseModel]) -> list[inspect.Parameter]:
    """One keyword parameter per field, annotated with its ``typer.Option`` (flag, help, bounds, default)."""
    params = []
    for name, info in model.model_fields.items():
        flag = next((m for m in info.metadata if isinstance(m, Flag)), Flag())
        decls = flag.decls or (f"--{name.replace('_', '-')}",)
        options, above = _bounds(info)
        if above is not None:
            options["callback"] = _above(above)
        arguments: dict[str, Any] = {"help": info.description, **options, **flag.options}
        option = typer.Option(*decls, **arguments)
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=info.default.value if isinstance(info.default, Enum) else info.default,
                annotation=Annotated[_as_typed(info.annotation), option],
            )
        )
    return params


def with_settings(
    model: type[BaseModel], *, file_section: str | None = None
) -> Callable[[Callable[..., _R]], Callable[..., _R]]:
    """Give a command one option per field of ``model``; the command receives ``settings`` (a ``model``).

    The command's own parameters stay as written, plus ``config`` (``--config FILE``). Each field's
    value is the option when given on the command line, else the configuration file's, else the default.
    The command also receives ``config_file`` (the file read, or None).
    """

    def decorate(command: Callable[..., _R]) -> Callable[..., _R]:
        own = [
            p
            for p in inspect.signature(command, eval_str=True).parameters.values()
            if p.name not in ("settings", "config_file")
        ]
        config_param = inspect.Parameter(
            "config",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                Path | None,
                typer.Option(
                    "--config",
                    help=f"Settings file: {CONFIG_FILE}, or a pyproject.toml with a tool.hallumeasure table "
                    "(default: the nearest one from the working directory up). Options given here win.",
                ),
            ],
        )
        names = list(model.model_fields)

        context_param = inspect.Parameter("_typer_context", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)

        @wraps(command)
        def run(**kwargs: Any) -> _R:
            ctx = kwargs.pop("_typer_context")
            given = {name: kwargs.pop(name) for name in names}
            config = kwargs.pop("config")
            try:
                path = Path(config) if config is not None else find_config(Path.cwd())
                from_file = read_config(path, section=file_section) if path is not None else {}
                settings = merge(model, from_file, given, explicit=explicit_options(ctx, names), source=path)
            except ConfigError as exc:
                raise fail(str(exc)) from None  # one line, exit 2, like every other usage error
            if path is not None:
                _say_settings_file(path, from_file, explicit_options(ctx, names))
            check_specs(
                {
                    f"--{name.replace('_', '-')}": value if isinstance(value, list) else [value]
                    for name in SPEC_FIELDS
                    if isinstance(value := getattr(settings, name, None), str | list)
                }
            )
            return command(**kwargs, settings=settings, config_file=path)

        signature = inspect.Signature([*own, context_param, config_param, *option_parameters(model)])
        run.__signature__ = signature  # type: ignore[attr-defined]  # set for typer, which reads it
        run.__annotations__ = {}
        del run.__wrapped__  # typer must read the new signature, not the command's
        return run

    return decorate


#: Settings that name a judge or model, checked for a close known name when they name none.
SPEC_FIELDS = ("extractor", "judge", "first_pass", "rewriter")


def _say_settings_file(path: Path, from_file: dict[str, Any], explicit: set[str]) -> None:
    """One line on stderr: which settings file is in use, and how many of its settings apply."""
    used = [key for key in from_file if key not in explicit]
    overridden = len(from_file) - len(used)
    console.print(
        f"settings: {path} ({len(used)} setting(s) applied"
        + (f", {overridden} overridden by options given here" if overridden else "")
        + ")",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def explicit_options(ctx: Any, names: list[str]) -> set[str]:
    """Of ``names``, the options typed on the command line (or set from the environment), not left at their default."""
    sources = {name: ctx.get_parameter_source(name) for name in names}
    return {
        name for name, source in sources.items() if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")
    }
