"""``decided`` and the unsupported-rate bounds that unsure verdicts (confident=False) leave open."""

from __future__ import annotations

import itertools
import random

import pytest

from hallumeasure.core.aggregate import summarise_response, summarise_run, unsure_bounds
from hallumeasure.core.labels import Label, Policy, UnevaluatablePolicy
from hallumeasure.core.types import Claim, ClaimVerdict, Sample

S = Label.SUPPORTED
A = Label.ABSENT
C = Label.CONTRADICTED
P = Label.PARTIALLY_SUPPORTED
U = Label.UNEVALUATABLE


def _verdicts(spec: list[tuple[Label | None, bool]]) -> list[ClaimVerdict]:
    """One verdict per (label, confident); a None label is an error row."""
    return [
        ClaimVerdict(claim_id=f"c{i}", label=label, judge="t", confident=sure, error=None if label else "boom")
        for i, (label, sure) in enumerate(spec)
    ]


def _summarise(spec: list[tuple[Label | None, bool]], policy: Policy | None = None, error: str | None = None):
    sample = Sample(id="s", context="ctx", response="r")
    claims = [Claim(id=f"c{i}", sample_id="s", index=i, text=f"claim {i}") for i in range(len(spec))]
    return summarise_response(sample, claims, _verdicts(spec), policy or Policy(), error=error)


def test_confident_verdicts_are_always_decided_and_bounds_equal_the_rate() -> None:
    r = _summarise([(S, True), (A, True), (S, True), (U, True)])
    assert r.unsupported_rate == pytest.approx(1 / 3)
    assert r.unsupported_rate_low == r.unsupported_rate_high == r.unsupported_rate
    assert r.decided is True
    clean = _summarise([(S, True), (S, True)])
    assert clean.hallucinated is False and clean.decided is True


def test_a_confident_unsupported_claim_decides_the_response() -> None:
    r = _summarise([(C, True), (S, False), (S, False)])
    assert r.hallucinated is True and r.decided is True
    assert r.unsupported_rate_low == pytest.approx(1 / 3)
    assert r.unsupported_rate_high == pytest.approx(1.0)


def test_an_unsure_claim_leaves_a_clean_response_undecided() -> None:
    r = _summarise([(S, True), (S, True), (S, False)])
    assert r.hallucinated is False and r.decided is False
    assert (r.unsupported_rate_low, r.unsupported_rate_high) == (0.0, pytest.approx(1 / 3))
    # an unsure unsupported guess is not a decision either
    r = _summarise([(S, True), (A, False)])
    assert r.hallucinated is True and r.decided is False


def test_rate_threshold_can_decide_despite_unsure_claims() -> None:
    # 1 confident unsupported of 10, one unsure: 1/10 or 2/10, both below 0.3, so clean either way
    policy = Policy(min_unsupported_rate=0.3)
    r = _summarise([(A, True)] + [(S, True)] * 8 + [(S, False)], policy)
    assert r.hallucinated is False and r.decided is True
    # with 3 confident unsupported of 10 plus one unsure, 3/10 flags and 4/10 flags: decided
    r = _summarise([(A, True)] * 3 + [(S, True)] * 6 + [(S, False)], policy)
    assert r.hallucinated is True and r.decided is True
    # 2 of 10 + one unsure: 2/10 clean, 3/10 flagged: undecided
    r = _summarise([(A, True)] * 2 + [(S, True)] * 7 + [(S, False)], policy)
    assert r.hallucinated is False and r.decided is False


def test_error_rows_and_failed_responses() -> None:
    assert _summarise([(S, False)], error="extraction failed").decided is None
    # error row + clean rest: the flag is unknown, so is the decision
    assert _summarise([(S, True), (None, True)]).decided is None
    # a confident unsupported claim decides it whatever the error row says
    r = _summarise([(C, True), (None, True), (S, False)])
    assert r.hallucinated is True and r.decided is True
    assert r.unsupported_rate_low == pytest.approx(0.5)


