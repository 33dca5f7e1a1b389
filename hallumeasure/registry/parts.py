"""The kinds of parts a run is built from: for each kind, the protocol its factory follows and the record it
is registered with, and the options a part declares.

A part names its factory as an object or as ``"module:attribute"``, imported only when the part is first
used (so listing parts imports no provider SDK). What a factory returns is checked where it is built
(``models/factory.py``: a ``ModelAPI``; ``judges/build.py``: a ``ClaimJudge`` or ``ClaimExtractor``), since
those types live above the registry; the protocols here fix how each kind's factory is *called*.

Options are declared, never read from a factory's signature: ``options`` maps each name a spec may set
(``nli?threshold=0.9``) to its ``Option`` (type, default, help). ``Part.read_options`` refuses an unknown
name, listing the valid ones, and converts each value to its declared type.

A new kind is one ``PartKind`` member, one factory protocol and one ``Part`` subclass here, and its rows in
``registry/builtin.py``, as the exporter kind was added beside the input formats.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from enum import StrEnum
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from pydantic import TypeAdapter, ValidationError

from hallumeasure.core.errors import ConfigError
from hallumeasure.registry.facts import ModelFacts


class PartKind(StrEnum):
    """What a part does; each kind has its own entry-point group, ``hallumeasure.<kind>s``."""

    PROVIDER = "provider"
    JUDGE = "judge"
    EXTRACTOR = "extractor"
    DETECTOR = "detector"
    REWRITER = "rewriter"
    INPUT_FORMAT = "input_format"
    EXPORTER = "exporter"

    @property
    def group(self) -> str:
        """The entry-point group third-party packages register this kind under."""
        return f"hallumeasure.{self.value}s"


BUILTIN = "built-in"


# --- options ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One option a part takes: the type its value is converted to, its default (as the factory has it), and
    what it does. ``type`` is any type pydantic validates (``float``, ``bool``, ``str | None``, ``Any``)."""

    type: Any
    default: Any = None
    help: str = ""

    @property
    def type_name(self) -> str:
        """The type as the listing shows it: ``float``, ``int | None``."""
        return self.type.__name__ if isinstance(self.type, type) else str(self.type).replace("typing.", "")


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def _convert(option: Option, value: Any) -> Any:
    """``value`` as the option's type. A spec's values arrive read as JSON (``0.9``, ``true``, ``7``), so a
    number given to a text option is taken as the text it was written as."""
    adapter = _adapter(option.type)
    try:
        return adapter.validate_python(value)
    except ValidationError:
        if isinstance(value, bool | int | float):
            return adapter.validate_python(json.dumps(value))
        raise


# --- factory protocols: how each kind's factory is called ----------------------------------------------------


class ProviderFactory(Protocol):
    """``factory(model_name, **options)`` -> a ``ModelAPI`` (``model_name`` left out when the spec names none)."""

    def __call__(self, *args: Any, **options: Any) -> Any: ...


class JudgeFactory(Protocol):
    """``factory(**options)`` -> a ``ClaimJudge`` that calls no provider."""

    def __call__(self, **options: Any) -> Any: ...


class JudgeFamilyFactory(Protocol):
    """``factory(argument, **options)`` -> a keyless ``ClaimJudge`` for one member (``hf:<path>``: the path)."""

    def __call__(self, argument: str, /, **options: Any) -> Any: ...


class ProviderJudgeFactory(Protocol):
    """``factory(model)`` -> a ``ClaimJudge`` on the ``Model`` of the provider spec its argument names."""

    def __call__(self, model: Any, /) -> Any: ...


class ExtractorFactory(Protocol):
    """``factory(**options)`` -> a ``ClaimExtractor`` that calls no provider."""

    def __call__(self, **options: Any) -> Any: ...


class DetectorFactory(Protocol):
    """``factory(request: StageRequest)`` -> ``(extractor, judge)``."""

    def __call__(self, request: Any, /) -> Any: ...


class RewriterFactory(Protocol):
    """``factory()`` -> a keyless rewriter; ``factory(model)`` -> a rewriter on a ``Model``."""

    def __call__(self, *model: Any) -> Any: ...


#: What an input format reads: a file, or (the built-in trace readers) JSON values already in memory.
Readable = Path | list[Any]


class InputFormatFactory(Protocol):
    """``factory(path, *, delimiter, on_header, **options)`` -> an iterator of ``(row number, record or
    problem)``: records in the input file's vocabulary (``response``, ``context`` or ``contexts``,
    ``messages``, ``metadata`` ...), problems as strings. The built-in trace readers also take the JSON
    values of a file already in memory in place of its path."""

    def __call__(
        self, path: Readable, /, *, delimiter: str | None = None, on_header: Any = None, **options: Any
    ) -> Iterator[tuple[int, dict[str, Any] | str]]: ...


