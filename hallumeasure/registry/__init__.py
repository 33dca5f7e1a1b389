"""One registry of the parts a run is built from: providers, judges, extractors, detectors, rewriters, input formats.

Every part registers once, with what builds it, what it can do (``keyless``, ``scripted``, the extra it
needs) and, for providers, the facts of its models (context window, price, cache minimum, batch). Code
elsewhere asks the registry (``resolve``, ``facts``, ``part``); it never reads a spec string's prefix.

Each kind has its part record and factory protocol (``registry.parts``: ``ProviderPart``, ``JudgePart``,
``ExtractorPart`` ...), and each part declares the options a spec may set (``JudgePart(options={"threshold":
Option(float, 0.5, ...)})``), checked and converted by ``Part.read_options`` when the part is built. A judge part
also carries its calibrated decision rule (``JudgePart.decision``, read by judges/decision.py).

Built-in parts are listed in ``registry.builtin``. Third-party packages add theirs the same way, through entry
points, one group per kind (``hallumeasure.providers``, ``hallumeasure.judges``, ``hallumeasure.extractors``,
``hallumeasure.detectors``, ``hallumeasure.rewriters``, ``hallumeasure.input_formats``,
``hallumeasure.exporters``)::

    [project.entry-points."hallumeasure.judges"]
    toy = "hallumeasure_toy:part"          # a registry.JudgePart, or a bare factory (it then takes no options)

A judge may be a *family*, whose spec is ``name:<argument>``: ``hf:<path or hub id>`` and ``onnx:<folder>``
(``JudgeFamilyPart``: trained entailment models, keyless) and ``minicheck:<provider:model>``
(``ProviderJudgePart``: a generative checker behind a provider; its argument is the LLM spec it calls, given by
``Spec.model_spec``). ``resolve`` tries a family's name before the providers' names, so a family and a
provider may not share a name; a family's bare name (``hf``) is refused with the form it takes.

``hallumeasure plugins`` lists what is installed. A plugin that fails to load is reported there and named in
the error of a run that asks for it; it never breaks other parts.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.registry.facts import ModelFacts, facts_of
from hallumeasure.registry.parts import (
    BARE_PART,
    BUILTIN,
    FAMILIES,
    AnyJudgePart,
    DetectorPart,
    ExporterPart,
    ExtractorPart,
    InputFormatPart,
    JudgeFamilyPart,
    JudgePart,
    Option,
    Part,
    PartKind,
    ProviderJudgePart,
    ProviderPart,
    RewriterPart,
    Spec,
)
from hallumeasure.registry.specs import split_options

__all__ = [
    "BUILTIN",
    "DetectorPart",
    "ExporterPart",
    "ExtractorPart",
    "InputFormatPart",
    "JudgeFamilyPart",
    "JudgePart",
    "ModelFacts",
    "Option",
    "OptionInfo",
    "Part",
    "PartInfo",
    "PartKind",
    "PluginListing",
    "PluginProblem",
    "ProviderJudgePart",
    "ProviderPart",
    "Registry",
    "RewriterPart",
    "Spec",
    "facts",
    "is_keyless",
    "is_scripted",
    "listing",
    "load_plugins",
    "model_spec",
    "registry",
    "resolve",
]

log = logging.getLogger(__name__)

P = TypeVar("P", bound=Part[Any])


@dataclass(frozen=True)
class PluginProblem:
    """An entry point that could not be loaded or registered, and why."""

    group: str
    name: str
    origin: str
    message: str


@dataclass
class Registry:
    """The parts known to this process, by kind and name."""

    parts: dict[PartKind, dict[str, Part[Any]]] = field(default_factory=lambda: {kind: {} for kind in PartKind})
    problems: list[PluginProblem] = field(default_factory=list)
    #: Facts already read, by spec: a run asks for its judge's window once per sample. Emptied when parts change.
    _facts: dict[str, ModelFacts] = field(default_factory=dict, init=False, repr=False)

    def add(self, part: Part[Any], *, replace_existing: bool = False) -> None:
        """Register ``part``; a name taken by another part of the same kind is refused unless ``replace_existing``."""
        if not part.name or any(c in part.name for c in ":?& \t\n"):
            raise ConfigError(
                f"{part.kind.value} name {part.name!r} must be non-empty, without ':', '?', '&' or spaces"
            )
        kind = self.parts[part.kind]
        if part.name in kind and not replace_existing:
            taken = kind[part.name]
            raise ConfigError(
                f"{part.kind.value} {part.name!r} from {part.origin} clashes with the one from {taken.origin}"
            )
        kind[part.name] = part
        self._facts.clear()

    def remove(self, kind: PartKind, name: str) -> None:
        """Forget a part (tests, and plugins replaced at run time)."""
        self.parts[kind].pop(name, None)
        self._facts.clear()

    @overload
    def part(self, kind: Literal[PartKind.PROVIDER], name: str) -> ProviderPart: ...
    @overload
    def part(self, kind: Literal[PartKind.JUDGE], name: str) -> AnyJudgePart: ...
    @overload
    def part(self, kind: Literal[PartKind.EXTRACTOR], name: str) -> ExtractorPart: ...
    @overload
    def part(self, kind: Literal[PartKind.DETECTOR], name: str) -> DetectorPart: ...
    @overload
    def part(self, kind: Literal[PartKind.REWRITER], name: str) -> RewriterPart: ...
    @overload
    def part(self, kind: Literal[PartKind.INPUT_FORMAT], name: str) -> InputFormatPart: ...
    @overload
    def part(self, kind: Literal[PartKind.EXPORTER], name: str) -> ExporterPart: ...
    @overload
    def part(self, kind: PartKind, name: str) -> Part[Any]: ...
    def part(self, kind: PartKind, name: str) -> Part[Any]:
        """The part of ``kind`` called ``name``; a ``ConfigError`` naming the closest known one otherwise."""
        found = self.parts[kind].get(name)
        if found is not None:
            return found
        known = sorted(self.parts[kind])
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown {kind.value} {name!r}{hint} (known: {', '.join(known) or 'none'})")

    def names(self, kind: PartKind) -> list[str]:
        """Names of the registered parts of ``kind``: the built-in ones in their order, then plugins'."""
        return list(self.parts[kind])

    def parts_of(self, record: type[P]) -> list[P]:
        """The registered parts of one record type (``InputFormatPart`` ...), in registration order."""
        return [part for part in self.parts[record.kind].values() if isinstance(part, record)]

    def all_parts(self) -> list[Part[Any]]:
        """Every registered part, by kind, in registration order."""
        return [part for kind in PartKind for part in self.parts[kind].values()]

    # Specs -----------------------------------------------------------------------------------------------

    def resolve(self, spec: str, kind: PartKind = PartKind.JUDGE) -> Spec:
        """Read a judge, extractor or model spec: a keyless part of ``kind`` (``offline``), a member of a judge
        family (``hf:<path>``, ``minicheck:<provider:model>``) or ``provider:model``.

        Raises ``ConfigError`` naming the closest known spec when it names nothing registered.
        """
        base, options = split_options(spec)
        base = base.strip()
        own = self._own(kind).get(base)
        if own is not None:
            if isinstance(own, FAMILIES):
                raise ConfigError(f"{spec!r} names no {own.argument}: write {own.name}:{own.argument}")
            return Spec(spec, own, "", options)
        provider_name, _, model = base.partition(":")
        family = self._families(kind).get(provider_name)
        if family is not None:
            if not model.strip():
                raise ConfigError(f"{spec!r} names no {family.argument}: write {family.name}:{family.argument}")
            if not family.keyless:  # its argument is the LLM spec it calls: read it now, with its own errors
                self.resolve(spec.strip().partition(":")[2], PartKind.PROVIDER)
            return Spec(spec, family, model.strip(), options)
        provider = self.parts[PartKind.PROVIDER].get(provider_name)
        if not isinstance(provider, ProviderPart):
            raise ConfigError(self._unknown_spec(spec, base, kind))
        if provider.needs_model and not model:
            raise ConfigError(f"{spec!r} names no model: write {provider.name}:<model>")
        return Spec(spec, provider, model, options)

    def _own(self, kind: PartKind) -> dict[str, Part[Any]]:
        """The keyless parts of ``kind`` a spec may name by itself (``offline``); providers need ``name:model``."""
        if kind not in (PartKind.JUDGE, PartKind.EXTRACTOR, PartKind.REWRITER):
            return {}
        return {name: part for name, part in self.parts[kind].items() if part.keyless}

    def _families(self, kind: PartKind) -> dict[str, JudgeFamilyPart | ProviderJudgePart]:
        """The families of ``kind``: their specs are ``name:<argument>``."""
        if kind is not PartKind.JUDGE:
            return {}
        return {name: part for name, part in self.parts[kind].items() if isinstance(part, FAMILIES)}

    def model_spec(self, spec: str, kind: PartKind = PartKind.JUDGE) -> str | None:
        """The LLM spec that ``spec`` calls (itself, or a family's argument); None when it calls no provider."""
        return self.resolve(spec, kind).model_spec

    def known_specs(self, kind: PartKind = PartKind.JUDGE) -> list[str]:
        """What a spec of ``kind`` may be: its keyless parts, its families, then ``provider:<model>``."""
        families = self._families(kind)
        own = sorted(
            f"{name}:{families[name].argument}" if name in families else name
            for name in {**self._own(kind), **families}
        )
        providers = [
            f"{p.name}:<model>" if isinstance(p, ProviderPart) and p.needs_model else p.name
            for p in self.parts[PartKind.PROVIDER].values()
        ]
        return [*own, *sorted(providers)]

    def suggestion(self, spec: str, kind: PartKind = PartKind.JUDGE) -> str | None:
        """For a spec that names nothing known, the closest known spec; else None."""
        base = spec.split("?", 1)[0].strip()
        own = sorted(self._own(kind))
        providers = self.names(PartKind.PROVIDER)
        provider, colon, rest = base.partition(":")
        if base in own or provider in providers or provider in self._families(kind):
            return None
        if colon:
            close = difflib.get_close_matches(provider, providers, n=1, cutoff=0.6)
            return f"{close[0]}:{rest}{spec[len(base) :]}" if close else None
        close = difflib.get_close_matches(base, [*own, *providers], n=1)
        if not close:
            return None
        part = self.parts[PartKind.PROVIDER].get(close[0])
        needs_model = isinstance(part, ProviderPart) and part.needs_model
        return close[0] + (":<model>" if needs_model and close[0] not in own else "")

    def _unknown_spec(self, spec: str, base: str, kind: PartKind) -> str:
        hint = self.suggestion(spec, kind)
        what = "model provider" if ":" in base else f"model provider or {kind.value}"
        name = base.partition(":")[0] if ":" in base else base
        return (
            f"unknown {what} {name!r} in {spec!r}"
            + (f"; did you mean {hint!r}?" if hint else "")
            + f" (known: {', '.join(self.known_specs(kind))})"
        )

    def is_keyless(self, spec: str, kind: PartKind = PartKind.JUDGE) -> bool:
        """Whether ``spec`` calls no provider (unknown specs are not keyless)."""
        try:
            return self.resolve(spec, kind).keyless
        except ConfigError:
            return False

    def is_scripted(self, spec: str | None) -> bool:
        """Whether ``spec`` names a scripted stand-in (the fake provider): a demo, not a measurement."""
        if not spec:
            return False
        for kind in (PartKind.JUDGE, PartKind.EXTRACTOR):
            try:
                return self.resolve(spec, kind).scripted
            except ConfigError:
                continue
        return False

    # Facts -----------------------------------------------------------------------------------------------

    def keyless_note(self, spec: str) -> str | None:
        """What a reader must know of numbers from a keyless judge: not an LLM, and where its quality is measured."""
        if not self.is_keyless(spec):
            return None
        part = self.resolve(spec).part
        quality = part.quality if isinstance(part, JudgePart | JudgeFamilyPart) else None
        where = f"see {quality} for its measured quality" if quality else "hallumeasure has not measured it"
        return f"it runs locally without a key, not an LLM; {where}"

    def facts_table(self) -> dict[str, ModelFacts]:
        """Every part's model facts in one table."""
        table: dict[str, ModelFacts] = {}
        for part in self.all_parts():
            if isinstance(part, ProviderPart | JudgePart):
                table.update(part.facts)
        return table

    def facts(self, spec: str) -> ModelFacts:
        """What is known of the model ``spec`` names (window, price, cache minimum, batch); fields None if not."""
        if spec not in self._facts:
            self._facts[spec] = facts_of(spec, self.facts_table())
        return self._facts[spec]


