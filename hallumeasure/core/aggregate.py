"""Per-response and per-run aggregates under an explicit ``Policy``.

A keyless judge may mark a verdict ``confident=False``: its label is a best guess that an LLM
should check. Such an *unsure* claim could turn out supported, unsupported, or (its best guess
aside) not checkable at all, so a response's numbers get bounds. The low bound counts every
unsure claim of the response as evaluated and supported, the high bound as evaluated and
unsupported. For a fixed denominator the rate and the hallucinated flag only grow with the number
of unsupported claims, and leaving an unsure claim out of the denominator gives a rate (and a
flag) between the two; so these two assignments are the extremes over every outcome, and a
response is *decided* when its flag is the same under both and, for a keyless judge with a calibrated
response rule (judges/decision.py), its score agrees with that flag.

A response with no checkable claim (nothing evaluated, nothing unsure: an empty answer, only questions or
greetings) is *unevaluatable*: no hallucinated flag and never decided, so it is never cleared.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from pydantic import BaseModel, Field

from hallumeasure.core.labels import Decidable, Label, Policy, Subtype
from hallumeasure.core.types import Claim, ClaimVerdict, ErrorKind, ResponseResult, Sample, Usage

#: Whether the built-in ``sum`` of floats compensates its rounding (Python 3.12 and later).
_COMPENSATED = sys.version_info >= (3, 12)


class UnsureBounds(NamedTuple):
    """What the claims judged without confidence can do to one response's numbers."""

    n_unsure: int
    #: The unsupported rate with every unsure claim counted supported / unsupported (None: no evaluated claim).
    rate_low: float | None
    rate_high: float | None
    #: The hallucinated flag under the same two assignments.
    flag_low: bool
    flag_high: bool
    #: Claims judged with confidence and evaluated under the policy: with none, every unsure claim may turn
    #: out unevaluatable, and the response then has nothing checked.
    n_confident: int = 0


def unsure_bounds(verdicts: Iterable[ClaimVerdict], policy: Policy) -> UnsureBounds:
    """The extremes of a response's rate and flag over every outcome of its unsure claims.

    Error rows are left out, as they are from the rate. Unsure claims are counted as evaluated in
    both extremes, whatever their best-guess label (an unevaluatable guess may be wrong too).
    """
    n_confident = n_unsupported = n_unsure = 0
    for v in verdicts:
        if not v.ok or v.label is None:
            continue
        if not v.confident:
            n_unsure += 1
        elif policy.is_evaluated(v.label):
            n_confident += 1
            n_unsupported += policy.is_unsupported(v.label)
    total = n_confident + n_unsure
    return UnsureBounds(
        n_unsure=n_unsure,
        rate_low=n_unsupported / total if total else None,
        rate_high=(n_unsupported + n_unsure) / total if total else None,
        flag_low=policy.is_hallucinated(n_unsupported, total),
        flag_high=policy.is_hallucinated(n_unsupported + n_unsure, total),
        n_confident=n_confident,
    )


def decision_fields(
    verdicts: Iterable[ClaimVerdict],
    policy: Policy,
    *,
    rate: float | None,
    hallucinated: bool | None,
    error: str | None = None,
    decidable: Decidable | None = None,
) -> dict[str, float | bool | None]:
    """``decided`` and the rate bounds of a response, as ``ResponseResult`` fields.

    With every verdict confident the bounds equal ``rate`` and ``decided`` is True whenever
    ``hallucinated`` is known, so runs of LLM judges carry no new uncertainty. ``decidable`` is what a
    keyless judge's calibrated rule allows (None: the judge has no such rule). A response with no
    checkable claim is not decided (False); one whose flag an error row left unknown has no decision (None).
    """
    if error is not None:
        return {"unsupported_rate_low": None, "unsupported_rate_high": None, "decided": None}
    verdicts = list(verdicts)
    bounds = unsure_bounds(verdicts, policy)
    if bounds.n_unsure == 0:
        low = high = rate
    else:
        low, high = bounds.rate_low, bounds.rate_high
    decided: bool | None
    if hallucinated is None:  # unknown after an error row; no checkable claim: not decided
        decided = None if any(not v.ok for v in verdicts) else False
    else:  # with no confident evaluated claim, the unsure ones may all be unevaluatable: nothing checked
        checked = bounds.n_confident > 0 or policy.is_evaluated(Label.UNEVALUATABLE)
        decided = bounds.flag_low == bounds.flag_high and checked
    if decided and decidable is not None:
        decided = decidable is (Decidable.HALLUCINATED if hallucinated else Decidable.CLEAN)
    return {"unsupported_rate_low": low, "unsupported_rate_high": high, "decided": decided}


