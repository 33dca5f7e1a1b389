"""The two stage interfaces. LLM-backed and offline implementations both satisfy them."""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from hallumeasure.core.types import Claim, ClaimVerdict, Sample, Usage, Vote


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
