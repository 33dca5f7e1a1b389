"""The bridge from a settings model (``hallumeasure.pipeline.settings``) to typer: one command-line option per
field, with the field's flag, help text, bounds and default, and the merge of options, configuration file and
defaults into the model a command receives.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from enum import Enum
from functools import wraps
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import annotated_types
import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from hallumeasure.cli.common import check_specs, console, fail
from hallumeasure.core.errors import ConfigError
from hallumeasure.pipeline.settings import CONFIG_FILE, find_config, flag_name, merge, option_flag, read_config
from hallumeasure.registry.specs import with_options

_R = TypeVar("_R")


def _bounds(info: FieldInfo) -> tuple[dict[str, Any], dict[str, float]]:
    """typer's min / max from the field's ge / le, and the exclusive bounds (gt / lt) to check by callback."""
    options: dict[str, Any] = {}
    exclusive: dict[str, float] = {}
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            options["min"] = item.ge
        elif isinstance(item, annotated_types.Le):
            options["max"] = item.le
        elif isinstance(item, annotated_types.Gt) and isinstance(item.gt, int | float):
            exclusive["above"] = item.gt
        elif isinstance(item, annotated_types.Lt) and isinstance(item.lt, int | float):
            exclusive["below"] = item.lt
    return options, exclusive


def _exclusive(above: float | None = None, below: float | None = None) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is None:
            return value
        if above is not None and below is not None and not above < value < below:
            raise typer.BadParameter(f"{value} is not in the range {above:g}<x<{below:g}.")
        if above is not None and not value > above:
            raise typer.BadParameter(f"{value} is not above {above:g}.")
        if below is not None and not value < below:
            raise typer.BadParameter(f"{value} is not below {below:g}.")
        return value

    return check


def _as_typed(annotation: Any) -> Any:
    """The type typer parses an option as: a closed set of values (an enum, a Literal) is read as text, so that
    the settings model refuses a value outside it with its own message (and --help shows the field's help);
    a set is read as a repeatable option."""
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return str
    if get_origin(annotation) is Literal and all(isinstance(x, str) for x in get_args(annotation)):
        return str
    if get_origin(annotation) in (frozenset, set):
        return list[_as_typed(get_args(annotation)[0])]  # type: ignore[misc]  # a type built at run time
    others = [x for x in get_args(annotation) if x is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(others) == 1 < len(get_args(annotation)):
        return _as_typed(others[0]) | None  # an optional closed set: read as optional text
    return annotation


def _default(value: Any) -> Any:
    """The field's default as typer shows and parses it (none: a required option)."""
    if value is PydanticUndefined:
        return inspect.Parameter.empty
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, frozenset | set):
        return sorted(value)
    return value


def _member(name: str, member: str) -> str:
    return f"{name}__{member}"


_ON = "__on"


def option_parameters(model: type[BaseModel], exclude: Collection[str] = ()) -> list[inspect.Parameter]:
    """One keyword parameter per field, annotated with its ``typer.Option`` (flag, help, bounds, default); a field
    given as switches (``Flag.members``, ``Flag.off_switch``) has one parameter per switch."""
    params = []
    for name, info in model.model_fields.items():
        if name in exclude:
            continue
        flag = option_flag(info)
        for member, (decl, help_text) in flag.members.items():
            params.append(_switch(_member(name, member), decl, help_text, default=False))
        if flag.members:
            continue
        decls = flag.decls or (f"--{name.replace('_', '-')}",)
        options, exclusive = _bounds(info)
        if exclusive:
            options["callback"] = _exclusive(**exclusive)
        arguments: dict[str, Any] = {"help": info.description, **options, **flag.options}
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=_default(info.default),
                annotation=Annotated[_as_typed(info.annotation), typer.Option(*decls, **arguments)],
            )
        )
        if flag.off_switch is not None:
            params.append(_switch(name + _ON, *flag.off_switch, default=True))
    return params


def _switch(name: str, decl: str, help_text: str, *, default: bool) -> inspect.Parameter:
    option = typer.Option(decl, help=help_text)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[bool, option])


