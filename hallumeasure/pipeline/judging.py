"""The one judging path: what every door does to one response before it counts anything.

``judge_sample`` takes a sample through the same steps wherever it comes from (``measure``, ``check``,
the guard in process and in its worker processes, a stream's sentence windows, ``mitigate``'s
re-measure, ``monitor`` and ``bench``):

1. the work limit on the response's length (nothing is called for a response over it);
2. the sources the judge may use (``sources/rag.py``: earlier user turns only when asked) and the
   citation markers taken out of the response;
3. the claims extracted (the judge meanwhile warms its prompt cache when it can), kept from
   ``claims_from`` on (a stream judges only the claims of its newest sentence), then the claim limit;
4. the source cut to what fits the judge's window, the claims judged, one verdict per claim;
5. quotes checked against the full passages, citations judged (``sources/rag.py``'s ``finish``).

It returns a ``Judged``: the claims, the judge's own answer and the finished verdicts, plus what a later
step needs to finish verdicts of its own (the guard's explainer). ``Judged.result`` counts it under a
policy; ``measure_sample`` is the two together. Model trouble never raises here: it is an error row,
except a provider that cannot be reached at all (a wrong endpoint), which stops a run instead.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from hallumeasure.core.activity import at_stage
from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.errors import RunStoppedError
from hallumeasure.core.labels import Policy
from hallumeasure.core.spans import bounded
from hallumeasure.core.types import Claim, ClaimVerdict, ErrorKind, ResponseResult, Sample, Usage
from hallumeasure.judges.protocols import (
    CacheWarmingJudge,
    ClaimExtractor,
    ClaimJudge,
    Extraction,
    Judgement,
    WarmUp,
    WindowedJudge,
)
from hallumeasure.pipeline.limits import LimitHit, WorkLimits, claim_units
from hallumeasure.sources.rag import Prepared, SourceOptions, finish, prepare, shown_whole, unsourced, view
from hallumeasure.sources.retrieval import SourceView

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Judged:
    """One response taken through the judging path; it pickles (a guard worker sends it back to the server).

    ``claims`` have spans into the response as given (citation markers included); ``verdicts`` are the
    finished ones, one per claim in claim order; ``judgement`` is the judge's own answer (before evidence
    checks), None when the judge was not asked.
    """

    sample: Sample
    claims: tuple[Claim, ...] = ()
    verdicts: tuple[ClaimVerdict, ...] = ()
    judgement: Judgement | None = None
    #: Why the response has no verdicts at all (a limit, a failed extraction, an unexpected error), and its kind.
    error: str | None = None
    error_kind: ErrorKind | None = None
    #: The work limit the response is over, when that is why it was not judged.
    over_limit: LimitHit | None = None
    usage: Usage = field(default_factory=Usage)
    #: Milliseconds spent extracting and judging.
    latency_ms: dict[str, float] = field(default_factory=dict)
    #: The sample as the stages saw it (sources chosen, markers out) and what the judge was shown.
    prepared: Prepared | None = None
    shown: SourceView | None = None

    @property
    def shown_sample(self) -> Sample:
        """The sample the judge was shown (markers out, the source cut to its window)."""
        if self.shown is not None:
            return self.shown.sample
        return self.prepared.sample if self.prepared is not None else self.sample

    def finished(self, verdicts: Sequence[ClaimVerdict]) -> list[ClaimVerdict]:
        """Other verdicts of these claims (an explainer's) finished as the judge's were: evidence, citations."""
        if self.prepared is None or self.shown is None:
            return list(verdicts)
        return finish(self.sample, self.prepared, self.shown, self.claims, verdicts)

    def result(self, policy: Policy, verdicts: Sequence[ClaimVerdict] | None = None) -> ResponseResult:
        """The response's numbers under ``policy`` (with ``verdicts`` in place of the judge's, when given)."""
        judgement = self.judgement
        result = summarise_response(
            self.sample,
            list(self.claims),
            list(self.verdicts if verdicts is None else verdicts),
            policy,
            score=judgement.score if judgement is not None else None,
            usage=self.usage,
            error=self.error,
            error_kind=self.error_kind,
            decidable=judgement.decidable if judgement is not None else None,
        )
        if judgement is not None and judgement.votes:
            return result.model_copy(update={"votes": judgement.votes})
        return result


async def judge_sample(
    sample: Sample,
    extractor: ClaimExtractor,
    judge: ClaimJudge,
    *,
    sources: SourceOptions | None = None,
    limits: WorkLimits | None = None,
    claims_from: int = 0,
    source_units: int | None = None,
) -> Judged:
    """Take ``sample`` through the judging path (the module docstring lists the steps).

    ``claims_from``: judge only the claims that start at or after this character of the response (a
    stream's window judges its newest sentence and uses the ones before it only to resolve pronouns).
    ``source_units``: the source's work units, when the caller measured them (the guard does, once a check).
    """
    sources = sources or SourceOptions()
    limits = limits or WorkLimits()
    hit = limits.response_hit(sample.response)
    if hit is not None:
        return Judged(sample, error=hit.message, error_kind=ErrorKind.OVER_LIMIT, over_limit=hit)
    warm = WarmUp()
    latency: dict[str, float] = {}
    try:
        at_stage("extracting claims")
        started = time.perf_counter()
        prepared = prepare(sample, sources)
        # A source cut to a view per response is not warmed: the view (the prefix its claims share) depends on
        # the claims, and the whole source may not even fit the judge's window.
        sourced = prepared.sample.has_source
        # The source tokens the judge's own window leaves (a local model's small window), asked once per model.
        fits = await judge.source_budget() if sourced and isinstance(judge, WindowedJudge) else None
        extraction, warm = await _extract_and_warm_up(
            prepared.sample,
            extractor,
            judge,
            warm_cache=sourced and shown_whole(prepared.sample, judge.name, sources, fits=fits),
        )
        latency["extract"] = ms_since(started)
        usage = extraction.usage + warm.usage
        if extraction.error is not None:
            failed = ErrorKind.EXTRACTION_FAILED
            return Judged(sample, error=extraction.error, error_kind=failed, usage=usage, latency_ms=latency)
        # Spans point into the response as the user gave it, and never outside it, whatever the extractor said.
        claims = bounded(prepared.restore(extraction.claims), sample.response)
        if claims_from:
            claims = [c for c in claims if c.spans and c.spans[0].start >= claims_from]
        hit = limits.claims_hit(len(claims)) or limits.work_hit(
            claim_units([c.text for c in claims]), sample, source=source_units
        )
        if hit is not None:  # before any judge call: its cost grows with the claims (times the source)
            over = ErrorKind.OVER_LIMIT
            return Judged(sample, error=hit.message, error_kind=over, over_limit=hit, usage=usage, latency_ms=latency)
        at_stage("judging claims", claims=len(claims))
        started = time.perf_counter()
        shown = view(prepared.sample, claims, judge.name, sources, fits=fits)
        if not sourced:
            # Nothing to check against (no context, passage, tool result or system prompt): unevaluatable,
            # never supported, and the judge is not asked.
            judgement = Judgement(verdicts=unsourced(claims, judge.name))
        elif isinstance(judge, CacheWarmingJudge):
            # the warm-up wrote the prefix of the whole source, which is what the judge is shown when nothing is cut
            judgement = await judge.judge(shown.sample, claims, warmed=warm.ok and shown.sample is prepared.sample)
        else:
            judgement = await judge.judge(shown.sample, claims)
        latency["judge"] = ms_since(started)
        at_stage("checking evidence")
        verdicts = finish(sample, prepared, shown, claims, _complete(claims, judgement.verdicts, judge.name))
    except RunStoppedError:
        raise  # a wrong endpoint or a spent budget: stop the run rather than store an error row per sample
    except Exception as exc:
        log.exception("sample %s failed", sample.id)
        error = f"{type(exc).__name__}: {exc}"
        return Judged(sample, error=error, error_kind=ErrorKind.UNEXPECTED, usage=warm.usage, latency_ms=latency)
    return Judged(
        sample,
        claims=tuple(claims),
        verdicts=tuple(verdicts),
        judgement=judgement,
        usage=usage + judgement.usage,
        latency_ms=latency,
        prepared=prepared,
        shown=shown,
    )


async def measure_sample(
    sample: Sample,
    extractor: ClaimExtractor,
    judge: ClaimJudge,
    policy: Policy,
    *,
    sources: SourceOptions | None = None,
    limits: WorkLimits | None = None,
) -> ResponseResult:
    """Measure one sample: ``judge_sample`` counted under ``policy``. Model trouble is an error row, never raised.

    A response over a work limit (``limits``: its characters, then its claims once extracted) is an error row
    that says which limit and how to raise it; nothing is called for it, or only the extractor.
    """
    started = time.perf_counter()
    result = (await judge_sample(sample, extractor, judge, sources=sources, limits=limits)).result(policy)
    log.debug(
        "sample %s: %d claims, %d unsupported, %d error rows in %.2f s",
        sample.id,
        result.n_claims,
        result.n_unsupported,
        result.n_errors,
        time.perf_counter() - started,
    )
    return result


async def _extract_and_warm_up(
    sample: Sample, extractor: ClaimExtractor, judge: ClaimJudge, *, warm_cache: bool = True
) -> tuple[Extraction, WarmUp]:
    """Extract the claims; meanwhile the judge writes the prompt-cache prefix they will share, if it can.

    Both are awaited, so the claims fan out only once the prefix is readable (the warm-up asks for
    one output token and is usually back before the extraction).
    """
    warm_up = judge.warm_up(sample) if warm_cache and isinstance(judge, CacheWarmingJudge) else None
    if warm_up is None:
        return await extractor.extract(sample), WarmUp()
    extraction, warm = await asyncio.gather(extractor.extract(sample), warm_up, return_exceptions=True)
    if isinstance(extraction, BaseException):
        raise extraction
    return extraction, warm if isinstance(warm, WarmUp) else WarmUp()


def _complete(claims: Sequence[Claim], verdicts: Sequence[ClaimVerdict], judge_name: str) -> list[ClaimVerdict]:
    """One verdict per claim in claim order; a judge that skipped a claim yields an explicit error row."""
    by_id = {v.claim_id: v for v in verdicts}
    return [
        by_id.get(c.id) or ClaimVerdict(claim_id=c.id, judge=judge_name, error="the judge returned no verdict")
        for c in claims
    ]


def ms_since(start: float) -> float:
    """Milliseconds since ``start`` (a ``time.perf_counter()`` reading), to the microsecond: a stage's latency."""
    return round((time.perf_counter() - start) * 1000, 3)
