"""The rewrite-and-measure rounds, in memory: who is sent, what is kept, when to stop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import ResponseResult, Sample, Usage
from hallumeasure.detectors.rewrite import Issue, RewriteOutcome, Rewriter
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge
from hallumeasure.mitigate.report import RoundSummary
from hallumeasure.pipeline.limits import WorkLimits
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.sources.rag import SourceOptions


@dataclass
class SampleState:
    """One sample through the rounds: its original and current version, and what was spent on it."""

    original: Sample
    original_result: ResponseResult
    sample: Sample
    result: ResponseResult
    rounds: int = 0
    sent: bool = False
    error: str | None = None
    reasoning: str | None = None
    rewrite_usage: Usage = field(default_factory=Usage)
    measure_usage: Usage = field(default_factory=Usage)
    requests: int = 0


@dataclass
class MitigationOutcome:
    """The final version of every sample and the round summaries, before anything is written."""

    states: list[SampleState]
    rounds: list[RoundSummary]

    @property
    def samples(self) -> list[Sample]:
        return [s.sample for s in self.states]

    @property
    def results(self) -> list[ResponseResult]:
        return [s.result for s in self.states]


def unsupported_issues(result: ResponseResult, policy: Policy) -> list[Issue]:
    """The claims of ``result`` that are unsupported under ``policy``, with their verdicts.

    A claim its judge could not tell (``confident=False``) is never an issue: its label is a guess,
    and rewriting a claim that may be right would do harm. It is left for an LLM check instead
    (:func:`unsure_claims`).
    """
    if result.error is not None:
        return []
    claims = {c.id: c for c in result.claims}
    return [
        Issue(claims[v.claim_id], v)
        for v in result.verdicts
        if v.ok and v.confident and v.label is not None and v.claim_id in claims and policy.is_unsupported(v.label)
    ]


def unsure_claims(result: ResponseResult) -> list[str]:
    """The texts of the claims of ``result`` that its judge could not tell: left for an LLM check."""
    if result.error is not None:
        return []
    unsure = {v.claim_id for v in result.verdicts if v.ok and not v.confident}
    return [c.text for c in result.claims if c.id in unsure]


def mean_rate(results: Sequence[ResponseResult]) -> float | None:
    """Mean unsupported rate over the responses that have one."""
    rates = [r.unsupported_rate for r in results if r.unsupported_rate is not None]
    return sum(rates) / len(rates) if rates else None


def hallucinated_share(results: Sequence[ResponseResult]) -> float | None:
    """Share of hallucinated responses among those with a known flag."""
    flags = [r.hallucinated for r in results if r.hallucinated is not None]
    return sum(flags) / len(flags) if flags else None


async def mitigate_samples(
    pairs: Sequence[tuple[Sample, ResponseResult]],
    rewriter: Rewriter,
    extractor: ClaimExtractor,
    judge: ClaimJudge,
    policy: Policy,
    *,
    rounds: int = 1,
    concurrency: int = 4,
    sources: SourceOptions | None = None,
    limits: WorkLimits | None = None,
) -> MitigationOutcome:
    """Rewrite and re-measure in memory, round by round (see the module docstring for when it stops).

    The rewrites are measured through the one judging path with ``sources`` (how the source run read its
    sources and citations) and ``limits`` (measure's defaults unless given: a rewrite is untrusted model
    output, and one that balloons is an error row, not an hour of judging).
    """
    if rounds < 1:
        raise ConfigError(f"rounds must be at least 1, got {rounds}")
    states = [SampleState(original=s, original_result=r, sample=s, result=r) for s, r in pairs]
    gate = asyncio.Semaphore(concurrency)
    summaries: list[RoundSummary] = []
    rate = mean_rate([s.result for s in states])
    for number in range(1, rounds + 1):
        todo = [(s, issues) for s in states if (issues := unsupported_issues(s.result, policy))]
        if not todo:
            break

        async def rewrite(state: SampleState, issues: list[Issue]) -> RewriteOutcome:
            async with gate:
                return await rewriter.rewrite(state.sample, issues)

        outcomes = await asyncio.gather(*(rewrite(s, i) for s, i in todo))
        changed: list[tuple[SampleState, Sample, RewriteOutcome]] = []
        for (state, _), outcome in zip(todo, outcomes, strict=True):
            state.sent = True
            state.requests += 1
            state.rewrite_usage = state.rewrite_usage + outcome.usage
            if outcome.text is None:
                state.error = outcome.error or "the rewriter gave no text"
            elif outcome.text != state.sample.response:
                changed.append((state, state.sample.model_copy(update={"response": outcome.text}), outcome))
        measured = await measure_samples(
            [new for _, new, _ in changed],
            extractor,
            judge,
            policy,
            concurrency=concurrency,
            sources=sources,
            limits=limits or WorkLimits.defaults(),
        )
        # A rewrite that could not be measured (an error row: over a work limit, a judge that failed) never
        # replaces the original: its missing rate would drop out of the mean and look like a gain.
        candidate = {
            id(state): result for (state, _, _), result in zip(changed, measured, strict=True) if not result.error
        }
        after = [candidate.get(id(s), s.result) for s in states]
        new_rate = mean_rate(after)
        kept = number == 1 or (new_rate is not None and rate is not None and new_rate < rate)
        summaries.append(
            RoundSummary(
                round=number,
                sent=len(todo),
                changed=len(changed),
                rewrite_errors=sum(1 for o in outcomes if o.text is None),
                mean_unsupported_rate_before=rate,
                mean_unsupported_rate_after=new_rate,
                hallucinated_share_after=hallucinated_share(after),
                output_tokens=sum(o.usage.output_tokens for o in outcomes),
                kept=kept,
            )
        )
        for (state, new_sample, outcome), result in zip(changed, measured, strict=True):
            state.measure_usage = state.measure_usage + result.usage
            if result.error:
                state.error = f"the rewrite could not be measured, the original is kept: {result.error}"
            elif kept:
                state.sample, state.result = new_sample, result
                state.rounds += 1
                state.reasoning = outcome.reasoning
        if not kept:
            break
        rate = new_rate
    return MitigationOutcome(states, summaries)
