"""The kinds of parts a run is built from, and the record each part is registered with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import import_module
from typing import Any

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


@dataclass(frozen=True)
class Part:
    """One registered part: its name, what builds it, and what it can do.

    ``target`` is what builds the part: an object, or ``"module:attribute"`` imported only when the part is
    first used (so listing parts imports no provider SDK). What it must be depends on ``kind``:

    - provider: a ``ModelAPI`` class, called as ``target(model_name, **options)``;
    - judge / extractor: a callable ``target(**options)`` returning a ``ClaimJudge`` / ``ClaimExtractor``
      (only for judges and extractors that call no provider; an LLM judge is a provider spec);
    - a judge *family* (``argument`` set): ``name:<argument>`` names one member. A keyless family is called as
      ``target(argument, **options)`` (``hf:<path>``, ``onnx:<folder>``); a family that is not keyless takes
      a model spec as its argument and is called as ``target(model)`` with the ``Model`` of that spec
      (``minicheck:openai:<model>?base_url=...``), the spec's options going to the provider;
    - detector: a callable ``target(request: StageRequest)`` returning ``(extractor, judge)``;
    - rewriter: a callable ``target(model)`` returning a rewriter;
    - input_format: a callable ``target(path, *, delimiter, on_header, **options)`` returning an iterator of
      ``(row number, record or problem)``: records in the input file's vocabulary (``response``, ``context``
      or ``contexts``, ``messages``, ``metadata`` ...), problems as strings; ``options`` are those of the
      format's spec (``otlp?outputs=all``). Its ``sniff``, when given, says whether a file is in the format;
    - exporter: a callable ``target()`` returning an ``export.Exporter`` (``name``, its ``options`` model and
      ``export(run, options)``), reached as ``hallumeasure export RUN --to <name>``.
    """

    kind: PartKind
    name: str
    target: str | Callable[..., Any]
    summary: str = ""
    #: Calls no provider and needs no key (judges and extractors).
    keyless: bool = False
    #: A stand-in that answers from scripts (the fake provider): its results are no measurement.
    scripted: bool = False
    #: Providers: the spec must name a model after the colon (``anthropic:<model>``).
    needs_model: bool = True
    #: Judge families: what follows the colon, as the help shows it (``<path or hub id>``); None: not a family.
    argument: str | None = None
    #: The pip extra that brings what the part imports, said in the error when the import fails.
    extra: str | None = None
    #: Providers: facts of their models, by spec pattern (see ``registry.facts``).
    facts: Mapping[str, ModelFacts] = field(default_factory=dict)
    #: Judges: where their measured quality is published (a docs page); None when hallumeasure has not measured it.
    quality: str | None = None
    #: Input formats: the file suffixes read by this part (``.jsonl`` ...).
    suffixes: tuple[str, ...] = ()
    #: Input formats: ``"module:function"`` (or the function) called as ``sniff(path) -> bool`` when no format is
    #: given; formats with a sniff are asked, in registration order, before suffixes decide.
    sniff: str | Callable[..., Any] | None = None
    #: Where the part comes from: ``built-in``, or the distribution and version that registered it.
    origin: str = BUILTIN

    def load(self) -> Any:
        """The object that builds the part (imported on first use)."""
        return self._import(self.target)

    def load_sniff(self) -> Callable[..., Any] | None:
        """Input formats: the function that says whether a file is in the format (imported on first use)."""
        return None if self.sniff is None else self._import(self.sniff)

    def _import(self, target: str | Callable[..., Any]) -> Any:
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


@dataclass(frozen=True)
class Spec:
    """A judge, extractor or model spec read against the registry.

    ``part`` is a provider (an LLM spec, ``anthropic:claude-…``) or a judge / extractor part (``offline``);
    ``model`` is what follows the provider's colon, or a judge family's argument (``hf:<path>``: the path);
    ``options`` the ``?key=value`` part.
    """

    text: str
    part: Part
    model: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def keyless(self) -> bool:
        """Calls no provider: no key, no cost, no request cache."""
        return self.part.keyless

    @property
    def scripted(self) -> bool:
        """Answers from scripts (the fake provider): a demo or a test, not a measurement."""
        return self.part.scripted

    @property
    def model_spec(self) -> str | None:
        """The LLM spec this spec calls: itself for a provider spec, the argument (with the options) of a family
        that calls a provider (``minicheck:openai:m?base_url=u`` -> ``openai:m?base_url=u``); None when keyless."""
        if self.part.kind is PartKind.PROVIDER:
            return self.text
        if self.part.keyless or self.part.argument is None:
            return None
        return self.text.strip().partition(":")[2]

    @property
    def is_provider(self) -> bool:
        """Names a provider and model (an LLM) rather than a keyless part."""
        return self.part.kind is PartKind.PROVIDER
