"""The settings a team repeats in every run, in one pydantic model: its defaults, its command-line
options (``hallumeasure.cli.options`` makes them) and the schema of the configuration file all come from
``MeasureSettings``, and so do its rules: a value out of its closed set or a combination that cannot run
is refused by the model, with the same message from the command line, a configuration file or Python.

A configuration file is ``hallumeasure.toml`` (settings at the top level) or the
``[tool.hallumeasure]`` table of ``pyproject.toml``, found in the working directory or the nearest
parent that has one (``--config FILE`` names one). Keys are the option names without the dashes,
in either spelling (``max-concurrency`` or ``max_concurrency``). The ``audit`` sub-table holds the
audit's gates (``hallumeasure.report.audit.AuditGates``). Precedence: an option given on the command
line, else the file, else the default here. ``measure`` records the effective settings and the
file's path in the run's manifest.

To add a setting: add a field here with its default, a ``description`` (the ``--help`` text),
pydantic bounds (``ge``/``le``/``gt``: they bound the option and the file alike) and, when the flag
is not ``--field-name``, a ``Flag(...)``; then read ``settings.<field>`` in the command. A rule over its
value goes in a validator here (``_refuse`` names settings as ``{field}``, so that each caller spells them as
its user wrote them). Nothing else.
"""

from __future__ import annotations

import difflib
import string
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Label, UnevaluatablePolicy
from hallumeasure.core.types import Mode
from hallumeasure.judges.votes import PanelRule
from hallumeasure.pipeline.limits import LIMIT_SETTINGS, MAX_CLAIMS, MAX_RESPONSE_CHARS
from hallumeasure.registry import PartKind, is_keyless, registry

_Model = TypeVar("_Model", bound=BaseModel)


CONFIG_FILE = "hallumeasure.toml"


@dataclass(frozen=True)
class Flag:
    """How a setting appears on the command line when not as ``--field-name``."""

    decls: tuple[str, ...] = ()
    #: Extra ``typer.Option`` arguments (for instance ``show_default=False``).
    options: dict[str, Any] = field(default_factory=dict)
    #: A set of names given as one switch per name, ``{name: (flag, help)}``: ``--allow-judge-change`` adds
    #: ``judge`` to the set. No switch given: the set of the settings file, else the default.
    members: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: A setting that None turns off gets an on/off switch besides its option, ``(flag pair, help)``:
    #: ``--no-share-gate`` sets it to None.
    off_switch: tuple[str, str] | None = None


def option_flag(info: FieldInfo) -> Flag:
    """How the field ``info`` appears on the command line."""
    return next((m for m in info.metadata if isinstance(m, Flag)), Flag())