def _given(
    model: type[BaseModel], kwargs: dict[str, Any], typed: set[str], exclude: Collection[str]
) -> tuple[dict[str, Any], set[str]]:
    """Take the options of ``model``'s fields out of ``kwargs``: each field's value, and the fields typed on the
    command line (``typed``: the parameters typed there)."""
    given: dict[str, Any] = {}
    explicit: set[str] = set()
    for name, info in model.model_fields.items():
        if name in exclude:
            continue
        flag = option_flag(info)
        if flag.members:
            switches = {member: kwargs.pop(_member(name, member)) for member in flag.members}
            given[name] = frozenset(member for member, on in switches.items() if on)
            if any(_member(name, member) in typed for member in switches):
                explicit.add(name)
            continue
        given[name] = kwargs.pop(name)
        if name in typed:
            explicit.add(name)
        if flag.off_switch is not None and not kwargs.pop(name + _ON):
            given[name] = None
            explicit.add(name)
    return given, explicit


def with_settings(
    model: type[BaseModel],
    *,
    file_section: str | None = None,
    discover: bool = True,
    exclude: Mapping[str, str] | None = None,
    on_error: Callable[[str, dict[str, Any]], typer.Exit] | None = None,
) -> Callable[[Callable[..., _R]], Callable[..., _R]]:
    """Give a command one option per field of ``model``; the command receives ``settings`` (a ``model``).

    The command's own parameters stay as written, plus ``config`` (``--config FILE``). Each field's
    value is the option when given on the command line, else the configuration file's (its
    ``file_section`` table when given), else the default. The file is the one ``--config`` names, else
    (with ``discover``) the nearest one from the working directory up. A command that declares
    ``config_file`` also receives the file read (or None).

    ``exclude`` names the fields that get no option, each with the reason (the command sets them).
    ``on_error`` makes the exit of a refused setting from its message and the command's own arguments
    (default: the message on stderr, exit 2).
    """
    left_out = dict(exclude or {})

    def decorate(command: Callable[..., _R]) -> Callable[..., _R]:
        signature = inspect.signature(command, eval_str=True).parameters
        own = [p for p in signature.values() if p.name not in ("settings", "config_file")]
        wants_file = "config_file" in signature
        config_param = inspect.Parameter(
            "config",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[Path | None, typer.Option("--config", help=_config_help(file_section, discover))],
        )
        generated = option_parameters(model, left_out)
        context_param = inspect.Parameter("_typer_context", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)

        @wraps(command)
        def run(**kwargs: Any) -> _R:
            ctx = kwargs.pop("_typer_context")
            config = kwargs.pop("config")
            given, explicit = _given(model, kwargs, explicit_options(ctx, [p.name for p in generated]), left_out)
            try:
                path = Path(config) if config is not None else find_config(Path.cwd()) if discover else None
                from_file = read_config(path, section=file_section) if path is not None else {}
                settings = merge(model, from_file, given, explicit=explicit, source=path)
                specs = _specs(settings)  # a secret in an --*-option is refused here
            except ConfigError as exc:
                if on_error is not None:
                    raise on_error(str(exc), kwargs) from None
                raise fail(str(exc)) from None  # one line, exit 2, like every other usage error
            if path is not None:
                _say_settings_file(path, from_file, explicit)
            check_specs(specs)
            if wants_file:
                kwargs["config_file"] = path
            return command(**kwargs, settings=settings)

        run.__signature__ = inspect.Signature([*own, context_param, config_param, *generated])  # type: ignore[attr-defined]  # set for typer, which reads it
        run.__annotations__ = {}
        del run.__wrapped__  # typer must read the new signature, not the command's
        run.settings_model = model  # type: ignore[attr-defined]  # for the test that no option is declared twice
        run.settings_left_out = left_out  # type: ignore[attr-defined]
        return run

    return decorate


def _config_help(section: str | None, discover: bool) -> str:
    where = (
        f"Settings file: {CONFIG_FILE}, or a pyproject.toml with a tool.hallumeasure table"
        if section is None
        else f"Settings file whose [{section}] table ([tool.hallumeasure.{section}] in a pyproject.toml) holds "
        "this command's settings"
    )
    found = " (default: the nearest one from the working directory up)" if discover else ""
    return f"{where}{found}. Options given here win."


#: Settings that name a judge or model, checked for a close known name when they name none.
SPEC_FIELDS = ("extractor", "judge", "first_pass", "rewriter")


def _specs(settings: BaseModel) -> dict[str, list[str]]:
    """The specs the settings name, by option, with their ``<field>_option`` settings joined on (as they run)."""
    specs = {}
    for name in SPEC_FIELDS:
        value = getattr(settings, name, None)
        if isinstance(value, str | list):
            options = getattr(settings, f"{name}_option", None) or []
            specs[flag_name(type(settings), name)] = [
                with_options(spec, options) for spec in (value if isinstance(value, list) else [value])
            ]
    return specs


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