def summarise_response(
    sample: Sample,
    claims: Sequence[Claim],
    verdicts: Sequence[ClaimVerdict],
    policy: Policy,
    *,
    score: float | None = None,
    usage: Usage | None = None,
    error: str | None = None,
    error_kind: ErrorKind | None = None,
    decidable: Decidable | None = None,
) -> ResponseResult:
    """Counts, unsupported rate and hallucinated flag of one response.

    Claims whose verdict is an error row are counted in ``n_errors`` and left out of the rate;
    a response with any error row gets ``hallucinated=None`` unless it is already hallucinated
    on the claims that were judged (a missing verdict cannot make it clean). A response with no
    checkable claim gets ``hallucinated=None``: nothing was checked, so nothing is cleared.
    ``decided`` and the rate bounds come from :func:`decision_fields`. ``error_kind`` says what kind of
    error row an ``error`` makes (``ErrorKind.UNKNOWN`` when not given).
    """
    labels = Counter(v.label for v in verdicts if v.ok and v.label is not None)
    subtypes = Counter(v.subtype for v in verdicts if v.ok and v.subtype is not None)
    n_errors = sum(1 for v in verdicts if not v.ok)
    n_evaluated = sum(n for label, n in labels.items() if policy.is_evaluated(label))
    n_unsupported = sum(n for label, n in labels.items() if policy.is_unsupported(label))
    rate = n_unsupported / n_evaluated if n_evaluated else None
    hallucinated: bool | None
    n_unsure = sum(1 for v in verdicts if v.ok and v.label is not None and not v.confident)
    if error is not None:
        hallucinated, rate = None, None
    elif policy.is_hallucinated(n_unsupported, n_evaluated):
        hallucinated = True
    elif n_errors or (n_evaluated == 0 and n_unsure == 0):
        hallucinated = None
    else:
        hallucinated = False
    decision = decision_fields(verdicts, policy, rate=rate, hallucinated=hallucinated, error=error, decidable=decidable)
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
        unsupported_rate_low=decision["unsupported_rate_low"],
        unsupported_rate_high=decision["unsupported_rate_high"],
        hallucinated=hallucinated,
        score=score,
        decided=decision["decided"],
        error=error,
        error_kind=error_kind,
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
    n_unsure_claims: int = Field(default=0, description="claims a keyless judge could not tell (confident=False)")
    n_decided: int = Field(default=0, description="responses whose hallucinated flag no unsure claim can change")
    decided_share: float | None = Field(
        default=None,
        description="decided responses among those judged (not error rows); one with no checkable claim is undecided",
    )
    mean_unsupported_rate_low: float | None = Field(
        default=None, description="mean unsupported rate with every unsure claim counted supported"
    )
    mean_unsupported_rate_high: float | None = Field(
        default=None, description="mean unsupported rate with every unsure claim counted unsupported"
    )
    hallucinated_share_low: float | None = Field(
        default=None, description="hallucinated share with every unsure claim counted supported"
    )
    hallucinated_share_high: float | None = Field(
        default=None, description="hallucinated share with every unsure claim counted unsupported"
    )


