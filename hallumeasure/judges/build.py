"""Build the extractor and judge a spec names: a keyless part (``offline``, ``nli``, a plugin's judge) or an
LLM (``anthropic:...``, any registered provider), through the registry."""

from __future__ import annotations

from typing import Any

from hallumeasure.core.types import Mode
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge
from hallumeasure.models.factory import build_model
from hallumeasure.models.model import Model
from hallumeasure.registry import JudgeFamilyPart, PartKind, ProviderJudgePart, registry

__all__ = ["OFFLINE", "build_extractor", "build_judge", "build_model"]

OFFLINE = "offline"


def _keyless(spec: str, kind: PartKind) -> Any | None:
    """The keyless part ``spec`` names, built with the spec's options as its part declares them (a family's
    member with its argument first: ``hf:<path>``); None for a spec that calls a provider."""
    resolved = registry().resolve(spec, kind)
    if resolved.model_spec is not None:
        return None
    part = resolved.part
    options = part.read_options(resolved.options)
    if isinstance(part, JudgeFamilyPart):
        return part.load()(resolved.model, **options)
    return part.load()(**options)


def build_extractor(spec: str, *, model: Model | None = None, **options: Any) -> ClaimExtractor:
    """The claim extractor ``spec`` names; ``model`` (or ``build_model(spec, **options)``) serves an LLM spec."""
    part = _keyless(spec, PartKind.EXTRACTOR)
    if part is not None:
        if not isinstance(part, ClaimExtractor):
            raise TypeError(f"extractor {spec!r} does not implement ClaimExtractor (name, extract, settings)")
        return part
    return LLMExtractor(model or build_model(spec, **options))


def build_judge(
    spec: str, mode: Mode | str = Mode.COT_ONE, *, model: Model | None = None, **options: Any
) -> ClaimJudge:
    """The claim judge ``spec`` names; an LLM spec judges in ``mode`` with ``model`` (or a new one)."""
    part = _keyless(spec, PartKind.JUDGE)
    if part is not None:
        if not isinstance(part, ClaimJudge):
            raise TypeError(f"judge {spec!r} does not implement ClaimJudge (name, judge, settings)")
        return part
    resolved = registry().resolve(spec, PartKind.JUDGE)
    llm_spec = resolved.model_spec or spec
    model = model or build_model(llm_spec, **options)
    if isinstance(resolved.part, ProviderJudgePart):  # minicheck:openai:...: built on its provider's model
        judge = resolved.part.load()(model)
        if not isinstance(judge, ClaimJudge):
            raise TypeError(f"judge {spec!r} does not implement ClaimJudge (name, judge, settings)")
        return judge
    return LLMJudge(model, Mode(mode))
