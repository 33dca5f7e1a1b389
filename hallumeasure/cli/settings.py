"""The settings a team repeats in every run, in one pydantic model: its defaults, its command-line
options and the schema of the configuration file all come from ``MeasureSettings``.

A configuration file is ``hallumeasure.toml`` (settings at the top level) or the
``[tool.hallumeasure]`` table of ``pyproject.toml``, found in the working directory or the nearest
parent that has one (``--config FILE`` names one). Keys are the option names without the dashes,
in either spelling (``max-concurrency`` or ``max_concurrency``). The ``audit`` sub-table holds the
audit's gates (``hallumeasure.report.audit.AuditGates``). Precedence: an option given on the command
line, else the file, else the default here. ``measure`` records the effective settings and the
file's path in the run's manifest.

To add a setting: add a field here with its default, a ``description`` (the ``--help`` text),
pydantic bounds (``ge``/``le``/``gt``: they bound the option and the file alike) and, when the flag
is not ``--field-name``, a ``Flag(...)``; then read ``settings.<field>`` in the command. Nothing else.
"""

from __future__ import annotations

import inspect
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import annotated_types
import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo

from hallumeasure.core.errors import ConfigError

_R = TypeVar("_R")
_Model = TypeVar("_Model", bound=BaseModel)

CONFIG_FILE = "hallumeasure.toml"


@dataclass(frozen=True)
class Flag:
    """How a setting appears on the command line when not as ``--field-name``."""

    decls: tuple[str, ...] = ()
    #: Extra ``typer.Option`` arguments (for instance ``show_default=False``).
    options: dict[str, Any] = field(default_factory=dict)