def _origin(entry: EntryPoint) -> str:
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else "unknown distribution"


def _from_entry_point(kind: PartKind, entry: EntryPoint) -> Part[Any]:
    """The part an entry point names: a part of its group's kind, or a bare factory (which takes no options)."""
    obj = entry.load()
    origin = _origin(entry)
    if isinstance(obj, Part):
        if obj.kind is not kind:
            raise ConfigError(f"entry point {entry.name!r} in {kind.group} holds a {obj.kind.value} part")
        return replace(obj, name=obj.name or entry.name, origin=origin)
    if not callable(obj):
        raise ConfigError(f"entry point {entry.name!r} in {kind.group} is neither a part nor callable")
    summary = (obj.__doc__ or "").strip().splitlines()[0] if obj.__doc__ else ""
    return BARE_PART[kind](entry.name, obj, summary, origin=origin)


def load_plugins(target: Registry, groups: Mapping[PartKind, Iterable[EntryPoint]] | None = None) -> None:
    """Add every installed entry-point part to ``target``; what fails is recorded in ``target.problems``."""
    for kind in PartKind:
        found = groups.get(kind, ()) if groups is not None else entry_points(group=kind.group)
        for entry in found:
            try:
                target.add(_from_entry_point(kind, entry))
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the others; it is reported
                origin = _origin(entry)
                message = f"{type(exc).__name__}: {exc}"
                target.problems.append(PluginProblem(kind.group, entry.name, origin, message))
                log.warning("plugin %s in %s (%s) was not registered: %s", entry.name, kind.group, origin, message)