class ExporterFactory(Protocol):
    """``factory()`` -> an ``export.Exporter`` (``name``, its ``options`` model, ``export(run, options)``),
    reached as ``hallumeasure export RUN --to <name>``."""

    def __call__(self) -> Any: ...


# --- parts ---------------------------------------------------------------------------------------------------

F = TypeVar("F")


@dataclass(frozen=True)
class Part(Generic[F]):
    """What every registered part has: its name, what builds it (``target``: the factory, or
    ``"module:attribute"``), a one-line summary, and the options it declares."""

    kind: ClassVar[PartKind]

    name: str
    target: str | F
    summary: str = ""
    _: KW_ONLY
    #: Calls no provider and needs no key.
    keyless: bool = False
    #: The options a spec may set, by name.
    options: Mapping[str, Option] = field(default_factory=dict)
    #: Takes options beyond the declared ones, passed on unchecked (a LangChain chat model's own keywords).
    open_options: bool = False
    #: The pip extra that brings what the part imports, said in the error when the import fails.
    extra: str | None = None
    #: Where the part comes from: ``built-in``, or the distribution and version that registered it.
    origin: str = BUILTIN

    def load(self) -> F:
        """The factory that builds the part (imported on first use)."""
        return cast(F, self._import(self.target))

    def read_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """``given`` checked against the declared options and converted to their types (``"0.9"`` -> 0.9).

        Raises ``ConfigError`` naming an unknown option and listing the valid ones, or naming a value that is
        not of its option's type.
        """
        unknown = sorted(set(given) - set(self.options))
        what = f"{self.kind.value.replace('_', ' ')} {self.name!r}"
        if unknown and not self.open_options:
            names = ", ".join(unknown)
            if not self.options:
                raise ConfigError(f"{what} takes no options (given: {names})")
            plural = "s" if len(unknown) > 1 else ""
            raise ConfigError(
                f"{what}: unknown option{plural} {names}; valid options: {', '.join(sorted(self.options))}"
            )
        read = dict(given)
        for name, value in given.items():
            option = self.options.get(name)
            if option is None:
                continue
            try:
                read[name] = _convert(option, value)
            except ValidationError as exc:
                problem = exc.errors()[0]["msg"]
                raise ConfigError(f"{what}: option {name}={value!r} is not valid: {problem}") from None
        return read

    def _import(self, target: object) -> Any:
        if not isinstance(target, str):
            return target
        module_name, _, attribute = target.partition(":")
        try:
            module = import_module(module_name)
        except ImportError as exc:
            hint = f"; install it with: pip install 'hallumeasure[{self.extra}]'" if self.extra else ""
            raise ConfigError(f"{self.kind.value} {self.name!r} cannot be loaded: {exc}{hint}") from None
        obj = module
        for name in attribute.split(".") if attribute else ():
            obj = getattr(obj, name)
        return obj


@dataclass(frozen=True, kw_only=True)
class ProviderPart(Part[ProviderFactory]):
    """A model provider: specs ``<name>:<model>``, built as ``factory(model_name, **options)``."""

    kind: ClassVar[PartKind] = PartKind.PROVIDER

    #: The spec must name a model after the colon (``anthropic:<model>``).
    needs_model: bool = True
    #: A stand-in that answers from scripts (the fake provider): its results are no measurement.
    scripted: bool = False
    #: Facts of its models, by spec pattern (see ``registry.facts``).
    facts: Mapping[str, ModelFacts] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class JudgePart(Part[JudgeFactory]):
    """A keyless claim judge named by itself (``--judge offline``), built as ``factory(**options)``."""

    kind: ClassVar[PartKind] = PartKind.JUDGE

    keyless: bool = True
    #: Where its measured quality is published (a docs page); None when hallumeasure has not measured it.
    quality: str | None = None
    #: Its calibrated decision rule (judges/decision.py): the rule file, ``"package:file.json"``, holding a
    #: rule under the judge's name; None when it has none.
    decision: str | None = None
    #: What it costs, by spec pattern (a keyless judge costs nothing).
    facts: Mapping[str, ModelFacts] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class JudgeFamilyPart(Part[JudgeFamilyFactory]):
    """A family of keyless judges: specs ``<name>:<argument>`` (``hf:<path>``), built as
    ``factory(argument, **options)``."""

    kind: ClassVar[PartKind] = PartKind.JUDGE

    keyless: bool = True
    #: What follows the colon, as the help shows it (``<path or hub id>``).
    argument: str
    quality: str | None = None


