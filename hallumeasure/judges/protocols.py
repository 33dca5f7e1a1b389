"""The stage interfaces (LLM-backed and keyless implementations both satisfy them), the optional capabilities
a stage may have, as protocols checked with ``isinstance``, and what a detector is built from.

A stage needs only ``ClaimExtractor`` or ``ClaimJudge``. Each capability below is optional: the run asks
``isinstance(stage, Capability)`` and goes without it when a stage lacks it (never ``getattr`` by name,
so that a stage cannot lose a feature silently by a misspelt attribute). The built-in stages name the
capabilities they have among their bases.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Decidable, Policy
from hallumeasure.core.types import Claim, ClaimVerdict, Mode, Sample, Usage, Vote
from hallumeasure.registry import PartKind, is_keyless, model_spec

if TYPE_CHECKING:
    from hallumeasure.judges.llm.prompts import Prompt
    from hallumeasure.models.model import Model


class Extraction(BaseModel):
    """Claims of one response, or an error that says why there are none."""

    claims: list[Claim] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    raw_output: str | None = None


class Judgement(BaseModel):
    """Verdicts for the claims of one response, in claim order (error rows included)."""

    verdicts: list[ClaimVerdict] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    #: Response-level probability that the response is hallucinated, when the judge gives one.
    score: float | None = None
    #: The votes the verdicts were combined from, when several judges or repeats voted.
    votes: list[Vote] = Field(default_factory=list)
    #: What a keyless judge's calibrated response rule allows to be decided (judges/decision.py); None: no rule.
    decidable: Decidable | None = None


@runtime_checkable
class ClaimExtractor(Protocol):
    name: str

    async def extract(self, sample: Sample) -> Extraction: ...

    def settings(self) -> dict[str, Any]: ...


@runtime_checkable
class ClaimJudge(Protocol):
    name: str

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement: ...

    def settings(self) -> dict[str, Any]: ...


class WarmUp(BaseModel):
    """What a prompt-cache warm-up cost, and whether it wrote the prefix (``ok``)."""

    ok: bool = False
    usage: Usage = Field(default_factory=Usage)


@runtime_checkable
class CacheWarmingJudge(Protocol):
    """A judge that can write the prompt-cache prefix of a response's claims while they are being extracted."""

    def warm_up(self, sample: Sample) -> Coroutine[Any, Any, WarmUp] | None: ...

    async def judge(self, sample: Sample, claims: Sequence[Claim], *, warmed: bool = False) -> Judgement: ...


@runtime_checkable
class WindowedJudge(Protocol):
    """A judge whose model reads a limited window: it says how many source tokens one call may be shown, so
    that the source is cut to fit (``sources/rag.py``'s view) before it is asked."""

    async def source_budget(self) -> int | None:
        """Source tokens one call may be shown (None: no limit of its own)."""
        ...


@runtime_checkable
class CountingJudge(Protocol):
    """A judge that keeps counters over a run (CoNLI's and the cascade's), recorded in the manifest after it."""

    def stats(self) -> dict[str, Any]: ...


@runtime_checkable
class WarmableJudge(Protocol):
    """A judge whose prompt-cache warm-ups can be switched off (``no_warm_cache``)."""

    warm_cache: bool

    @property
    def warms_cache(self) -> bool:
        """Whether it warms the cache in this run (``warm_cache``, unless something else rules it out)."""
        ...


@runtime_checkable
class VotingStage(Protocol):
    """A judge made of several voters (repeats or a panel); each voter is a judge of its own."""

    voters: Sequence[Any]


@runtime_checkable
class PromptedStage(Protocol):
    """A stage that asks through a versioned prompt (None: it asks through none, as CoNLI with a keyless
    NLI judge); the prompt's hash is recorded in the run manifest."""

    prompt: Prompt | None


@runtime_checkable
class MultiPromptStage(Protocol):
    """A stage that asks through more prompts than its own (a panel's other judges, a cascade's first
    pass); their hashes are recorded in the run manifest too."""

    extra_prompts: Sequence[Prompt]


@runtime_checkable
class ModelStage(Protocol):
    """A stage that calls a provider through ``model`` (None: it calls none); the run closes each model once."""

    model: Model | None


@runtime_checkable
class Closeable(Protocol):
    """What a run needs of a stage's model at its end (``Model`` has it)."""

    async def aclose(self) -> None: ...


def model_to_close(stage: object) -> Closeable | None:
    """The model ``stage`` calls, to close after a run; None when it has none (a keyless stage), or when
    its ``model`` is something that holds no connection."""
    model = stage.model if isinstance(stage, ModelStage) else None
    return model if isinstance(model, Closeable) else None


@runtime_checkable
class ComposedStage(Protocol):
    """A stage built from other stages (a cascade's first pass, a panel's judges), whose models are closed too."""

    def members(self) -> Sequence[object]: ...


@runtime_checkable
class RepeatableJudge(Protocol):
    """A judge that can be asked again with a new repeat index (``--repeats``): the index is part of each
    request's cache identity, so the repeats are new answers. Deterministic judges lack it."""

    repeat: int


@runtime_checkable
class ModeJudge(Protocol):
    """A judge that asks in one of the four classify modes (recorded by the benchmark)."""

    mode: Mode


@runtime_checkable
class InstantJudge(Protocol):
    """A judge with a synchronous core (no I/O): the keyless judges."""

    def judge_now(self, sample: Sample, claims: Sequence[Claim]) -> Judgement: ...


@dataclass(frozen=True)
class StageRequest:
    """What a detector needs to build its extractor and judge (the registry calls ``factory(request)``).

    ``judge`` is the claim judge (claims), the NLI judge (conli) or the reasoner LLM (cascade);
    ``first_pass`` is the cascade's first-pass judge; ``model_for(spec)`` gives the one ``Model`` of an
    LLM spec, so that stages share its cache, limits and usage.
    """

    model_for: Callable[[str], Model]
    extractor: str = "offline"
    judge: str = "offline"
    mode: Mode = Mode.COT_ONE
    first_pass: str = "offline"
    policy: Policy | None = None
    threshold: float | None = 0.5
    flip_no_problem: bool = True

    def model(self, spec: str) -> Model | None:
        """The model of ``spec`` (of the LLM spec it calls: ``minicheck:openai:m`` -> ``openai:m``), or None for a
        keyless spec (it calls no provider)."""
        if is_keyless(spec) or is_keyless(spec, PartKind.EXTRACTOR):
            return None
        try:
            llm = model_spec(spec)
        except ConfigError:  # not a judge spec (an extractor's LLM spec reads the same as a provider)
            llm = spec
        return self.model_for(llm or spec)