def _build() -> Registry:
    from hallumeasure.registry.builtin import BUILTIN_PARTS

    built = Registry()
    for part in BUILTIN_PARTS:
        built.add(part)
    load_plugins(built)
    return built


@cache
def registry() -> Registry:
    """The process's registry: the built-in parts, then every installed plugin (read once)."""
    return _build()


def resolve(spec: str, kind: PartKind = PartKind.JUDGE) -> Spec:
    """``registry().resolve``: a spec read against the registered parts."""
    return registry().resolve(spec, kind)


def is_keyless(spec: str, kind: PartKind = PartKind.JUDGE) -> bool:
    """``registry().is_keyless``: whether ``spec`` calls no provider."""
    return registry().is_keyless(spec, kind)


def is_scripted(spec: str | None) -> bool:
    """``registry().is_scripted``: whether ``spec`` is a scripted stand-in rather than a measurement."""
    return registry().is_scripted(spec)


def model_spec(spec: str, kind: PartKind = PartKind.JUDGE) -> str | None:
    """``registry().model_spec``: the LLM spec that ``spec`` calls, or None when it calls no provider."""
    return registry().model_spec(spec, kind)


def facts(spec: str) -> ModelFacts:
    """``registry().facts``: what is known of the model ``spec`` names."""
    return registry().facts(spec)