def _brute_force(spec: list[tuple[Label, bool]], policy: Policy) -> tuple[set[bool | None], list[float]]:
    """Every flag and rate over every outcome of the unsure claims: supported, unsupported, or unevaluatable.

    An outcome with nothing evaluated has no flag (None): the response would have no checkable claim.
    """
    unsure = [i for i, (_, sure) in enumerate(spec) if not sure]
    unsupported = sorted(policy.unsupported_labels)[0]
    flags: set[bool | None] = set()
    rates: list[float] = []
    for outcome in itertools.product((S, unsupported, U), repeat=len(unsure)):
        labels = [label for label, _ in spec]
        for i, label in zip(unsure, outcome, strict=True):
            labels[i] = label
        r = _summarise([(label, True) for label in labels], policy)
        flags.add(r.hallucinated)
        if r.unsupported_rate is not None:
            rates.append(r.unsupported_rate)
    return flags, rates


def test_decided_and_bounds_match_brute_force_enumeration() -> None:
    rng = random.Random(7)
    labels = [S, A, C, P, U]
    checked_undecided = checked_decided = 0
    for _ in range(600):
        policy = Policy(
            unsupported_labels=frozenset(rng.sample([A, C, P], rng.randint(1, 3))),
            unevaluatable=rng.choice(list(UnevaluatablePolicy)),
            min_unsupported_claims=rng.randint(1, 3),
            min_unsupported_rate=rng.choice([0.0, 0.2, 0.34, 0.5, 1.0]),
        )
        spec = [(rng.choice(labels), rng.random() < 0.6) for _ in range(rng.randint(0, 7))]
        r = _summarise(list(spec), policy)
        flags, rates = _brute_force(spec, policy)
        # the best guess is one of the outcomes (with unsure claims its flag is a guess, never None)
        assert r.hallucinated in flags or (r.hallucinated is not None and None in flags)
        assert r.decided is (len(flags) == 1 and None not in flags), (spec, policy)
        checked_decided += len(flags) == 1
        checked_undecided += len(flags) == 2
        if rates:
            assert r.unsupported_rate_low == pytest.approx(min(rates))
            assert r.unsupported_rate_high == pytest.approx(max(rates))
        if r.unsupported_rate is not None:
            assert r.unsupported_rate_low <= r.unsupported_rate <= r.unsupported_rate_high
    assert checked_decided > 50 and checked_undecided > 50  # both branches were exercised


def test_unsure_bounds_counts_only_ok_verdicts() -> None:
    b = unsure_bounds(_verdicts([(S, False), (None, False), (C, True)]), Policy())
    assert b.n_unsure == 1
    assert (b.rate_low, b.rate_high, b.flag_low, b.flag_high) == (0.5, 1.0, True, True)


def test_run_summary_reports_decided_share_and_bounds() -> None:
    results = [
        _summarise([(C, True), (S, False)]),  # decided hallucinated, rates 0.5 / 1.0
        _summarise([(S, True), (S, False)]),  # undecided, rates 0.0 / 0.5
        _summarise([(S, True), (S, True)]),  # decided clean, 0.0 / 0.0
        _summarise([(S, False)], error="failed"),  # no flag
    ]
    s = summarise_run(results, Policy())
    assert s.n_unsure_claims == 2
    assert s.n_decided == 2 and s.decided_share == pytest.approx(2 / 3)
    assert s.mean_unsupported_rate == pytest.approx(0.5 / 3)
    assert s.mean_unsupported_rate_low == pytest.approx(0.5 / 3)
    assert s.mean_unsupported_rate_high == pytest.approx(1.5 / 3)
    assert s.hallucinated_share == pytest.approx(1 / 3)
    assert s.hallucinated_share_low == pytest.approx(1 / 3)
    assert s.hallucinated_share_high == pytest.approx(2 / 3)


def test_run_summary_of_confident_run_has_no_spread() -> None:
    s = summarise_run([_summarise([(C, True), (S, True)]), _summarise([(S, True)])], Policy())
    assert s.n_unsure_claims == 0 and s.decided_share == 1.0
    assert s.mean_unsupported_rate_low == s.mean_unsupported_rate == s.mean_unsupported_rate_high
    assert s.hallucinated_share_low == s.hallucinated_share == s.hallucinated_share_high
