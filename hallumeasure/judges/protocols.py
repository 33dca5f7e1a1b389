"""The stage interfaces (LLM-backed and keyless implementations both satisfy them), the optional capabilities
a stage may have, as protocols checked with ``isinstance``, and what a detector is built from."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from hallumeasure.core.labels import Policy
from hallumeasure.core.types import Claim, ClaimVerdict, Mode, Sample, Usage, Vote
from hallumeasure.models.model import Model
from hallumeasure.registry import PartKind, is_keyless


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
class CountingJudge(Protocol):
    """A judge that keeps counters over a run (CoNLI's and the cascade's), recorded in the manifest after it."""

    def stats(self) -> dict[str, Any]: ...


@runtime_checkable
class WarmableJudge(Protocol):
    """A judge whose prompt-cache warm-ups can be switched off (``no_warm_cache``)."""

    warm_cache: bool


@runtime_checkable
class VotingStage(Protocol):
    """A judge made of several voters (repeats or a panel); each voter is a judge of its own."""

    voters: Sequence[Any]


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
        """The model of ``spec``, or None for a keyless spec (it calls no provider)."""
        return None if is_keyless(spec) or is_keyless(spec, PartKind.EXTRACTOR) else self.model_for(spec)
