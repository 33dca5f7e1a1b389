"""Per-response and per-run aggregates under an explicit ``Policy``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from hallumeasure.core.labels import Label, Policy, Subtype
from hallumeasure.core.types import Claim, ClaimVerdict, ResponseResult, Sample, Usage


def summarise_response(
    sample: Sample,
    claims: Sequence[Claim],
    verdicts: Sequence[ClaimVerdict],
    policy: Policy,
    *,
    score: float | None = None,
    usage: Usage | None = None,
    error: str | None = None,
) -> ResponseResult:
    """Counts, unsupported rate and hallucinated flag of one response.

    Claims whose verdict is an error row are counted in ``n_errors`` and left out of the rate;
    a response with any error row gets ``hallucinated=None`` unless it is already hallucinated
    on the claims that were judged (a missing verdict cannot make it clean).
    """
    labels = Counter(v.label for v in verdicts if v.ok and v.label is not None)
    subtypes = Counter(v.subtype for v in verdicts if v.ok and v.subtype is not None)
    n_errors = sum(1 for v in verdicts if not v.ok)
    n_evaluated = sum(n for label, n in labels.items() if policy.is_evaluated(label))
    n_unsupported = sum(n for label, n in labels.items() if policy.is_unsupported(label))
    rate = n_unsupported / n_evaluated if n_evaluated else None
    hallucinated: bool | None
    if error is not None:
        hallucinated, rate = None, None
    elif policy.is_hallucinated(n_unsupported, n_evaluated):
        hallucinated = True
    elif n_errors:
        hallucinated = None
    else:
        hallucinated = False
    return ResponseResult(
        sample_id=sample.id,
        model=sample.model,
        claims=list(claims),
        verdicts=list(verdicts),
        label_counts={Label(k): v for k, v in sorted(labels.items())},
        subtype_counts={Subtype(k): v for k, v in sorted(subtypes.items())},
        n_claims=len(claims),
        n_evaluated=n_evaluated,
        n_unsupported=n_unsupported,
        n_errors=n_errors,
        unsupported_rate=rate,
        hallucinated=hallucinated,
        score=score,
        error=error,
        usage=usage or Usage(),
    )


class RunSummary(BaseModel):
    """Point estimates over the responses of a run (confidence intervals live in the report layer)."""

    n_responses: int
    n_error_responses: int = Field(description="responses that failed as a whole")
    n_claims: int
    n_claim_errors: int = Field(description="claims whose verdict is an error row")
    n_responses_with_errors: int = Field(
        default=0, description="responses that failed as a whole or have at least one claim error row"
    )
    n_rated: int = Field(description="responses with a defined unsupported rate")
    mean_unsupported_rate: float | None
    hallucinated_share: float | None
    label_counts: dict[Label, int]
    subtype_counts: dict[Subtype, int]
    policy: str
    usage: Usage


def summarise_run(results: Iterable[ResponseResult], policy: Policy) -> RunSummary:
    results = list(results)
    rates = [r.unsupported_rate for r in results if r.unsupported_rate is not None]
    flags = [r.hallucinated for r in results if r.hallucinated is not None]
    labels: Counter[Label] = Counter()
    subtypes: Counter[Subtype] = Counter()
    usage = Usage()
    for r in results:
        labels.update(r.label_counts)
        subtypes.update(r.subtype_counts)
        usage = usage + r.usage
    return RunSummary(
        n_responses=len(results),
        n_error_responses=sum(1 for r in results if r.error is not None),
        n_claims=sum(r.n_claims for r in results),
        n_claim_errors=sum(r.n_errors for r in results),
        n_responses_with_errors=sum(1 for r in results if r.error is not None or r.n_errors > 0),
        n_rated=len(rates),
        mean_unsupported_rate=sum(rates) / len(rates) if rates else None,
        hallucinated_share=sum(flags) / len(flags) if flags else None,
        label_counts=dict(sorted(labels.items())),
        subtype_counts=dict(sorted(subtypes.items())),
        policy=policy.describe(),
        usage=usage,
    )