class OptionInfo(BaseModel):
    """One option of a part, as ``hallumeasure plugins`` shows it."""

    type: str
    default: str
    help: str


class PartInfo(BaseModel):
    """One line of ``hallumeasure plugins``: a registered part, where it comes from, and whether it loads."""

    kind: str
    name: str
    origin: str
    summary: str
    keyless: bool
    extra: str | None = None
    #: The options its specs may set, by name: type, default and what each does.
    options: dict[str, OptionInfo] = Field(default_factory=dict)
    #: Whether its factory imports (None: not checked).
    loads: bool | None = None
    #: It does not load only because its extra is not installed: optional, not broken.
    extra_missing: bool = False
    problem: str | None = None


class PluginListing(BaseModel):
    """Every registered part, and the entry points that could not be registered."""

    parts: list[PartInfo]
    problems: list[PartInfo]


def listing(*, check: bool = False) -> PluginListing:
    """What ``hallumeasure plugins`` shows; with ``check``, each part's factory is imported to see that it loads,
    and a part that does not is told optional (its extra is not installed) or broken."""
    from hallumeasure.registry.extras import needs_missing_extra
    from hallumeasure.version import __version__

    reg = registry()
    infos = []
    for part in reg.all_parts():
        loads, problem, extra_missing = None, None, False
        if check:
            try:
                part.load()
                loads = True
            except Exception as exc:  # noqa: BLE001 - reported, not raised: the listing shows what is broken
                loads, extra_missing = False, needs_missing_extra(part, exc)
                # an optional part says what to install; a broken one what failed
                problem = str(exc) if extra_missing else f"{type(exc).__name__}: {exc}"
        origin = f"hallumeasure {__version__}" if part.origin == BUILTIN else part.origin
        infos.append(
            PartInfo(
                kind=part.kind.value,
                name=part.name,
                origin=origin,
                summary=part.summary,
                keyless=part.keyless,
                extra=part.extra,
                options={
                    name: OptionInfo(type=o.type_name, default=repr(o.default), help=o.help)
                    for name, o in part.options.items()
                },
                loads=loads,
                extra_missing=extra_missing,
                problem=problem,
            )
        )
    broken = [
        PartInfo(kind=p.group, name=p.name, origin=p.origin, summary="", keyless=False, loads=False, problem=p.message)
        for p in reg.problems
    ]
    return PluginListing(parts=infos, problems=broken)