def flag_name(model: type[BaseModel], name: str) -> str:
    """The option that sets the field ``name`` of ``model``, as its user types it."""
    decls = option_flag(model.model_fields[name]).decls
    return next((d.split("/")[0] for d in decls if d.startswith("--")), f"--{name.replace('_', '-')}")


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
        description="Ask each LLM judge this many times per claim and combine the votes (--panel-rule); "
        "'show' reports flip rates and kappa.",
    )
    panel_rule: PanelRule = Field(
        PanelRule.MAJORITY,
        description="How votes (repeats, panel judges) become a claim's verdict: "
        "majority (ties go to the more severe label), any-unsupported, "
        "unanimous.",
    )
    extractor_option: list[str] | None = Field(
        None,
        description="Constructor option of the extractor's model, key=value (repeatable), as ?key=value in "
        "the spec (base_url=http://localhost:8000/v1); recorded; keys are refused.",
    )
    judge_option: list[str] | None = Field(
        None,
        description="Constructor option of the judge's model, key=value (repeatable; applies to every --judge "
        "of a panel); as --extractor-option.",
    )
    mode: Mode = Field(Mode.COT_ONE, description="Classifier prompt: cot-one, cot-all, nocot-one, nocot-all.")
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
    sample_rate: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="Share of responses measured, picked by a hash of the id (default: all).",
    )
    max_cost: float | None = Field(
        None,
        gt=0.0,
        description="Dollars: a hash-order pick and a hard cap.",
    )
    concurrency: int = Field(4, ge=1, description="Samples measured at once.")
    max_concurrency: int = Field(8, ge=1, description="Provider calls in flight at once, per model.")
    max_retries: int = Field(4, ge=0, description="Retries of a failed provider call.")
    timeout: float = Field(120.0, gt=0, description="Deadline of one provider call, seconds.")
    max_response_chars: int = Field(
        MAX_RESPONSE_CHARS,
        ge=0,
        description="Longest response judged, in characters; a longer one is stored as an error row that "
        "says so, and nothing is called for it (0: no limit).",
    )
    max_claims: int = Field(
        MAX_CLAIMS,
        ge=0,
        description="Most claims judged per response; a response with more is stored as an error row "
        "once extracted, before any judge call (0: no limit).",
    )
    cache: Path | None = Field(
        None, description="Request cache file (default: $HALLUMEASURE_CACHE_DIR/requests.sqlite)."
    )
    no_cache: bool = Field(False, description="Do not read or write the request cache.")
    unsupported_labels: str = Field(
        "contradicted,absent,partially_supported", description="Labels counted as unsupported."
    )
    unevaluatable: UnevaluatablePolicy = Field(
        UnevaluatablePolicy.EXCLUDE, description="How unevaluatable claims count: exclude, supported, unsupported."
    )
    min_unsupported_claims: int = Field(1, ge=1, description="Unsupported claims that make a response hallucinated.")
    min_unsupported_rate: float = Field(0.0, ge=0.0, le=1.0, description="...and the unsupported rate it needs.")
    strict_input: bool = Field(False, description="Stop at the first bad input row instead of skipping it.")
    delimiter: str | None = Field(
        None, description="CSV delimiter (default: detected from the header line among , ; tab |)."
    )
    input_format: str | None = Field(
        None,
        description="How to read the input: jsonl, csv, parquet, otlp, openinference, langfuse, mlflow or a "
        "plugin's, with options after ? (otlp?outputs=all measures every LLM span, not only each trace's "
        "final answer); default: detected from the file.",
    )
    user_turns: bool = Field(
        False,
        description="Count what the user said in earlier turns of a conversation as a source (by default a "
        "user's claim is no evidence; the question being answered never is one).",
    )
    context_in_user_turns: Annotated[bool, Flag(decls=("--context-in-user-turns/--no-context-in-user-turns",))] = Field(
        True,
        description="Use context pasted into a user message (a 'Context:' block, documents or fenced text above "
        "the question) as a source.",
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

    @field_validator(*LIMIT_SETTINGS, mode="before")
    @classmethod
    def _no_limit(cls, value: Any) -> Any:
        # None, as Python callers write "no limit", is 0 (a settings file has no None)
        return 0 if value is None else value

    @field_validator("panel_rule", "mode", "detector", mode="before")
    @classmethod
    def _one_of(cls, value: Any, info: ValidationInfo) -> Any:
        choices = _choices(info.field_name or "")
        if value not in choices:
            raise _refuse(
                f"{{{info.field_name}}} must be one of {{choices}}, got {{got!r}}", choices=choices, got=value
            )
        return value

    @field_validator("unevaluatable", mode="before")
    @classmethod
    def _unevaluatable(cls, value: Any) -> Any:
        choices = [x.value for x in UnevaluatablePolicy]
        if value not in choices:
            raise _refuse(
                "{unevaluatable} must be one of {choices}; got {got!r}", choices=", ".join(choices), got=value
            )
        return value

    @field_validator("unsupported_labels")
    @classmethod
    def _labels(cls, value: str) -> str:
        names = [x.strip() for x in value.split(",") if x.strip()]
        if not names or any(x not in {label.value for label in Label} for x in names):
            raise _refuse(
                "{unsupported_labels} takes a comma-separated list of {choices}; got {got!r}",
                choices=", ".join(x.value for x in Label),
                got=value,
            )
        return value

    @model_validator(mode="after")
    def _combinations(self) -> MeasureSettings:
        """Settings that work only together: votes with the claims detector, repeats with an LLM judge, the
        cascade's own options with the cascade."""
        judges = self.judge or ["offline"]
        if (len(judges) > 1 or self.repeats > 1) and self.detector != "claims":
            raise _refuse(
                "{repeats} and several {judge} work with {detector} claims only; this run uses {detector} {got}",
                got=self.detector,
            )
        # resolved only when it matters: each spec is resolved again where its stage is built
        deterministic = [name for name in judges if is_keyless(name)] if self.repeats > 1 else []
        if deterministic:  # VotingJudge refuses it too, but only once the input is read
            raise _refuse(
                "{repeats} {n}: the {name} judge is deterministic, so its repeats would agree by construction; "
                "use {repeats} 1 with it, or an LLM judge such as {judge} anthropic:<model>",
                n=self.repeats,
                name=deterministic[0],
            )
        if self.max_cost is not None and self.batch:
            raise _refuse(
                "{max_cost} stops requests as they leave, and {batch} sends a stage's requests at once: "
                "drop one ({sample_rate} picks the responses of a batch run)"
            )
        if self.detector != "cascade":
            given = [name for name in ("flag_threshold", "first_pass") if getattr(self, name) is not None]
            if given:
                names = " and ".join(f"{{{name}}}" for name in given)
                verb = "is" if len(given) == 1 else "are"
                raise _refuse(
                    f"{names} {verb} for {{detector}} cascade only; this run uses {{detector}} {{got}}",
                    got=self.detector,
                )
        return self


def _choices(field: str) -> list[str]:
    """The closed set of a field; the detectors are the registered ones (plugins add theirs)."""
    if field == "detector":
        return registry().names(PartKind.DETECTOR)
    return _CHOICES[field]


_CHOICES: dict[str, list[str]] = {
    "panel_rule": [r.value for r in PanelRule],
    "mode": [m.value for m in Mode],
}


# --- errors that name each setting as its user wrote it ----------------------------------------------------


def _refuse(template: str, **values: Any) -> PydanticCustomError:
    """A settings rule's error. ``template`` names settings as ``{field_name}`` and the other values as
    ``{name}`` of ``values``; the message reads ``field_name`` (as in Python), and ``error_message`` spells
    the settings as the caller's user wrote them (``--field-name`` on the command line)."""
    message = _render(template, lambda name: name, values)
    return PydanticCustomError("setting_rule", message, {"template": template, "values": values})


def _render(template: str, spell: Callable[[str], str], values: dict[str, Any]) -> str:
    names = {name for _, name, _, _ in string.Formatter().parse(template) if name in MeasureSettings.model_fields}
    return template.format(**values, **{name: spell(name) for name in names})


def error_message(error: ErrorDetails, spell: Callable[[str], str]) -> str:
    """One line for one error of a settings model, naming each setting as ``spell(field_name)``."""
    context = error.get("ctx") or {}
    if "template" in context:
        return _render(context["template"], spell, context["values"])
    key = ".".join(str(x) for x in error.get("loc", ()))
    return f"{spell(key)}: {error['msg']}" if key else error["msg"]


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
        # Keys as the file documents them (kebab-case), with the closest valid one for a typo.
        valid_keys = [name.replace("_", "-") for name in model.model_fields]
        named = []
        for key in unknown:
            written = key.replace("_", "-")
            close = difflib.get_close_matches(written, valid_keys, n=1)
            named.append(written + (f" (did you mean {close[0]}?)" if close else ""))
        raise ConfigError(f"{source}: unknown setting(s) {', '.join(named)}; valid settings: {', '.join(valid_keys)}")
    values = {**from_file, **{k: v for k, v in given.items() if k in explicit}}
    try:
        return model(**values)
    except ValidationError as exc:

        def spell(key: str) -> str:  # as its user wrote it: the option, or the key in the file
            written = key.replace("_", "-")
            if key in from_file and key not in explicit:
                return f"{written} in {source}"
            return flag_name(model, key) if key in model.model_fields else "--" + written

        raise ConfigError(error_message(exc.errors()[0], spell)) from None