class MeasureSettings(BaseModel):
    """How ``measure`` judges: stages, policy, provider limits, cache and input reading."""

    model_config = ConfigDict(extra="forbid")

    extractor: str = Field(
        "offline",
        description="Claim extractor: offline, fake, anthropic:<model>, bedrock:<id>, langchain:<module:Class>.",
    )
    judge: Annotated[list[str] | None, Flag(options={"metavar": "SPEC"})] = Field(
        None,
        description="Claim judge spec (same forms as --extractor, plus the keyless nli and offline+nli of "
        "the nli extra; default offline). Give it several times for a panel of judges whose "
        "votes are combined by --panel-rule.",
    )
    repeats: int = Field(
        1,
        ge=1,
        le=50,
        description="Ask each judge this many times per claim; the verdict is "
        "combined from the votes (--panel-rule) and 'show' reports flip "
        "rates and kappa. LLM judges only: the offline judge is "
        "deterministic.",
    )
    panel_rule: str = Field(
        "majority",
        description="How votes (repeats, panel judges) become a claim's verdict: "
        "majority (ties go to the more severe label), any-unsupported, "
        "unanimous.",
    )
    extractor_option: list[str] | None = Field(
        None,
        description="Constructor option of the extractor's model, key=value (repeatable): --extractor-option "
        "model=qwen2.5-7b-instruct --extractor-option base_url=http://localhost:8000/v1. Same as "
        "?key=value in the spec; recorded in the manifest; keys are refused (use the environment).",
    )
    judge_option: list[str] | None = Field(
        None,
        description="Constructor option of the judge's model, key=value (repeatable; applies to every --judge "
        "of a panel); as --extractor-option.",
    )
    mode: str = Field("cot-one", description="Classifier prompt: cot-one, cot-all, nocot-one, nocot-all.")
    detector: str = Field(
        "claims",
        description="claims (extract + judge claims), conli (sentence then entity NLI "
        "with --judge), cascade (--first-pass judge, then --judge explains "
        "its flags).",
    )
    first_pass: str | None = Field(None, description="Cascade only: the cheap first-pass judge (default: offline).")
    flag_threshold: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Cascade only: flag a claim when the first pass gives it at "
        "least this probability of being unsupported (default: 0.5).",
    )
    model_name: str | None = Field(None, description="Model name for rows without one.")
    concurrency: int = Field(4, ge=1, description="Samples measured at once.")
    max_concurrency: int = Field(8, ge=1, description="Provider calls in flight at once, per model.")
    max_retries: int = Field(4, ge=0, description="Retries of a failed provider call.")
    timeout: float = Field(120.0, gt=0, description="Deadline of one provider call, seconds.")
    cache: Path | None = Field(
        None, description="Request cache file (default: $HALLUMEASURE_CACHE_DIR/requests.sqlite)."
    )
    no_cache: bool = Field(False, description="Do not read or write the request cache.")
    unsupported_labels: str = Field(
        "contradicted,absent,partially_supported", description="Labels counted as unsupported."
    )
    unevaluatable: str = Field(
        "exclude", description="How unevaluatable claims count: exclude, supported, unsupported."
    )
    min_unsupported_claims: int = Field(1, ge=1, description="Unsupported claims that make a response hallucinated.")
    min_unsupported_rate: float = Field(0.0, ge=0.0, le=1.0, description="...and the unsupported rate it needs.")
    strict_input: bool = Field(False, description="Stop at the first bad input row instead of skipping it.")
    delimiter: str | None = Field(
        None, description="CSV delimiter (default: detected from the header line among , ; tab |)."
    )
    max_context_tokens: int | None = Field(
        None,
        ge=1,
        description="Source tokens shown to the judge per call; a "
        "longer source is cut, per response, to the "
        "chunks that matter to its claims (default: what "
        "the judge model's window leaves; the offline "
        "judge reads the whole source).",
    )
    citation_pattern: list[str] | None = Field(
        None,
        description="Regular expression of a citation marker, with the "
        "cited id(s) in a group named ids; repeat for "
        "several (default: [1], [1, 2], [doc2], [^3], "
        "superscripts).",
    )
    batch: bool = Field(
        False,
        description="Send each stage's requests through the provider's batch service: half "
        "price, results in minutes to hours. Batch ids are kept in the run "
        "directory; --resume polls them instead of submitting again.",
    )
    batch_s3: str | None = Field(
        None, description="Bedrock --batch: s3://bucket/prefix where the batch records and results go."
    )
    batch_role: str | None = Field(
        None, description="Bedrock --batch: ARN of the IAM role Bedrock uses to read and write --batch-s3."
    )
    batch_poll: float = Field(10.0, gt=0, description="--batch: seconds between the first polls (then up to 60).")
    rpm: str | None = Field(
        None,
        description="Requests per minute allowed per model, such as 50 or 4k; calls wait "
        "for their turn instead of collecting 429s.",
    )
    tpm: str | None = Field(
        None,
        description="Input tokens per minute allowed per model, counted as Anthropic "
        "counts them (cache reads are free), such as 40k or 2m.",
    )
    otpm: str | None = Field(
        None,
        description="Output tokens per minute allowed per model, such as 8k (each call "
        "reserves its max_tokens until it answers).",
    )
    no_warm_cache: bool = Field(
        False,
        description="One-claim modes: no prompt-cache warm-up; all claims of a "
        "response go out at once (each claim then pays the prompt-cache "
        "write).",
    )

    @field_validator("judge", "extractor_option", "judge_option", "citation_pattern", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        # a settings file may give one judge or pattern as a plain string
        return [value] if isinstance(value, str) else value


# --- command-line options from the model ------------------------------------------------------------


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
                default=info.default,
                annotation=Annotated[info.annotation, option],
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
                raise _usage_error(str(exc)) from None
            return command(**kwargs, settings=settings, config_file=path)

        signature = inspect.Signature([*own, context_param, config_param, *option_parameters(model)])
        run.__signature__ = signature  # type: ignore[attr-defined]  # set for typer, which reads it
        run.__annotations__ = {}
        del run.__wrapped__  # typer must read the new signature, not the command's
        return run

    return decorate


def explicit_options(ctx: Any, names: list[str]) -> set[str]:
    """Of ``names``, the options typed on the command line (or set from the environment), not left at their default."""
    sources = {name: ctx.get_parameter_source(name) for name in names}
    return {
        name for name, source in sources.items() if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")
    }


def _usage_error(message: str) -> Exception:
    from hallumeasure.cli.common import _fail  # one-line error, exit 2, like every other usage error

    return _fail(message)


# --- the configuration file ------------------------------------------------------------------------


def find_config(start: Path) -> Path | None:
    """``hallumeasure.toml`` or a ``pyproject.toml`` with ``[tool.hallumeasure]`` in ``start`` or above.

    The search stops at the first directory that has either file, or a ``pyproject.toml`` without
    the table (that is the project's root), or a ``.git`` directory.
    """
    for folder in [start, *start.parents]:
        own = folder / CONFIG_FILE
        if own.is_file():
            return own
        project = folder / "pyproject.toml"
        if project.is_file():
            return project if "hallumeasure" in _load(project).get("tool", {}) else None
        if (folder / ".git").exists():
            return None
    return None


def _load(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist; give a {CONFIG_FILE} or a pyproject.toml") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None


def read_config(path: Path, *, section: str | None = None) -> dict[str, Any]:
    """The settings in ``path`` (top level of hallumeasure.toml, or [tool.hallumeasure]).

    With ``section``, only that sub-table.
    """
    data = _load(path)
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("hallumeasure", {})
    if section is not None:
        data = data.get(section, {})
        where = f"[{section}]"
    else:
        data = {k: v for k, v in data.items() if not isinstance(v, dict)}  # sub-tables belong to other commands
        where = "the top level"
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: {where} must be a table of settings")
    return {key.replace("-", "_"): value for key, value in data.items()}


def merge(
    model: type[_Model],
    from_file: dict[str, Any],
    given: dict[str, Any],
    *,
    explicit: set[str],
    source: Path | None = None,
) -> _Model:
    """Defaults < file < options typed on the command line; validated, with one-line errors naming the keys."""
    unknown = sorted(set(from_file) - set(model.model_fields))
    if unknown:
        valid = ", ".join(name.replace("_", "-") for name in model.model_fields)
        raise ConfigError(f"{source}: unknown setting(s) {', '.join(unknown)}; valid settings: {valid}")
    values = {**from_file, **{k: v for k, v in given.items() if k in explicit}}
    try:
        return model(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(x) for x in first.get("loc", ()))
        origin = "--" + key.replace("_", "-") if key in explicit else f"{key} in {source}"
        raise ConfigError(f"{origin}: {first['msg']}") from None