class _Mean:
    """A running mean equal to ``sum(values) / len(values)`` of the values added in order, without keeping them:
    its sum adds as the interpreter's own ``sum`` does (plain addition before Python 3.12, Neumaier's compensated
    addition since)."""

    __slots__ = ("carry", "count", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.carry = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        if not _COMPENSATED:
            self.total += value
            return
        added = self.total + value
        if abs(self.total) >= abs(value):
            self.carry += (self.total - added) + value
        else:
            self.carry += (value - added) + self.total
        self.total = added

    def value(self) -> float | None:
        if not self.count:
            return None
        total = self.total + self.carry if self.carry and math.isfinite(self.carry) else self.total
        return total / self.count


class _Share:
    """A running share of True values (``sum(flags) / len(flags)``: an exact count)."""

    __slots__ = ("count", "true")

    def __init__(self) -> None:
        self.count = 0
        self.true = 0

    def add(self, flag: bool) -> None:
        self.count += 1
        self.true += flag

    def value(self) -> float | None:
        return self.true / self.count if self.count else None


class RunTally:
    """``summarise_run`` one response at a time: running counts and means, so a run of any size is summarised in
    memory that does not grow with it (``add`` each result in input order, then ``summary``)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.n_responses = self.n_error_responses = self.n_claims = self.n_claim_errors = 0
        self.n_responses_with_errors = self.n_unsure_claims = 0
        self.rates, self.lows, self.highs = _Mean(), _Mean(), _Mean()
        self.flags, self.flags_low, self.flags_high, self.decided_judged = _Share(), _Share(), _Share(), _Share()
        self.labels: Counter[Label] = Counter()
        self.subtypes: Counter[Subtype] = Counter()
        self.usage = Usage()

    def add(self, r: ResponseResult) -> None:
        self.n_responses += 1
        self.n_error_responses += r.error is not None
        self.n_claims += r.n_claims
        self.n_claim_errors += r.n_errors
        self.n_responses_with_errors += r.error is not None or r.n_errors > 0
        if r.unsupported_rate is not None:
            self.rates.add(r.unsupported_rate)
        if r.hallucinated is not None:
            flag = bool(r.hallucinated)
            # A result that predates ``decided`` (None) was judged with confidence throughout.
            decided = r.decided is not False
            self.flags.add(flag)
            # undecided means: not hallucinated with the unsure claims supported, hallucinated with them unsupported
            self.flags_low.add(flag and decided)
            self.flags_high.add(flag or not decided)
        if r.error is None:
            # Of every response judged (not an error row): one without a flag (no checkable claim) is not decided.
            self.decided_judged.add(r.decided is True or (r.decided is None and r.hallucinated is not None))
            self.n_unsure_claims += sum(1 for v in r.verdicts if v.ok and not v.confident)
        if (low := _or(r.unsupported_rate_low, r.unsupported_rate)) is not None:
            self.lows.add(low)
        if (high := _or(r.unsupported_rate_high, r.unsupported_rate)) is not None:
            self.highs.add(high)
        self.labels.update(r.label_counts)
        self.subtypes.update(r.subtype_counts)
        self.usage = self.usage + r.usage

    def summary(self) -> RunSummary:
        return RunSummary(
            n_responses=self.n_responses,
            n_error_responses=self.n_error_responses,
            n_claims=self.n_claims,
            n_claim_errors=self.n_claim_errors,
            n_responses_with_errors=self.n_responses_with_errors,
            n_rated=self.rates.count,
            mean_unsupported_rate=self.rates.value(),
            hallucinated_share=self.flags.value(),
            label_counts=dict(sorted(self.labels.items())),
            subtype_counts=dict(sorted(self.subtypes.items())),
            policy=self.policy.describe(),
            usage=self.usage,
            n_unsure_claims=self.n_unsure_claims,
            n_decided=self.decided_judged.true,
            decided_share=self.decided_judged.value(),
            mean_unsupported_rate_low=self.lows.value(),
            mean_unsupported_rate_high=self.highs.value(),
            hallucinated_share_low=self.flags_low.value(),
            hallucinated_share_high=self.flags_high.value(),
        )


def _or(value: float | None, fallback: float | None) -> float | None:
    return fallback if value is None else value


def summarise_run(results: Iterable[ResponseResult], policy: Policy) -> RunSummary:
    """Point estimates of a run, with the bounds that its unsure claims leave open (``results`` are read once, in
    order, and not kept: an iterator over a run store summarises a run of any size)."""
    tally = RunTally(policy)
    for result in results:
        tally.add(result)
    return tally.summary()