@dataclass(frozen=True, kw_only=True)
class ProviderJudgePart(Part[ProviderJudgeFactory]):
    """A family of judges behind a provider: specs ``<name>:<provider:model>?<provider options>``, built as
    ``factory(model)`` with the ``Model`` of that provider spec (the options go to the provider)."""

    kind: ClassVar[PartKind] = PartKind.JUDGE

    argument: str = "<provider:model>"


@dataclass(frozen=True, kw_only=True)
class ExtractorPart(Part[ExtractorFactory]):
    """A keyless claim extractor (``--extractor offline``), built as ``factory(**options)``."""

    kind: ClassVar[PartKind] = PartKind.EXTRACTOR

    keyless: bool = True


@dataclass(frozen=True, kw_only=True)
class DetectorPart(Part[DetectorFactory]):
    """A detector (``--detector cascade``), built as ``factory(request)`` -> ``(extractor, judge)``."""

    kind: ClassVar[PartKind] = PartKind.DETECTOR


@dataclass(frozen=True, kw_only=True)
class RewriterPart(Part[RewriterFactory]):
    """A rewriter for ``mitigate`` and the guard: ``factory()`` when keyless, else ``factory(model)``."""

    kind: ClassVar[PartKind] = PartKind.REWRITER


@dataclass(frozen=True, kw_only=True)
class InputFormatPart(Part[InputFormatFactory]):
    """A file format ``measure`` reads, built as ``factory(path, *, delimiter, on_header, **options)``."""

    kind: ClassVar[PartKind] = PartKind.INPUT_FORMAT

    #: The file suffixes read by this part (``.jsonl`` ...).
    suffixes: tuple[str, ...] = ()
    #: ``"module:function"`` (or the function) called as ``sniff(path) -> bool`` when no format is given;
    #: formats with a sniff are asked, in registration order, before suffixes decide.
    sniff: str | Callable[[Readable], bool] | None = None

    def load_sniff(self) -> Callable[[Readable], bool] | None:
        """The function that says whether a file is in the format (imported on first use)."""
        return None if self.sniff is None else cast(Callable[[Readable], bool], self._import(self.sniff))


@dataclass(frozen=True, kw_only=True)
class ExporterPart(Part[ExporterFactory]):
    """A target a stored run is written to, built as ``factory()``; its options are the ``options`` model of the
    exporter it returns (the export command reads them), so the part declares none."""

    kind: ClassVar[PartKind] = PartKind.EXPORTER


#: The judge parts: one named by itself, a keyless family, a family behind a provider.
AnyJudgePart = JudgePart | JudgeFamilyPart | ProviderJudgePart
#: The parts whose specs are ``name:<argument>``.
FAMILIES = (JudgeFamilyPart, ProviderJudgePart)

#: The part record of each kind, for a factory registered bare (without its part) through an entry point.
BARE_PART: dict[PartKind, type[Part[Any]]] = {
    PartKind.PROVIDER: ProviderPart,
    PartKind.JUDGE: JudgePart,
    PartKind.EXTRACTOR: ExtractorPart,
    PartKind.DETECTOR: DetectorPart,
    PartKind.REWRITER: RewriterPart,
    PartKind.INPUT_FORMAT: InputFormatPart,
    PartKind.EXPORTER: ExporterPart,
}


@dataclass(frozen=True)
class Spec:
    """A judge, extractor or model spec read against the registry.

    ``part`` is a provider (an LLM spec, ``anthropic:claude-…``) or a judge / extractor part (``offline``);
    ``model`` is what follows the provider's colon, or a judge family's argument (``hf:<path>``: the path);
    ``options`` the ``?key=value`` part.
    """

    text: str
    part: Part[Any]
    model: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def keyless(self) -> bool:
        """Calls no provider: no key, no cost, no request cache."""
        return self.part.keyless

    @property
    def scripted(self) -> bool:
        """Answers from scripts (the fake provider): a demo or a test, not a measurement."""
        return isinstance(self.part, ProviderPart) and self.part.scripted

    @property
    def model_spec(self) -> str | None:
        """The LLM spec this spec calls: itself for a provider spec, the argument (with the options) of a family
        that calls a provider (``minicheck:openai:m?base_url=u`` -> ``openai:m?base_url=u``); None when keyless."""
        if isinstance(self.part, ProviderPart):
            return self.text
        if isinstance(self.part, ProviderJudgePart):
            return self.text.strip().partition(":")[2]
        return None

    @property
    def is_provider(self) -> bool:
        """Names a provider and model (an LLM) rather than a keyless part."""
        return isinstance(self.part, ProviderPart)
